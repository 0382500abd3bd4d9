"""What a run's cells found, in words: a few sentences per cell, each made of the row's own
columns (row.json) and the cell's settings (cell.env), so every number can be traced back.

Per cell, in this order:
  - the settings that bound it: max-connections, accept-count, threads and users;
  - who failed and why: failed_reqs of http_reqs, split by cause (fail_connect, fail_timeout,
    fail_reset, fail_http_5xx, fail_interrupted: cut off by the graceful stop or ramp-down
    while they waited); and, when the server held as many connections as it can
    (server_conns_peak == queue_capacity), that sum: max-connections + the listen backlog
    (listen_backlog: min(accept-count, somaxconn)) + 1, the rule of DESIGN.md's accept-queue
    formula;
  - whose time: the answered users apart from the failed ones. The answered (http_reqs -
    failed_reqs) waited k6's lat_p99_ms, beside Tomcat's own app_lat_p99_ms and whether every
    thread was busy (tomcat_threads_busy_peak == threads.max); the failed ones that k6 gave a
    result for waited their own time (failed_wait_med_ms, failed_wait_p99_ms: a timeout's whole
    timeout), or, unmeasured, the REQUEST_TIMEOUT of the suite's scenarios when every one timed
    out; of those cut off while they waited (fail_interrupted), how many the application never
    logged (reqs_never_seen_by_app_interrupted: still connecting, queued unread, or unfinished
    when the target stopped). Every figure
    is a column's, or the answered count, http_reqs less failed_reqs;
  - with nginx in front (PROXY=nginx, proxy_reqs not empty), the proxy's view between the two:
    its 504s and 502s (proxy_504, proxy_502), the connections to the target that timed out
    while connecting (proxy_upstream_connect_timeouts) and their p99 connect time; and when
    the server's accept queue overflowed (listen_overflows) while no user failed to connect
    (fail_connect 0) but nginx timed out connecting, that the full accept queue showed up one
    tier up, as nginx's 504s, not as the users' connect timeouts;
  - which limit bound and what to try next: the connection limit (users failed while the server
    was full) or the thread pool (users waited while every thread was busy);
  - a cell that did not run as designed (as_designed 0), or failed (status), says so first.

  python3 -m ltsuite.words RUN_DIR    prints the sentences of every cell of the run
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import formats
from .cellfiles import read_cell_env, read_json


@dataclass(frozen=True)
class Finding:
    """One sentence and the columns (or settings) its numbers come from."""

    text: str
    columns: tuple[str, ...]


def _int(value: Any) -> int | None:
    """A whole number of a row or a cell.env, None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _ms(value: Any) -> str:
    """A latency in whole ms."""
    return f"{float(value):.0f} ms"


def _wait(value: Any) -> str:
    """A wait in ms as read: whole ms below a second, else seconds to a tenth ("4 s", "7.1 s")."""
    ms = float(value)
    if ms < 1000:
        return _ms(ms)
    return f"{ms / 1000:.1f}".removesuffix(".0") + " s"


#: The causes the failures are split by, each with what its users met (fail_interrupted:
#: causes.tsv's last line, counted by the suite).
CAUSES = (("fail_connect", "could not connect"), ("fail_timeout", "timed out"), ("fail_reset", "were reset"), ("fail_tls", "connected but failed the TLS handshake"),
          ("fail_http_5xx", "got a 5xx answer"),
          ("fail_interrupted", "were cut off while they waited, by the graceful stop or ramp-down"))

#: What the first sentence's settings are read from.
SETTINGS = ("TOMCAT_MAX_CONNECTIONS", "TOMCAT_ACCEPT_COUNT", "TOMCAT_MAX_THREADS", "vus_max")


def _settings(row: dict[str, Any], env: dict[str, str]) -> str:
    parts = []
    for key, name in (("TOMCAT_MAX_CONNECTIONS", "max-connections"), ("TOMCAT_ACCEPT_COUNT", "accept-count")):
        if _int(env.get(key)) is not None:
            parts.append(f"{name} {_int(env.get(key))}")
    for count, noun in ((_int(env.get("TOMCAT_MAX_THREADS")), "thread"), (_int(row.get("vus_max")), "user")):
        if count is not None:
            parts.append(f"{count} {noun}" + ("" if count == 1 else "s"))
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)


def _failures(row: dict[str, Any], env: dict[str, str]) -> list[Finding]:
    reqs, failed = _int(row.get("http_reqs")), _int(row.get("failed_reqs"))
    if reqs is None or failed is None or reqs == 0:
        return []
    if failed == 0:
        return [Finding(f"none of {reqs} requests failed", ("http_reqs", "failed_reqs"))]
    causes = [(col, what) for col, what in CAUSES if (_int(row.get(col)) or 0) > 0]
    why = ", ".join(f"{_int(row.get(col))} {what}" for col, what in causes)
    out = [Finding(f"{failed} of {reqs} requests ({round(100 * failed / reqs)} %) failed" + (f": {why}" if why else ""),
                   ("failed_reqs", "http_reqs") + tuple(col for col, _ in causes))]
    peak, capacity = _int(row.get("server_conns_peak")), _int(row.get("queue_capacity"))
    backlog, mc = _int(row.get("listen_backlog")), _int(env.get("TOMCAT_MAX_CONNECTIONS"))
    if peak is not None and peak == capacity and backlog is not None and mc is not None and mc + backlog + 1 == peak:
        out.append(Finding(f"the server held {mc} + {backlog} + 1 = {peak} connections, all it can "
                           "(max-connections + listen backlog + 1)",
                           ("server_conns_peak", "queue_capacity", "listen_backlog", "TOMCAT_MAX_CONNECTIONS")))
    return out


def _latency(row: dict[str, Any], env: dict[str, str]) -> list[Finding]:
    """The answered users' wait: "users" when none failed, else "the N answered" (http_reqs -
    failed_reqs), since lat_p99_ms is theirs alone."""
    users, app = row.get("lat_p99_ms"), row.get("app_lat_p99_ms")
    if users is None:
        return []
    reqs, failed = _int(row.get("http_reqs")), _int(row.get("failed_reqs"))
    who, columns = "users", ("lat_p99_ms",)
    if reqs is not None and failed:
        who, columns = f"the {reqs - failed} answered", ("http_reqs", "failed_reqs", "lat_p99_ms")
    if app is None:
        return [Finding(f"{who} waited p99 {_ms(users)}", columns)]
    text = f"{who} waited p99 {_ms(users)} while the application's own p99 was {_ms(app)}"
    columns += ("app_lat_p99_ms",)
    if _threads_bound(row, env):
        text += f": all {_int(env.get('TOMCAT_MAX_THREADS'))} threads were busy for {_int(row.get('vus_max'))} users"
        columns += ("tomcat_threads_busy_peak", "TOMCAT_MAX_THREADS", "vus_max")
    return [Finding(text, columns)]


def _failed_waits(row: dict[str, Any], env: dict[str, str]) -> list[Finding]:
    """The failed users' wait, apart from the answered ones': those k6 gave a result for waited
    failed_wait_* (one cause named with its count, several as "who failed"), or, unmeasured, the
    suite's REQUEST_TIMEOUT when every one of them timed out; those cut off while they waited,
    whether the application ever logged them (reqs_never_seen_by_app_interrupted)."""
    out = []
    causes = [(col, what) for col, what in CAUSES if col != "fail_interrupted" and (_int(row.get(col)) or 0) > 0]
    med, p99 = row.get("failed_wait_med_ms"), row.get("failed_wait_p99_ms")
    if len(causes) == 1:
        col, what = causes[0]
        who, cols = f"the {_int(row.get(col))} who {what}", (col,)
    elif causes:
        cut, failed = _int(row.get("fail_interrupted")) or 0, _int(row.get("failed_reqs")) or 0
        who = f"the {failed - cut} who failed otherwise than cut off" if cut else f"the {failed} who failed"
        cols = ("failed_reqs", "fail_interrupted") if cut else ("failed_reqs",)
    if causes and p99 is not None:
        alike = med is not None and _wait(med) == _wait(p99)
        waited = f"waited {_wait(p99)}" if alike else f"waited p99 {_wait(p99)}"
        out.append(Finding(f"{who} {waited}", cols + (("failed_wait_med_ms",) if alike else ()) + ("failed_wait_p99_ms",)))
    elif causes == [("fail_timeout", "timed out")] and env.get("REQUEST_TIMEOUT") and "/" not in env.get("SCENARIO", "/"):
        # The suite's scenarios time out at REQUEST_TIMEOUT (a script of one's own sets its own).
        out.append(Finding(f"{who} waited their timeout, REQUEST_TIMEOUT={env['REQUEST_TIMEOUT']}",
                           cols + ("REQUEST_TIMEOUT",)))
    cut, unseen = _int(row.get("fail_interrupted")) or 0, _int(row.get("reqs_never_seen_by_app_interrupted"))
    if cut and unseen is not None:
        cols = ("fail_interrupted", "reqs_never_seen_by_app_interrupted")
        # Never logged: still connecting, queued unread, or unfinished when the target stopped.
        where = "still connecting, queued unread, or unfinished when the target stopped"
        if unseen == cut:
            text = f"the application never logged any of the {cut} cut off ({where})"
        elif unseen == 0:
            text = f"the application logged all {cut} cut off: it had them, and they waited for their answers"
        else:
            text = (f"the application never logged {unseen} of the {cut} cut off ({where}) and had the others, "
                    "which waited for their answers")
        out.append(Finding(text, cols))
    return out


def _proxy(row: dict[str, Any], env: dict[str, str]) -> list[Finding]:
    reqs = _int(row.get("proxy_reqs"))
    if reqs is None:
        return []
    p504, p502 = _int(row.get("proxy_504")) or 0, _int(row.get("proxy_502")) or 0
    timeouts = _int(row.get("proxy_upstream_connect_timeouts")) or 0
    text = f"nginx answered {reqs} requests, {p504} with a 504 and {p502} with a 502"
    cols: tuple[str, ...] = ("proxy_reqs", "proxy_504", "proxy_502")
    if timeouts:
        text += (f"; {timeouts} of its connections to the target timed out while connecting "
                 f"(PROXY_CONNECT_TIMEOUT {env.get('PROXY_CONNECT_TIMEOUT')})")
        cols += ("proxy_upstream_connect_timeouts", "PROXY_CONNECT_TIMEOUT")
    connect_p99 = row.get("proxy_upstream_connect_p99_ms")
    if connect_p99 is not None:
        # nginx's times have millisecond resolution: 0 is "under 1 ms".
        text += (f", the others connected in p99 {_ms(connect_p99)}" if float(connect_p99) >= 1
                 else ", the others connected in under 1 ms")
        cols += ("proxy_upstream_connect_p99_ms",)
    out = [Finding(text, cols)]
    overflows = _int(row.get("listen_overflows")) or 0
    if timeouts and overflows and _int(row.get("fail_connect")) == 0:
        out.append(Finding(f"the full accept queue ({overflows} overflows) showed up as nginx 504 (upstream timed out "
                           "while connecting), not as a client connect timeout",
                           ("listen_overflows", "proxy_upstream_connect_timeouts", "fail_connect")))
    return out


def _threads_bound(row: dict[str, Any], env: dict[str, str]) -> bool:
    busy, threads, users = _int(row.get("tomcat_threads_busy_peak")), _int(env.get("TOMCAT_MAX_THREADS")), \
        _int(row.get("vus_max"))
    return busy is not None and threads is not None and users is not None and busy >= threads and users > threads


def _next(row: dict[str, Any], env: dict[str, str]) -> list[Finding]:
    peak, capacity = _int(row.get("server_conns_peak")), _int(row.get("queue_capacity"))
    if (_int(row.get("failed_reqs")) or 0) > 0 and peak is not None and peak == capacity:
        return [Finding("the connection limit bound: to let more users in, raise max-connections or accept-count "
                        "(and somaxconn with it)", ("failed_reqs", "server_conns_peak", "queue_capacity"))]
    users, app = row.get("lat_p99_ms"), row.get("app_lat_p99_ms")
    if _threads_bound(row, env) and users is not None and app is not None and float(users) > 1.5 * float(app):
        return [Finding("the thread pool bound: users queued for a thread; to shorten their wait, raise "
                        "threads.max or make each request shorter",
                        ("tomcat_threads_busy_peak", "TOMCAT_MAX_THREADS", "lat_p99_ms", "app_lat_p99_ms"))]
    return []


def cell_findings(row: dict[str, Any], env: dict[str, str]) -> list[Finding]:
    """The sentences of one cell (the module's docstring), as Findings."""
    cell = row.get("cell") or "?"
    if row.get("status") not in (None, "ok"):
        return [Finding(f"Cell {cell} failed: {row.get('error') or row.get('status')}", ("status", "error"))]
    out = []
    if row.get("as_designed") == 0:
        out.append(Finding(f"Cell {cell} did not run as designed: {row.get('design_notes') or 'see its notes'}",
                           ("as_designed", "design_notes")))
    lead = _settings(row, env)
    body = _failures(row, env) + _proxy(row, env) + _latency(row, env) + _failed_waits(row, env)
    if body:
        first = body[0]
        body[0] = Finding(f"with {lead}, {first.text}" if lead else first.text,
                          (SETTINGS if lead else ()) + first.columns)
    return out + body + _next(row, env)


def sentences(findings: list[Finding]) -> str:
    """Findings as sentences: the first starts the sentence, the rest follow after semicolons."""
    if not findings:
        return ""
    text = "; ".join(f.text for f in findings)
    return text[0].upper() + text[1:] + "."


def run_words(run_dir: Path) -> list[str]:
    """One line per cell of a run directory (cells/*/row.json and cell.env), in the cells' order."""
    lines = []
    for cell_dir in sorted(p for p in (run_dir / "cells").glob("*") if p.is_dir()):
        row = formats.read_run_file(cell_dir / "row.json")
        if not isinstance(row, dict):
            continue
        text = sentences(cell_findings(row, read_cell_env(cell_dir / "cell.env") or {}))
        if text:
            lines.append(f"{row.get('cell') or cell_dir.name}: {text}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python3 -m ltsuite.words RUN_DIR\n")
        return 2
    for line in run_words(Path(args[0])):
        sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
