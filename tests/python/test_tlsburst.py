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
    assert got == {"tls_handshake_cpu_ms": 3.443, "predicted_tls_handshakes_end_ms": 344.3,
                   "predicted_tls_accept_queue_peak": 0}
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
