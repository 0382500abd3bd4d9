"""The doctor's findings over recorded host readings (tests/python/fixtures/doctor/NAME: the files
scripts/doctor.sh writes into readings/; one reading of this machine with each situation's
numbers set)."""
import json
import time
from pathlib import Path

import pytest

from conftest import ROOT
from ltsuite import doctor

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"


def read(name):
    return doctor.read_readings(FIXTURES / name)


def found(name):
    return {f.id: f for f in doctor.findings(read(name))}


def test_a_healthy_host_has_nothing_found():
    got = found("healthy")
    assert list(got) == ["nothing-found"]
    assert read("healthy").tomcat.threads_busy_peak == 3.0


def test_a_backlog_at_somaxconn_names_the_accept_count_it_capped():
    f = found("somaxconn-cap")["backlog-capped-by-somaxconn"]
    assert f.severity == "warning"
    assert f.evidence == {"listener": "*:8080", "backlog": 128, "somaxconn": 128, "accept_count": 10000,
                          "backlog_rule": 128}
    assert "backlog of 128 because net.core.somaxconn=128 caps the 10000" in f.text


def test_without_the_actuator_a_backlog_at_somaxconn_is_still_named():
    r = read("somaxconn-cap")
    r.tomcat = None
    f = {f.id: f for f in doctor.findings(r)}["backlog-capped-by-somaxconn"]
    assert "accept_count" not in f.evidence
    assert "equal to net.core.somaxconn" in f.text


def test_an_accept_count_within_somaxconn_is_not_capped():
    r = read("somaxconn-cap")
    r.tomcat.accept_count = 128
    assert "backlog-capped-by-somaxconn" not in {f.id for f in doctor.findings(r)}


def test_overflows_in_the_window_are_counted_with_their_rate_and_the_queue():
    f = found("overflows")["accept-queue-overflows"]
    assert f.severity == "critical"
    assert f.evidence["ListenOverflows"] == 4210
    assert f.evidence["elapsed_s"] == 10.5  # between the two snapshots, not the 10 s asked for
    assert f.evidence["per_s"] == 401.0
    assert f.evidence["queue_peak"] == 129
    assert f.evidence["accept_queue_capacity"] == 129  # backlog + 1


def test_the_overflow_count_is_said_to_be_the_namespaces_not_the_ports():
    f = found("overflows")["accept-queue-overflows"]
    assert f.text.startswith("ListenOverflows, the count of all listeners of this namespace, rose by 4210 in the "
                             "last 10.5 s (401/s), and the accept queue of :8080 reached 129 of its 129 "
                             "(backlog 128 + 1)")
    assert "the accept queue of :8080 overflowed" not in f.text


def test_a_port_whose_queue_never_came_near_full_is_not_blamed_for_the_overflows():
    r = read("overflows")
    r.listeners[0].queue_peak = 103  # under 0.8 of backlog + 1 = 129
    got = {f.id: f for f in doctor.findings(r)}
    assert "accept-queue-overflows" not in got
    f = got["listen-overflows-not-seen-on-port"]
    assert f.severity == "warning"
    assert f.evidence["ListenOverflows"] == 4210 and f.evidence["queue_peak"] == 103
    assert f.evidence["accept_queue_capacity"] == 129
    assert "all listeners of this namespace" in f.text and "peaked at 103 of its 129" in f.text


def test_a_port_whose_queue_came_near_full_is_blamed():
    r = read("overflows")
    r.listeners[0].queue_peak = 104  # 0.8 of 129 is 103.2
    assert "accept-queue-overflows" in {f.id for f in doctor.findings(r)}


def test_overflows_only_before_the_window_are_information():
    r = read("overflows")
    r.counters = {}
    got = {f.id: f for f in doctor.findings(r)}
    assert list(got) == ["accept-queue-overflowed-since-boot"]
    assert got["accept-queue-overflowed-since-boot"].evidence == {"ListenOverflows_since_boot": 2067870}


def test_syn_cookies_sent_in_the_window():
    f = found("syn-cookies")["syn-cookies"]
    assert f.evidence["SyncookiesSent"] == 1500
    assert f.evidence["SyncookiesRecv"] == 1200
    assert f.evidence["accept_queue_capacity"] == 129


def test_syn_queue_drops_without_cookies():
    r = read("syn-cookies")
    r.counters = {"TcpExtTCPReqQFullDrop": 77}
    f = {f.id: f for f in doctor.findings(r)}["syn-queue-drops"]
    assert f.severity == "critical" and f.evidence["TCPReqQFullDrop"] == 77


def test_time_wait_towards_one_peer_near_the_port_range():
    r = read("time-wait")
    assert (r.time_wait, r.syn_recv) == (1150, 1)
    assert r.on_port == {"time_wait": 300, "syn_recv": 1}  # the listener's own port, 8080
    f = found("time-wait")["time-wait-near-port-range"]
    assert f.evidence == {"peer": "10.0.0.5:5432", "time_wait": 850, "ports": 1000, "tcp_tw_reuse": "2"}


def test_time_wait_on_the_servers_own_port_holds_no_ephemeral_port():
    r = read("time-wait")
    r.sysctls["net.ipv4.ip_local_port_range"] = "32768 60999"
    assert "time-wait-near-port-range" not in {f.id for f in doctor.findings(r)}


def test_open_files_near_the_limit():
    f = found("open-files")["open-files-near-limit"]
    assert f.evidence == {"pid": "4321", "open_files": 1003, "nofile": 1024}


def test_open_files_that_could_not_be_listed_are_unknown_not_zero():
    r = read("open-files")
    r.process["open_files"] = ""  # scripts/doctor.sh: /proc/PID/fd could not be listed
    assert "open-files-near-limit" not in {f.id for f in doctor.findings(r)}
    assert doctor.to_json(r, doctor.findings(r))["process"]["open_files"] == ""


def test_threads_busy_at_max_from_the_actuator():
    f = found("threads-busy")["threads-busy-at-max"]
    assert f.evidence == {"threads_busy_peak": 200.0, "threads_max": 200.0, "connections_peak": 410.0}


def virtual(r):
    """The reading as a Tomcat on virtual threads shows it: tomcat.threads.config.max is -1
    (AbstractEndpoint.getMaxThreads() of an executor that is not a pool), busy threads some."""
    r.tomcat.threads_max = -1.0
    r.tomcat.threads_busy_peak = 150.0
    return r


def test_on_virtual_threads_no_thread_maximum_is_called_reached():
    got = {f.id: f for f in doctor.findings(virtual(read("threads-busy")))}
    assert "threads-busy-at-max" not in got
    assert not any("-1 threads" in f.text for f in got.values())
    f = got["virtual-threads"]
    assert f.severity == "info"
    assert "virtual threads" in f.text and "8192" in f.text  # max-connections bounds the requests served
    assert f.evidence == {"threads_max": -1.0, "max_connections": 8192, "connections_peak": 410.0}


def test_on_virtual_threads_the_matrix_runs_virtual_threads():
    lines = doctor.reproduce_matrix(virtual(read("threads-busy")), "m").splitlines()
    assert "TOMCAT_VIRTUAL_THREADS=1" in lines
    assert "TOMCAT_VIRTUAL_THREADS=1" not in doctor.reproduce_matrix(read("threads-busy"), "m").splitlines()
    assert doctor.to_json(virtual(read("threads-busy")), [])["tomcat"]["virtual_threads"] is True
    assert doctor.to_json(read("threads-busy"), [])["tomcat"]["virtual_threads"] is False
    assert doctor.to_json(read("somaxconn-cap"), [])["tomcat"]["virtual_threads"] is None  # no metrics: unmeasured


@pytest.mark.parametrize("name", ["healthy", "somaxconn-cap", "overflows", "syn-cookies", "time-wait",
                                  "open-files", "threads-busy", "capped-at-start"])
def test_the_report_files(tmp_path, name):
    out = tmp_path / "doctor-x"
    out.mkdir()
    text = doctor.write_report(FIXTURES / name, out)
    assert "read-only: no sysctl changed" in text
    data = json.loads((out / "doctor.json").read_text())
    assert data["read_only"] is True
    assert set(data["listeners"][0]) == {"addr", "port", "backlog", "queue_now", "queue_peak", "nth"}
    assert set(data["findings"][0]) == {"id", "severity", "text", "evidence"}
    assert data["sysctls"]["net.core.somaxconn"] is not None
    assert (out / "doctor.md").read_text().startswith("# Doctor: port 8080")
    for f in data["findings"]:
        assert f"[{f['severity']}] {f['id']}" in text


def test_the_matrix_carries_the_hosts_settings():
    r = read("somaxconn-cap")
    text = doctor.reproduce_matrix(r, "results/doctor-x/reproduce.matrix")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert "TOMCAT_ACCEPT_COUNT=10000" in lines
    assert "SOMAXCONN=128" in lines
    assert "TOMCAT_MAX_CONNECTIONS=8192" in lines
    assert "# the server holds 8321 users at once (max-connections + backlog + 1)" in text  # 8192 + 128 + 1
    assert "#   make run-matrix MATRIX=results/doctor-x/reproduce.matrix" in text
    assert "make advise" in text


def test_tomcats_settings_from_spring_boot_2_and_4():
    # Boot 2.7/3 keep Tomcat's properties in the "server" bean, Boot 4 in a "server.tomcat" bean.
    boot2 = doctor.parse_tomcat(json.loads((ROOT / "tests/fixtures/configprops-boot2.json").read_text()), None)
    boot4 = doctor.parse_tomcat(json.loads((ROOT / "tests/fixtures/configprops-boot4.json").read_text()), None)
    assert (boot2.accept_count, boot2.max_connections, boot2.max_threads) == (100, 8192, 7)
    assert (boot4.accept_count, boot4.max_connections, boot4.max_threads) == (10, 7, 20)


def test_without_the_actuator_the_matrix_takes_the_backlog_as_accept_count():
    r = read("overflows")
    text = doctor.reproduce_matrix(r, "m")
    assert "TOMCAT_ACCEPT_COUNT=128" in text.splitlines()
    assert not [line for line in text.splitlines() if line.startswith("TOMCAT_MAX_THREADS=")]
    assert not [line for line in text.splitlines() if line.startswith("VUS=")]
    assert "# VUS: the suite's default; set it to the incident's users" in text


# ---- A listener started under an older somaxconn ----------------------------------------------
# capped-at-start: a host measured after "we raised somaxconn but never restarted Tomcat": the jar
# started under somaxconn=128 (accept-count 1000, max-connections 2), somaxconn raised to 4096
# afterwards, 300 connects: the listener kept its backlog of 128.


def test_a_backlog_below_what_listen_would_give_now_was_capped_when_it_started():
    f = found("capped-at-start")["backlog-capped-at-start"]
    assert f.severity == "warning"
    assert f.evidence == {"listener": "*:8080", "backlog": 128, "accept_count": 1000, "somaxconn": 4096,
                          "backlog_rule": 1000, "server_capacity": 131, "server_capacity_after_restart": 1003}
    assert "backlog of 128, below the 1000 = min(accept-count 1000, net.core.somaxconn 4096)" in f.text
    assert "holds 2 + 128 + 1 = 131 connections, not 2 + 1000 + 1 = 1003" in f.text
    assert "restart" in f.text


def test_the_overflows_capacity_is_the_listeners_own_backlog_not_the_settings():
    f = found("capped-at-start")["accept-queue-overflows"]
    assert f.evidence["ListenOverflows"] == 169  # 300 connects, 131 held
    assert f.evidence["accept_queue_capacity"] == 129  # backlog + 1
    assert f.evidence["server_capacity"] == 131  # 2 + 128 + 1, not 2 + min(1000, 4096) + 1


def test_a_listener_capped_at_start_is_reproduced_with_its_own_backlog():
    text = doctor.reproduce_matrix(read("capped-at-start"), "m")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert {"TOMCAT_ACCEPT_COUNT=1000", "TOMCAT_MAX_CONNECTIONS=2", "SOMAXCONN=128"} <= set(lines)
    assert "# the server holds 131 users at once (max-connections + backlog + 1)" in text
    assert "SOMAXCONN=4096" not in lines
    assert "# SOMAXCONN is the listener's backlog, 128, not the host's 4096 now" in text


def test_a_backlog_above_what_listen_would_give_now_is_reproduced_too():
    r = read("capped-at-start")
    r.sysctls["net.core.somaxconn"] = "64"  # lowered after the listener started with 128
    assert "backlog-capped-at-start" not in {f.id for f in doctor.findings(r)}
    lines = doctor.reproduce_matrix(r, "m").splitlines()
    assert {"TOMCAT_ACCEPT_COUNT=1000", "SOMAXCONN=128", "# the server holds 131 users at once (max-connections + backlog + 1)"} <= set(lines)


def test_a_backlog_above_the_accept_count_is_reproduced_with_the_backlog_as_accept_count():
    r = read("capped-at-start")
    r.tomcat.accept_count = 100  # something other than accept-count asked listen() for 128
    lines = doctor.reproduce_matrix(r, "m").splitlines()
    assert {"TOMCAT_ACCEPT_COUNT=128", "SOMAXCONN=4096", "# the server holds 131 users at once (max-connections + backlog + 1)"} <= set(lines)


def test_without_the_actuator_a_backlog_below_somaxconn_is_not_called_capped():
    r = read("capped-at-start")
    r.tomcat = None
    assert "backlog-capped-at-start" not in {f.id for f in doctor.findings(r)}


# ---- The actuator's GETs -----------------------------------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

CONFIGPROPS = {"contexts": {"app": {"beans": {"server": {"prefix": "server",
                                                         "properties": {"tomcat": {"acceptCount": 100}}}}}}}


def serve(answer):
    """An HTTP server on 127.0.0.1 (a port of its own) in a thread; answer(path) gives (status,
    body). Returns the server and the paths it was asked for."""
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            status, body = answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a client that gave up (a slow actuator's deadline)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, asked


def actuator_answer(path):
    if path == "/actuator/configprops":
        return 200, json.dumps(CONFIGPROPS).encode()
    if path.startswith("/actuator/metrics/"):
        return 200, json.dumps({"measurements": [{"statistic": "VALUE", "value": 3.0}]}).encode()
    return 404, b"{}"


@pytest.fixture
def actuator_behind_a_proxy():
    """The host's actuator, and an http_proxy/https_proxy of the host's environment (no
    no_proxy) that records what it is asked and answers none of it."""
    actuator, _ = serve(actuator_answer)
    proxy, through_proxy = serve(lambda path: (502, b'{"proxy": true}'))
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy")}
    env.update(PYTHONPATH=str(ROOT / "scripts"), http_proxy=proxy_url, https_proxy=proxy_url,
               HTTP_PROXY=proxy_url, HTTPS_PROXY=proxy_url)
    yield f"http://127.0.0.1:{actuator.server_address[1]}/actuator", env, through_proxy
    actuator.shutdown()
    proxy.shutdown()


def doctor_py(env, *args):
    """python3 -m ltsuite.doctor ARGS, as scripts/doctor.sh starts it."""
    return subprocess.run([sys.executable, "-B", "-S", "-m", "ltsuite.doctor", *args], env=env,
                          capture_output=True, text=True, timeout=30, check=False)


def test_the_actuators_gets_go_to_the_actuator_not_through_an_environment_proxy(actuator_behind_a_proxy):
    base, env, through_proxy = actuator_behind_a_proxy
    run = doctor_py(env, "get", f"{base}/configprops")
    assert (run.returncode, json.loads(run.stdout or "null")) == (0, CONFIGPROPS)
    run = doctor_py(env, "metrics", base, "0")
    assert run.stdout.splitlines() == [f"0\t{name}\t3.0" for name in doctor.METRICS]
    assert through_proxy == []


# ---- What of /actuator/configprops reaches the disk -------------------------------------------
#: A secret planted in the actuator's answers: no file the doctor writes may hold it.
SECRET = "doctor-test-s3cret-5f1e0c"


def with_secrets(configprops):
    """configprops with a datasource password (its own bean, as show-values=always shows it) and
    a key password inside the "server" properties themselves (server.ssl.key-password)."""
    doc = json.loads(json.dumps(configprops))
    beans = next(iter(doc["contexts"].values()))["beans"]
    beans["spring.datasource-org.springframework.boot.autoconfigure.jdbc.DataSourceProperties"] = {
        "prefix": "spring.datasource", "properties": {"password": SECRET, "url": "jdbc:postgresql://db/app"},
        "inputs": {"password": {"value": SECRET, "origin": "System Environment Property"}}}
    server = next(b for b in beans.values() if b.get("prefix") == "server")
    server["properties"]["ssl"] = {"keyPassword": SECRET}
    return doc


BOOT4 = with_secrets(json.loads((ROOT / "tests/fixtures/configprops-boot4.json").read_text()))
BOOT2 = with_secrets(json.loads((ROOT / "tests/fixtures/configprops-boot2.json").read_text()))


def test_only_the_properties_the_doctor_reads_are_kept():
    assert doctor.kept_configprops(BOOT4) == {
        "prefix": "server", "properties": {"tomcat": {"acceptCount": 10, "maxConnections": 7, "threads": {"max": 20}}}}
    assert SECRET not in json.dumps(doctor.kept_configprops(BOOT2))
    assert doctor.kept_configprops({"contexts": {}}) is None


def test_masked_values_are_kept_as_masked_and_read_as_unknown():
    masked = {"prefix": "server", "properties": {"tomcat": {"acceptCount": "******", "maxConnections": 7}}}
    kept = doctor.kept_configprops(masked)
    assert kept == masked
    assert doctor.parse_tomcat(kept, None).accept_count is None


def configprops_from(path: str, document: dict) -> tuple[subprocess.CompletedProcess, list[str]]:
    """doctor.py configprops against an actuator that answers DOCUMENT at PATH only (404
    elsewhere), no proxy in between: the run and the paths it asked."""
    def answer(asked_path):
        if asked_path == path:
            return 200, json.dumps(document).encode()
        return 404, b"{}"

    actuator, asked = serve(answer)
    try:
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy")}
        env["PYTHONPATH"] = str(ROOT / "scripts")
        run = doctor_py(env, "configprops", f"http://127.0.0.1:{actuator.server_address[1]}/actuator")
    finally:
        actuator.shutdown()
    return run, asked


def test_the_server_prefix_is_asked_first_and_the_secrets_stay_in_memory():
    run, asked = configprops_from("/actuator/configprops/server", BOOT4)
    assert run.returncode == 0
    assert asked == ["/actuator/configprops/server"]
    assert SECRET not in run.stdout
    assert doctor.parse_tomcat(json.loads(run.stdout), None).accept_count == 10


def test_without_the_server_prefix_the_whole_document_is_read_and_only_the_properties_kept():
    run, asked = configprops_from("/actuator/configprops", BOOT2)
    assert run.returncode == 0
    assert asked == ["/actuator/configprops/server", "/actuator/configprops"]
    assert SECRET not in run.stdout
    assert json.loads(run.stdout)["properties"] == {"tomcat": {"acceptCount": 100, "maxConnections": 8192,
                                                               "threads": {"max": 7}}}


def test_an_actuator_without_server_properties_gives_nothing():
    actuator, _ = serve(lambda path: (200, b'{"contexts": {"app": {"beans": {}}}}'))
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
        run = doctor_py(env, "configprops", f"http://127.0.0.1:{actuator.server_address[1]}/actuator")
    finally:
        actuator.shutdown()
    assert (run.returncode, run.stdout) == (1, "")


# ---- The load of the window ------------------------------------------------------------------
# stale-somaxconn-load: a real reading (this machine, kernel 6.18): the suite's target started under
# somaxconn 8 (accept-count 10000, max-connections 8, 4 threads), somaxconn raised to 4096 after,
# and k6's keepalive scenario with 40 users asking /hello?delayMs=200; the doctor's 8 s window began
# 1.5 s into the load.


def test_the_load_is_estimated_from_the_window_with_each_figures_source():
    load = doctor.estimate_load(read("stale-somaxconn-load"))
    assert load.service_ms.value == 202.2  # (148.454 - 116.715) s / (733 - 576) requests
    assert load.service_ms.sureness == "measured"
    assert load.requests_per_s.value == 19.6  # 157 requests in 8.0 s: 4 threads at 200 ms
    assert load.held.value == 17  # 8 connections + 9 in the queue
    assert load.waiting.value == 24  # the median of the seconds' rises 23, 24, 24
    assert load.waiting.sureness.startswith("estimate")
    assert load.users.value == 41  # the load had 40
    assert load.new_connections_per_s.value == 12.0  # (25 passive opens + 71 drops) / 8 s
    assert load.new_connections_per_s.sureness.startswith("upper bound")
    assert load.busy_threads.value == 4


def test_the_load_is_written_as_the_keepalive_scenarios_knobs_with_no_axis():
    text = doctor.reproduce_matrix(read("stale-somaxconn-load"), "m")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert {"SCENARIO=keepalive", "CONNECTION_REUSE=1", "VUS=41", "DELAY_MS=202", "DURATION=8s",
            "REQUESTS_PER_VU=19", "SOMAXCONN=8", "GOAL_FAILED_RATE=0"} <= set(lines)
    assert not [line for line in lines if " " in line.split("=", 1)[1] and not line.startswith("TUNE=")]
    assert "# VUS: 17 held by the server + 24 waiting" in text
    assert "#   make advise MATRIX=m" in text


# stale-somaxconn-cookies: the same incident read with overflows.tsv (ListenOverflows every 100 ms),
# the window started with the load (run by hand as tests/integration/doctor.bats does): 21 SYN
# cookies let 21 of the 23 waiting users end their handshakes on their side, so their final ACKs
# and data are retransmitted on the 200 ms RTO's backoff, several times a second, and the 2 whose
# SYNs were dropped on the SYN backoff (1, 3, 7 s). ListenOverflows' seconds rose by 30, 92, 25,
# 23, 25: the per-second model read 42 users; the waves read 40.


def test_the_waves_of_listen_overflows_count_the_waiting_users_whatever_their_retransmissions():
    r = read("stale-somaxconn-cookies")
    assert r.counters["TcpExtSyncookiesSent"] == 21
    waves = doctor.overflow_waves(r.fine_overflows)
    # The first wave is each user's final ACK and first data; then one overflow a user a wave.
    assert [size for size, _ in waves] == [46, 23, 23, 23, 2, 23, 2, 23, 23, 2]
    load = doctor.estimate_load(r)
    assert load.waiting.value == 23
    assert load.waiting.source.startswith("ListenOverflows every 100 ms: the median size of its 10 waves")
    assert load.held.value == 17 and load.users.value == 40  # the load had 40
    r.fine_overflows = None  # the same reading without overflows.tsv: the per-second model
    assert doctor.estimate_load(r).users.value == 42  # the median of 30, 92, 25, 23, 25 seconds


def test_overflows_that_come_in_no_waves_fall_back_to_the_per_second_model():
    r = read("stale-somaxconn-cookies")
    r.fine_overflows = [3] * 12 + [0] + [3] * 12  # a stream of arrivals: rises for 1.2 s on end
    assert doctor.estimate_load(r).waiting.source.startswith("nstat every second")
    r.fine_overflows = [0, 23, 0, 0]  # a single wave is no waves
    assert doctor.estimate_load(r).waiting.source.startswith("nstat every second")
    r.fine_overflows = [0, 20, 3, 0, 0, 23, 0]  # a wave split across two samples is one wave
    assert doctor.overflow_waves(r.fine_overflows) == [(23, 2), (23, 1)]
    assert doctor.estimate_load(r).waiting.value == 23


def test_listen_overflows_are_read_from_proc_net_netstat_every_100_ms(tmp_path):
    netstat = tmp_path / "netstat"
    netstat.write_text("TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 3 71 71\n"
                       "IpExt: InNoRoutes\nIpExt: 0\n")
    assert doctor.listen_overflows(netstat.read_text()) == 71
    assert doctor.listen_overflows("IpExt: InNoRoutes\nIpExt: 0\n") is None
    lines = list(doctor.sample_overflows(1, netstat))
    assert lines == [f"{i}\t71" for i in range(11)]
    assert doctor.parse_fine("\n".join(["0\t5", "1\t5", "2\t28", ""])) == [0, 23]
    assert doctor.parse_fine(None) is None


def test_no_overflow_means_no_user_waiting():
    r = read("stale-somaxconn-load")
    r.counters["TcpExtListenOverflows"] = 0
    assert doctor.estimate_load(r).waiting.value == 0


def test_overflows_not_on_this_ports_full_queue_leave_the_users_unknown():
    r = read("stale-somaxconn-load")
    for lst in r.listeners:
        lst.queue_peak = 1
    load = doctor.estimate_load(r)
    assert load.waiting.value is None and load.users.value is None
    assert "VUS=" not in "".join(line for line in doctor.reproduce_matrix(r, "m").splitlines() if not line.startswith("#"))


def test_without_http_server_requests_the_endpoints_time_is_unknown():
    r = read("stale-somaxconn-load")
    r.tomcat.service_ms, r.tomcat.requests = None, None
    load = doctor.estimate_load(r)
    assert load.service_ms.value is None and load.service_ms.sureness == "unknown"
    assert "DELAY_MS=" not in doctor.reproduce_matrix(r, "m")


# ---- Listeners of several families, several on one port; a slow actuator ----------------------
#: `ss -ltnH 'sport = :18080'` of a namespace of this machine: two SO_REUSEPORT listeners on
#: 127.0.0.1 (backlogs 7 and 5, 3 connections in the second's queue) and an IPv6 one on ::1
#: (backlog 9, 2 queued); the third sample adds a dual-stack listener's IPv4-mapped address.
SS_SAMPLES = """# sample 0
LISTEN 0      7      127.0.0.1:18080 0.0.0.0:*
LISTEN 3      5      127.0.0.1:18080 0.0.0.0:*
LISTEN 2      9          [::1]:18080    [::]:*
# sample 1
LISTEN 1      7      127.0.0.1:18080 0.0.0.0:*
LISTEN 0      5      127.0.0.1:18080 0.0.0.0:*
LISTEN 0      9          [::1]:18080    [::]:*
# sample 2
LISTEN 0      7      127.0.0.1:18080 0.0.0.0:*
LISTEN 0      5      127.0.0.1:18080 0.0.0.0:*
LISTEN 0      9          [::1]:18080    [::]:*
LISTEN 4      128    [::ffff:198.18.0.1]:18080 *:*
"""


def test_several_listeners_on_one_address_and_port_keep_their_own_queues():
    got = doctor.parse_listeners(SS_SAMPLES, 18080)
    assert [(doctor.listener_name(x), x.backlog, x.queue_now, x.queue_peak) for x in got] == [
        ("127.0.0.1:18080", 7, 0, 1), ("127.0.0.1:18080#2", 5, 0, 3), ("[::1]:18080", 9, 0, 2),
        ("[::ffff:198.18.0.1]:18080", 128, 4, 4)]


def test_a_slow_actuator_does_not_stretch_the_window_and_its_skipped_reads_are_named():
    def slow(path):
        time.sleep(0.7)
        return actuator_answer(path)
    server, _ = serve(slow)
    try:
        start = time.monotonic()
        lines = doctor.sample_metrics(f"http://127.0.0.1:{server.server_address[1]}/actuator", 1)
        took = time.monotonic() - start
    finally:
        server.shutdown()
    # Two samples, each cut at 0.9 s of its second: about 1.9 s, not 3 metrics x 0.7 s x 2.
    assert took < 2.3
    assert "0\ttomcat.threads.busy\t3.0" in lines
    assert "0\tskipped\ttomcat.threads.config.max" in lines
    tomcat = doctor.parse_tomcat(None, "\n".join(lines))
    assert "sample 1: tomcat.threads.config.max" in tomcat.skipped


def test_the_summary_names_the_reads_a_slow_actuator_skipped():
    r = read("stale-somaxconn-load")
    r.tomcat.skipped = ["sample 3: tomcat.threads.busy"]
    assert ("  the actuator was slow: 1 reads skipped at their sample's deadline, not read late "
            "(sample 3: tomcat.threads.busy)") in doctor.summary(r, doctor.findings(r)).splitlines()


def test_the_sysctls_are_read_from_proc_sys_whitespace_made_single_and_missing_empty(tmp_path):
    """readings/sysctls.tsv: every sysctl of the table once, ip_local_port_range's tab a space, one
    this kernel lacks empty (unmeasured, not 0)."""
    for name in doctor.SYSCTLS:
        if name != "net.ipv4.tcp_syn_linear_timeouts":
            path = tmp_path / name.replace(".", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("32768\t60999\n" if name.endswith("ip_local_port_range") else "7\n")
    lines = dict(line.split("\t") for line in doctor.sysctl_lines(tmp_path).splitlines())
    assert list(lines) == list(doctor.SYSCTLS)
    assert lines["net.ipv4.ip_local_port_range"] == "32768 60999"
    assert lines["net.core.somaxconn"] == "7"
    assert lines["net.ipv4.tcp_syn_linear_timeouts"] == ""
