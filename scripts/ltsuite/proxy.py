"""The proxy between the users and the target (PROXY=nginx): its config and its own account.

nginx (Debian's package) runs per cell in the server namespace on PROXY_PORT and forwards to the
target on SERVER_PORT (scripts/lib/proxy.sh starts and stops it). Its config is rendered here
from the cell's settings, with every path (pid, logs, temp files) in the cell's directory. Its
access log has one tab-separated line per request in the format LOG_FORMAT:

  $msec $status $upstream_status $request_time $upstream_connect_time $upstream_response_time
  $ssl_session_reused $connection_requests

(nginx's ngx_http_log_module and ngx_http_upstream_module: times in seconds with millisecond
resolution; an upstream field is "-" when nginx did not reach that step, and lists one value per
upstream try, separated by ", ", or " : " across an internal redirect). Its error log names the
connections to the target that failed: "upstream timed out (110: ...) while connecting to
upstream" once proxy_connect_timeout passed (nginx answers 504), "connect() failed (111:
Connection refused) while connecting to upstream" and the like (nginx answers 502).
$ssl_session_reused is "r" when the request's TLS connection resumed a session, "." when its
handshake was a full one, "-" on plain HTTP (ngx_http_ssl_module); $connection_requests is the
request's place on its connection (1: the connection's first, the one after its handshake).
Logs of six fields (before the last two were logged) are read too.

  python3 -m ltsuite.proxy config CELL_DIR   prints nginx.conf for the cell (from cell.env)
  python3 -m ltsuite.proxy row CELL_DIR      prints the cell's proxy_* columns as JSON
"""
from __future__ import annotations

import grp
import json
import os
import pwd
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .cellfiles import Phases, read_cell_env, read_phases, read_text
from .latency import percentile
from .numbers import num
from . import rules

ACCESS_LOG = "nginx-access.log"
ERROR_LOG = "nginx-error.log"
CONFIG = "nginx.conf"
PID_FILE = "nginx.pid"
TEMP_DIR = "nginx-temp"
LOG_FORMAT = ("$msec\\t$status\\t$upstream_status\\t$request_time\\t$upstream_connect_time\\t$upstream_response_time"
              "\\t$ssl_session_reused\\t$connection_requests")
FIELDS = 8
#: The fields of the format before it logged the TLS session and the connection's requests.
OLD_FIELDS = 6

#: Error-log phrases of a failed connection to the target (ngx_http_upstream.c).
CONNECT_TIMEOUT = "upstream timed out"
WHILE_CONNECTING = "while connecting to upstream"

def duration_ms(text: str) -> int:
    """A duration of the suite's envfile type (500ms, 10s, 1m30s) in whole milliseconds
    (nginx's settings take whole ms); ValueError for anything else."""
    return round(rules.duration_ms(text, strict=True) or 0)


class ProxyConfigError(ValueError):
    """A cell whose nginx.conf cannot be written safely."""


# What nginx would read as syntax or a variable inside a quoted string, or cannot hold at all.
_UNQUOTABLE = re.compile(r'["\\$;{}\n\r\0]')


def nginx_path(path: Path) -> str:
    """PATH as one quoted nginx string, so a space in the checkout's path does not split it.
    A path with a quote, a backslash, a "$" (nginx would read a variable), ";", "{", "}" or a
    line break is refused: nginx has no escape for some of them."""
    text = str(path)
    bad = _UNQUOTABLE.search(text)
    if bad:
        raise ProxyConfigError(f"{text}: nginx cannot take {bad.group(0)!r} in a path; "
                               "run from a checkout whose path has none")
    return f'"{text}"'


def worker_user() -> str:
    """nginx's `user` line: its workers run as this process's own user and group. Without it a
    master started as root runs them as nobody, who cannot enter a checkout under /root, and a
    response larger than the proxy's buffers, spooled to proxy_temp_path in the cell's
    directory, fails with "Permission denied while reading upstream"."""
    return f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"


def render_config(env: dict[str, str], cell_dir: Path) -> str:
    """nginx.conf for a cell: one worker in the foreground (the shell keeps its pid), every path
    in CELL_DIR, PROXY_PORT on SERVER_ADDR forwarded to SERVER_ADDR:SERVER_PORT.

    PROXY_UPSTREAM_KEEPALIVE 0 leaves nginx's default (HTTP/1.0 upstream, "Connection: close",
    a new connection per request); above 0 it is the upstream block's keepalive pool with
    HTTP/1.1 and an empty Connection header, as nginx's docs require for keep-alive upstream.
    PROXY_CLIENT_KEEPALIVE_TIMEOUT is keepalive_timeout (0 = nginx closes after each answer),
    PROXY_CONNECT_TIMEOUT proxy_connect_timeout, PROXY_READ_TIMEOUT proxy_read_timeout,
    PROXY_BACKLOG the listen socket's backlog= (nginx's default is 511 on Linux) and
    PROXY_WORKER_CONNECTIONS the worker's worker_connections. A single upstream server is never marked
    down (max_fails=0) and a failed try is not retried (proxy_next_upstream off), so each
    request is one try and its status is that try's. PROXY_TLS=1: nginx terminates TLS on
    PROXY_PORT with the run's key of TLS_KEY (scripts/lib/tls.sh: RUN_DIR/tls/<key>/cert.pem and
    key.pem, the run directory being the cell directory's grandparent, cells/<cell>), its
    upstream plain HTTP, and session resumption as TLS_SESSION_RESUMPTION says
    (session_resumption)."""
    d = cell_dir.resolve()
    addr, port, proxy_port = env["SERVER_ADDR"], env["SERVER_PORT"], env["PROXY_PORT"]
    pool = int(env.get("PROXY_UPSTREAM_KEEPALIVE") or "0")
    client_ms = duration_ms(env.get("PROXY_CLIENT_KEEPALIVE_TIMEOUT") or "75s")
    connect_ms = duration_ms(env.get("PROXY_CONNECT_TIMEOUT") or "60s")
    read_ms = duration_ms(env.get("PROXY_READ_TIMEOUT") or "60s")
    backlog = int(env.get("PROXY_BACKLOG") or "511")
    worker_connections = int(env.get("PROXY_WORKER_CONNECTIONS") or "4096")
    keep = (f"    keepalive {pool};\n" if pool > 0 else "")
    upstream_http = ("      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n"
                     if pool > 0 else "")
    temp = d / TEMP_DIR
    tls = ""
    if str(env.get("PROXY_TLS") or "0") == "1":
        keys = d.parent.parent / "tls" / (env.get("TLS_KEY") or "ec")
        tls = (f"    ssl_certificate {nginx_path(keys / 'cert.pem')};\n"
               f"    ssl_certificate_key {nginx_path(keys / 'key.pem')};\n"
               f"{session_resumption(env)}")
    return (
        "# Generated by scripts/ltsuite/proxy.py for this cell.\n"
        "daemon off;\n"
        f"{worker_user()}"
        "worker_processes 1;\n"
        f"pid {nginx_path(d / PID_FILE)};\n"
        f"error_log {nginx_path(d / ERROR_LOG)} error;\n"
        f"events {{\n  worker_connections {worker_connections};\n}}\n"
        "http {\n"
        f"  log_format ltsuite \"{LOG_FORMAT}\";\n"
        f"  access_log {nginx_path(d / ACCESS_LOG)} ltsuite;\n"
        f"  client_body_temp_path {nginx_path(temp / 'body')};\n"
        f"  proxy_temp_path {nginx_path(temp / 'proxy')};\n"
        f"  fastcgi_temp_path {nginx_path(temp / 'fastcgi')};\n"
        f"  uwsgi_temp_path {nginx_path(temp / 'uwsgi')};\n"
        f"  scgi_temp_path {nginx_path(temp / 'scgi')};\n"
        f"  keepalive_timeout {client_ms}ms;\n"
        "  upstream target {\n"
        f"    server {addr}:{port} max_fails=0;\n"
        f"{keep}"
        "  }\n"
        "  server {\n"
        f"    listen {addr}:{proxy_port}{' ssl' if tls else ''} backlog={backlog};\n"
        f"{tls}"
        "    location / {\n"
        "      proxy_pass http://target;\n"
        f"      proxy_connect_timeout {connect_ms}ms;\n"
        f"      proxy_read_timeout {read_ms}ms;\n"
        "      proxy_next_upstream off;\n"
        f"{upstream_http}"
        "    }\n"
        "  }\n"
        "}\n")


def session_resumption(env: dict[str, str]) -> str:
    """nginx's session resumption for TLS_SESSION_RESUMPTION (ngx_http_ssl_module): 1 (the
    default) a shared session cache (ssl_session_cache shared, 10 MB: about 40,000 sessions) and
    session tickets on, so a client that offers a session ID or a ticket resumes it without
    the certificate's signature and the key exchange's full cost; 0 both off, every handshake a
    full one. nginx's own default (ssl_session_cache none, tickets on) is neither."""
    if str(env.get("TLS_SESSION_RESUMPTION") or "1") == "0":
        return "    ssl_session_cache off;\n    ssl_session_tickets off;\n"
    return "    ssl_session_cache shared:ltsuite:10m;\n    ssl_session_tickets on;\n"


@dataclass(frozen=True)
class ProxyRequest:
    """One request as nginx logged it."""

    status: int
    upstream_status: int | None
    """The last upstream try's status; None when nginx got none (it could not connect, or timed out)."""
    request_ms: float
    upstream_connect_ms: float | None
    upstream_response_ms: float | None
    session_reused: bool | None = None
    """TLS: True when the connection resumed a session, False after a full handshake; None on
    plain HTTP or in a log without the field."""
    connection_requests: int | None = None
    """The request's place on its connection (1: its first); None in a log without the field."""


def _last_number(field: str) -> float | None:
    """The last try's value of an upstream field ("-", "0.001", "0.001, 0.002", "502 : 200")."""
    last = re.split(r", | : ", field.strip())[-1]
    try:
        return float(last)
    except ValueError:
        return None


def parse_access_line(line: str) -> ProxyRequest | None:
    """One access-log line (LOG_FORMAT); None for a line that is not one."""
    parts = line.rstrip("\n").split("\t")
    if len(parts) not in (FIELDS, OLD_FIELDS):
        return None
    try:
        status, request_s = int(parts[1]), float(parts[3])
    except ValueError:
        return None
    upstream = _last_number(parts[2])
    connect, response = _last_number(parts[4]), _last_number(parts[5])
    reused = {"r": True, ".": False}.get(parts[6]) if len(parts) == FIELDS else None
    place = parts[7] if len(parts) == FIELDS else ""
    return ProxyRequest(status, None if upstream is None else int(upstream), request_s * 1000,
                        None if connect is None else connect * 1000,
                        None if response is None else response * 1000,
                        reused, int(place) if place.isdigit() else None)


@dataclass(frozen=True)
class ErrorCounts:
    """Connections to the target that failed, from the error log."""

    connect_timeouts: int
    connect_errors: int


def count_errors(lines: list[str]) -> ErrorCounts:
    """Lines "... while connecting to upstream": those with "upstream timed out" are connect
    timeouts (proxy_connect_timeout passed), the others connect errors (refused, reset, ...)."""
    timeouts = errors = 0
    for line in lines:
        if WHILE_CONNECTING not in line:
            continue
        if CONNECT_TIMEOUT in line:
            timeouts += 1
        else:
            errors += 1
    return ErrorCounts(timeouts, errors)


def _p99(values: list[float]) -> float | None:
    return num(round(percentile(sorted(values), 0.99), 3)) if values else None


EMPTY = {"proxy_reqs": None, "proxy_502": None, "proxy_504": None,
         "proxy_upstream_connect_errors": None, "proxy_upstream_connect_timeouts": None,
         "proxy_request_p99_ms": None, "proxy_upstream_connect_p99_ms": None,
         "proxy_tls_handshakes": None, "proxy_tls_resumed": None}


def ended_within(line: str, window: tuple[int, int]) -> bool:
    """An access-log line whose request ended ($msec, epoch s) within WINDOW (epoch ms, both ends
    included)."""
    try:
        end_ms = float(line.split("\t", 1)[0]) * 1000
    except ValueError:
        return False
    return window[0] <= end_ms <= window[1]


def columns(access_lines: list[str], error_lines: list[str],
            warmup: tuple[int, int] | None = None) -> dict[str, object]:
    """The proxy's view for the row: requests nginx answered, its 502s and 504s, the connections to
    the target that failed or timed out, the 99th percentiles of $request_time and of
    $upstream_connect_time (over the requests that connected), and the users' TLS handshakes
    and resumed sessions (tls_sessions). warmup: the cell's warm-up (epoch
    ms, its marks): the requests that ended within it are not the load's."""
    if warmup is not None:
        access_lines = [line for line in access_lines if not ended_within(line, warmup)]
    reqs = [r for r in (parse_access_line(line) for line in access_lines) if r is not None]
    errors = count_errors(error_lines)
    return {"proxy_reqs": len(reqs),
            "proxy_502": sum(1 for r in reqs if r.status == 502),
            "proxy_504": sum(1 for r in reqs if r.status == 504),
            "proxy_upstream_connect_errors": errors.connect_errors,
            "proxy_upstream_connect_timeouts": errors.connect_timeouts,
            "proxy_request_p99_ms": _p99([r.request_ms for r in reqs]),
            "proxy_upstream_connect_p99_ms": _p99([r.upstream_connect_ms for r in reqs
                                                   if r.upstream_connect_ms is not None]),
            **tls_sessions(reqs)}


def tls_sessions(reqs: list[ProxyRequest]) -> dict[str, object]:
    """proxy_tls_handshakes: the users' TLS connections nginx answered a request on (each
    connection's first request, $connection_requests 1, with $ssl_session_reused "r" or "."),
    and proxy_tls_resumed those whose handshake resumed a session ("r"). None for plain HTTP
    and for a log without the fields (no request with a session field)."""
    firsts = [r for r in reqs if r.connection_requests == 1 and r.session_reused is not None]
    if not any(r.session_reused is not None for r in reqs):
        return {"proxy_tls_handshakes": None, "proxy_tls_resumed": None}
    return {"proxy_tls_handshakes": len(firsts), "proxy_tls_resumed": sum(1 for r in firsts if r.session_reused)}


def row_columns(cell_dir: Path, phases: Phases | None = None) -> dict[str, object]:
    """The row's proxy_* columns; all empty (None) in a cell without a proxy (no access log). With
    the cell's phase marks, the requests of its warm-up (warmup_start..warmup_end) are left out."""
    access = read_text(cell_dir / ACCESS_LOG)
    if access is None:
        return dict(EMPTY)
    marks = (phases or Phases()).last()
    warmup = None
    if "warmup_start" in marks and "warmup_end" in marks:
        warmup = (marks["warmup_start"], marks["warmup_end"])
    return columns(access.splitlines(), (read_text(cell_dir / ERROR_LOG) or "").splitlines(), warmup)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("config", "row"):
        print("usage: python3 -m ltsuite.proxy config|row CELL_DIR", file=sys.stderr)
        return 2
    cell_dir = Path(args[1])
    if args[0] == "row":
        print(json.dumps(row_columns(cell_dir, read_phases(cell_dir / "phases.tsv"))))
        return 0
    env = read_cell_env(cell_dir / "cell.env")
    if env is None:
        print(f"proxy: cannot read {cell_dir / 'cell.env'}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(render_config(env, cell_dir))
    except (KeyError, ValueError) as e:
        print(f"proxy: {cell_dir / 'cell.env'}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
