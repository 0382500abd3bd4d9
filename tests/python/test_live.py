"""ltsuite.live: the live line of a running cell, from the k6 processes' samples files (recorded
from a real cell, tests/python/fixtures/live-burst: a burst of 600 users, 20 a VU, over two k6
processes, with their files as k6 had written them mid-run) and the sampler's samples.tsv."""
import gzip
import json
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from ltsuite import live

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "live-burst"
FILES = ("k6-samples.json.gz", "k6-samples-2.json.gz")
HEADER = ("ts\tlisten_recvq\tlisten_sendq\tserver_estab\tserver_syn_recv\tserver_time_wait\tclient_estab"
          "\tclient_time_wait\ttomcat_threads_busy\ttomcat_connections\tk6_cpu_pct\tk6_rss_mb\n")


def _row():
    return json.loads((FIXTURE / "row.json").read_text())


def _parsed(data: bytes) -> tuple[int, int, int]:
    """Users started, requests answered and failed in DATA's complete JSON lines, each line
    parsed as JSON: the rule the reader's byte searches must keep."""
    started = answered = failed = 0
    for text in data[:data.rfind(b"\n") + 1].splitlines():
        point = json.loads(text)
        if point.get("type") != "Point":
            continue
        if point["metric"] == "lt_vu_first_request":
            started += 1
        elif point["metric"] == "http_req_failed" and point["data"]["tags"].get("traffic") == "load":
            failed += point["data"]["value"] == 1
            answered += point["data"]["value"] == 0
    return started, answered, failed


def _prefix_text(path: Path) -> bytes:
    """What a gzip file written only in part inflates to so far."""
    return zlib.decompressobj(wbits=31).decompress(path.read_bytes())


def test_a_finished_cell_counts_its_rows_users_and_requests_summed_over_its_processes():
    row = _row()
    users = live.users_now([live.SamplesTail(FIXTURE / name) for name in FILES])
    assert users.started == row["vus_started"] == 600
    assert users.answered + users.failed == row["http_reqs"]
    assert users.failed == row["failed_reqs"] > 0
    assert users.answered > 0


def test_k6s_progress_lines_count_vus_and_iterations_not_the_users_they_carry():
    """Why the line does not read k6.log: its last progress lines (k6 v2.2.0, once a second
    when its output is no terminal) say 15 VUs and 15 iterations a process, for 300 users each."""
    vus = iterations = 0
    for name in ("k6.log", "k6-2.log"):
        progress = [t for t in (FIXTURE / name).read_text().splitlines() if t.startswith("running (")]
        match = re.match(r"running \([0-9.]+s\), [0-9]+/([0-9]+) VUs, ([0-9]+) complete and 0 interrupted",
                         progress[-1])
        vus += int(match[1])
        iterations += int(match[2])
    assert (vus, iterations) == (30, 30)
    assert live.users_now([live.SamplesTail(FIXTURE / name) for name in FILES]).started == 600


def test_each_process_adds_its_own_share():
    one = live.users_now([live.SamplesTail(FIXTURE / FILES[0])])
    two = live.users_now([live.SamplesTail(FIXTURE / FILES[1])])
    both = live.users_now([live.SamplesTail(FIXTURE / name) for name in FILES])
    assert one.started and two.started
    assert both == live.Users(started=one.started + two.started, answered=one.answered + two.answered,
                              failed=one.failed + two.failed)


def test_files_k6_is_still_writing_count_their_complete_lines_as_json_would():
    for name in FILES:
        mid = FIXTURE / "mid-run" / name
        counts = live.SamplesTail(mid).read()
        expected = _parsed(_prefix_text(mid))
        assert (counts.started, counts.answered, counts.failed) == expected
        # Mid-run: some users started, fewer requests ended than in the end.
        final = _parsed(gzip.decompress((FIXTURE / name).read_bytes()))
        assert 0 < expected[0] and sum(expected[1:]) < sum(final[1:])


def test_only_new_bytes_are_read_and_a_slow_reader_catches_up(tmp_path):
    full = (FIXTURE / FILES[0]).read_bytes()
    mid = (FIXTURE / "mid-run" / FILES[0]).read_bytes()
    assert full.startswith(mid)  # k6 only appends
    growing = tmp_path / FILES[0]
    growing.write_bytes(mid)
    tail = live.SamplesTail(growing)
    tail.read()
    assert tail.offset == len(mid)
    with growing.open("ab") as f:
        f.write(full[len(mid):])
    ticks = 0
    while tail.offset < len(full):
        tail.read(limit=4096)
        ticks += 1
    assert ticks == -(-(len(full) - len(mid)) // 4096)
    final = _parsed(gzip.decompress(full))
    assert (tail.counts.started, tail.counts.answered, tail.counts.failed) == final


def test_what_was_not_written_is_left_out_not_zero(tmp_path):
    missing = live.SamplesTail(tmp_path / "k6-samples.json.gz")
    assert live.users_now([missing]) == live.Users()
    # k6 has opened its file and written nothing yet.
    (tmp_path / "k6-samples.json.gz").write_bytes(b"")
    assert live.users_now([missing]) == live.Users()
    # Only the metrics' declarations so far: no user started, no request ended yet.
    declared = tmp_path / "declared.json.gz"
    declared.write_bytes(gzip.compress(b'{"type":"Metric","data":{"name":"http_req_failed","type":"rate"},'
                                       b'"metric":"http_req_failed"}\n'))
    assert live.users_now([live.SamplesTail(declared)]) == live.Users()
    assert live.line(3, 20, live.Users(), live.Server()) == "live 3s/20s"


def test_users_started_but_no_request_ended_yet_shows_only_the_users(tmp_path):
    lines = [t for t in gzip.decompress((FIXTURE / FILES[0]).read_bytes()).splitlines(keepends=True)
             if b'"metric":"http_req_failed"' not in t]
    started = tmp_path / "started.json.gz"
    started.write_bytes(gzip.compress(b"".join(lines)))
    users = live.users_now([live.SamplesTail(started)])
    assert users.started > 0 and (users.answered, users.failed) == (None, None)


def test_a_file_that_is_not_gzip_is_left_out(tmp_path):
    bad = tmp_path / "k6-samples.json.gz"
    bad.write_bytes(b'{"metric":"http_reqs"}\n')
    tail = live.SamplesTail(bad)
    assert live.users_now([tail]) == live.Users()
    assert tail.broken


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
    users = live.Users(started=1200, answered=980, failed=220)
    assert live.line(12, 65, users, server) == ("live 12s/65s: 1,200 users started, 980 requests answered, 220 failed"
                                                " | server: 7 conns")


def test_without_a_terminal_it_prints_a_plain_line_every_few_seconds_and_ends_on_sigterm(tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER + "2.0\t11\t11\t31\t2\t0\t42\t0\t4\t31\t60\t110\n")
    for name in FILES:
        shutil.copy(FIXTURE / name, tmp_path / name)
    args = [sys.executable, "-S", "-m", "ltsuite.live", "--samples", str(samples), "--expected-s", "9",
            "--every", "1"] + [a for name in FILES for a in ("--k6-samples", str(tmp_path / name))]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(SCRIPTS)})
    time.sleep(2.6)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    row = _row()
    figures = (f"{row['vus_started']} users started, {row['http_reqs'] - row['failed_reqs']} requests answered, "
               f"{row['failed_reqs']} failed | server: 31 conns, accept queue 11/11, 4 threads busy")
    assert proc.returncode == 0
    assert err.splitlines()[:2] == [f"  live 1s/9s: {figures}", f"  live 2s/9s: {figures}"]
    assert "\r" not in err


def test_it_ends_on_its_own_after_max_seconds(tmp_path):
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-S", "-m", "ltsuite.live", "--samples", str(samples),
                           "--expected-s", "1", "--every", "1", "--max-s", "2",
                           "--k6-samples", str(tmp_path / "k6-samples.json.gz")],
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


@pytest.mark.parametrize("armed", [[], ["--armed"]], ids=["showing", "armed"])
def test_it_ends_when_the_process_that_started_it_is_killed(tmp_path, armed):
    """A runner killed with -9 leaves no live line behind: it asked the kernel for SIGTERM, also
    while armed beside a warm-up, waiting for the load's start (live_arm)."""
    import os
    samples = tmp_path / "samples.tsv"
    samples.write_text(HEADER)
    parent = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -S -m ltsuite.live {" ".join(armed)} '
                               f'--samples "{samples}" --expected-s 60 --every 1 2>/dev/null & echo $!; wait'],
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


def test_a_file_written_anew_is_read_from_its_start(tmp_path):
    """A cell's samples file from before k6 opened its own (a cell run again) is not added to k6's."""
    path = tmp_path / FILES[0]
    shutil.copy(FIXTURE / FILES[0], path)
    tail = live.SamplesTail(path)
    assert tail.read().started == _parsed(gzip.decompress(path.read_bytes()))[0]
    mid = (FIXTURE / "mid-run" / FILES[0]).read_bytes()
    path.unlink()
    path.write_bytes(mid)
    counts = tail.read()
    assert (counts.started, counts.answered, counts.failed) == _parsed(_prefix_text(FIXTURE / "mid-run" / FILES[0]))


def test_a_sigterm_before_the_loop_ends_the_line_quietly(monkeypatch, tmp_path):
    """live_stop right after live_start: Stop raised before run()'s loop is no traceback."""
    from ltsuite import live as live_module

    def stopped_at_once(_args):
        raise live_module.Stop()

    monkeypatch.setattr(live_module, "run", stopped_at_once)
    assert live_module.main(["--samples", str(tmp_path / "samples.tsv"), "--expected-s", "10", "--every", "5"]) == 0


def test_without_a_terminal_it_needs_the_runners_interval(tmp_path, capsys):
    """The interval between plain lines is the runner's (live.sh), not a second default here."""
    from ltsuite import live as live_module

    with pytest.raises(SystemExit) as ended:
        live_module.main(["--samples", str(tmp_path / "samples.tsv"), "--expected-s", "10"])
    assert ended.value.code == 2
    assert "--every S" in capsys.readouterr().err


def test_the_warm_up_s_watch_takes_its_arguments_together_and_no_line_only_with_it(tmp_path, capsys):
    """--no-line is the warm-up's watch alone; the watch's four arguments come together."""
    from ltsuite import live as live_module

    with pytest.raises(SystemExit) as ended:
        live_module.main(["--no-line"])
    assert ended.value.code == 2
    assert "--no-line: only with the warm-up's watch" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ended:
        live_module.main(["--no-line", "--warmup-cell", str(tmp_path), "--warmup-pid", "1"])
    assert ended.value.code == 2
    assert "go together" in capsys.readouterr().err


def test_after_a_watched_warm_up_the_line_waits_for_the_load_s_start(monkeypatch, tmp_path):
    """After the watch, the line starts on SIGUSR1 (live_start: the load's k6 started), and the
    process ends without a line when none comes within --max-s."""
    from ltsuite import live as live_module

    watched, shown = [], []
    monkeypatch.setattr(live_module, "watch_warmup", lambda args: watched.append(args.warmup_pid) or "settled")
    monkeypatch.setattr(live_module, "run", lambda args: shown.append(args.expected_s))
    monkeypatch.setattr(live_module, "_LOAD_STARTED", [False])
    line = ["--samples", str(tmp_path / "samples.tsv"), "--expected-s", "10", "--every", "5",
            "--warmup-cell", str(tmp_path), "--warmup-start-ms", "0", "--warmup-limit-s", "5", "--warmup-pid", "7"]
    started = time.monotonic()
    assert live_module.main(line + ["--max-s", "1"]) == 0
    assert time.monotonic() - started >= 1
    assert (watched, shown) == ([7], [])
    timer = __import__("threading").Timer(0.3, lambda: signal.raise_signal(signal.SIGUSR1))
    timer.start()
    started = time.monotonic()
    assert live_module.main(line + ["--max-s", "30"]) == 0
    timer.join()
    assert time.monotonic() - started < 5
    assert (watched, shown) == ([7, 7], [10])
    # --no-line: the watch alone, no wait.
    assert live_module.main(["--no-line"] + line[6:] + ["--max-s", "30"]) == 0
    assert (watched, shown) == ([7, 7, 7], [10])


def test_armed_beside_a_warm_up_the_line_waits_for_the_load_s_start_and_watches_nothing(monkeypatch, tmp_path):
    """--armed (live_arm: a warm-up of a fixed length): no watch; the line only from SIGUSR1 on,
    and no line at all when none comes within --max-s."""
    from ltsuite import live as live_module

    watched, shown = [], []
    monkeypatch.setattr(live_module, "watch_warmup", lambda args: watched.append(args) or "settled")
    monkeypatch.setattr(live_module, "run", lambda args: shown.append(args.expected_s))
    monkeypatch.setattr(live_module, "_LOAD_STARTED", [False])
    line = ["--armed", "--samples", str(tmp_path / "samples.tsv"), "--expected-s", "10", "--every", "5"]
    started = time.monotonic()
    assert live_module.main(line + ["--max-s", "1"]) == 0
    assert time.monotonic() - started >= 1
    assert (watched, shown) == ([], [])
    timer = __import__("threading").Timer(0.3, lambda: signal.raise_signal(signal.SIGUSR1))
    timer.start()
    started = time.monotonic()
    assert live_module.main(line + ["--max-s", "30"]) == 0
    timer.join()
    assert 0.3 <= time.monotonic() - started < 5
    assert (watched, shown) == ([], [10])
