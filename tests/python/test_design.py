"""ltsuite.design: the checks before a run, the findings after it, the predictions and their
verdict, from fixed inputs (the cases tests/unit/design.bats checked on design.jq: cut-off
iterations, late starts, SYN cookies, the port wall, waves)."""
import json
import subprocess
import sys

import pytest

from ltsuite import design
from ltsuite.cellfiles import read_cell_env, read_sysctls
from ltsuite.design import Finding

from conftest import ROOT

#: A cell as the runner resolves it (every value a string).
BASE = {"SCENARIO": "spike", "VUS": "11", "DURATION": "1s", "DELAY_MS": "30000", "REQUEST_TIMEOUT": "10s",
        "GRACEFUL_STOP": "15s", "THINK_TIME_MS": "0", "TOMCAT_MAX_THREADS": "1", "TOMCAT_MAX_CONNECTIONS": "1",
        "TOMCAT_ACCEPT_COUNT": "1", "REQUESTS_PER_VU": "1", "CONNECTION_REUSE": "1", "START_SPREAD_LIMIT_MS": "1000",
        "STAGES": "5s:10,10s:40,5s:0"}
SYSCTLS = {"server": {"net.core.somaxconn": "4096"},
           "client": {"net.ipv4.tcp_syn_retries": "4", "net.ipv4.tcp_syn_linear_timeouts": "0"}}
MACHINE = {"cpus": 2, "nofile": 20000, "mem_available_mb": 20000, "vu_start_rate": 1600}


def env(**patch):
    return {**BASE, **patch}


def verdict(row, deltas=None, cell=None, sysctls=SYSCTLS, findings=()):
    cell = cell or BASE
    predicted = design.predictions(cell, sysctls, MACHINE)
    return design.prediction_verdict(cell, sysctls, predicted, row, deltas or {}, MACHINE, list(findings))


def test_a_graceful_stop_shorter_than_a_request_may_take_is_warned_about():
    warnings = design.design_warnings(env(GRACEFUL_STOP="5s"), MACHINE)
    assert any(w.startswith("GRACEFUL_STOP=5s is shorter than an iteration may take (10000 ms") for w in warnings)
    assert [w for w in design.design_warnings(BASE, MACHINE) if "GRACEFUL_STOP" in w] == []


def test_a_delay_as_long_as_the_timeout_every_request_times_out():
    assert "DELAY_MS=30000 is not shorter than REQUEST_TIMEOUT=10s: every request times out before the server answers" \
        in design.design_warnings(BASE, MACHINE)
    assert not any("not shorter than REQUEST_TIMEOUT" in w for w in design.design_warnings(env(DELAY_MS="100"), MACHINE))


def test_more_vus_than_k6_starts_within_duration_at_the_measured_rate():
    warnings = design.design_warnings(env(VUS="10000", DELAY_MS="5000", REQUEST_TIMEOUT="60s", GRACEFUL_STOP="70s"), MACHINE)
    assert any("k6 needs about 6.3 s to start 10000 VUs here (K6_VU_START_RATE=1600/s) but DURATION=1s" in w for w in warnings)
    assert not any("k6 needs about" in w for w in design.design_warnings(env(VUS="1000", DURATION="10s"), MACHINE))


def test_more_vus_than_ports_or_open_files():
    warnings = " | ".join(design.design_warnings(env(VUS="30000"), MACHINE))
    assert "one client address has 28232 ephemeral ports (32768-60999)" in warnings
    assert "a process may open at most 20000 (ulimit -Hn" in warnings
    wide = " | ".join(design.design_warnings(env(VUS="30000", CLIENT_IP_LOCAL_PORT_RANGE="1024-65535"), MACHINE))
    assert "ephemeral ports" not in wide


def test_late_start_vus_that_never_sent_a_request_with_the_numbers():
    notes = [f.note for f in design.design_findings(env(VUS="10000"), {
        "http_reqs": 1636, "vus_started": 1636, "first_request_after_s": 6.1, "first_request_spread_ms": 3900}, MACHINE)]
    assert ("only 1636 of 10000 VUs sent a request: k6 needed 6.1 s from its start to the first request and spread "
            "the first requests over 3.9 s, and DURATION is 1s") in notes
    assert ("the first requests of 1636 VUs were spread over 3.9 s (START_SPREAD_LIMIT_MS=1000): the users did not "
            "arrive at once") in notes


def test_cut_off_iterations_and_no_request_at_all():
    found = design.design_findings(env(GRACEFUL_STOP="5s"), {
        "http_reqs": 0, "vus_started": 11, "iterations_started": 11, "iterations_interrupted": 11,
        "first_request_spread_ms": 5}, MACHINE)
    assert [f.note for f in found] == ["no request completed (http_reqs is 0)",
                                       "11 of 11 iterations were interrupted by GRACEFUL_STOP=5s before REQUEST_TIMEOUT=10s"]
    assert [f.flag for f in found] == ["none", "cut"]


def test_a_saturated_generator():
    found = design.design_findings(BASE, {"http_reqs": 10, "vus_started": 11, "k6_cpu_saturated_s": 5,
                                          "k6_cpu_peak_pct": 190.4}, MACHINE)
    assert found == [Finding("gen", "k6 used 190 % CPU of 2 cores for 5 s: the generator, not the target, set the pace")]


def test_a_generator_short_of_cpu_as_it_releases_a_burst_is_the_one_reason_for_its_spread():
    # Measured: 30,000 users at once on 2 cores (seed003-30k-seed-scale) arrived over 7.77 s.
    found = design.design_findings(env(VUS="30000"), {"http_reqs": 30000, "vus_started": 30000,
                                                      "first_request_spread_ms": 7770, "k6_cpu_saturated_s": 3,
                                                      "k6_cpu_peak_pct": 199}, MACHINE)
    assert found == [Finding("late", "the first requests of 30000 VUs were spread over 7.77 s (START_SPREAD_LIMIT_MS="
                                     "1000), k6 used 199 % CPU of 2 cores for 3 s to release them: the users did not "
                                     "arrive at once")]


def test_no_finding_for_a_cell_that_ran_as_designed():
    assert design.design_findings(BASE, {"http_reqs": 10, "vus_started": 11, "iterations_started": 11,
                                         "iterations_interrupted": 0, "first_request_spread_ms": 20,
                                         "k6_cpu_saturated_s": 0}, MACHINE) == []


def test_predictions_of_a_held_burst_capacity_failed_users_syns_per_failed_user():
    p = design.predictions(BASE, SYSCTLS, MACHINE)
    # capacity 1 + 1 + 1 = 3; 8 fail; SYNs at 0 1 3 7 before the 10 s timeout.
    assert [p["predicted_server_conns_peak"], p["predicted_failed_users"], p["predicted_listen_overflows"],
            p["predicted_syn_retrans"], p["predicted_lat_max_ms"]] == [3, 8, 32, 24, 10000]


def test_somaxconn_caps_the_backlog_in_the_predicted_capacity():
    sysctls = {"server": {"net.core.somaxconn": "128"}, "client": {"net.ipv4.tcp_syn_retries": "6"}}
    cell = env(VUS="3000", TOMCAT_MAX_CONNECTIONS="8192", TOMCAT_ACCEPT_COUNT="10000")
    assert design.predictions(cell, sysctls, MACHINE)["predicted_server_conns_peak"] == 3000
    cell = env(VUS="3000", TOMCAT_MAX_CONNECTIONS="100", TOMCAT_ACCEPT_COUNT="10000")
    assert design.predictions(cell, sysctls, MACHINE)["predicted_server_conns_peak"] == 229


def test_no_overflow_prediction_when_connections_are_released_before_the_failed_users_stop_trying():
    p = design.predictions(env(DELAY_MS="2000"), SYSCTLS, MACHINE)
    assert [p["predicted_server_conns_peak"], p["predicted_failed_users"], p["predicted_listen_overflows"]] == [3, None, None]


def test_verdict_exact_counts_match_and_the_queue_race_may_add_one_user_per_extra_cpu():
    assert verdict({"server_conns_peak": 3, "listen_overflows": 32, "syn_retrans": 24}) == {
        "prediction_check": "match", "prediction_notes": None, "predicted_failed_users_from": None}
    assert verdict({"server_conns_peak": 4, "listen_overflows": 28, "syn_retrans": 21})["prediction_check"] == "match"
    assert verdict({"server_conns_peak": 5, "listen_overflows": 24, "syn_retrans": 18})["prediction_check"] == "mismatch"


def test_verdict_syn_cookies_explain_a_mismatch():
    notes = verdict({"server_conns_peak": 3, "listen_overflows": 40, "syn_retrans": 5},
                    {"server": {"TcpExtTCPReqQFullDoCookies": 3, "TcpExtSyncookiesRecv": 24}})["prediction_notes"]
    assert notes.startswith("listen_overflows 40 where 32 was predicted; syn_retrans 5 where 24 was predicted: the "
                            "server sent SYN cookies (TCPReqQFullDoCookies 3, SyncookiesRecv 24) because its SYN queue "
                            "counted as full")


def test_verdict_late_connects_explain_extra_overflows_otherwise_nothing_does():
    notes = verdict({"server_conns_peak": 3, "listen_overflows": 35, "syn_retrans": 27})["prediction_notes"]
    assert "3 more overflows and as many more SYN retransmits than predicted" in notes
    notes = verdict({"server_conns_peak": 3, "listen_overflows": 30, "syn_retrans": 24})["prediction_notes"]
    assert notes.endswith("nothing in the cell's counters explains the difference")


def test_verdict_empty_where_no_rule_applies():
    predicted = design.predictions(BASE, {}, MACHINE)
    assert design.prediction_verdict(BASE, SYSCTLS, predicted, {"server_conns_peak": 3}, {}, MACHINE, []) == {
        "prediction_check": None, "prediction_notes": None, "predicted_failed_users_from": None}


def test_verdict_final_acks_that_met_a_full_queue_explain_a_mismatch():
    notes = verdict({"server_conns_peak": 3, "listen_overflows": 94, "syn_retrans": 9},
                    {"server": {"TcpExtTCPSynRetrans": 21}})["prediction_notes"]
    assert "the server retransmitted SYN-ACKs 21 times (server TCPSynRetrans)" in notes
    assert "nothing in the cell's counters" not in notes


def test_verdict_failed_users_are_the_dial_failures_when_connect_gives_up_before_the_timeout():
    cell = env(VUS="10000", DELAY_MS="45000", REQUEST_TIMEOUT="60s", TOMCAT_MAX_THREADS="1000",
               TOMCAT_MAX_CONNECTIONS="8192", TOMCAT_ACCEPT_COUNT="100", SCENARIO="burst", DURATION="75s")
    # connect() gives up at 31 s (4 retries, linear 0), before the 60 s timeout.
    row = {"server_conns_peak": 8293, "fail_connect": 1707, "failed_reqs": 9000, "listen_overflows": 8535,
           "syn_retrans": 6828}
    assert verdict(row, cell=cell) == {"prediction_check": "match", "prediction_notes": None,
                                       "predicted_failed_users_from": "fail_connect"}
    notes = verdict({**row, "fail_connect": 1234}, cell=cell)["prediction_notes"]
    assert "failed users (fail_connect) 1234 where 1707 was predicted" in notes


def test_a_burst_against_a_fast_endpoint_predicts_no_connection_peak():
    assert design.predictions(env(SCENARIO="burst", DELAY_MS="0"), SYSCTLS, MACHINE)["predicted_server_conns_peak"] is None
    assert design.predictions(env(SCENARIO="burst", DELAY_MS="5000"), SYSCTLS, MACHINE)["predicted_server_conns_peak"] == 3


def test_the_port_wall_ephemeral_ports_times_client_addresses_cap_the_connections():
    sysctls = {"server": {"net.core.somaxconn": "4096"},
               "client": {"net.ipv4.tcp_syn_retries": "6", "net.ipv4.tcp_syn_linear_timeouts": "4",
                          "net.ipv4.ip_local_port_range": "60000\t60999"}}
    cell = env(SCENARIO="burst", VUS="1500", DELAY_MS="15000", REQUEST_TIMEOUT="30s", TOMCAT_MAX_THREADS="2000",
               TOMCAT_MAX_CONNECTIONS="8192", TOMCAT_ACCEPT_COUNT="2000", DURATION="40s")
    p = design.predictions(cell, sysctls, MACHINE)
    assert [p["predicted_server_conns_peak"], p["predicted_failed_users"], p["predicted_listen_overflows"]] == [1000, 500, 0]
    assert design.predictions({**cell, "CLIENT_ADDRESSES": "2"}, sysctls, MACHINE)["predicted_server_conns_peak"] == 1500
    # Three ports still in TIME-WAIT from the health checks: a match.
    row = {"server_conns_peak": 997, "fail_connect": 503, "failed_reqs": 503, "listen_overflows": 0, "syn_retrans": 0}
    assert verdict(row, cell=cell, sysctls=sysctls)["prediction_check"] == "match"
    row = {"server_conns_peak": 700, "fail_connect": 800, "failed_reqs": 800, "listen_overflows": 0, "syn_retrans": 0,
           "fail_no_local_port": 800}
    assert ("800 requests failed with 'cannot assign requested address': the client ran out of ephemeral ports (1000"
            in verdict(row, cell=cell, sysctls=sysctls)["prediction_notes"])


def test_a_script_of_ones_own_its_vus_and_executors_from_k6_inspect():
    assert design.script_facts({"scenarios": {"default": {"executor": "constant-vus", "vus": 16, "duration": "5s",
                                                          "startTime": None}}}) == {"vus": 16, "at_once": True, "load_ms": 5000}
    assert design.script_facts({"scenarios": {"r": {"executor": "ramping-vus", "startVUs": 0, "stages": [
        {"duration": "5s", "target": 30}, {"duration": "5s", "target": 0}]}}}) == {"vus": 30, "at_once": False, "load_ms": None}
    assert design.script_facts({"scenarios": {"o": {"executor": "constant-arrival-rate", "rate": 10}}}) == {
        "vus": None, "at_once": False, "load_ms": None}


def test_a_script_of_ones_own_its_graceful_stops_as_set_or_as_k6s_defaults():
    # k6 inspect shows null for an option the script leaves at k6's default (tests/python/fixtures/
    # k6-inspect/ramping-vus.json); ramp-down-cut.js sets gracefulRampDown '1s' alone.
    fixtures = ROOT / "tests" / "python" / "fixtures"
    inspected = {name: json.loads(path.read_text()) for name, path in (
        ("ramping", fixtures / "k6-inspect" / "ramping-vus.json"), ("own", fixtures / "ramp-down-cut" / "k6-script.json"),
        ("constant", fixtures / "k6-inspect" / "constant-vus.json"), ("two", fixtures / "k6-inspect" / "two-scenarios.json"))}
    assert design.script_stops(inspected["ramping"]) == "k6's default gracefulRampDown 30s and k6's default gracefulStop 30s"
    assert design.script_stops(inspected["own"]) == "gracefulRampDown 1s and k6's default gracefulStop 30s"
    assert design.script_stops(inspected["constant"]) == "k6's default gracefulStop 30s"
    assert design.script_stops(inspected["two"]).startswith("scenario '")
    assert design.script_stops(None) == ""
    assert design.with_script({"SCENARIO": "x.js"}, inspected["own"])["script_stops"] == design.script_stops(inspected["own"])


def test_a_cut_is_the_scripts_own_design_only_when_it_is_a_script_and_its_cut_requests_were_counted():
    row = {"http_reqs": 26, "fail_interrupted": 9, "iterations_started": 26, "iterations_interrupted": 9,
           "vus_started": 12}
    own = {"SCENARIO": "own.js", "script": {"vus": 12, "at_once": False, "load_ms": None},
           "script_stops": "gracefulRampDown 1s and k6's default gracefulStop 30s"}
    shipped = {"SCENARIO": "ramp", "STAGES": "1s:12,6s:12,1s:0", "GRACEFUL_STOP": "5s", "REQUEST_TIMEOUT": "4s"}
    assert design.design_findings(own, row, MACHINE) == []
    assert [f.note for f in design.design_findings(shipped, row, MACHINE)] == [
        "9 of 26 iterations were interrupted by GRACEFUL_STOP=5s before REQUEST_TIMEOUT=4s"]
    assert [f.note for f in design.design_findings(own, {**row, "fail_interrupted": None}, MACHINE)] == [
        "9 of 26 iterations were interrupted by the script's own graceful stop (gracefulRampDown 1s and k6's default "
        "gracefulStop 30s), and the requests they cut were not counted"]


def test_the_design_checks_apply_to_a_script_of_ones_own_where_its_knobs_are_known():
    cell = design.with_script(BASE, {"scenarios": {"default": {"executor": "constant-vus", "vus": 8000, "duration": "2s"}}})
    assert any("k6 needs about 5 s to start 8000 VUs here (K6_VU_START_RATE=1600/s) but the script's duration is 2 s" in w
               for w in design.design_warnings(cell, MACHINE))
    cell = design.with_script(BASE, {"scenarios": {"default": {"executor": "constant-vus", "vus": 16, "duration": "5s"}}})
    found = design.design_findings(cell, {"http_reqs": 20, "vus_started": 9, "first_request_spread_ms": 2500,
                                          "first_request_after_s": 0.1}, MACHINE)
    assert [f.flag for f in found] == ["late", "late"]


def test_a_burst_is_checked_against_its_duration_less_the_lead():
    burst = {"SCENARIO": "burst", "VUS": "6000", "DELAY_MS": "5000", "REQUEST_TIMEOUT": "160s", "TOMCAT_MAX_THREADS": "200",
             "TOMCAT_MAX_CONNECTIONS": "8192", "DURATION": "175s", "BURST_LEAD_MS": "6000", "GRACEFUL_STOP": "5s",
             "REQUESTS_PER_VU": "1"}
    assert [w for w in design.design_warnings(burst, MACHINE) if "interrupted" in w] == []
    warnings = design.design_warnings({**burst, "DURATION": "60s"}, MACHINE)
    assert any(w.startswith("DURATION=60s less BURST_LEAD_MS=6000, plus GRACEFUL_STOP=5s, leaves 59000 ms, less than "
                            "REQUESTS_PER_VU=1 requests may take (160000 ms each") for w in warnings)


def test_the_command_line_prints_a_cells_warnings_one_a_line(tmp_path):
    cell_env = tmp_path / "cell.env"
    cell_env.write_text("".join(f"{k}={v}\n" for k, v in env(GRACEFUL_STOP="5s", K6_VU_START_RATE="1600").items()))
    run = subprocess.run([sys.executable, "-m", "ltsuite.design", "warnings", str(cell_env), json.dumps(MACHINE), "null"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "scripts")}, check=True)
    assert run.stdout.splitlines() == design.design_warnings(env(GRACEFUL_STOP="5s", K6_VU_START_RATE="1600"), MACHINE)
    assert run.stdout.splitlines()[0].startswith("GRACEFUL_STOP=5s is shorter than an iteration may take")


@pytest.mark.parametrize("stages,vus", [("5s:10,10s:40,5s:0", 40), ("2s:8,3s:8,1s:0", 8)])
def test_a_ramps_designed_vus_are_its_highest_stage_target(stages, vus):
    assert design.designed_vus(env(SCENARIO="ramp", STAGES=stages)) == vus


def test_virtual_threads_serve_every_connection_at_once_in_the_predicted_throughput_and_latency():
    # 12 users kept connected, 4 threads of 2 s: 3 waves (6 s, 2 requests/s); on virtual threads
    # all 12 at once (2 s, 6 requests/s), max-connections 8192 being the bound.
    cell = env(SCENARIO="spike", VUS="12", DELAY_MS="2000", TOMCAT_MAX_THREADS="4", TOMCAT_MAX_CONNECTIONS="8192",
               TOMCAT_ACCEPT_COUNT="100")
    threads = design.predictions(cell, SYSCTLS, MACHINE)
    virtual = design.predictions({**cell, "TOMCAT_VIRTUAL_THREADS": "1"}, SYSCTLS, MACHINE)
    assert [threads["predicted_tps"], threads["predicted_lat_max_ms"]] == [2, 6000]
    assert [virtual["predicted_tps"], virtual["predicted_lat_max_ms"]] == [6, 2000]
    assert design.request_time_ms({**cell, "TOMCAT_VIRTUAL_THREADS": "1"}) == 2300


def test_verdict_a_full_syn_queue_explains_a_mismatch_with_a_round_trip():
    # Seed 001's burst at NET_RTT_MS=100 with SYN cookies off: half-open handshakes held the SYN
    # queue for a round trip each and SYNs were dropped there, not at the accept queue.
    cell = env(NET_RTT_MS="100", TCP_SYNCOOKIES="0")
    notes = verdict({"server_conns_peak": 2, "listen_overflows": 0, "syn_retrans": 60},
                    {"server": {"TcpExtTCPReqQFullDrop": 70}}, cell=cell)["prediction_notes"]
    assert ("the server dropped 70 SYNs because its SYN queue was full (TCPReqQFullDrop, tcp_syncookies=0): "
            "half-open handshakes waited there a round trip each (NET_RTT_MS=100)") in notes
    assert "nothing in the cell's counters" not in notes


# ---- nginx in front: the failure one tier up ----------------------------------------------------

PROXIED = env(SCENARIO="burst", PROXY="nginx", PROXY_CONNECT_TIMEOUT="300ms", PROXY_BACKLOG="511",
              PROXY_WORKER_CONNECTIONS="4096")


def test_behind_nginx_a_held_burst_fails_as_504s_on_the_server_namespaces_syn_schedule():
    p = design.predictions(PROXIED, SYSCTLS, MACHINE)
    # capacity 3 at the server; 8 of nginx's connects find the queue full and send one SYN each
    # within 300 ms; the users' own SYNs reach nginx (no retransmit).
    assert [p["predicted_server_conns_peak"], p["predicted_failed_users"], p["predicted_listen_overflows"],
            p["predicted_syn_retrans"]] == [3, 8, 8, 0]
    # 5 s: nginx's SYNs at 0 1 2 3 4 (the server namespace's 6 retries, 4 linear), not the
    # client's 4 retries, 0 linear (0 1 3).
    p = design.predictions(dict(PROXIED, PROXY_CONNECT_TIMEOUT="5s"), SYSCTLS, MACHINE)
    assert [p["predicted_failed_users"], p["predicted_listen_overflows"]] == [8, 40]


def test_behind_nginx_no_failed_users_are_predicted_past_its_own_worker_connections_or_queue():
    for knobs in ({"PROXY_WORKER_CONNECTIONS": "20"}, {"PROXY_BACKLOG": "5"}):
        p = design.predictions(dict(PROXIED, **knobs), SYSCTLS, MACHINE)
        assert [p["predicted_server_conns_peak"], p["predicted_failed_users"]] == [3, None]


def test_behind_nginx_the_failed_users_are_its_504s_and_no_user_fails_to_connect():
    row = {"server_conns_peak": 3, "proxy_504": 8, "proxy_502": 0, "listen_overflows": 8, "syn_retrans": 0,
           "fail_connect": 0, "proxy_upstream_connect_timeouts": 8}
    assert verdict(row, cell=PROXIED) == {"prediction_check": "match", "prediction_notes": None,
                                          "predicted_failed_users_from": "proxy_504"}
    out = verdict(dict(row, fail_connect=2, proxy_504=6, proxy_upstream_connect_timeouts=6, listen_overflows=6),
                  cell=PROXIED)
    assert out["prediction_check"] == "mismatch"
    assert out["prediction_notes"].startswith("failed users (proxy_504) 6 where 8 was predicted; listen_overflows 6 "
                                              "where 8 was predicted; fail_connect 2 where 0 was predicted: 2 users "
                                              "failed to connect to nginx itself")
    notes = verdict(dict(row, proxy_504=5, proxy_502=3, proxy_upstream_connect_timeouts=5), cell=PROXIED)["prediction_notes"]
    assert "nginx answered 3 requests with a 502: the target refused or reset" in notes


def test_behind_nginx_a_late_acceptor_holds_fewer_and_each_place_it_lost_is_one_more_504():
    # tests/integration/proxy-burst.bats, 5 runs of 26: the 6 users' SYNs filled the queue (2)
    # before Tomcat's acceptor took the first; nginx sends no second SYN within 300 ms.
    cell = dict(PROXIED, TOMCAT_MAX_CONNECTIONS="1", TOMCAT_ACCEPT_COUNT="1", VUS="6")
    row = {"server_conns_peak": 2, "proxy_504": 4, "proxy_502": 0, "listen_overflows": 4, "syn_retrans": 0,
           "fail_connect": 0, "proxy_upstream_connect_timeouts": 4}
    out = verdict(row, cell=cell)
    assert out["prediction_check"] == "match"
    assert out["prediction_notes"].startswith("the server held 1 fewer than max-connections + backlog + 1, with as "
                                              "many more overflows and failed users: the burst's SYNs filled the "
                                              "accept queue before Tomcat's acceptor took its first connection")
    assert verdict(dict(row, server_conns_peak=3, proxy_504=3, listen_overflows=3, proxy_upstream_connect_timeouts=3),
                   cell=cell) == {"prediction_check": "match", "prediction_notes": None,
                                  "predicted_failed_users_from": "proxy_504"}
    # Every lost place must be one more overflow and one more 504; and no fewer than the queue.
    assert verdict(dict(row, proxy_504=3), cell=cell)["prediction_check"] == "mismatch"
    assert verdict(dict(row, server_conns_peak=1, proxy_504=5, listen_overflows=5, proxy_upstream_connect_timeouts=5),
                   cell=cell)["prediction_check"] == "mismatch"
    # With a retransmitted SYN inside the window a later SYN takes the freed place.
    assert verdict(row, cell=dict(cell, PROXY_CONNECT_TIMEOUT="2s"))["prediction_check"] == "mismatch"
    # Fewer users than the capacity never fill the queue: no place is lost to a late acceptor.
    few = dict(cell, VUS="3")
    assert verdict(dict(row, server_conns_peak=2, proxy_504=1, listen_overflows=1, proxy_upstream_connect_timeouts=1),
                   cell=few)["prediction_check"] == "mismatch"


def test_behind_nginx_each_overflow_is_one_connect_nginx_gave_up_on_when_it_sends_one_syn():
    cell = dict(PROXIED, REQUESTS_PER_VU="2", SCENARIO="keepalive")
    row = {"server_conns_peak": 3, "fail_connect": 0, "listen_overflows": 8, "proxy_upstream_connect_timeouts": 8}
    assert verdict(row, cell=cell)["prediction_check"] == "match"
    notes = verdict(dict(row, proxy_upstream_connect_timeouts=7), cell=cell)["prediction_notes"]
    assert notes.startswith("proxy_upstream_connect_timeouts 7 where 8 was predicted")
    # Past the first retransmit (1 s) a connect may get in on a later SYN: no count is judged.
    assert verdict(dict(row, proxy_upstream_connect_timeouts=7), cell=dict(cell, PROXY_CONNECT_TIMEOUT="2s")) == {
        "prediction_check": "match", "prediction_notes": None, "predicted_failed_users_from": None}


def test_the_recorded_nginx_504_cell_matches_across_the_tiers_and_a_connect_failure_would_not():
    cell_dir = ROOT / "tests" / "python" / "fixtures" / "nginx-504"
    cell = read_cell_env(cell_dir / "cell.env")
    sysctls = read_sysctls(cell_dir / "sysctls.tsv")
    row = json.loads((cell_dir / "row.json").read_text())
    predicted = design.predictions(cell, sysctls, MACHINE)
    assert design.prediction_verdict(cell, sysctls, predicted, row, {}, MACHINE, [])["prediction_check"] == "match"
    for change, name in (({"fail_connect": 1}, "fail_connect 1 where 0 was predicted"),
                         ({"proxy_upstream_connect_timeouts": 7}, "proxy_upstream_connect_timeouts 7 where 8")):
        out = design.prediction_verdict(cell, sysctls, predicted, dict(row, **change), {}, MACHINE, [])
        assert out["prediction_check"] == "mismatch" and name in out["prediction_notes"]


def test_behind_nginx_without_upstream_keepalive_one_users_connections_are_per_request():
    cell = env(SCENARIO="keepalive", VUS="1", REQUESTS_PER_VU="10000", DELAY_MS="0", PROXY="nginx",
               PROXY_UPSTREAM_KEEPALIVE="0", TOMCAT_MAX_CONNECTIONS="8192", TOMCAT_ACCEPT_COUNT="100")
    assert design.predictions(cell, SYSCTLS, MACHINE)["predicted_server_conns_peak"] is None
    # With a pool nginx keeps its connection; a full server keeps its capacity either way.
    assert design.predictions(dict(cell, PROXY_UPSTREAM_KEEPALIVE="4"), SYSCTLS, MACHINE)["predicted_server_conns_peak"] == 1
    full = dict(cell, VUS="6", TOMCAT_MAX_CONNECTIONS="1", TOMCAT_ACCEPT_COUNT="1")
    assert design.predictions(full, SYSCTLS, MACHINE)["predicted_server_conns_peak"] == 3
