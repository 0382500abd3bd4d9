"""When a warm-up may end (WARMUP_UNTIL=settled, ltsuite.warmsettle), over the access logs of three
recorded warm-ups of Spring PetClinic's /owners?lastName= (tests/python/fixtures/advise-petclinic:
30 s each, the calibration cell at 2 threads and the verification cells at 1 and 2 threads of run
advise-20261129-003933-petclinic30), and over made-up requests for the rule's edges."""
import shutil
import subprocess
from pathlib import Path

from ltsuite import warmsettle, warmup
from ltsuite.accesslog import AppRequest, read_access_log
from ltsuite.cellfiles import read_phases

FIXTURES = Path(__file__).parent / "fixtures"
ADVISE = FIXTURES / "advise-petclinic"


def recorded(name):
    """A recorded cell's access-log requests and its warm-up's start and end (epoch ms)."""
    cell = ADVISE / name
    marks = read_phases(cell / "phases.tsv").last()
    return read_access_log(cell / "tomcat-access.log").requests, marks["warmup_start"], marks["warmup_end"]


def test_petclinic_s_time_settles_once_it_stopped_falling_not_at_its_first_pause():
    requests, start, end = recorded("calibrate")
    result = warmsettle.settle(requests, start, end)
    # Its time fell from 27 ms to 14 ms by second 6, went back up to 21-24 ms (seconds 8-10), then
    # fell to about 6 ms: it settles there, not at the bump that stopped the fall for 3 seconds.
    assert result.settled_second == 25
    assert result.settled_med_ms == 6.07
    bump = [c for c in result.checks if 8 <= c.second <= 10]
    assert [c.falling for c in bump] == [False, False, False]
    assert min(c.late_med_ms for c in bump) > 14.0
    # Seen at its 20th second (as the watcher would have), it had not settled yet.
    assert warmsettle.settle(requests, start, start + 21_000).settled_second is None


def test_each_recorded_warm_up_settles_within_its_30_s_near_its_last_seconds_time():
    settled = {}
    for name in ("calibrate", "threads-1", "threads-2"):
        requests, start, end = recorded(name)
        result = warmsettle.settle(requests, start, end)
        settled[name] = (result.settled_second, result.settled_med_ms)
        # The median of the last 3 s of the 30 s warm-up: the settled time is within 2 ms of it.
        first = warmsettle.first_begin(requests, start)
        last = sorted(r.service_ms for r in requests if end - 3000 <= r.begin_ms < end and r.begin_ms >= first)
        assert abs(result.settled_med_ms - last[len(last) // 2]) < 2.0
    assert settled == {"calibrate": (25, 6.07), "threads-1": (25, 6.434), "threads-2": (14, 9.881)}


def requests_every(ms_between, times_ms, start=1_000_000):
    """Made-up requests: one every ms_between from start, the i-th taking times_ms(i) ms."""
    return [AppRequest(begin_ms=start + i * ms_between, service_us=int(times_ms(i) * 1000), status=200,
                       remote_port=40000, request_id=None, method="GET", path="/p") for i in range(200)]


def test_a_flat_time_settles_at_the_earliest_second_the_rule_allows():
    result = warmsettle.settle(requests_every(50, lambda i: 4.0), 1_000_000, 1_000_000 + 10_000)
    # Two windows of 3 s, then 3 steady seconds in a row: the warm-up's second 7 (8 s).
    assert result.settled_second == 2 * warmsettle.WINDOW_S + warmsettle.HOLD_S - 2 == 7
    assert result.settled_med_ms == 4.0


def test_a_time_still_falling_does_not_settle():
    # 40 ms falling by a fifth every second: each window is far below the one before.
    result = warmsettle.settle(requests_every(50, lambda i: 40 * 0.8 ** (i // 20)), 1_000_000, 1_000_000 + 10_000)
    assert result.settled_second is None
    assert result.checks and all(c.falling for c in result.checks)


def test_a_path_asked_too_rarely_never_settles_the_warm_up_ends_by_time():
    # A 1 s endpoint asked by 2 VUs: 2 requests a second, 6 a window, fewer than MIN_REQUESTS.
    result = warmsettle.settle(requests_every(500, lambda i: 1000.0), 1_000_000, 1_000_000 + 60_000)
    assert result.settled_second is None and result.checks == []


def test_the_warm_up_s_seconds_count_from_its_first_request_and_leave_earlier_ones_out():
    requests, start, end = recorded("calibrate")
    # The runner's health checks come before the warm-up's start; k6 takes a moment to send.
    assert any(r.begin_ms < start for r in requests)
    assert warmsettle.first_begin(requests, start) > start
    assert warmsettle.settle([r for r in requests if r.begin_ms < start], start, end).checks == []


def test_the_watcher_writes_what_ended_the_warm_up_and_the_row_says_it(tmp_path):
    cell = tmp_path / "cell"
    shutil.copytree(ADVISE / "calibrate", cell)
    start = read_phases(cell / "phases.tsv").last()["warmup_start"]
    # Long over: every second of the recorded warm-up is in the log, and it settled.
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert warmsettle.watch(cell, start, 20, sleeper.pid) == "settled"
    finally:
        sleeper.kill()
        sleeper.wait()
    columns = warmup.row_columns(cell, read_phases(cell / "phases.tsv"))
    assert columns["warmup_ended_by"] == "settled" and columns["warmup_settled_ms"] == 6.07
    # Only the health checks before the warm-up: nothing to settle on; its k6 (here a process
    # that has ended) ended it by time.
    (cell / "tomcat-access.log").write_text("".join(
        line + "\n" for line in (cell / "tomcat-access.log").read_text().split("\n")
        if line and int(line.split(" ")[0]) < start))
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert warmsettle.watch(cell, start, 20, ended.pid) == "time"
    columns = warmup.row_columns(cell, read_phases(cell / "phases.tsv"))
    assert columns["warmup_ended_by"] == "time" and columns["warmup_settled_ms"] is None
    assert warmsettle.read(cell)["checks"] == []


def test_the_count_rule_ends_the_warm_up_once_tomcat_logged_that_many_of_its_requests(tmp_path):
    cell = tmp_path / "cell"
    shutil.copytree(ADVISE / "calibrate", cell)
    start = read_phases(cell / "phases.tsv").last()["warmup_start"]
    logged = sum(1 for line in (cell / "tomcat-access.log").read_text().split("\n")
                 if line and int(line.split(" ")[0]) >= start)
    assert logged > 500
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert warmsettle.watch(cell, start, 20, sleeper.pid, count=500) == "count"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert warmsettle.read(cell)["counted"] == logged and warmsettle.read(cell)["count"] == 500
    columns = warmup.row_columns(cell, read_phases(cell / "phases.tsv"))
    assert columns["warmup_ended_by"] == "count" and columns["warmup_settled_ms"] is None
