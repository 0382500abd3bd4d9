"""The handshakes of a burst over HTTPS on the server's cores (ltsuite.tlsburst), over the recorded
cells of run 20261129-012252-burst-tls (200 users at once, one request each, TARGET_TLS=0 and 1)
and run 20261129-012916-burst-warm (the same after WARMUP=5s), with the calibration
results/tls-calibration-20261129-010135 copied beside them."""
import json
from pathlib import Path

from ltsuite import tlsburst
from ltsuite.cellfiles import read_cell_env, read_sysctls

FIXTURES = Path(__file__).parent / "fixtures"


def cell(name):
    """(env, sysctls, calibration, recorded row) of a recorded cell."""
    d = FIXTURES / name
    return (read_cell_env(d / "cell.env"), read_sysctls(d / "sysctls.tsv"),
            tlsburst.read_calibration(d / tlsburst.CALIBRATION_FILE), json.loads((d / "row.json").read_text()))


def test_the_calibration_gives_each_key_s_server_cpu_and_names_its_run(tmp_path):
    cal = tlsburst.read_calibration(FIXTURES / "tls-burst-cold" / tlsburst.CALIBRATION_FILE)
    assert cal.cpu_ms == {"ec": 3.443, "rsa": 3.522}
    assert cal.source == "results/tls-calibration-20261129-010135/calibration.tsv"
    assert tlsburst.read_calibration(tmp_path / "none.tsv") is None
    (tmp_path / "empty.tsv").write_text("key\thandshakes\n")
    assert tlsburst.read_calibration(tmp_path / "empty.tsv") is None


def test_a_burst_of_200_new_connections_ends_its_handshakes_after_200_x_cost_over_2_cores():
    env, sysctls, cal, _ = cell("tls-burst-cold")
    got = tlsburst.predictions(env, sysctls, 2, cal)
    # A calibration without k6's half: the server's cost alone; none of them past the 10 s timeout.
    assert got == {"tls_handshake_cpu_ms": 3.443, "tls_client_cpu_ms": None, "predicted_tls_handshakes_end_ms": 344.3,
                   "predicted_tls_accept_queue_peak": 0, "predicted_tls_failed": 0,
                   "predicted_tls_failure_wait_ms": None}
    # The RSA key's cost; one core; fewer threads than cores.
    assert tlsburst.predictions({**env, "TLS_KEY": "rsa"}, sysctls, 2, cal)["predicted_tls_handshakes_end_ms"] == 352.2
    assert tlsburst.predictions(env, sysctls, 1, cal)["predicted_tls_handshakes_end_ms"] == 688.6
    assert tlsburst.predictions({**env, "TOMCAT_MAX_THREADS": "1"}, sysctls, 4, cal)[
        "predicted_tls_handshakes_end_ms"] == 688.6


def test_users_past_max_connections_wait_in_the_accept_queue_up_to_the_backlog():
    env, sysctls, cal, _ = cell("tls-burst-cold")
    few = {**env, "TOMCAT_MAX_CONNECTIONS": "150"}
    assert tlsburst.predictions(few, sysctls, 2, cal)["predicted_tls_accept_queue_peak"] == 50
    # More users than the server holds (150 + 10 + 1): outside the rule.
    small = {**env, "TOMCAT_MAX_CONNECTIONS": "150", "TOMCAT_ACCEPT_COUNT": "10"}
    assert tlsburst.predictions(small, sysctls, 2, cal)["predicted_tls_handshakes_end_ms"] is None


def test_nothing_is_predicted_outside_the_rule():
    env, sysctls, cal, _ = cell("tls-burst-cold")
    empty = dict(tlsburst.EMPTY)
    plain, _, _, _ = cell("tls-burst-plain")
    assert tlsburst.predictions(plain, sysctls, 2, cal) == empty
    # nginx's handshakes: not the target's calibrated cost.
    assert tlsburst.predictions({**env, "TARGET_TLS": "0", "PROXY": "nginx", "PROXY_TLS": "1"}, sysctls, 2, cal) == empty
    assert tlsburst.predictions(env, sysctls, 2, None) == empty
    # Several requests a user: later handshakes are not the burst's.
    more = tlsburst.predictions({**env, "REQUESTS_PER_VU": "5"}, sysctls, 2, cal)
    assert more == {**empty, "tls_handshake_cpu_ms": 3.443}


def test_the_recorded_bursts_took_about_three_times_the_server_s_cost_and_say_so():
    for name, end, held in (("tls-burst-cold", 1112.2, "11.12"), ("tls-burst-warm", 950.4, "9.5")):
        _, _, _, row = cell(name)
        assert row["tls_handshakes_end_ms"] == end
        assert row["predicted_tls_handshakes_end_ms"] == 344.3
        assert row["prediction_check"] == "mismatch"
        assert f"tls_handshakes_end_ms {end} where 344.3 was predicted" in row["prediction_notes"]
        assert f"held the 2 cores {held} ms" in row["prediction_notes"]
        assert "users' half of each handshake" in row["prediction_notes"]
    _, _, _, plain = cell("tls-burst-plain")
    assert plain["tls_handshakes_end_ms"] is None and plain["predicted_tls_handshakes_end_ms"] is None


def test_a_burst_within_the_tolerance_matches_and_keeps_an_earlier_mismatch():
    predicted = {"tls_handshake_cpu_ms": 3.443, "predicted_tls_handshakes_end_ms": 344.3,
                 "predicted_tls_accept_queue_peak": 0}
    row = {"tls_handshakes_end_ms": 400.0, "accept_queue_peak": 0, "tls_handshakes": 200,
           "prediction_check": None, "prediction_notes": None}
    assert tlsburst.verdict({}, row, predicted, 2) == {"prediction_check": "match"}
    earlier = {**row, "prediction_check": "mismatch", "prediction_notes": "x"}
    assert tlsburst.verdict({}, earlier, predicted, 2) == {"prediction_check": "mismatch"}
    # 25 % of 344.3 and 50 ms: 480.4 is the most that matches.
    assert tlsburst.verdict({}, {**row, "tls_handshakes_end_ms": 480.3}, predicted, 2) == {"prediction_check": "match"}
    late = tlsburst.verdict({}, {**row, "tls_handshakes_end_ms": 481.0}, predicted, 2)
    assert late["prediction_check"] == "mismatch"
    queued = tlsburst.verdict({}, {**row, "accept_queue_peak": 3}, predicted, 2)
    assert queued["prediction_check"] == "mismatch"
    assert "accept_queue_peak 3 where 0 was predicted" in queued["prediction_notes"]
    assert tlsburst.verdict({}, {"tls_handshakes_end_ms": None}, predicted, 2) == {}


def test_a_mismatch_names_k6_s_and_the_machine_s_cpu_while_the_users_were_released():
    # Run 20261129-043151-tls-burst's figures: 200 handshakes ended 1058 ms after the first request.
    predicted = {"tls_handshake_cpu_ms": 3.224, "predicted_tls_handshakes_end_ms": 322.4,
                 "predicted_tls_accept_queue_peak": 0}
    row = {"tls_handshakes_end_ms": 1058, "accept_queue_peak": 0, "tls_handshakes": 200,
           "k6_release_cpu_pct": 59.2, "machine_release_busy_pct": 95.2}
    notes = tlsburst.verdict({}, row, predicted, 2)["prediction_notes"]
    assert notes.startswith("tls_handshakes_end_ms 1058 where 322.4 was predicted (within 25 % and 50 ms)")
    assert "held the 2 cores 10.58 ms" in notes and "3.3 times the server's calibrated 3.224 ms" in notes
    assert "k6 used 59.2 % of a core and the machine was 95.2 % busy" in notes


# Run 20261129-073443-tls-burst: 200 users at once (VUS=200, tests/fixtures/tls-burst.matrix), with
# REQUEST_TIMEOUT 10s (tls-burst-shared) and 300ms (tls-burst-timeout), calibration
# results/tls-calibration-20261129-072700 (server 3.043 ms, k6 1.155 ms a handshake).


def test_the_calibration_gives_k6_s_cpu_per_new_tls_connection_beside_the_server_s():
    cal = tlsburst.read_calibration(FIXTURES / "tls-burst-shared" / tlsburst.CALIBRATION_FILE)
    assert cal.cpu_ms == {"ec": 3.043} and cal.client_cpu_ms == {"ec": 1.155}
    assert cal.source == "results/tls-calibration-20261129-072700/calibration.tsv"
    # An older calibration, without the client's columns: no client figure.
    assert tlsburst.read_calibration(FIXTURES / "tls-burst-cold" / tlsburst.CALIBRATION_FILE).client_cpu_ms == {}


def test_k6_on_the_same_cores_adds_its_half_of_every_handshake_to_the_burst():
    env, sysctls, cal, _ = cell("tls-burst-shared")
    got = tlsburst.predictions(env, sysctls, 2, cal)
    # 200 x (3.043 + 1.155) / 2 cores, not 200 x 3.043 / 2 = 304.3.
    assert got == {"tls_handshake_cpu_ms": 3.043, "tls_client_cpu_ms": 1.155, "predicted_tls_handshakes_end_ms": 419.8,
                   "predicted_tls_accept_queue_peak": 0, "predicted_tls_failed": 0,
                   "predicted_tls_failure_wait_ms": None}
    # k6 elsewhere (a TARGET_URL): the server's cores carry the server's half alone.
    away = tlsburst.predictions({**env, "TARGET_URL": "https://10.0.0.1:8443"}, sysctls, 2, cal)
    assert away["predicted_tls_handshakes_end_ms"] == 304.3 and away["tls_client_cpu_ms"] is None
    # One worker thread: the server's half on one core is the longer, 200 x 3.043.
    one = tlsburst.predictions({**env, "TOMCAT_MAX_THREADS": "1"}, sysctls, 2, cal)
    assert one["predicted_tls_handshakes_end_ms"] == 608.6


def test_users_whose_handshake_wave_ends_past_the_request_timeout_are_predicted_to_fail():
    env, sysctls, cal, _ = cell("tls-burst-timeout")
    assert env["REQUEST_TIMEOUT"] == "300ms"
    got = tlsburst.predictions(env, sysctls, 2, cal)
    # 200 threads: one wave of 200 handshakes sharing the cores, ending after 419.8 ms > 300 ms: all fail.
    assert got["predicted_tls_failed"] == 200 and got["predicted_tls_failure_wait_ms"] == 300
    # 50 threads: waves of 50, each 50 x 4.198 / 2 = 104.95 ms; two end within 250 ms, 100 users answered.
    assert tlsburst.predictions({**env, "TOMCAT_MAX_THREADS": "50", "REQUEST_TIMEOUT": "250ms"}, sysctls, 2, cal)[
        "predicted_tls_failed"] == 100
    # ... and all four within 1 s.
    assert tlsburst.predictions({**env, "TOMCAT_MAX_THREADS": "50", "REQUEST_TIMEOUT": "1s"}, sysctls, 2, cal)[
        "predicted_tls_failed"] == 0
    # One thread: a handshake at a time, 3.043 ms each on one core: 98 end within 300 ms.
    assert tlsburst.failures(200, 1, 2, 3.043, 1.155, 300) == 102
    assert tlsburst.failures(200, 200, 2, 3.043, 1.155, 420) == 0


def test_the_recorded_timeouts_match_the_failure_prediction():
    _, _, _, row = cell("tls-burst-timeout")
    assert row["fail_timeout"] == 200 and row["tls_handshakes"] == 0
    assert row["predicted_tls_failed"] == 200 and row["failed_wait_med_ms"] == 303.385
    assert row["prediction_check"] == "match"
    predicted = {k: row[k] for k in tlsburst.EMPTY}
    # Fewer failures than predicted, or failures that waited well past the timeout: a mismatch.
    fewer = tlsburst.verdict({"REQUEST_TIMEOUT": "300ms"}, {**row, "fail_timeout": 150}, predicted, 2)
    assert fewer["prediction_check"] == "mismatch"
    assert fewer["prediction_notes"].startswith("fail_timeout + fail_tls 150 where 200 was predicted")
    slow = tlsburst.verdict({"REQUEST_TIMEOUT": "300ms"}, {**row, "failed_wait_med_ms": 500.0}, predicted, 2)
    assert "failed_wait_med_ms 500 where 300 was predicted" in slow["prediction_notes"]


def test_the_trace_splits_the_burst_s_cpu_into_the_target_s_k6_s_and_the_rest():
    d = FIXTURES / "tls-burst-shared"
    _, _, _, row = cell("tls-burst-shared")
    first = json.loads((d / "summary.json").read_text())["metrics"]["lt_vu_first_request"]
    first = first.get("values", first)["min"]
    got = tlsburst.trace_cpu(d, first, row["tls_handshakes_end_ms"], row["tls_handshakes"], 2)
    assert got == {"tls_k6_cpu_ms_per_handshake": 1.25, "tls_target_cpu_ms_per_handshake": 5.85,
                   "tls_machine_cpu_ms_per_handshake": 14.03}
    assert {k: row[k] for k in got} == got
    # A window the trace does not cover: nothing.
    assert tlsburst.trace_cpu(d, first + 60_000, row["tls_handshakes_end_ms"], 200, 2) == dict(tlsburst.TRACE_EMPTY)
    assert tlsburst.trace_cpu(d, None, 1000, 200, 2) == dict(tlsburst.TRACE_EMPTY)


def test_the_shared_burst_s_mismatch_says_where_the_cores_went():
    _, _, _, row = cell("tls-burst-shared")
    assert row["tls_handshakes_end_ms"] == 1355.3 and row["predicted_tls_handshakes_end_ms"] == 419.8
    assert row["prediction_check"] == "mismatch"
    notes = row["prediction_notes"]
    assert "tls_handshakes_end_ms 1355.3 where 419.8 was predicted" in notes
    assert "3.2 times the calibrated 3.043 ms of the server's and 1.155 ms of k6's" in notes
    assert ("busy 14.03 ms a handshake: the target 5.85 ms (1.9 times its calibrated 3.043 ms), k6 1.25 ms "
            "(calibrated 1.155 ms), other processes 6.93 ms") in notes


def test_when_most_handshakes_never_ended_their_end_is_not_checked_and_the_failures_say_why():
    # Run 20261129-073525-tls-burst, TOMCAT_MAX_THREADS=50, REQUEST_TIMEOUT=250ms: waves of 50 predicted
    # 100 users answered; 1 handshake of 200 ended (205.2 ms after the first request) and all 200 timed out.
    env, sysctls, cal, _ = cell("tls-burst-timeout")
    env = {**env, "TOMCAT_MAX_THREADS": "50", "REQUEST_TIMEOUT": "250ms"}
    predicted = tlsburst.predictions(env, sysctls, 2, cal)
    assert predicted["predicted_tls_failed"] == 100
    row = {"tls_handshakes_end_ms": 205.2, "tls_handshakes": 1, "new_conns": 200, "fail_timeout": 200, "fail_tls": 0,
           "failed_wait_med_ms": 257.397, "accept_queue_peak": 0}
    got = tlsburst.verdict(env, row, predicted, 2)
    assert got["prediction_check"] == "mismatch"
    assert got["prediction_notes"].startswith("fail_timeout + fail_tls 200 where 100 was predicted: ")
    assert "tls_handshakes_end_ms" not in got["prediction_notes"].split(":")[0]
    assert "1 of the 200 connections' handshakes ended, the last 205.2 ms after the first request, with " \
           "REQUEST_TIMEOUT 250 ms" in got["prediction_notes"]
    assert not tlsburst.all_ended(row) and tlsburst.all_ended({"tls_handshakes": 200, "new_conns": 200})


def test_nginx_s_handshakes_are_predicted_from_its_own_calibrated_cost_on_its_one_worker():
    # Run 20261129-075448-tls-burst: the same burst at nginx (PROXY=nginx PROXY_TLS=1), calibration
    # results/tls-calibration-20261129-073959 (nginx 0.366 ms, k6 1.29 ms a handshake).
    env, sysctls, cal, row = cell("tls-burst-nginx")
    assert cal.nginx_cpu_ms == {"ec": 0.366} and cal.client_cpu_ms == {"ec": 1.29}
    got = tlsburst.predictions(env, sysctls, 2, cal)
    # max(200 x 0.366 on nginx's one worker, 200 x (0.366 + 1.29) / 2 cores).
    assert got == {"tls_handshake_cpu_ms": 0.366, "tls_client_cpu_ms": 1.29, "predicted_tls_handshakes_end_ms": 165.6,
                   "predicted_tls_accept_queue_peak": None, "predicted_tls_failed": 0,
                   "predicted_tls_failure_wait_ms": None}
    # k6 elsewhere: nginx's one worker alone, 200 x 0.366.
    assert tlsburst.predictions({**env, "TARGET_URL": "https://x"}, sysctls, 2, cal)[
        "predicted_tls_handshakes_end_ms"] == 73.2
    # All handshakes interleave in one event loop: past a 50 ms timeout, every user fails.
    assert tlsburst.predictions({**env, "REQUEST_TIMEOUT": "50ms"}, sysctls, 2, cal)["predicted_tls_failed"] == 200
    # More users than half of nginx's worker_connections: outside the rule.
    assert tlsburst.predictions({**env, "PROXY_WORKER_CONNECTIONS": "300"}, sysctls, 2, cal)[
        "predicted_tls_handshakes_end_ms"] is None
    # A calibration without nginx's column: its cost unknown, nothing predicted.
    old = tlsburst.read_calibration(FIXTURES / "tls-burst-shared" / tlsburst.CALIBRATION_FILE)
    assert tlsburst.predictions(env, sysctls, 2, old)["predicted_tls_handshakes_end_ms"] is None


def test_the_recorded_nginx_burst_s_mismatch_names_the_target_behind_it():
    _, _, _, row = cell("tls-burst-nginx")
    assert row["tls_handshakes_end_ms"] == 296.9 and row["prediction_check"] == "mismatch"
    notes = row["prediction_notes"]
    assert "1.8 times the calibrated 0.366 ms of nginx's and 1.29 ms of k6's" in notes
    assert "the target's JVM behind nginx 1.45 ms" in notes and "nginx and every other process 0.4 ms" in notes
