"""The live line of a running cell: what the users and the server are doing now.

Usage:
  python3 -m ltsuite.live --samples FILE --expected-s N [--api HOST:PORT]... [--tty | --every S]
                          [--max-s N]

Each second it asks every k6 process of the cell for its counts so far (k6's REST API,
`GET /v1/metrics/<name>`: lt_users_started, http_reqs, http_req_failed, vus) and reads the
sampler's newest row of samples.tsv (the server's established connections, the listener's
accept queue against its backlog, Tomcat's busy threads), and prints one line:

  live 12s/65s: 1,200 users started, 980 requests answered, 220 failed, 1,000 VUs | server: 31 conns,
  accept queue 11/11, 4 threads busy

On a terminal (--tty) the line is rewritten in place each second and cleared when the cell
ends; otherwise a plain line is printed every S seconds (--every, default 5), so a log gets
a few lines, not one a second. A figure nobody could read (no API: an external target's
cell runs k6 on this host without one; no sample yet) is left out of the line, never shown
as 0. The runner gives no --api: each connection to k6's API would be counted in the client
namespace's TcpActiveOpens, which the row reports as client_connects. It ends on SIGTERM, when the process that started it dies, or after --max-s seconds,
whichever comes first.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltsuite.netdelay import die_with_parent

PROG = "live"

#: k6's metrics the line sums over the cell's processes: users whose first request started
#: (scenarios/lib/delivered.js), requests that ended, and the VUs running now.
API_METRICS = ("lt_users_started", "http_reqs", "http_req_failed", "vus")


class Stop(Exception):
    """SIGTERM: the cell's k6 ended."""


@dataclass
class Users:
    """The users' side so far, summed over the cell's k6 processes; None where no process
    answered for that figure."""
    started: int | None = None
    requests: int | None = None
    failed: int | None = None
    vus: int | None = None

    @property
    def answered(self) -> int | None:
        if self.requests is None or self.failed is None:
            return None
        return self.requests - self.failed


@dataclass
class Server:
    """The newest sample of the server's side (samples.tsv); None where the sampler wrote
    an empty figure."""
    conns: int | None = None
    queue: int | None = None
    backlog: int | None = None
    threads_busy: int | None = None


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return value if total is None else total + value


def metric_value(document: dict[str, Any]) -> int | None:
    """The count a k6 REST API metric answer stands for: a counter's count, a gauge's value;
    for a rate (http_req_failed) the caller multiplies by the requests, since k6's API gives
    a rate only as its fraction."""
    sample = document.get("data", {}).get("attributes", {}).get("sample", {})
    for key in ("count", "value"):
        if isinstance(sample.get(key), (int, float)):
            return int(sample[key])
    return None


def metric_rate(document: dict[str, Any]) -> float | None:
    sample = document.get("data", {}).get("attributes", {}).get("sample", {})
    rate = sample.get("rate")
    return float(rate) if isinstance(rate, (int, float)) else None


def ask(address: str, metric: str, timeout: float = 0.5) -> dict[str, Any] | None:
    """One metric from one k6 process's REST API; None when it does not answer (not started
    yet, ended, or the metric has no sample yet: k6 answers 404)."""
    try:
        with urllib.request.urlopen(f"http://{address}/v1/metrics/{metric}", timeout=timeout) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return None


def users_now(addresses: list[str], asker=ask) -> Users:
    """The users' figures summed over the processes at ADDRESSES. A process's failed requests
    are round(its http_req_failed rate x its http_reqs)."""
    users = Users()
    for address in addresses:
        docs = {metric: asker(address, metric) for metric in API_METRICS}
        requests = metric_value(docs["http_reqs"]) if docs["http_reqs"] else None
        users.started = _add(users.started, metric_value(docs["lt_users_started"]) if docs["lt_users_started"] else None)
        users.requests = _add(users.requests, requests)
        users.vus = _add(users.vus, metric_value(docs["vus"]) if docs["vus"] else None)
        rate = metric_rate(docs["http_req_failed"]) if docs["http_req_failed"] else None
        if requests == 0:
            users.failed = _add(users.failed, 0)
        elif requests is not None and rate is not None:
            users.failed = _add(users.failed, round(rate * requests))
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
                        (users.failed, "failed"), (users.vus, "VUs")):
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
            text = line(tick, args.expected_s, users_now(args.api), server_now(args.samples))
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
    parser = argparse.ArgumentParser(prog=PROG, description="The live line of a running cell.")
    parser.add_argument("--samples", type=Path, required=True, help="the cell's samples.tsv")
    parser.add_argument("--expected-s", type=int, required=True, help="the cell's planned seconds")
    parser.add_argument("--api", action="append", default=[], help="a k6 process's REST API, HOST:PORT")
    parser.add_argument("--tty", action="store_true", help="rewrite one line in place each second")
    parser.add_argument("--every", type=int, default=5, help="seconds between plain lines (no --tty)")
    parser.add_argument("--max-s", type=int, default=3600, help="end after this many seconds")
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error("--every: at least 1 second")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
