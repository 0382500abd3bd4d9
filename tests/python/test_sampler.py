"""The sampler's socket counts (scripts/lib/sampler.py), over real sockets of this namespace."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import socket
import time
from pathlib import Path

SAMPLER = Path(__file__).resolve().parents[2] / "scripts" / "lib" / "sampler.py"


def load_sampler():
    spec = importlib.util.spec_from_file_location("sampler", SAMPLER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_connection_beside_the_listener_counts_once_not_by_both_its_ends():
    """A proxy in the server's namespace (nginx) connects to the target's port: the target's end is
    the server's connection, the proxy's end is not a second one."""
    sampler = load_sampler()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as first, \
                socket.create_connection(("127.0.0.1", port)) as second:
            accepted = [listener.accept()[0] for _ in range(2)]
            try:
                recv_q, send_q, estab, syn_recv, _ = sampler.socket_counts(port)[:5]
            finally:
                for conn in accepted:
                    conn.close()
            assert (recv_q, send_q) == (0, 8)
            assert (estab, syn_recv) == (2, 0)
            assert first and second


def test_without_a_listener_the_connections_towards_the_port_count():
    """An external target seen from the users' side: no listener here, their ends are the count."""
    sampler = load_sampler()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = listener.accept()
            listener.close()
            try:
                recv_q, send_q, estab, _, _ = sampler.socket_counts(port)[:5]
            finally:
                accepted.close()
            assert (recv_q, send_q) == ("", "")
            assert estab == 2


def test_a_tomcat_figure_its_executor_does_not_keep_is_unmeasured_not_minus_one():
    # Tomcat on virtual threads answers tomcat.threads.busy -1 (no pool); a pool's 3 stays 3.
    import http.server
    import json
    import threading

    values = {"/actuator/metrics/tomcat.threads.busy": -1.0, "/actuator/metrics/tomcat.connections.current": 3.0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = json.dumps({"measurements": [{"statistic": "VALUE", "value": values[self.path]}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert load_sampler().Actuator(server.server_address[1]).values() == ["", "3"]
    finally:
        server.shutdown()
        server.server_close()


#: ss's state names (`ss -tan`), as the kernel's numbers sock_diag answers (include/net/tcp_states.h).
SS_STATES = {"ESTAB": 1, "SYN-SENT": 2, "SYN-RECV": 3, "FIN-WAIT-1": 4, "FIN-WAIT-2": 5, "TIME-WAIT": 6,
             "CLOSE": 7, "CLOSE-WAIT": 8, "LAST-ACK": 9, "LISTEN": 10, "CLOSING": 11}
SOCKETS = Path(__file__).resolve().parent / "fixtures" / "sockets"


def recorded_sockets(name):
    """(state, local port, peer port, recv-q, send-q) of each line of a recorded `ss -Htan`."""
    out = []
    for line in (SOCKETS / name).read_text().splitlines():
        state, recv_q, send_q, local, peer = line.split()[:5]
        peer_port = peer.rsplit(":", 1)[1]
        out.append((SS_STATES[state], int(local.rsplit(":", 1)[1]), 0 if peer_port == "*" else int(peer_port),
                    int(recv_q), int(send_q)))
    return out


def test_behind_nginx_time_wait_is_counted_per_end():
    """The server namespace of a cell behind nginx without upstream keep-alive (run
    20261127-080407-proxy-time-wait, `ss -Htan` in ltsuite-srv as the 151 requests of its
    PROXY_UPSTREAM_KEEPALIVE=0 cell ended): the target on 8080, nginx on 8090 beside it, 154 TIME-WAITs. 31 are the target's ends
    (local port 8080), 120 nginx's towards it (peer port 8080), 1 nginx's towards the user (local
    port 8090), 2 the actuator's (8081), which are none of them."""
    sampler = load_sampler()
    sockets = recorded_sockets("proxy-upstream-keepalive-0.ss")
    assert sum(1 for s in sockets if s[0] == sampler.TCP_TIME_WAIT) == 154
    # The target's listener (backlog 100), its connections (nginx's one to the user is on 8090).
    assert sampler.socket_count_fields(sockets, 8080, 8090) == [0, 100, 0, 0, 31, 120, 1]


def test_without_a_proxy_port_both_ends_on_the_port_count_and_the_proxys_are_empty():
    """Unmeasured is empty: a namespace without nginx (no --proxy-port) has no proxy figures; its
    TIME-WAIT on the port is every end there (the target's, or the users' towards it)."""
    sampler = load_sampler()
    sockets = recorded_sockets("proxy-upstream-keepalive-0.ss")
    assert sampler.socket_count_fields(sockets, 8080) == [0, 100, 0, 0, 151, "", ""]


def test_a_samples_row_puts_the_proxys_ends_last_and_leaves_them_empty_without_it():
    sampler = load_sampler()
    behind = ["0", "100", "1", "0", "31", "2", "3", "120", "1"]
    users = ["", "", "1", "0", "4", "", "", "", ""]
    fields = sampler.row(1.0, behind, users, ["", ""]).split("\t")
    assert dict(zip(sampler.COLUMNS, fields)) == {
        "ts": "1.000", "listen_recvq": "0", "listen_sendq": "100", "server_estab": "1", "server_syn_recv": "0",
        "server_time_wait": "31", "client_estab": "1", "client_time_wait": "4", "tomcat_threads_busy": "2",
        "tomcat_connections": "3", "k6_cpu_pct": "", "k6_rss_mb": "", "proxy_upstream_time_wait": "120",
        "proxy_client_time_wait": "1"}
    direct = sampler.row(1.0, ["0", "100", "1", "0", "31", "2", "3", "", ""], None, ["", ""]).split("\t")
    assert direct[-2:] == ["", ""] and len(direct) == len(sampler.COLUMNS)


def test_a_namespace_is_read_from_inside_and_the_sampler_is_back_in_its_own_after(tmp_path):
    """The sampler enters a namespace (setns) for a tick's moment: the listener there is read
    (its queue and backlog, as ss shows them inside), the same port outside is not, and this
    process's own namespace is the same after. Needs root, as the suite does (ip netns)."""
    sampler = load_sampler()
    name = f"ltsuite-pytest-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=10)
    listener = None
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, timeout=10)
        ready = tmp_path / "ready"
        listener = subprocess.Popen(["ip", "netns", "exec", name, sys.executable, "-c", (
            "import socket, sys, time\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 18555)); s.listen(7)\n"
            "c = [socket.create_connection(('127.0.0.1', 18555)) for _ in range(3)]\n"
            "open(sys.argv[1], 'w').close(); time.sleep(30)"), str(ready)])
        for _ in range(500):
            if ready.exists():
                break
            time.sleep(0.02)
        own = os.readlink("/proc/self/ns/net")
        inside = sampler.Probe(name, 18555, None)
        outside = sampler.Probe("", 18555, None)
        try:
            assert inside.ask()[:4] == [3, 7, 3, 0]
            assert outside.ask()[:4] == ["", "", 0, 0]
            assert os.readlink("/proc/self/ns/net") == own
        finally:
            inside.close()
            outside.close()
    finally:
        if listener is not None:
            listener.kill()
            listener.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=10)


def test_the_k6_trace_sees_a_real_k6_busy_for_a_second(tmp_path):
    """k6_trace, every 50 ms, over a real k6 that spins one core for about 1.2 s: read back over
    its busy second (ltsuite.generator.release), k6's CPU is near one core, and the lines count
    up in time."""
    import os
    import subprocess
    import threading
    import time

    from ltsuite import generator

    sampler = load_sampler()
    k6 = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "k6"
    script = tmp_path / "spin.js"
    script.write_text("export default function () { const end = Date.now() + 1200; while (Date.now() < end) {} }\n")
    trace = tmp_path / "k6-cpu.tsv"
    stop = threading.Event()
    # A mark of this test's own: another run of it beside this one has its own k6.
    mark = f"LT_RUN_ID=trace-test-{os.getpid()}"
    tracer = threading.Thread(target=sampler.k6_trace, args=(str(trace), mark, 200, stop))
    tracer.start()
    try:
        started = time.time()
        subprocess.run([str(k6), "run", "-q", "-e", mark, "--iterations", "1",
                        str(script)], check=True, timeout=60, capture_output=True,
                       env={**os.environ, "K6_NO_USAGE_REPORT": "true"})
    finally:
        stop.set()
        tracer.join(5)
    lines = generator.read_trace(trace)
    assert len(lines) >= 10
    # In time order (two steps may come 0.1 ms apart after a late one), k6's ticks never going down.
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(lines, lines[1:]))
    # Over the whole trace k6 spun for 1.2 s of it: well above idle even on two busy shared cores
    # (it failed at 60 % once beside a 3,000-user run), and never more than both cores.
    rel = generator.release(lines, lines[0][0], lines[-1][0], os.sysconf("SC_CLK_TCK"))
    assert rel is not None and rel.window_ms >= 500
    assert 15 <= rel.k6_cpu_pct <= 200
    assert lines[-1][1] - lines[0][1] >= 0.2 * os.sysconf("SC_CLK_TCK")
    assert started <= lines[0][0]


def test_the_k6_trace_reads_the_target_jvm_marked_by_the_run_beside_k6(tmp_path):
    """k6_trace with a target mark: a real JVM (the mark in its arguments, as the runner's
    -Dltsuite.run_id=) spinning one core while a real k6 runs gets a sixth column of its CPU ticks,
    read back by ltsuite.generator.read_target, never going down and at least a fifth of a second
    of CPU over the trace; a JVM without the mark is not read."""
    import os
    import subprocess
    import threading

    from ltsuite import generator

    sampler = load_sampler()
    k6 = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "k6"
    script = tmp_path / "spin.js"
    script.write_text("export default function () { const end = Date.now() + 1500; while (Date.now() < end) {} }\n")
    spin = tmp_path / "Spin.java"
    spin.write_text("class Spin { public static void main(String[] a) { long end = System.currentTimeMillis() + 6000;"
                    " long x = 0; while (System.currentTimeMillis() < end) { x++; } System.out.println(x); } }\n")
    trace = tmp_path / "k6-cpu.tsv"
    mark = f"trace-target-test-{os.getpid()}"
    jvm = subprocess.Popen(["java", f"-Dltsuite.run_id={mark}", str(spin)], stdout=subprocess.DEVNULL)

    def traced_k6(out: Path, target_mark: str) -> None:
        """One real k6 run of the script, traced into OUT with TARGET_MARK as the target's mark."""
        stop = threading.Event()
        tracer = threading.Thread(target=sampler.k6_trace, args=(str(out), f"LT_RUN_ID={mark}", 200, stop,
                                                                target_mark))
        tracer.start()
        try:
            subprocess.run([str(k6), "run", "-q", "-e", f"LT_RUN_ID={mark}", "--iterations", "1", str(script)],
                           check=True, timeout=60, capture_output=True,
                           env={**os.environ, "K6_NO_USAGE_REPORT": "true"})
        finally:
            stop.set()
            tracer.join(5)
    try:
        traced_k6(trace, f"-Dltsuite.run_id={mark}")
    finally:
        jvm.kill()
        jvm.wait(timeout=10)
    target = generator.read_target(trace)
    assert len(target) >= 10
    ticks = [target[t] for t in sorted(target)]
    assert all(a <= b for a, b in zip(ticks, ticks[1:]))
    assert ticks[-1] - ticks[0] >= 0.2 * os.sysconf("SC_CLK_TCK")
    # read_trace reads the same lines, the sixth column aside.
    assert len(generator.read_trace(trace)) >= len(target)
    # Another mark finds no JVM: the column is there, empty.
    other = tmp_path / "other.tsv"
    traced_k6(other, "-Dltsuite.run_id=none-such")
    assert generator.read_target(other) == {} and len(generator.read_trace(other)) >= 10
    assert all(line.split("\t")[5] == "" for line in other.read_text().splitlines())
