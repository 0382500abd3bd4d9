"""The row builder (ltsuite.row) over cells recorded by real runs (tests/python/fixtures, made
with record_fixture.py from runs of tests/fixtures/{tiny,design-cut,design-cookies,scenarios,ramp-down-cut,
websocket-failures}.matrix): the row it builds is the row.json the run wrote, key for key; and what
a cell missing some of its measurements gives."""
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ltsuite import counters, latency
from ltsuite.causes import failure_causes
from ltsuite.cellfiles import read_samples
from ltsuite.histogram import ACCURACY
from ltsuite.row import Cell, build_row, sample_peaks

from conftest import ROOT

FIXTURES = Path(__file__).parent / "fixtures"
# A whole recorded cell: its row and the counter deltas it was made from (live-burst keeps only
# the samples and row the live line's tests read).
CELLS = sorted(
    p.name for p in FIXTURES.iterdir() if (p / "row.json").is_file() and (p / "netstat-delta.tsv").is_file()
)


def recorded(cell_dir):
    """The row the run wrote, its cell named as the fixture's directory."""
    return {**json.loads((cell_dir / "row.json").read_text()), "cell": cell_dir.name}


def rebuild(cell_dir, **changes):
    """The row of cell_dir built with the arguments its recorded row was built with."""
    rec = recorded(cell_dir)
    args = dict(run_id=rec["run_id"], status=rec["status"], error=rec.get("error") or "", axes=rec["axes"],
                wall_s="" if rec.get("cell_wall_s") is None else str(rec["cell_wall_s"]),
                repeat={"of": rec["repeat_of"], "k": rec["repeat"]},
                k6_exit="" if rec.get("k6_exit") is None else str(rec["k6_exit"]), cpus=2)
    args.update(changes)
    return build_row(Cell.read(cell_dir), **args)


#: Columns added after the cells were recorded, from marks those cells already have.
ADDED_SINCE_RECORDED = {"k6_prep_s", "fail_no_fd", "answered_tps", "net_rtt_applied_ms", "net_hold_p99_ms",
                        "net_packets_lost", "net_delayer_drops", "proxy_reqs", "proxy_502", "proxy_504",
                        "proxy_upstream_connect_errors", "proxy_upstream_connect_timeouts", "proxy_request_p99_ms",
                        "proxy_upstream_connect_p99_ms", "proxy_upstream_time_wait_peak", "proxy_client_time_wait_peak",
                        "fail_interrupted", "failed_wait_med_ms", "failed_wait_p99_ms",
                        "reqs_never_seen_by_app_interrupted",
                        "cold_start_ratio", "warmup_s", "warmup_path", "warmup_reqs", "warmup_failed_reqs",
                        "warmup_first_ms", "warmup_last_ms", "warmup_ended_by", "warmup_settled_ms", "net_unread_p99_ms", "net_unread_peak", "net_held_peak_per_s",
                        "t_connect_new_med_ms", "connect_delayer_ms", "connect_beyond_rtt_ms", "k6_release_cpu_pct",
                        "machine_release_busy_pct", "release_window_ms", "fail_tls", "t_handshake_med_ms",
                        "t_handshake_p99_ms", "new_conns", "new_conns_per_s", "tls_handshakes", "tls_handshakes_per_s",
                        "proxy_tls_handshakes", "proxy_tls_resumed",
                        "tls_handshakes_end_ms", "tls_handshake_cpu_ms", "predicted_tls_handshakes_end_ms",
                        "predicted_tls_accept_queue_peak", "format", "tls_client_cpu_ms",
                        "tls_k6_cpu_ms_per_handshake", "tls_target_cpu_ms_per_handshake", "tls_machine_cpu_ms_per_handshake", "predicted_tls_failed",
                        "predicted_tls_failure_wait_ms"}


def since_recorded(row, rec):
    """row without the columns added since rec was recorded (and absent from it)."""
    return {key: value for key, value in row.items() if key in rec or key not in ADDED_SINCE_RECORDED}


def test_k6s_preparation_is_timed_from_the_marks_the_recorded_cells_have():
    row = rebuild(FIXTURES / "tiny-spike")
    marks = dict(line.split("\t") for line in (FIXTURES / "tiny-spike" / "phases.tsv").read_text().split("\n") if line)
    assert row["k6_prep_s"] == round((int(marks["k6_start"]) - int(marks["target_ready"])) / 1000, 3)
    assert "target_train_s" not in row and "target_start_mode" not in row


@pytest.fixture
def cell_copy(tmp_path):
    """A writable copy of a recorded cell."""
    def copy(name):
        target = tmp_path / name
        shutil.copytree(FIXTURES / name, target)
        return target
    return copy


@pytest.mark.parametrize("name", CELLS)
def test_the_row_is_the_recorded_row_key_for_key(name):
    rec = recorded(FIXTURES / name)
    row = since_recorded(rebuild(FIXTURES / name), rec)
    assert row == rec
    assert list(row) == list(rec)


@pytest.mark.parametrize("name", CELLS)
def test_counter_deltas_are_the_recorded_ones(name):
    assert counters.cell_deltas(FIXTURES / name) == (FIXTURES / name / "netstat-delta.tsv").read_text()


def test_the_recorded_checks_cut_off_iterations():
    row = recorded(FIXTURES / "cut-off")
    assert row["as_designed"] == 0
    assert row["design_notes"] == ("no request completed (http_reqs is 0); 11 of 11 iterations were interrupted by "
                                   "GRACEFUL_STOP=5s before REQUEST_TIMEOUT=10s")


def test_the_recorded_checks_syn_cookies_explain_the_counters():
    row = rebuild(FIXTURES / "syn-cookies-backlog-10")
    assert row["prediction_check"] == "mismatch"
    assert row["prediction_notes"].startswith("listen_overflows 94 where 32 was predicted; syn_retrans 9 where 24 was "
                                              "predicted: the server retransmitted SYN-ACKs 21 times")
    assert rebuild(FIXTURES / "syn-cookies-2")["predicted_server_conns_peak"] == 3


def test_the_waiting_room_row_carries_the_servers_own_account():
    extra = rebuild(FIXTURES / "waiting-room")["extra"]
    assert [extra["wr_admit_per_second"], extra["wr_server_admitted"], extra["wr_admitted"]] == [4, 30, 30]


def test_a_sampler_that_never_sampled_checks_nothing_and_says_so(cell_copy):
    cell = cell_copy("tiny-spike")
    header = (cell / "samples.tsv").read_text().splitlines()[0]
    (cell / "samples.tsv").write_text(header + "\n")
    row = rebuild(cell)
    assert row["as_designed"] == 0
    assert row["generator_bound"] is None
    assert row["design_notes"] == ("the sampler took no sample (samples.tsv has no row): k6's CPU, the connection "
                                   "peak and the queues were not measured, so whether the generator kept up was not "
                                   "checked")
    assert [row["k6_cpu_avg_pct"], row["k6_cpu_saturated_s"], row["server_conns_peak"], row["time_wait_peak"]] == [None] * 4
    assert row["prediction_check"] is None
    (cell / "samples.tsv").unlink()
    assert rebuild(cell)["design_notes"].startswith("the sampler wrote no samples.tsv: ")


def test_a_sampler_that_stopped_early_is_named(cell_copy):
    cell = cell_copy("syn-cookies-1")
    lines = (cell / "samples.tsv").read_text().splitlines()
    (cell / "samples.tsv").write_text("\n".join(lines[:3]) + "\n")
    row = rebuild(cell)
    assert row["as_designed"] == 0
    assert "the sampler stopped " in row["design_notes"]
    assert " s before k6 ended (samples.tsv): k6's CPU" in row["design_notes"]


def test_an_external_target_leaves_the_server_side_empty_not_zero(cell_copy):
    cell = cell_copy("tiny-spike")
    env = (cell / "cell.env").read_text().replace("TARGET_URL=\n", "TARGET_URL=http://127.0.0.1:8080\n")
    (cell / "cell.env").write_text(env)
    for snapshot in cell.glob("nstat-server-*.txt"):
        snapshot.unlink()
    (cell / "netstat-delta.tsv").write_text(counters.cell_deltas(cell))
    row = rebuild(cell)
    for column in ("server_accepts", "listen_overflows", "listen_drops", "syn_cookies_sent", "syn_recv_peak",
                   "server_conns_peak", "accept_queue_peak", "listen_backlog", "server_time_wait_peak", "queue_capacity"):
        assert row[column] is None, column
    assert [row["client_connects"], row["syn_retrans"], row["client_time_wait_peak"], row["time_wait_peak"]] == [3, 0, 2, 2]
    assert row["notes"].endswith("an external target (TARGET_URL): the server's counters, connections and queues are "
                                 "not measured and stay empty")


def test_a_side_whose_counters_were_not_read_is_empty(cell_copy):
    cell = cell_copy("tiny-spike")
    for snapshot in cell.glob("nstat-client-*.txt"):
        snapshot.unlink()
    row = rebuild(cell)
    assert [row["client_connects"], row["syn_retrans"], row["server_accepts"]] == [None, None, 4]


def test_counter_deltas_past_2_pow_31_are_exact(cell_copy):
    cell = cell_copy("tiny-spike")
    before = (cell / "nstat-server-before.txt").read_text() + "IpExtInOctets 1000 0.0\n"
    after = (cell / "nstat-server-after.txt").read_text() + "IpExtInOctets 9007199254741993 0.0\n"
    (cell / "nstat-server-before.txt").write_text(before)
    (cell / "nstat-server-after.txt").write_text(after)
    assert "IpExtInOctets\tserver\t9007199254740993\n" in counters.cell_deltas(cell)


def test_peaks_take_the_largest_value_of_each_series(cell_copy):
    cell = cell_copy("tiny-spike")
    header = (cell / "samples.tsv").read_text().splitlines()[0]
    (cell / "samples.tsv").write_text("\n".join([
        header,
        "1.0\t0\t1\t2\t0\t0\t2\t5\t1\t3\t\t80",
        "2.0\t2\t1\t4\t1\t3\t4\t1\t2\t3\t95.0\t100",
        "3.0\t\t\t0\t0\t0\t0\t0\t\t\t85.0\t90"]) + "\n")
    peaks = sample_peaks(Cell.read(cell), cpus=1)
    assert [peaks.peak["server_estab"], peaks.peak["listen_recvq"], peaks.peak["tomcat_threads_busy"],
            peaks.peak["k6_rss_mb"]] == [4, 2, 2, 100]
    # the peak of the sum (5), not the sum of the peaks (3 + 5)
    assert peaks.time_wait_total == 5
    # The average CPU is over the samples that have a value: (95 + 85) / 2; 2 samples at >= 90 % of 1 core.
    assert [peaks.k6_cpu_avg, peaks.k6_cpu_saturated_s] == [90, 1]
    # Before the first request k6 creates its VUs: busy, but it sets no load's pace.
    (cell / "samples.tsv").write_text("\n".join([
        header,
        "1.0\t0\t1\t2\t0\t0\t2\t5\t1\t3\t199.0\t80",
        "2.0\t0\t1\t2\t0\t0\t2\t5\t1\t3\t199.0\t80",
        "3.0\t2\t1\t4\t1\t3\t4\t1\t2\t3\t95.0\t100"]) + "\n")
    assert sample_peaks(Cell.read(cell), cpus=1).k6_cpu_saturated_s == 3
    assert sample_peaks(Cell.read(cell), cpus=1, load_from_s=2.5).k6_cpu_saturated_s == 1
    # A sample's CPU is over the second before it: the one just after the first request (at 1.7)
    # is mostly the VUs' creation and counts not; the next one, all load, does.
    assert sample_peaks(Cell.read(cell), cpus=1, load_from_s=1.7).k6_cpu_saturated_s == 1
    assert sample_peaks(Cell.read(cell), cpus=1, load_from_s=1.4).k6_cpu_saturated_s == 2


def test_k6s_percentiles_are_recomputed_exactly_from_its_samples():
    cell = FIXTURES / "tiny-spike"
    durations = latency.answered_durations(latency.read_lines(cell / "k6-samples.json.gz"))
    summary = json.loads((cell / "summary.json").read_text())
    k6 = summary["metrics"]["http_req_duration{traffic:load,expected_response:true}"]["values"]
    got = latency.figures(durations)
    assert got["count"] == k6["count"] == 74
    for name in ("min", "med", "p(90)", "p(95)", "p(99)", "max"):
        assert got[name] == pytest.approx(k6[name], rel=1e-12), name


def split_samples(cell, parts):
    """k6-samples.json.gz cut into `parts` files of every k-th line, as k6 processes would write them."""
    lines = gzip.open(cell / "k6-samples.json.gz", "rt").read().splitlines(keepends=True)
    for k in range(parts):
        name = "k6-samples.json.gz" if k == 0 else f"k6-samples-{k + 1}.json.gz"
        with gzip.open(cell / name, "wt") as out:
            out.writelines(lines[k::parts])


def merged_summary_without_percentiles(cell):
    summary = json.loads((cell / "summary.json").read_text())
    values = summary["metrics"]["http_req_duration{traffic:load,expected_response:true}"]["values"]
    for name in ("med", "p(90)", "p(95)", "p(99)"):
        values.pop(name)
    (cell / "summary.json").write_text(json.dumps(summary))


def reduce_histograms(cell, parts):
    """Each process's samples reduced to its histogram, as k6_wait does (k6_histograms)."""
    (cell / "k6-histograms").mkdir(exist_ok=True)
    for k in range(parts):
        name = "k6-samples.json.gz" if k == 0 else f"k6-samples-{k + 1}.json.gz"
        out = subprocess.run([sys.executable, "-m", "ltsuite.histogram", "reduce", str(cell / name)], check=True,
                             capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "scripts")}).stdout
        (cell / "k6-histograms" / f"{k}.json").write_text(out)


def test_several_k6_processes_give_the_percentiles_of_all_their_samples_from_their_merged_histograms(cell_copy):
    cell = cell_copy("tiny-spike")
    rec = recorded(cell)
    (cell / "cell.env").write_text((cell / "cell.env").read_text().replace("K6_INSTANCES=1\n", "K6_INSTANCES=3\n"))
    split_samples(cell, 3)
    merged_summary_without_percentiles(cell)
    reduce_histograms(cell, 3)
    # The histograms alone: the samples are not read again.
    for name in ("k6-samples.json.gz", "k6-samples-2.json.gz", "k6-samples-3.json.gz"):
        (cell / name).unlink()
    row = rebuild(cell)
    for column in ("lat_med_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms"):
        # k6's own figures over all 74 requests (the recorded row), within the histogram's
        # accuracy (and the row's rounding to 0.001 ms).
        assert row[column] == pytest.approx(rec[column], rel=ACCURACY, abs=0.0005), column
    assert row["notes"].endswith("latency percentiles from the merged histograms of 3 k6 processes (74 answered "
                                 "requests; within 0.5% of those of the raw samples)")


def test_a_missing_process_histogram_leaves_the_percentiles_empty_with_the_reason(cell_copy):
    cell = cell_copy("tiny-spike")
    (cell / "cell.env").write_text((cell / "cell.env").read_text().replace("K6_INSTANCES=1\n", "K6_INSTANCES=2\n"))
    split_samples(cell, 2)
    merged_summary_without_percentiles(cell)
    reduce_histograms(cell, 2)
    (cell / "k6-histograms" / "1.json").unlink()
    row = rebuild(cell)
    assert [row["lat_p95_ms"], row["lat_max_ms"]] == [None, 157.829]
    assert row["notes"].endswith("latency percentiles left empty: 2 k6 processes ran and k6-histograms/1.json is "
                                 "missing, so their latencies cannot all be merged")
    (cell / "k6-histograms" / "1.json").write_text("{not json")
    assert "latency percentiles left empty: " in rebuild(cell)["notes"]
    assert "k6-histograms/1.json: not a histogram" in rebuild(cell)["notes"]
    shutil.rmtree(cell / "k6-histograms")
    for name in ("k6-samples.json.gz", "k6-samples-2.json.gz"):
        (cell / name).unlink()
    assert rebuild(cell)["notes"].endswith("latency percentiles left empty: 2 k6 processes ran and k6 wrote no "
                                           "samples (K6_SAMPLES=0, or the live InfluxDB output) to reduce to histograms")


def test_k6_warnings_are_notes(cell_copy):
    cell = cell_copy("tiny-spike")
    (cell / "k6-warnings.txt").write_text("handleSummary's output 'x.json' was not written: permission denied\n")
    assert rebuild(cell)["notes"].endswith("; handleSummary's output 'x.json' was not written: permission denied")


def run_row(cell, *args):
    return subprocess.run([sys.executable, "-m", "ltsuite.row", str(cell), "--run-id", "r1", *args],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "scripts")})


def test_the_command_line_writes_row_json(cell_copy):
    cell = cell_copy("tiny-spike")
    rec = recorded(cell)
    (cell / "row.json").unlink()
    run = run_row(cell, "--status", "ok", "--axes", '{"TOMCAT_ACCEPT_COUNT": "10"}', "--wall-s", "14.13",
                  "--repeat", json.dumps({"of": rec["repeat_of"], "k": 1}), "--k6-exit", "0", "--cpus", "2")
    assert run.returncode == 0, run.stderr
    row = json.loads((cell / "row.json").read_text())
    assert since_recorded(row, rec) == {**rec, "run_id": "r1"}


def test_a_row_that_cannot_be_built_is_still_written_failed_with_the_reason(cell_copy):
    cell = cell_copy("tiny-spike")
    run = run_row(cell, "--status", "ok", "--axes", '{"broken"', "--error", "earlier")
    assert run.returncode == 1
    row = json.loads((cell / "row.json").read_text())
    assert [row["status"], row["axes"], row["scenario"]] == ["failed", {}, "spike"]
    assert row["error"].startswith("the row could not be built: json.decoder.JSONDecodeError: Expecting ':' delimiter")
    assert row["error"].endswith("; earlier")


def test_require_as_designed_fails_a_cell_that_was_not(cell_copy):
    cell = cell_copy("cut-off")
    (cell / "cell.env").write_text((cell / "cell.env").read_text() + "REQUIRE_AS_DESIGNED=1\n")
    row = rebuild(cell, status="ok", error="")
    assert row["status"] == "failed"
    assert row["error"] == ("not as designed (REQUIRE_AS_DESIGNED=1): no request completed (http_reqs is 0); 11 of 11 "
                            "iterations were interrupted by GRACEFUL_STOP=5s before REQUEST_TIMEOUT=10s")


def test_samples_read_by_header_name():
    samples = read_samples(FIXTURES / "tiny-spike" / "samples.tsv")
    assert samples.columns[:3] == ["ts", "listen_recvq", "listen_sendq"]
    assert samples.rows[0]["k6_cpu_pct"] is None
    assert samples.values("k6_rss_mb")[:2] == [45, 45]


@pytest.mark.parametrize("name", CELLS)
def test_every_field_of_a_built_row_is_a_column_of_the_schema(name):
    from ltsuite import columns
    row = rebuild(FIXTURES / name)
    known = set(columns.BY_NAME)
    assert [k for k in row if k not in known and k not in ("axes", "extra")] == []
    assert [k for k in row["extra"] if k not in known] == []


def test_a_training_start_is_counted_apart_from_the_set_up(cell_copy):
    cell = cell_copy("tiny-spike")
    before = rebuild(cell)
    marks = (cell / "phases.tsv").read_text().split("\n")
    start = next(int(line.split("\t")[1]) for line in marks if line.startswith("cell_start\t"))
    # A training of 2.5 s inside the set-up (every later mark 2.5 s later), and the start
    # record target_start.sh writes.
    later = [f"{name}\t{int(ms) + 2500}" for name, ms in (line.split("\t") for line in marks[1:] if line)]
    (cell / "phases.tsv").write_text("\n".join(
        [marks[0], f"train_start\t{start + 5}", f"train_end\t{start + 2505}"] + later) + "\n")
    (cell / "target-start.txt").write_text("target_start_mode=aot\ntarget_java=25.0.3\n"
                                           "target_start_note=\ntarget_start_cpu_s=3.26\n")
    row = rebuild(cell)
    assert row["target_train_s"] == 2.5
    assert row["setup_s"] == before["setup_s"]
    assert [row["target_start_mode"], row["target_start_cpu_s"]] == ["aot", 3.26]


def test_a_cell_whose_k6_never_ran_leaves_its_counts_empty_not_zero(cell_copy):
    # The target never started: no k6 summary, no samples: every count is unmeasured.
    cell = cell_copy("tiny-spike")
    for name in ("summary.json", "k6-samples.json.gz", "k6.log"):
        (cell / name).unlink()
    row = rebuild(cell, status="failed", error="the target did not start")
    for column in ("failed_reqs", "fail_connect", "fail_no_fd", "fail_reset", "fail_timeout", "fail_http_4xx",
                   "fail_http_5xx", "fail_other", "dropped_iterations", "http_reqs"):
        assert row[column] is None, column


@pytest.mark.parametrize("name", ["tiny-spike", "syn-cookies-1"])
def test_answered_tps_counts_the_answers_over_the_window_of_tps(name):
    # What predicted_tps predicts: answers, not every request sent (tps).
    row = rebuild(FIXTURES / name)
    assert row["failed_reqs"] < row["http_reqs"] or row["answered_tps"] == 0
    assert row["answered_tps"] == pytest.approx(row["tps"] * (row["http_reqs"] - row["failed_reqs"]) / row["http_reqs"],
                                                abs=0.01)


def _k6_counts(cell):
    """k6's own load requests and failed ones, and the scenarios' sent and returned counters, from
    a recorded cell's summary."""
    metrics = json.loads((cell / "summary.json").read_text())["metrics"]
    return {"reqs": metrics["http_reqs{traffic:load}"]["values"]["count"],
            "failed": metrics["http_req_failed{traffic:load}"]["values"]["passes"],
            "sent": metrics["lt_requests_sent"]["values"]["count"],
            "returned": metrics["lt_requests_returned"]["values"]["count"]}


def test_a_scripts_own_ramp_down_cutting_waiting_users_counts_their_requests_as_failed_and_stays_as_designed():
    # tests/fixtures/ramp-down-cut.matrix: a script of one's own (12 ramping users, its own 4 s
    # timeout and gracefulRampDown 1s) against 2 + 1 + 1 connections. k6 counts none of the requests
    # its ramp-down cut while they waited.
    cell = FIXTURES / "ramp-down-cut"
    k6 = _k6_counts(cell)
    row = rebuild(cell)
    assert row["fail_interrupted"] == k6["sent"] - k6["returned"] > 0
    assert row["http_reqs"] == k6["reqs"] + row["fail_interrupted"]
    assert row["failed_reqs"] == k6["failed"] + row["fail_interrupted"]
    assert row["failed_reqs"] == sum(row[f"fail_{c}"] for c in failure_causes())
    assert row["failed_rate"] == round(row["failed_reqs"] / row["http_reqs"], 3)
    assert row["iterations_interrupted"] > 0
    assert [row["as_designed"], row["design_notes"]] == [1, None]
    assert (f"{row['iterations_interrupted']} of {row['iterations_started']} iterations were cut by the script's own "
            "graceful stop (gracefulRampDown 1s and k6's default gracefulStop 30s), "
            f"{row['fail_interrupted']} of them while a request waited: those requests are failed ones "
            "(fail_interrupted)") in row["notes"]


def test_a_script_whose_cut_requests_were_not_counted_keeps_the_finding_and_names_its_stop(cell_copy):
    # The same cell as a run before the scenarios counted sent requests would have it: the cut
    # requests are unmeasured (empty, not 0), so the cell is not judged as designed.
    cell = cell_copy("ramp-down-cut")
    summary = json.loads((cell / "summary.json").read_text())
    for name in ("lt_requests_sent", "lt_requests_returned"):
        del summary["metrics"][name]
    (cell / "summary.json").write_text(json.dumps(summary))
    row = rebuild(cell)
    assert row["fail_interrupted"] is None
    assert row["http_reqs"] == summary["metrics"]["http_reqs{traffic:load}"]["values"]["count"]
    assert row["as_designed"] == 0
    assert row["design_notes"] == (f"{row['iterations_interrupted']} of {row['iterations_started']} iterations were "
                                   "interrupted by the script's own graceful stop (gracefulRampDown 1s and k6's "
                                   "default gracefulStop 30s), and the requests they cut were not counted")


def test_the_suites_own_scenario_keeps_its_check_when_its_graceful_stop_cuts_every_request():
    # tests/fixtures/design-cut.matrix recorded with the counters: GRACEFUL_STOP=5s ends the
    # spike before any of its 11 requests (30 s each, 10 s timeout) can end; k6 counts none.
    cell = FIXTURES / "cut-off-counted"
    k6 = _k6_counts(cell)
    row = rebuild(cell)
    assert [k6["reqs"], k6["sent"], k6["returned"]] == [0, 11, 0]
    assert [row["http_reqs"], row["failed_reqs"], row["fail_interrupted"], row["failed_rate"]] == [11, 11, 11, 1]
    assert row["as_designed"] == 0
    assert row["design_notes"] == ("no request completed (every one of the 11 sent was cut off while it waited: "
                                   "fail_interrupted); 11 of 11 iterations were interrupted by GRACEFUL_STOP=5s "
                                   "before REQUEST_TIMEOUT=10s")


def test_empty_busy_threads_are_blamed_on_what_stands_in_the_way_not_on_a_missing_exposure():
    """A Spring Boot target's actuator that answered 401 or 500 is named as guarded or as mapping
    errors; only with TARGET_ACTUATOR=as-is is an exposure the fix."""
    from ltsuite.row import busy_threads_note
    env = {"MANAGEMENT_PORT": "8081", "TARGET_ACTUATOR": "needed"}
    guarded = busy_threads_note(env, {"checked": False, "status": "401"})
    assert "guarded by Spring Security" in guarded and "HTTP 401" in guarded and "exposure.include" not in guarded
    errors = busy_threads_note(env, {"checked": False, "status": "500"})
    assert "maps the actuator's answers to HTTP 500" in errors and "exposure.include" not in errors
    exposed = busy_threads_note(env, {"checked": True, "mismatches": []})
    assert "the suite exposed metrics there" in exposed and "exposure.include" not in exposed
    as_is = busy_threads_note({**env, "TARGET_ACTUATOR": "as-is"}, None)
    assert "management.endpoints.web.exposure.include=metrics" in as_is


def test_a_generator_saturated_while_it_released_the_users_bounds_the_cell(cell_copy):
    """tiny-spike's two users released at one instant; a k6 trace around it with k6 on both cores
    makes the cell generator-bound with the timings named, when the trace's ticks show it surely
    (its steps 250 ms apart, as a busy sampler skips late ones); k6 idle there leaves it as
    recorded."""
    cell = cell_copy("tiny-spike")
    at = 1795514938.918
    busy = "".join(f"{at - 0.5 + 0.25 * k:.3f}\t{100 + 50 * k}\t{1000 + 50 * k}\t{4000 + 50 * k}\n" for k in range(5))
    (cell / "k6-cpu.tsv").write_text(busy)
    row = rebuild(cell)
    assert (row["k6_release_cpu_pct"], row["machine_release_busy_pct"], row["release_window_ms"]) == (200, 100, 250)
    assert row["generator_bound"] == 1 and row["as_designed"] == 0
    assert "over the 250 ms it released the users in: the generator set their pace" in row["design_notes"]
    # The same 200 % across one 50 ms step: 10 ticks, which 8 (160 %) could also have given, so
    # not surely k6's pace; the machine full, a note of the machine's.
    one_step = "".join(f"{at - 0.1 + 0.05 * k:.3f}\t{100 + 10 * k}\t{1000 + 10 * k}\t{4000 + 10 * k}\n" for k in range(5))
    (cell / "k6-cpu.tsv").write_text(one_step)
    row = rebuild(cell)
    assert (row["k6_release_cpu_pct"], row["release_window_ms"]) == (200, 50)
    assert row["generator_bound"] == recorded(cell)["generator_bound"] and row["as_designed"] == recorded(cell)["as_designed"]
    assert "k6 itself at every core as read, but surely only at 160 %" in row["notes"]
    # The machine full with k6 idle: a note of the machine's, the design as recorded.
    full = "".join(f"{at - 0.1 + 0.05 * k:.3f}\t100\t{1000 + 10 * k}\t{4000 + 10 * k}\n" for k in range(5))
    (cell / "k6-cpu.tsv").write_text(full)
    row = rebuild(cell)
    assert row["generator_bound"] == recorded(cell)["generator_bound"] and row["as_designed"] == recorded(cell)["as_designed"]
    assert "the rest of the CPU went to the target and the machine's other processes" in row["notes"]
    idle = "".join(f"{at - 0.1 + 0.05 * k:.3f}\t100\t{1000 + k}\t{4000 + 10 * k}\n" for k in range(5))
    (cell / "k6-cpu.tsv").write_text(idle)
    row = rebuild(cell)
    rec = recorded(cell)
    assert row["k6_release_cpu_pct"] == 0 and row["generator_bound"] == rec["generator_bound"]
