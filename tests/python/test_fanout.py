"""The row of a fan-out cell (ltsuite.fanout) from its instances' rows (the cases
tests/unit/ssm.bats once checked in shell)."""
import json
import subprocess
import sys

import pytest

from ltsuite import fanout, histogram, latency
from ltsuite.fanout import aggregate_row

from conftest import ROOT

#: The rows of two instances, as write_instance_row writes them.
TWO_ROWS = [
    {"vus_max": 3, "duration_s": 10, "http_reqs": 100, "lat_min_ms": 5, "lat_avg_ms": 10, "lat_med_ms": 9,
     "lat_p95_ms": 20, "lat_max_ms": 50, "lat_count": 90, "failed_reqs": 10, "fail_connect": 4, "fail_timeout": 6,
     "fail_reset": 0, "fail_http_4xx": 0, "fail_http_5xx": 0, "fail_other": 0, "iterations": 100, "dropped_iterations": 1},
    {"vus_max": 2, "duration_s": 12, "http_reqs": 300, "lat_min_ms": 3, "lat_avg_ms": 30, "lat_med_ms": 29,
     "lat_p95_ms": 80, "lat_max_ms": 90, "lat_count": 270, "failed_reqs": 30, "fail_connect": 0, "fail_timeout": 30,
     "fail_reset": 0, "fail_http_4xx": 0, "fail_http_5xx": 0, "fail_other": 0, "iterations": 300, "dropped_iterations": 2},
]


def aggregate(rows=TWO_ROWS, percentiles=None, notes="n"):
    return aggregate_row(rows, run_id="run1", cell="01", axes={}, env={"SCENARIO": "spike"}, status="ok", error="",
                         percentiles=percentiles, notes=notes)


def test_the_cells_row_adds_up_counters_and_vus_over_the_instances():
    row = aggregate()
    assert [row[k] for k in ("vus_max", "http_reqs", "failed_reqs", "fail_connect", "fail_timeout", "iterations",
                             "dropped_iterations", "instances")] == [5, 400, 40, 4, 36, 400, 3, 2]
    assert [row["duration_s"], row["tps"], row["failed_rate"]] == [12, 33.333, 0.1]


def test_min_and_max_are_the_extremes_the_mean_is_weighted_by_answered_requests():
    # (10 * 90 + 30 * 270) / 360 = 25, not the plain mean of means (20).
    row = aggregate()
    assert [row["lat_min_ms"], row["lat_max_ms"], row["lat_avg_ms"]] == [3, 90, 25]


def test_without_influxdb_the_percentiles_stay_empty_never_an_average_of_percentiles():
    row = aggregate(notes="percentiles not mergeable")
    assert [row["lat_med_ms"], row["lat_p90_ms"], row["lat_p95_ms"], row["lat_p99_ms"]] == [None] * 4
    assert row["notes"] == "percentiles not mergeable"


def test_with_influxdbs_percentiles_the_row_takes_them_as_they_are():
    row = aggregate(percentiles={"lat_med_ms": 28, "lat_p90_ms": 70, "lat_p95_ms": 77.5, "lat_p99_ms": 88, "samples": 360})
    assert [row["lat_med_ms"], row["lat_p90_ms"], row["lat_p95_ms"], row["lat_p99_ms"]] == [28, 70, 77.5, 88]


def test_the_row_of_a_fan_out_leaves_out_what_only_a_local_run_measures():
    # The instances' rows carry them; the fan-out's row must not add them up.
    row = aggregate([{**r, "listen_overflows": 7, "server_conns_peak": 12, "syn_retrans": 3} for r in TWO_ROWS])
    assert [k in row for k in ("listen_overflows", "server_conns_peak", "syn_retrans")] == [False, False, False]


def test_no_instance_row_gives_empty_figures_not_zeros():
    row = aggregate([])
    assert [row["instances"], row["http_reqs"], row["tps"], row["lat_min_ms"], row["failed_rate"]] == [0, None, None, None, None]


def test_no_instance_that_measured_failures_leaves_the_failed_rate_empty_not_zero():
    # Requests counted, failures unmeasured: the rate is unmeasured too, never 0.
    row = aggregate([{k: v for k, v in r.items() if k != "failed_reqs"} for r in TWO_ROWS])
    assert [row["http_reqs"], row["failed_reqs"], row["failed_rate"]] == [400, None, None]


def test_the_command_line_reads_the_instances_rows_and_the_cells_knobs(tmp_path):
    for k, row in enumerate(TWO_ROWS):
        (tmp_path / "instances" / f"i-{k}").mkdir(parents=True)
        (tmp_path / "instances" / f"i-{k}" / "row.json").write_text(json.dumps(row))
    (tmp_path / "cell.env").write_text("SCENARIO=burst\nVUS=5\n")
    run = subprocess.run([sys.executable, "-m", "ltsuite.fanout", str(tmp_path), "--run-id", "r", "--cell", "02",
                          "--axes", '{"VUS": "5"}', "--status", "failed", "--error", "instance i-9: no summary",
                          "--notes", "n"], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "scripts")},
                         check=True)
    row = json.loads(run.stdout)
    assert list(row)[:8] == ["format", "run_id", "cell", "scenario", "status", "axes", "backend", "instances"]
    assert [row["scenario"], row["status"], row["axes"], row["http_reqs"], row["error"]] == \
        ["burst", "failed", {"VUS": "5"}, 400, "instance i-9: no summary"]


def test_failures_for_want_of_files_add_up_over_the_instances_as_the_other_causes_do():
    rows = [{**TWO_ROWS[0], "fail_no_fd": 7}, {**TWO_ROWS[1], "fail_no_fd": 2}]
    assert aggregate(rows)["fail_no_fd"] == 9
    assert aggregate()["fail_no_fd"] is None


# --- Percentiles from the instances' histograms -----------------------------------------------------

# The recorded samples with answered requests (cut-off-counted has none: every request was cut off).
RECORDED = [p for p in sorted((ROOT / "tests/python/fixtures").glob("*/k6-samples.json.gz"))
            if latency.answered_durations(latency.read_lines(p))]


def fan_out_cell(tmp_path, samples, parts):
    """A fan-out cell whose PARTS instances each ran every PARTS-th answered request of the
    recorded SAMPLES, with the row and the histogram each ships (histogram.json, as collected)."""
    durations = latency.answered_durations(latency.read_lines(samples))
    for k in range(parts):
        mine = durations[k::parts]
        d = tmp_path / "instances" / f"i-{k}"
        d.mkdir(parents=True)
        (d / "row.json").write_text(json.dumps({"http_reqs": len(mine), "lat_count": len(mine)}))
        (d / "histogram.json").write_text(json.dumps(histogram.of(mine).to_json()))
    (tmp_path / "cell.env").write_text("SCENARIO=spike\n")
    return durations


def fan_out_row(cell_dir, *args):
    run = subprocess.run([sys.executable, "-m", "ltsuite.fanout", str(cell_dir), "--run-id", "r", "--cell", "01", *args],
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "scripts")}, check=True)
    return json.loads(run.stdout)


@pytest.mark.parametrize("samples", RECORDED, ids=lambda p: p.parent.name)
def test_a_fan_outs_percentiles_are_those_of_all_raw_samples_from_the_merged_histograms(tmp_path, samples):
    durations = fan_out_cell(tmp_path, samples, 3)
    exact = latency.figures(durations)
    row = fan_out_row(tmp_path, "--percentiles", '{"lat_p95_ms": 1}', "--notes", "from InfluxDB")
    for name, column in (("med", "lat_med_ms"), ("p(90)", "lat_p90_ms"), ("p(95)", "lat_p95_ms"), ("p(99)", "lat_p99_ms")):
        # k6's percentile of every request of the three instances, within the histogram's accuracy
        # (and the row's 0.001 ms); InfluxDB's figures are not needed.
        assert row[column] == pytest.approx(exact[name], rel=histogram.ACCURACY, abs=0.0005), column
    assert row["notes"] == (f"latency percentiles from the merged histograms of 3 instances ({len(durations)} answered "
                            "requests; within 0.5% of those of the raw samples)")


def test_an_instance_without_a_histogram_leaves_the_percentiles_to_influxdb_and_is_named(tmp_path):
    fan_out_cell(tmp_path, RECORDED[0], 2)
    (tmp_path / "instances/i-1/histogram.json").unlink()
    row = fan_out_row(tmp_path, "--percentiles", '{"lat_p95_ms": 77}', "--notes", "percentiles from InfluxDB")
    assert [row["lat_med_ms"], row["lat_p95_ms"]] == [None, 77]
    assert row["notes"] == ("no latency histogram from i-1 (the instance needs python3 to reduce k6's samples; see its "
                            "stdout.txt); percentiles from InfluxDB")
    row = fan_out_row(tmp_path, "--notes", "percentiles not mergeable")
    assert row["lat_p95_ms"] is None
    assert row["notes"].endswith("; percentiles not mergeable")


def test_a_failed_instance_without_a_row_does_not_count_and_a_bad_histogram_is_named(tmp_path):
    fan_out_cell(tmp_path, RECORDED[0], 2)
    # A failed instance: no row (ssm-fanout writes none), whatever else is there.
    (tmp_path / "instances/i-9").mkdir()
    assert fan_out_row(tmp_path)["lat_p95_ms"] is not None
    (tmp_path / "instances/i-1/histogram.json").write_text('{"index": [1], "counts": []}')
    row = fan_out_row(tmp_path)
    assert row["lat_p95_ms"] is None
    assert "instances/i-1/histogram.json: not a histogram" in row["notes"]


def test_the_segments_of_n_instances_tile_0_to_1_in_order_as_k6_writes_them():
    from fractions import Fraction

    for n in (1, 2, 3, 5, 7):
        bounds = [fanout.segment(i, n).split(":") for i in range(n)]
        assert bounds[0][0] == "0" and bounds[-1][1] == "1"
        assert all(Fraction(hi) == Fraction(lo) for (_, hi), (lo, _) in zip(bounds, bounds[1:]))
        assert fanout.segment_sequence(n).split(",") == ["0"] + [b[1] for b in bounds]
    assert (fanout.segment(1, 3), fanout.segment_sequence(3)) == ("1/3:2/3", "0,1/3,2/3,1")
    assert [fanout.segment(0, 1), fanout.segment(0, 2), fanout.segment(1, 2), fanout.segment_sequence(1)] == \
        ["0:1", "0:1/2", "1/2:1", "0,1"]
    assert fanout.main(["segments", "2"]) == 0


def test_every_cause_of_causes_tsv_adds_up_and_fanout_py_names_none_itself():
    from ltsuite import causes

    for cause in causes.failure_causes():
        rows = [{**TWO_ROWS[0], f"fail_{cause}": 1}, {**TWO_ROWS[1], f"fail_{cause}": 2}]
        assert aggregate(rows)[f"fail_{cause}"] == 3, cause
    # The causes come from the table only: no fail_<cause> column is spelt out in fanout.py.
    import re

    assert re.findall(r'"fail_[a-z]', (ROOT / "scripts/ltsuite/fanout.py").read_text()) == []


def test_the_fields_of_a_fan_out_row_are_the_columns_table_s_with_a_fanout_rule():
    from ltsuite.columns import COLUMNS

    ruled = {c.name for c in COLUMNS if c.fanout and c.scenario is None}
    assert ruled <= set(fanout.ROW_FIELDS)
    # Only a local run measures the server's counters and the sampler's peaks: no rule, no field.
    assert not {"listen_overflows", "server_conns_peak", "k6_cpu_peak_pct", "app_lat_p99_ms"} & set(fanout.ROW_FIELDS)
    # Every rule is one combine() knows.
    assert {c.fanout for c in COLUMNS if c.fanout} <= {"sum", "min", "max", "mean", "merged", "derived", "same"}
    row = aggregate([{**r, "vus_started": v, "iterations_started": 7} for r, v in zip(TWO_ROWS, (3, 1))])
    assert [row["vus_started"], row["iterations_started"]] == [4, 14]


def test_a_scenarios_own_columns_combine_by_their_rule_and_its_trend_percentiles_stay_empty():
    extras = [{"ws_sessions": 5, "ws_sessions_ok": 4, "ws_fail_timeout": 1, "ws_message_max_ms": 12.5,
               "ws_message_p95_ms": 9, "ws_close_p99_ms": 3},
              {"ws_sessions": 6, "ws_sessions_ok": 6, "ws_fail_timeout": 0, "ws_message_max_ms": 30,
               "ws_message_p95_ms": 20, "ws_close_p99_ms": 4}]
    rows = [{**r, "extra": e} for r, e in zip(TWO_ROWS, extras)]
    row = aggregate_row(rows, run_id="run1", cell="01", axes={}, env={"SCENARIO": "websocket"}, status="ok",
                        error="", percentiles=None, notes="")
    extra = row["extra"]
    assert [extra["ws_sessions"], extra["ws_sessions_ok"], extra["ws_fail_timeout"], extra["ws_message_max_ms"]] == \
        [11, 10, 1, 30]
    # Percentiles of parts do not combine: without the instances' merged histograms of the trends
    # (test_trends.py) they stay empty, never an average of the instances' 9 and 20.
    assert extra["ws_message_p95_ms"] is None and extra["ws_close_p99_ms"] is None
    # Another scenario's row has no extra at all.
    assert "extra" not in aggregate(rows)
