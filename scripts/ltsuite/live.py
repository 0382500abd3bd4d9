"""The live line of a running cell: what the users and the server are doing now.

Usage:
  python3 -m ltsuite.live --samples FILE --expected-s N [--k6-samples FILE]... (--tty | --every S)
                          [--max-s N] [WARM-UP]
  python3 -m ltsuite.live --no-line WARM-UP
  WARM-UP: --warmup-cell DIR [--warmup-access-log FILE] --warmup-start-ms MS --warmup-limit-s S --warmup-pid PID
           [--warmup-started TICKS] [--warmup-count N]

Each tick it reads the new bytes of every k6 process's per-request samples file (--k6-samples:
k6-samples.json.gz, k6-samples-2.json.gz, ...; k6's `--out json=` that the suite already asks
for, scripts/lib/monitoring.sh) and the sampler's newest row of samples.tsv (the server's
established connections, the listener's accept queue against its backlog, Tomcat's busy
threads), and prints one line:

  live 12s/65s: 1,200 users started, 980 requests answered, 220 failed | server: 31 conns,
  accept queue 11/11, 4 threads busy

Users started are the points of lt_vu_first_request (scenarios/lib/delivered.js: one per user,
also for the users a VU carries with USERS_PER_VU > 1); requests answered and failed are the
load's (traffic=load) points of k6's http_req_failed, 0 and 1. Both are summed over the
processes. Nothing here opens a socket: k6's REST API would have been counted in the client
namespace's TcpActiveOpens, which the row reports as client_connects.

k6 writes the file through gzip in 4 KiB writes, so the counts trail k6 by what it has not
written yet (up to a few seconds in a cell of a few requests a second, well under one in a
busy one) and are exact once k6 ends. A tick reads at most READ_LIMIT compressed bytes a file
(the rest on the next ticks) and the process runs at a lower priority (nice 10), so it never
holds k6 back.

On a terminal (--tty) the line is rewritten in place each second and cleared when the cell
ends; otherwise a plain line is printed every S seconds (--every: the runner gives 5, or
LT_LIVE_EVERY), so a log gets
a few lines, not one a second. A figure nobody could read (no samples file: K6_SAMPLES=0 or
k6's live InfluxDB output; nothing written yet; a scenario without HTTP requests; no sampler
row yet) is left out of the line, never shown as 0. It ends on SIGTERM, when the process that
started it dies, or after --max-s seconds, whichever comes first.

With WARM-UP (a cell whose warm-up ends when the application's time settled or after a count of
requests, WARMUP_UNTIL=settled|count) the same process first watches the warm-up
(ltsuite.warmsettle.watch: it writes warmup-settle.json and sends the warm-up's k6 SIGINT when
the rule ends it), so that rule costs the cell no Python start of its own (a cell starts Python
at most three times: the sampler, this, its finish; docs/how-a-run-works.md). It then waits for
SIGUSR1, which the runner sends as the load's k6 starts, before its first line; with --no-line
(no line to show: LT_LIVE=off, or a cell too short for a plain line) it ends after the watch.
With --armed (a warm-up of a fixed length: live.sh's live_arm) it is started beside the warm-up
and only waits for that SIGUSR1, so its own start does not fall beside the load's k6's.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ltsuite.netdelay import die_with_parent

PROG = "live"

#: Compressed bytes read from one samples file in one tick: about 40 MB of JSON lines, some
#: 400,000 requests; a file that grew more is caught up on the next ticks.
READ_LIMIT = 4 << 20
#: JSON bytes inflated at a time, so memory stays bounded whatever the file's ratio.
INFLATE_PIECE = 8 << 20

#: A user's first request (k6's JSON output writes a point's metric name first).
_FIRST_REQUEST = b'{"metric":"lt_vu_first_request","type":"Point"'
#: A load request's end: its http_req_failed value (0 answered as expected, 1 failed) and
#: its tags, which k6 writes sorted by name (traffic among them).
_REQUEST_END = re.compile(rb'\{"metric":"http_req_failed","type":"Point","data":\{"time":"[^"]*",'
                          rb'"value":([01])[,}][^\n]*?"traffic":"load"')


class Stop(Exception):
    """SIGTERM: the cell's k6 ended."""


#: Set by SIGUSR1: the load's k6 started (after a watched warm-up).
_LOAD_STARTED: list[bool] = [False]


def _on_usr1(_signum, _frame):
    _LOAD_STARTED[0] = True


def wait_for_load(max_s: float, poll_s: float = 0.05) -> bool:
    """Sleep until SIGUSR1 said the load started (True) or max_s passed (False)."""
    deadline = time.monotonic() + max_s
    while not _LOAD_STARTED[0] and time.monotonic() < deadline:
        time.sleep(poll_s)
    return _LOAD_STARTED[0]


def watch_warmup(args: argparse.Namespace) -> str:
    """The warm-up's watch (ltsuite.warmsettle.watch, which ends the warm-up's k6 by its rule)."""
    from ltsuite import warmsettle  # only cells with such a warm-up read the access log
    die_with_parent()
    return warmsettle.watch(args.warmup_cell, args.warmup_start_ms, args.warmup_limit_s, args.warmup_pid,
                            args.warmup_count, end=True, started=args.warmup_started,
                            access_log=args.warmup_access_log)


@dataclass
class Users:
    """The users' side so far, summed over the cell's k6 processes; None where no process
    has written that figure yet."""
    started: int | None = None
    answered: int | None = None
    failed: int | None = None


@dataclass
class Server:
    """The newest sample of the server's side (samples.tsv); None where the sampler wrote
    an empty figure."""
    conns: int | None = None
    queue: int | None = None
    backlog: int | None = None
    threads_busy: int | None = None


@dataclass
class Counts:
    """What one k6 process's samples file said so far."""
    started: int = 0
    answered: int = 0
    failed: int = 0
    seen_started: bool = False
    seen_requests: bool = False

    def add_lines(self, lines: bytes) -> None:
        """Count the complete JSON lines LINES (C-speed searches, no line parsed in Python)."""
        started = lines.count(_FIRST_REQUEST)
        if started:
            self.started += started
            self.seen_started = True
        values = _REQUEST_END.findall(lines)
        if values:
            failed = values.count(b"1")
            self.failed += failed
            self.answered += len(values) - failed
            self.seen_requests = True


@dataclass
class SamplesTail:
    """The new bytes of one k6 `--out json=FILE.gz` file while k6 writes it: the offset read
    so far, the gzip stream's state and the last line not yet complete."""
    path: Path
    counts: Counts = field(default_factory=Counts)
    offset: int = 0
    broken: bool = False
    _inflate: "zlib._Decompress" = field(default_factory=lambda: zlib.decompressobj(wbits=31))
    _partial: bytes = b""
    _file: tuple[int, int] | None = None

    def _restart(self, file: tuple[int, int]) -> None:
        self.counts, self.offset, self.broken, self._partial, self._file = Counts(), 0, False, b"", file
        self._inflate = zlib.decompressobj(wbits=31)

    def read(self, limit: int = READ_LIMIT) -> Counts | None:
        """Read what was added since the last call (at most LIMIT bytes); the counts so far,
        or None when nothing is readable (no file yet, nothing written, not gzip)."""
        if self.broken:
            return None
        try:
            with self.path.open("rb") as f:
                status = os.fstat(f.fileno())
                if (status.st_ino, status.st_dev) != self._file or status.st_size < self.offset:
                    # Another file than the one read so far (k6 writes it anew): start over.
                    self._restart((status.st_ino, status.st_dev))
                f.seek(self.offset)
                chunk = f.read(limit)
        except OSError:
            return self._counts()
        if chunk:
            self.offset += len(chunk)
            while chunk:
                try:
                    data = self._partial + self._inflate.decompress(chunk, INFLATE_PIECE)
                except zlib.error:
                    self.broken = True
                    return None
                chunk = self._inflate.unconsumed_tail
                end = data.rfind(b"\n") + 1
                self.counts.add_lines(data[:end])
                self._partial = data[end:]
        return self._counts()

    def _counts(self) -> Counts | None:
        return self.counts if self.offset else None


def users_now(tails: list[SamplesTail]) -> Users:
    """The users' figures summed over the processes' samples files; a figure stays None until
    some process wrote a point of it."""
    users = Users()
    for tail in tails:
        counts = tail.read()
        if counts is None:
            continue
        if counts.seen_started:
            users.started = (users.started or 0) + counts.started
        if counts.seen_requests:
            users.answered = (users.answered or 0) + counts.answered
            users.failed = (users.failed or 0) + counts.failed
    return users


def last_row(path: Path) -> dict[str, str] | None:
    """samples.tsv's header and newest complete row, as a dict; None before the first row."""
    try:
        with path.open("rb") as f:
            header = f.readline().decode().rstrip("\n").split("\t")
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read().decode(errors="replace")
    except OSError:
        return None
    lines = [line for line in tail.split("\n") if line]
    if not tail.endswith("\n") and lines:
        lines.pop()  # a row still being written
    if not lines or lines[-1].split("\t")[0] == header[0]:
        return None
    values = lines[-1].split("\t")
    return dict(zip(header, values)) if len(values) == len(header) else None


def _int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text not in (None, "") else None
    except ValueError:
        return None


def server_now(samples: Path) -> Server:
    """The server's figures from the sampler's newest row (samples.tsv's columns)."""
    row = last_row(samples) or {}
    return Server(conns=_int(row.get("server_estab")), queue=_int(row.get("listen_recvq")),
                  backlog=_int(row.get("listen_sendq")), threads_busy=_int(row.get("tomcat_threads_busy")))


def _n(value: int) -> str:
    return f"{value:,}"


def line(elapsed_s: int, expected_s: int, users: Users, server: Server) -> str:
    """The live line; a figure that is None is left out."""
    parts = []
    for value, what in ((users.started, "users started"), (users.answered, "requests answered"),
                        (users.failed, "failed")):
        if value is not None:
            parts.append(f"{_n(value)} {what}")
    text = f"live {elapsed_s}s/{expected_s}s"
    if parts:
        text += ": " + ", ".join(parts)
    side = []
    if server.conns is not None:
        side.append(f"{_n(server.conns)} conns")
    if server.queue is not None:
        side.append(f"accept queue {_n(server.queue)}" + (f"/{_n(server.backlog)}" if server.backlog is not None else ""))
    if server.threads_busy is not None:
        side.append(f"{server.threads_busy} threads busy")
    if side:
        text += " | server: " + ", ".join(side)
    return text


def _on_term(_signum, _frame):
    raise Stop()


def run(args: argparse.Namespace) -> None:
    signal.signal(signal.SIGTERM, _on_term)
    # A runner killed with -9 leaves no live line behind (its own stop is live_stop).
    die_with_parent()
    try:
        os.nice(10)  # k6 and the sampler first
    except OSError:
        pass
    tails = [SamplesTail(path) for path in args.k6_samples]
    start = time.monotonic()
    every = 1 if args.tty else args.every
    tick = 0
    shown = False
    try:
        while time.monotonic() - start < args.max_s:
            tick += 1
            time.sleep(max(0.0, start + tick - time.monotonic()))
            if tick % every:
                continue
            text = line(tick, args.expected_s, users_now(tails), server_now(args.samples))
            if args.tty:
                sys.stderr.write("\r" + text + "\033[K")
                shown = True
            else:
                sys.stderr.write("  " + text + "\n")
            sys.stderr.flush()
    except (Stop, KeyboardInterrupt):
        pass
    finally:
        if shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    # First: the runner may signal the load's start as soon as it started this process.
    signal.signal(signal.SIGUSR1, _on_usr1)
    parser = argparse.ArgumentParser(prog=PROG, description="The live line of a running cell.")
    parser.add_argument("--samples", type=Path, help="the cell's samples.tsv")
    parser.add_argument("--expected-s", type=int, help="the cell's planned seconds")
    parser.add_argument("--k6-samples", type=Path, action="append", default=[],
                        help="a k6 process's per-request samples (--out json=FILE.gz), once per process")
    parser.add_argument("--tty", action="store_true", help="rewrite one line in place each second")
    # No default of its own: the runner decides (live.sh, LIVE_EVERY_DEFAULT), and starts no live
    # line for a cell that ends before the first one.
    parser.add_argument("--every", type=int, help="seconds between plain lines (without --tty)")
    parser.add_argument("--max-s", type=int, default=3600, help="end after this many seconds")
    parser.add_argument("--no-line", action="store_true", help="only watch the warm-up (no line to show)")
    parser.add_argument("--armed", action="store_true",
                        help="started before the load (beside a warm-up): show the line only from SIGUSR1 on")
    warm = parser.add_argument_group("the warm-up, watched first (ltsuite.warmsettle)")
    warm.add_argument("--warmup-cell", type=Path, help="the cell's directory (its tomcat-access.log)")
    warm.add_argument("--warmup-access-log", type=Path,
                      help="the target's access log as it is written (default: the cell's tomcat-access.log)")
    warm.add_argument("--warmup-start-ms", type=int, help="the warm-up's start, epoch ms")
    warm.add_argument("--warmup-limit-s", type=float, help="watch at most this many seconds")
    warm.add_argument("--warmup-pid", type=int, help="the warm-up's k6 (the timeout it runs under)")
    warm.add_argument("--warmup-started", type=int,
                      help="the warm-up's k6's start time (field 22 of /proc/PID/stat), so no other process is taken for it")
    warm.add_argument("--warmup-count", type=int, help="end after this many requests (the count rule)")
    args = parser.parse_args(argv)
    watched = (args.warmup_cell, args.warmup_start_ms, args.warmup_limit_s, args.warmup_pid)
    if any(v is not None for v in watched) and any(v is None for v in watched):
        parser.error("--warmup-cell, --warmup-start-ms, --warmup-limit-s and --warmup-pid go together")
    if args.no_line:
        if args.warmup_cell is None:
            parser.error("--no-line: only with the warm-up's watch (--warmup-cell ...)")
    else:
        if args.samples is None or args.expected_s is None:
            parser.error("--samples FILE and --expected-s N (or --no-line)")
        if not args.tty and args.every is None:
            parser.error("--every S (seconds between plain lines) or --tty")
        if args.every is not None and args.every < 1:
            parser.error("--every: at least 1 second")
    try:
        if args.warmup_cell is not None:
            watch_warmup(args)
            if args.no_line or not wait_for_load(args.max_s):
                return 0
        elif args.armed:
            # A runner killed with -9 while this waits leaves it no more than one showing.
            die_with_parent()
            if not wait_for_load(args.max_s):
                return 0
        run(args)
    except (Stop, KeyboardInterrupt):
        # SIGTERM before run() reached its loop (live_stop right after live_start), or the Ctrl-C
        # that reached the runner's whole process group while this waited: nothing shown yet.
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
