"""Open files: the k6 processes K6_INSTANCES=auto chooses, the predictions where k6's or the
target's open-file limit binds, the note that names it, and a cell refused for memory (the
20,000-file wall of ../shared/DESIGN.md section 6)."""
import json
import subprocess
import sys

import pytest

from ltsuite import design, rules

from conftest import ROOT

#: A burst whose users hold their connections (3 s answers, room for all on the server).
BURST = {"SCENARIO": "burst", "VUS": "400", "DURATION": "5s", "DELAY_MS": "3000", "REQUEST_TIMEOUT": "10s",
         "GRACEFUL_STOP": "5s", "THINK_TIME_MS": "0", "TOMCAT_MAX_THREADS": "500", "TOMCAT_MAX_CONNECTIONS": "1000",
         "TOMCAT_ACCEPT_COUNT": "100", "REQUESTS_PER_VU": "1", "START_SPREAD_LIMIT_MS": "1000", "BURST_LEAD_MS": "1000",
         "K6_INSTANCES": "1", "K6_NOFILE": "300"}
SYSCTLS = {"server": {"net.core.somaxconn": "4096"},
           "client": {"net.ipv4.tcp_syn_retries": "4", "net.ipv4.tcp_syn_linear_timeouts": "0",
                      "net.ipv4.ip_local_port_range": "32768\t60999"}}
MACHINE = {"cpus": 2, "nofile": 20000, "mem_available_mb": 20000}


def cell(**patch):
    return {**BURST, **patch}


@pytest.mark.parametrize("vus,nofile,expected", [
    (0, 20000, 1), (1, 20000, 1), (19900, 20000, 1), (19901, 20000, 2), (30000, 20000, 2), (40000, 20000, 3),
    (400, 300, 2), (401, 300, 3), (1000, 50, 1000)])
def test_auto_runs_enough_processes_for_the_open_file_limit(vus, nofile, expected):
    assert rules.k6_instances(vus, nofile) == expected


def test_the_cells_processes_auto_or_as_set():
    assert design.k6_instances(cell(K6_INSTANCES="auto"), MACHINE) == 2   # 400 VUs, 300 files each
    assert design.k6_instances(cell(K6_INSTANCES="auto", K6_NOFILE=""), MACHINE) == 1   # 20,000 files
    assert design.k6_instances(cell(K6_INSTANCES="auto", K6_NOFILE="", VUS="30000"), MACHINE) == 2
    assert design.k6_instances(cell(K6_INSTANCES="3"), MACHINE) == 3
    assert design.k6_instances({k: v for k, v in BURST.items() if k != "K6_INSTANCES"}, MACHINE) == 1
    # The row's machine: the limit the processes ran with (file-limits.tsv) over the knob.
    assert design.k6_nofile(cell(), {**MACHINE, "k6_nofile": 250}) == 250


def test_k6s_files_bind_the_prediction_and_the_note_names_them():
    predicted = design.predictions(cell(), SYSCTLS, MACHINE)
    # One process, 300 files less 8 of k6's own: 292 sockets; the other 108 users fail at once.
    assert predicted["predicted_server_conns_peak"] == 292
    assert predicted["predicted_failed_users"] == 108
    row = {"server_conns_peak": 292, "fail_no_fd": 108, "fail_connect": 0, "failed_reqs": 108, "http_reqs": 400,
           "listen_overflows": 0, "syn_retrans": 0}
    out = design.prediction_verdict(cell(), SYSCTLS, predicted, row, {}, MACHINE, [])
    assert out["prediction_check"] == "match"
    assert out["predicted_failed_users_from"] == "fail_no_fd"
    assert out["prediction_notes"] == ("bound by k6's open-file limit: 1 k6 process(es) x (300 files less 8 of "
                                       "k6's own) = 292 connections for 400 VUs; the others fail with 'too many "
                                       "open files' (fail_no_fd)")


def test_a_file_wall_missed_is_explained_by_the_failures_it_left():
    predicted = design.predictions(cell(), SYSCTLS, MACHINE)
    row = {"server_conns_peak": 250, "fail_no_fd": 150, "fail_connect": 0, "failed_reqs": 150, "http_reqs": 400,
           "listen_overflows": 0, "syn_retrans": 0}
    out = design.prediction_verdict(cell(), SYSCTLS, predicted, row, {}, MACHINE, [])
    assert out["prediction_check"] == "mismatch"
    assert out["prediction_notes"].startswith("server_conns_peak 250 where 292 was predicted; failed users "
                                              "(fail_no_fd) 150 where 108 was predicted: 150 requests failed with "
                                              "'too many open files': k6's 1 process(es) ran out of file "
                                              "descriptors (300 each); bound by k6's open-file limit")
    assert "SYN-ACK" not in out["prediction_notes"]


def test_two_processes_hold_twice_the_files():
    predicted = design.predictions(cell(K6_INSTANCES="2"), SYSCTLS, MACHINE)
    assert predicted["predicted_server_conns_peak"] == 400
    assert predicted["predicted_failed_users"] is None


def test_the_targets_open_file_limit_bounds_its_capacity():
    # 30,000 users, two client addresses, max-connections 40,000: the JVM may open 20,000 files
    # and holds 57 before the load, so Tomcat accepts 19,943 and the queue holds 101 more.
    big = cell(VUS="30000", K6_INSTANCES="auto", K6_NOFILE="", TOMCAT_MAX_CONNECTIONS="40000",
               TOMCAT_MAX_THREADS="200", DELAY_MS="5000", CLIENT_ADDRESSES="2")
    machine = {**MACHINE, "target_nofile": 20000, "target_own_files": 57}
    predicted = design.predictions(big, SYSCTLS, machine)
    assert predicted["predicted_server_conns_peak"] == 20000 - 57 + 100 + 1
    note = design.limit_note(big, SYSCTLS, machine, predicted)
    assert note == ("bound by the target's open-file limit: 20000 files less the 57 its JVM had open before the "
                    "load, plus the accept queue = 20044 connections, fewer than TOMCAT_MAX_CONNECTIONS=40000 "
                    "allows (40101)")
    # Without the target's limit recorded (an external target, an old cell): max-connections.
    assert design.predictions(big, SYSCTLS, MACHINE)["predicted_server_conns_peak"] == 30000


def test_a_limit_that_does_not_bind_leaves_no_note():
    small = cell(VUS="100")
    predicted = design.predictions(small, SYSCTLS, {**MACHINE, "target_nofile": 20000, "target_own_files": 57})
    assert predicted["predicted_server_conns_peak"] == 100
    assert design.limit_note(small, SYSCTLS, MACHINE, predicted) is None


def test_warnings_with_the_numbers_and_no_file_warning_under_auto():
    explicit = " | ".join(design.design_warnings(cell(), MACHINE))
    assert ("400 VUs in 1 k6 process(es) need about 400 open files each, but a process may open at most 300 "
            "(K6_NOFILE=300): connects will fail with 'too many open files' (fail_no_fd); K6_INSTANCES=auto runs 2"
            in explicit)
    auto = " | ".join(design.design_warnings(cell(K6_INSTANCES="auto", K6_NOFILE="", VUS="30000"), MACHINE))
    assert "open files" not in auto
    above = " | ".join(design.design_warnings(cell(K6_NOFILE="30000"), MACHINE))
    assert "K6_NOFILE=30000 is above the hard open-file limit 20000 (ulimit -Hn): k6 runs with 20000" in above


def test_a_cell_without_the_memory_for_its_vus_is_refused_with_the_numbers():
    assert design.refusals(cell(VUS="100000"), {**MACHINE, "mem_available_mb": 20000}) == [
        "100000 VUs need at least 23438 MB in k6 (240-420 KB each, measured), more than the 20000 MB available"]
    assert design.refusals(cell(VUS="50000"), MACHINE) == []
    flagged = " | ".join(design.design_warnings(cell(VUS="50000", K6_INSTANCES="auto"), MACHINE))
    assert "50000 VUs may need up to 20508 MB in k6 (240-420 KB each, measured), close to or above the 20000 MB" in flagged


def test_users_carried_many_a_vu_are_judged_at_their_own_measured_cost():
    # 1,000 users a VU (USERS_PER_VU=auto from 2,000 users): 50-70 KB a user, not 240-420.
    assert design.refusals(cell(VUS="100000", USERS_PER_VU="auto"), {**MACHINE, "mem_available_mb": 20000}) == []
    assert design.refusals(cell(VUS="500000", USERS_PER_VU="auto"), {**MACHINE, "mem_available_mb": 20000}) == [
        "500000 VUs need at least 24414 MB in k6 (50-70 KB each, measured), more than the 20000 MB available"]
    flagged = " | ".join(design.design_warnings(cell(VUS="250000", USERS_PER_VU="1000", K6_INSTANCES="auto"), MACHINE))
    assert "250000 VUs may need up to 17090 MB in k6 (50-70 KB each, measured)" in flagged
    # A VU per user keeps the VU's cost.
    assert design.refusals(cell(VUS="100000", USERS_PER_VU="1"), {**MACHINE, "mem_available_mb": 20000}) != []


def test_the_file_limits_a_cell_recorded(tmp_path):
    assert design.file_limits(tmp_path) == {}
    (tmp_path / "file-limits.tsv").write_text("k6\t300\ntarget\t20000\t57\n")
    assert design.file_limits(tmp_path) == {"k6_nofile": 300, "target_nofile": 20000, "target_own_files": 57}


def run_design(*args):
    return subprocess.run([sys.executable, "-m", "ltsuite.design", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "scripts")})


def test_the_command_line_chooses_and_refuses(tmp_path):
    env_file = tmp_path / "cell.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in cell(K6_INSTANCES="auto", VUS="30000", K6_NOFILE="").items()))
    run = run_design("resolve", str(env_file), json.dumps({**MACHINE, "nofile": 20000}))
    assert (run.returncode, run.stdout) == (0, "K6_INSTANCES=2\n")
    run = run_design("refusals", str(env_file), json.dumps({**MACHINE, "mem_available_mb": 4000}))
    assert (run.returncode, run.stdout) == (0, "30000 VUs need at least 7031 MB in k6 (240-420 KB each, measured), "
                                               "more than the 4000 MB available\n")


def test_the_targets_file_bound_allows_the_files_its_jvm_opens_during_the_load():
    # Measured: the JVM may open 600 files and held 57 as the load started; 643 connections.
    cell_ = cell(VUS="800", K6_INSTANCES="auto", K6_NOFILE="", TOMCAT_MAX_CONNECTIONS="2000", TOMCAT_MAX_THREADS="800",
                 DELAY_MS="4000")
    machine = {**MACHINE, "nofile": 600, "target_nofile": 600, "target_own_files": 57}
    predicted = design.predictions(cell_, SYSCTLS, machine)
    assert predicted["predicted_server_conns_peak"] == 644
    row = {"server_conns_peak": 643, "failed_reqs": 0, "fail_no_fd": 0, "http_reqs": 800}
    out = design.prediction_verdict(cell_, SYSCTLS, predicted, row, {}, machine, [])
    assert out["prediction_check"] == "match"
    assert out["prediction_notes"].startswith("bound by the target's open-file limit: 600 files less the 57")
    row["server_conns_peak"] = 600
    assert design.prediction_verdict(cell_, SYSCTLS, predicted, row, {}, machine, [])["prediction_check"] == "mismatch"


def test_a_script_of_ones_own_gets_fail_no_fd_from_k6s_log(tmp_path):
    """Its counters are k6's error codes only (1213 for both), so the log's "too many open files"
    lines leave fail_connect for fail_no_fd; the suite's own scenarios count fail_no_fd."""
    from ltsuite.cellfiles import Summary
    from ltsuite.row import Cell, failed_for_files

    cell_dir = tmp_path / "cell"
    cell_dir.mkdir()
    line = ('time="2026-11-24T11:44:31Z" level=warning msg="Request Failed" error="Get \\"http://198.18.0.1:8080/'
            'hello\\": dial tcp 198.18.0.1:8080: socket: too many open files"\n')
    (cell_dir / "k6.log").write_text(line * 3 + "level=warning msg=\"Request Failed\" error=\"dial: i/o timeout\"\n")
    (cell_dir / "k6-2.log").write_text(line)
    cell = Cell.__new__(Cell)
    object.__setattr__(cell, "dir", cell_dir)
    counter = {"type": "counter", "values": {"count": 5}}
    own = Summary({"fail_connect": counter})
    assert failed_for_files(cell, own) == {"fail_no_fd": 4, "fail_connect": 1}
    suites = Summary({"fail_connect": counter, "fail_no_fd": {"type": "counter", "values": {"count": 2}}})
    assert failed_for_files(cell, suites) == {"fail_no_fd": 2, "fail_connect": 5}


@pytest.mark.parametrize("vus,instances,cpus,expected", [
    # One process: the release of created VUs only (10,000 per core a second), twice, + 0.5 s.
    (2, 1, 2, 1000), (1000, 1, 2, 1000), (10000, 1, 2, 2000), (15000, 1, 2, 2000),
    # Several: creating them too (850 per core a second, every process on the same cores).
    (30000, 2, 2, 39000), (400, 2, 2, 2000), (30000, 2, 4, 20000)])
def test_an_automatic_burst_lead_covers_starting_the_cells_vus_on_its_cores(vus, instances, cpus, expected):
    assert rules.burst_lead_ms(vus, instances, cpus) == expected


def test_auto_knobs_resolve_to_the_values_a_cell_records():
    auto = cell(K6_INSTANCES="auto", K6_NOFILE="", VUS="30000", BURST_LEAD_MS="auto")
    assert design.resolved(auto, MACHINE) == {"K6_INSTANCES": "2", "BURST_LEAD_MS": "39000"}
    # The lead follows the processes chosen, and a number stays as it is.
    assert design.resolved(cell(K6_INSTANCES="1", VUS="30000", BURST_LEAD_MS="auto"), MACHINE) == {"BURST_LEAD_MS": "4000"}
    assert design.resolved(cell(), MACHINE) == {}
    assert design.burst_lead(cell(BURST_LEAD_MS="2500"), MACHINE) == 2500


def test_a_burst_too_short_for_its_automatic_lead_is_warned_of():
    warnings = design.design_warnings(cell(K6_INSTANCES="auto", K6_NOFILE="", VUS="30000", BURST_LEAD_MS="auto",
                                           DURATION="30s", DELAY_MS="1000"), MACHINE)
    assert any(w.startswith("DURATION=30s less BURST_LEAD_MS=39000 (auto), plus GRACEFUL_STOP=5s") for w in warnings)


def test_the_command_line_resolves_the_auto_knobs(tmp_path):
    env_file = tmp_path / "cell.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in
                                cell(K6_INSTANCES="auto", VUS="30000", K6_NOFILE="", BURST_LEAD_MS="auto").items()))
    run = run_design("resolve", str(env_file), json.dumps(MACHINE))
    assert (run.returncode, run.stdout) == (0, "K6_INSTANCES=2\nBURST_LEAD_MS=39000\n")
