"""ltsuite.live: the live line of a running cell, from k6's REST API answers (as k6 v1.8 gives
them, served over real HTTP here) and the sampler's samples.tsv."""
import http.server
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ltsuite import live

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
HEADER = ("ts\tlisten_recvq\tlisten_sendq\tserver_estab\tserver_syn_recv\tserver_time_wait\tclient_estab"
          "\tclient_time_wait\ttomcat_threads_busy\ttomcat_connections\tk6_cpu_pct\tk6_rss_mb\n")


def _metric(name, kind, sample):
    """An answer of k6's GET /v1/metrics/NAME, shaped as k6 gives it."""
    return {"data": {"type": "metrics", "id": name,
                     "attributes": {"type": kind, "contains": "default", "tainted": None, "sample": sample}}}


def _serve(metrics):
    """A k6-like REST API on 127.0.0.1 answering METRICS (name -> answer); 404 for others."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            name = self.path.rsplit("/", 1)[-1]
            if name not in metrics:
                self.send_error(404)
                return
            body = json.dumps(metrics[name]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def two_processes():
    a = _serve({"lt_users_started": _metric("lt_users_started", "counter", {"count": 150, "rate": 30.0}),
                "http_reqs": _metric("http_reqs", "counter", {"count": 100, "rate": 20.0}),
                "http_req_failed": _metric("http_req_failed", "rate", {"rate": 0.25}),
                "vus": _metric("vus", "gauge", {"value": 50})})
    b = _serve({"lt_users_started": _metric("lt_users_started", "counter", {"count": 150, "rate": 30.0}),
                "http_reqs": _metric("http_reqs", "counter", {"count": 60, "rate": 12.0}),
                "http_req_failed": _metric("http_req_failed", "rate", {"rate": 0.5}),
                "vus": _metric("vus", "gauge", {"value": 90})})
    yield [f"127.0.0.1:{s.server_address[1]}" for s in (a, b)]
    a.shutdown()
    b.shutdown()


def test_users_are_summed_over_the_processes_and_failures_come_from_each_rate(two_processes):
    users = live.users_now(two_processes)
    assert (users.started, users.requests, users.failed, users.vus) == (300, 160, 25 + 30, 140)
    assert users.answered == 105


def test_a_process_that_does_not_answer_leaves_its_figures_unmeasured_not_zero():
    closed = _serve({})
    address = f"127.0.0.1:{closed.server_address[1]}"
    closed.shutdown()
    closed.server_close()
    users = live.users_now([address])
    assert users == live.Users()
    assert live.line(3, 20, users, live.Server()) == "live 3s/20s"


def test_no_request_yet_is_no_failure_yet():
    server = _serve({"http_reqs": _metric("http_reqs", "counter", {"count": 0, "rate": 0}),
                     "vus": _metric("vus", "gauge", {"value": 4})})
    users = live.users_now([f"127.0.0.1:{server.server_address[1]}"])
    server.shutdown()
    assert (users.requests, users.failed, users.answered, users.started) == (0, 0, 0, None)


def test_the_newest_complete_sample_is_read_and_a_row_being_written_is_not(tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER)
    assert live.server_now(samples) == live.Server()
    samples.write_text(HEADER + "1.0\t3\t11\t20\t0\t0\t31\t0\t4\t20\t50\t100\n"
                       + "2.0\t11\t11\t31\t2\t0\t42\t0\t4\t31\t60\t110\n" + "3.0\t5\t1")
    assert live.server_now(samples) == live.Server(conns=31, queue=11, backlog=11, threads_busy=4)


def test_empty_sampler_figures_stay_out_of_the_line(tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER + "1.0\t\t\t7\t0\t0\t7\t0\t\t\t50\t100\n")
    server = live.server_now(samples)
    assert server == live.Server(conns=7)
    users = live.Users(started=1200, requests=1200, failed=220, vus=1000)
    assert live.line(12, 65, users, server) == ("live 12s/65s: 1,200 users started, 980 requests answered, 220 failed, "
                                                "1,000 VUs | server: 7 conns")


def test_the_full_line(two_processes, tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER + "2.0\t11\t11\t31\t2\t0\t42\t0\t4\t31\t60\t110\n")
    text = live.line(5, 9, live.users_now(two_processes), live.server_now(samples))
    assert text == ("live 5s/9s: 300 users started, 105 requests answered, 55 failed, 140 VUs | server: 31 conns, "
                    "accept queue 11/11, 4 threads busy")


def test_without_a_terminal_it_prints_a_plain_line_every_few_seconds_and_ends_on_sigterm(two_processes, tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER + "2.0\t11\t11\t31\t2\t0\t42\t0\t4\t31\t60\t110\n")
    args = [sys.executable, "-S", "-m", "ltsuite.live", "--samples", str(samples), "--expected-s", "9",
            "--every", "1"] + [a for address in two_processes for a in ("--api", address)]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(SCRIPTS)})
    time.sleep(2.6)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    lines = err.splitlines()
    assert proc.returncode == 0
    assert lines[:2] == ["  live 1s/9s: 300 users started, 105 requests answered, 55 failed, 140 VUs | server: 31 conns, "
                         "accept queue 11/11, 4 threads busy",
                         "  live 2s/9s: 300 users started, 105 requests answered, 55 failed, 140 VUs | server: 31 conns, "
                         "accept queue 11/11, 4 threads busy"]
    assert "\r" not in err


def test_it_ends_on_its_own_after_max_seconds(tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-S", "-m", "ltsuite.live", "--samples", str(samples),
                           "--expected-s", "1", "--every", "1", "--max-s", "2"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(SCRIPTS)}, timeout=20)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == ["  live 1s/1s", "  live 2s/1s"]
    assert time.monotonic() - started < 10


def test_on_a_terminal_the_line_is_rewritten_in_place_and_cleared_at_the_end(tmp_path):
    import os
    import pty
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER + "2.0\t1\t8\t9\t0\t0\t9\t0\t2\t9\t60\t110\n")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-S", "-m", "ltsuite.live", "--samples", str(samples),
                             "--expected-s", "30", "--tty"], stderr=follower, env={"PYTHONPATH": str(SCRIPTS)})
    os.close(follower)
    time.sleep(2.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    text = out.decode()
    assert text == ("\rlive 1s/30s | server: 9 conns, accept queue 1/8, 2 threads busy\x1b[K"
                    "\rlive 2s/30s | server: 9 conns, accept queue 1/8, 2 threads busy\x1b[K\r\x1b[K")


def test_it_ends_when_the_process_that_started_it_is_killed(tmp_path):
    """A runner killed with -9 leaves no live line behind: it asked the kernel for SIGTERM."""
    import os
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER)
    parent = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -S -m ltsuite.live --samples "{samples}" '
                               '--expected-s 60 --every 1 2>/dev/null & echo $!; wait'],
                              stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": str(SCRIPTS)})
    child = int(parent.stdout.readline())
    time.sleep(1.5)
    assert os.path.exists(f"/proc/{child}")
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
        with open(f"/proc/{child}/stat") as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        time.sleep(0.1)
    gone = not os.path.exists(f"/proc/{child}")
    if not gone:
        with open(f"/proc/{child}/stat") as f:
            gone = f.read().split(")")[-1].split()[0] == "Z"
    assert gone, "the live line outlived the process that started it"
