"""When a warm-up may end: the application's own time at the path has settled (WARMUP_UNTIL=settled),
or it has answered WARMUP_REQUESTS of the warm-up's requests (WARMUP_UNTIL=count).

A fresh JVM answers its first requests slowly (classes loading, the JIT compiling) and faster as
they repeat, until its time stops falling. The warm-up (scripts/lib/warmup.sh) asks the load's
path; while it runs, the runner watches the application's own time of each request (%D in
Tomcat's access log, ltsuite.accesslog: the same account the row's app_* figures and
cold_start_ratio come from) and ends the warm-up once that time has settled, WARMUP being the
bound in time.

The rule (settled):

- the warm-up's requests (all that Tomcat began from the warm-up's start: nothing else asks the
  port under test then) are taken by the whole second they began in, counted from the first of
  them, and only seconds that are over (SECOND_LAG_MS past their end, so their slowest requests
  have been logged) count;
- at each second, the median time of the last WINDOW_S seconds (the late window) is set against
  the median of the WINDOW_S seconds before them (the early window), each window with at least
  MIN_REQUESTS requests. The time is *steady* there when the late median is neither falling (below
  the early one by more than FALL_FRACTION of it and more than FALL_FLOOR_MS, a time too small to
  fall by a fraction measurably) nor above the lowest late median seen so far by more than
  FALL_FRACTION of it plus FALL_FLOOR_MS (a second that went back up after a fall has not settled:
  it shows the time can be lower);
- it has *settled* when it was steady at HOLD_S seconds in a row: one second's pause in a JIT's
  progress (a compilation not yet installed) is not the end of it.

The rule (count): Tomcat has logged WARMUP_REQUESTS requests begun from the warm-up's start (its
own account: the requests the application has done, answered or not, whatever the number of
warm-up VUs). Its requests are logged as they end, so the warm-up ends within POLL_S of the
count.

So a warm-up settles at the earliest after 2 x WINDOW_S + HOLD_S - 1 seconds (8 s); a path
asked too rarely (a slow endpoint: fewer than MIN_REQUESTS in a window) never settles and the
warm-up ends by time. The figures were chosen over recorded warm-ups of Spring PetClinic's
/owners (tests/python/fixtures/advise-petclinic: 30 s at 1 and 2 threads), whose time falls from
20-30 ms to 5-8 ms over about 20 s, with single seconds that pause or go back up on the way.

The watch (`watch`) runs in the cell's live process (`ltsuite.live --warmup-cell`, started with
the warm-up's k6 by scripts/lib/warmup.sh), so a settled or counted warm-up starts no Python of its
own: it reads CELL_DIR/tomcat-access.log from the warm-up's start until the rule ends the warm-up
(it then sends k6 SIGINT), k6 ends, or the bound passes, and writes what it saw to
CELL_DIR/warmup-settle.json.
"""
from __future__ import annotations

import json
import os
import select
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .accesslog import ACCESS_LOG, TARGET_LOG, AppRequest, read_access_log, service_unit_us
from .cellfiles import read_json, read_text
from .latency import percentile
from .numbers import num

#: Seconds in each of the two windows compared.
WINDOW_S = 3
#: Requests each window needs to be compared.
MIN_REQUESTS = 10
#: The late window's median is falling when below the early one's by more than this fraction...
FALL_FRACTION = 0.10
#: ... and by more than this many ms.
FALL_FLOOR_MS = 0.5
#: Seconds in a row the time must not be falling to have settled.
HOLD_S = 3
#: A second is over, its requests logged, this long after its end.
SECOND_LAG_MS = 500
#: How often the watcher reads the access log.
POLL_S = 0.5
#: The file the watcher writes into the cell's directory, read by ltsuite.warmup.
SETTLE_FILE = "warmup-settle.json"


@dataclass(frozen=True)
class Check:
    """One second's comparison: the two windows' medians (ms) and their requests."""

    second: int
    """The warm-up's second (from 0) that ends the late window."""
    early_med_ms: float
    late_med_ms: float
    early_reqs: int
    late_reqs: int

    @property
    def falling(self) -> bool:
        """The late median below the early one by more than FALL_FRACTION of it and FALL_FLOOR_MS."""
        drop = self.early_med_ms - self.late_med_ms
        return drop > FALL_FRACTION * self.early_med_ms and drop > FALL_FLOOR_MS


@dataclass
class Settle:
    """What the rule saw: the checks made, and the second at which the time had settled (None:
    not yet)."""

    checks: list[Check] = field(default_factory=list)
    settled_second: int | None = None

    @property
    def settled_med_ms(self) -> float | None:
        """The late window's median at the second it settled."""
        if self.settled_second is None:
            return None
        return next(c.late_med_ms for c in self.checks if c.second == self.settled_second)


def by_second(requests: list[AppRequest], start_ms: int) -> dict[int, list[float]]:
    """The times (ms, %D) of the requests begun at or after start_ms, by whole second since it."""
    seconds: dict[int, list[float]] = {}
    for r in requests:
        if r.begin_ms >= start_ms:
            seconds.setdefault((r.begin_ms - start_ms) // 1000, []).append(r.service_ms)
    return seconds


def first_begin(requests: list[AppRequest], start_ms: int) -> int | None:
    """When Tomcat began the warm-up's first request (the first begun at or after start_ms: k6
    takes a moment to start); None before it has one."""
    return min((r.begin_ms for r in requests if r.begin_ms >= start_ms), default=None)


def settle(requests: list[AppRequest], start_ms: int, now_ms: int) -> Settle:
    """The rule of the module's docstring over the requests Tomcat logged by now_ms, from a warm-up
    that started at start_ms; its seconds count from its first request (first_begin)."""
    out = Settle()
    first = first_begin(requests, start_ms)
    if first is None:
        return out
    seconds = by_second(requests, first)
    over = (now_ms - first - SECOND_LAG_MS) // 1000  # seconds 0 .. over-1 are over
    held = 0
    best = float("inf")
    for last in range(2 * WINDOW_S - 1, over):
        early = sorted(t for s in range(last - 2 * WINDOW_S + 1, last - WINDOW_S + 1) for t in seconds.get(s, []))
        late = sorted(t for s in range(last - WINDOW_S + 1, last + 1) for t in seconds.get(s, []))
        if len(early) < MIN_REQUESTS or len(late) < MIN_REQUESTS:
            held = 0
            continue
        check = Check(second=last, early_med_ms=num(percentile(early, 0.5)), late_med_ms=num(percentile(late, 0.5)),
                      early_reqs=len(early), late_reqs=len(late))
        out.checks.append(check)
        steady = not check.falling and check.late_med_ms <= best * (1 + FALL_FRACTION) + FALL_FLOOR_MS
        best = min(best, check.late_med_ms)
        held = held + 1 if steady else 0
        if held >= HOLD_S:
            out.settled_second = last
            return out
    return out


def start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks after boot, field 22 of /proc/PID/stat, proc(5)),
    None when there is no such process."""
    stat = read_text(Path(f"/proc/{pid}/stat")) or ""
    fields = stat.rpartition(")")[2].split()
    return int(fields[19]) if len(fields) > 19 else None


@dataclass
class Watched:
    """The process a watch may end, held by a pidfd (pidfd_open(2)): once the runner reaped it,
    its pid may be another process's, and neither the check nor the signal may reach that one."""
    fd: int | None

    @classmethod
    def open(cls, pid: int, started: int | None = None) -> "Watched":
        """The process pid, as the one that started at STARTED (start_ticks) when given; ended
        (fd None) when there is no such process any more."""
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return cls(None)
        if started is not None and start_ticks(pid) != started:
            os.close(fd)
            return cls(None)
        return cls(fd)

    def alive(self) -> bool:
        """Whether it runs (a pidfd is readable once the process ended, a zombie too)."""
        return self.fd is not None and not select.select([self.fd], [], [], 0)[0]

    def interrupt(self) -> None:
        """SIGINT to it, if it still runs."""
        if self.alive():
            try:
                signal.pidfd_send_signal(self.fd, signal.SIGINT)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def counted(requests: list[AppRequest], start_ms: int) -> int:
    """The warm-up's requests Tomcat has logged: those begun at or after start_ms (the count rule)."""
    return sum(1 for r in requests if r.begin_ms >= start_ms)


def watch(cell_dir: Path, start_ms: int, limit_s: float, pid: int, count: int | None = None,
          end: bool = False, started: int | None = None, access_log: Path | None = None) -> str:
    """Read the cell's access log every POLL_S until the rule ends the warm-up: without COUNT the
    time settles ("settled"), with it COUNT requests were logged ("count"); or pid ended or
    limit_s passed ("time"). Write SETTLE_FILE either way. Bounded by limit_s. With END, a warm-up
    the rule ended gets SIGINT (pid: the timeout k6 runs under in the foreground, which passes it
    to k6 once; k6 writes its summary and ends), after SETTLE_FILE is written, so the runner that
    waits for k6 finds the rule there. STARTED: the process's start_ticks, so a pid the runner
    already reaped and the system gave another process is not taken for it. ACCESS_LOG: where the
    running target writes its access log when not in CELL_DIR (a container's, through its
    /proc/PID/root: scripts/lib/backend_compose.sh)."""
    process = Watched.open(pid, started)
    try:
        return _watch(cell_dir, access_log or cell_dir / ACCESS_LOG, start_ms, limit_s, process, count, end)
    finally:
        process.close()


def _watch(cell_dir: Path, access_log: Path, start_ms: int, limit_s: float, process: Watched,
           count: int | None, end: bool) -> str:
    unit_us = 1
    deadline = time.monotonic() + limit_s
    result = Settle()
    ended = "time"
    logged = 0
    while True:
        if unit_us == 1:
            unit_us = service_unit_us(read_text(cell_dir / TARGET_LOG))
        log = read_access_log(access_log, unit_us)
        requests = log.requests if log else []
        if count is not None:
            logged = counted(requests, start_ms)
            if logged >= count:
                ended = "count"
                break
        else:
            result = settle(requests, start_ms, int(time.time() * 1000))
            if result.settled_second is not None:
                ended = "settled"
                break
        if not process.alive() or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    write(cell_dir, ended, result, count, logged if count is not None else None)
    if end and ended != "time":
        process.interrupt()
    return ended


def write(cell_dir: Path, ended: str, result: Settle, count: int | None = None, logged: int | None = None) -> None:
    """SETTLE_FILE: the rule that ended the warm-up, the second it settled and its checks (the
    count asked and the requests logged, for the count rule)."""
    body = {"ended_by": ended, "count": count, "counted": logged,
            "settled_second": result.settled_second, "settled_med_ms": result.settled_med_ms,
            "rule": {"window_s": WINDOW_S, "min_requests": MIN_REQUESTS, "fall_fraction": FALL_FRACTION,
                     "fall_floor_ms": FALL_FLOOR_MS, "hold_s": HOLD_S},
            "checks": [asdict(c) for c in result.checks]}
    tmp = cell_dir / (SETTLE_FILE + ".tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(cell_dir / SETTLE_FILE)


def read(cell_dir: Path) -> dict | None:
    """SETTLE_FILE of a cell, None when it has none (a warm-up ended by time alone)."""
    value = read_json(cell_dir / SETTLE_FILE)
    return value if isinstance(value, dict) else None
