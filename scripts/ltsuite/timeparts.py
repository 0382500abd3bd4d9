"""Where each user's time went: k6's per-request samples joined with the application's own
account of the same request (Tomcat's access log, ltsuite.accesslog), and each request split
into the parts that live in different places.

The join. The suite's scenarios send every request with an id (scenarios/lib/requestid.js): the
X-Request-Id header, which Tomcat logs, and the same id in the metadata of k6's samples of that
request (key "rid", written by k6's --out json). A request of k6 whose id Tomcat never logged
was never seen by the application: it failed to connect (k6 error_code 1210-1219, a dial error)
or it connected and Tomcat never read it (a connection in the accept queue or past
max-connections when k6 gave up, a reset).

The parts of one request. k6 measures, per request (lib/netext/httpext/tracer.go, Done()):
blocked, from asking for a connection to having one (connecting and tls_handshaking
included, so it is the whole of the connection's set-up), connecting (the TCP handshake: SYN
retransmits included), tls_handshaking (the TLS handshake after it, on HTTPS: k6's
http_req_tls_handshaking, 0 on a reused connection), sending, waiting (to the first byte of the answer) and receiving; its sample's time is the
request's end, and http_req_duration = sending + waiting + receiving. So the request left k6
at end - waiting - receiving, and its whole time is blocked + duration. The parts:

  connect   k6's connecting time (0 on a reused connection)
  handshake k6's TLS handshake time (0 on a reused connection; only on HTTPS, TARGET_TLS=1:
            the t_handshake_* columns are empty on plain HTTP, where there is none)
  queued    from the request leaving k6 to Tomcat starting it (%{begin:msec}t): the accept
            queue, Tomcat's max-connections and its thread pool's queue
  service   Tomcat's processing time (%D)
  rest      the whole less the four: k6's own set-up around the handshake, sending the
            request, and the answer's way back

The failed requests' own time. A failed request (no answer, or a status outside 200-399) waited
from being sent to its failure (a timeout its whole timeout, a failed connect its SYNs):
failed_wait_med_ms and failed_wait_p99_ms are theirs, beside lat_*, which are the answered
requests'. k6 gives a request that failed while it was still connecting no times at all (every
part 0: its tracer never saw a connection), so a failed request's wait is its end less the
moment the scenario counted it as sent (lt_requests_sent, same clock: k6's sample times), and
k6's blocked + duration only where that mark is missing (a cell recorded before the scenarios
counted); a request with neither is left out, not taken as 0. A request cut off while it waited
(fail_interrupted: its iteration cut by the graceful stop or ramp-down) has no sample of k6's;
the scenarios count it as sent (lt_requests_sent, whose sample carries its id), so its id tells
whether the application ever logged it (reqs_never_seen_by_app_interrupted: never logged, it was
still connecting or queued unread when it was cut, or still in service when the target stopped;
logged, the application had it and it waited for its answer).

They add up to blocked + duration by construction; what can fail is the order of the two
clocks' events: Tomcat's start must come after the request left k6, and Tomcat's end
(begin + %D) before k6's end, each within TOLERANCE_MS. Both sides read one clock here (one
host); docs/time-parts.md says what changes when they do not.

  python3 -m ltsuite.timeparts CELL_DIR          prints the cell's figures (the row's columns)
  python3 -m ltsuite.timeparts bars CELL_DIR [N] prints at most N requests' parts for the report
  python3 -m ltsuite.timeparts lines CELL_DIR RUN_ID CELL SCENARIO
                                                 prints the parts per second as InfluxDB lines
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import accesslog, design, formats, rules, tlsburst
from .accesslog import AppRequest
from .cellfiles import read_cell_env, read_sysctls
from .latency import percentile, read_lines, sample_files
from .numbers import num, or_default, text, to_number

#: How far Tomcat's events may sit outside k6's window of a request (ms) and the parts still
#: add up: %{begin:msec}t is in whole ms (up to 1 ms early), and %D runs until Tomcat logs the
#: request, after the answer's last byte left: its thread may wait for a core in between
#: (measured here, 2 cores, 8 users at once: up to 4.5 ms after k6 had the whole answer).
TOLERANCE_MS = 10.0

#: k6's metrics of a request that the parts are made of.
METRICS = {
    "http_req_duration": "duration",
    "http_req_blocked": "blocked",
    "http_req_connecting": "connecting",
    "http_req_tls_handshaking": "tls_handshaking",
    "http_req_sending": "sending",
    "http_req_waiting": "waiting",
    "http_req_receiving": "receiving",
}
_PREFIXES = tuple('{"metric":"%s"' % name for name in METRICS)
#: The metadata key of the request id (scenarios/lib/requestid.js REQUEST_ID_KEY).
RID = "rid"

EMPTY_FIGURES = ("t_connect_med_ms", "t_connect_p99_ms", "t_connect_new_med_ms", "t_handshake_med_ms",
                 "t_handshake_p99_ms", "t_queued_med_ms", "t_queued_p99_ms", "t_service_med_ms",
                 "t_service_p99_ms", "decomposed_reqs", "reqs_never_seen_by_app_connect_failed",
                 "reqs_never_seen_by_app_never_read", "reqs_never_seen_by_app_interrupted", "parts_out_of_order")
#: The scenarios' counter of requests sent (scenarios/lib/delivered.js), one sample a request.
SENT_PREFIX = '{"metric":"lt_requests_sent"'


@dataclass(slots=True)
class K6Request:
    """One load request as k6 measured it (times in ms; end in epoch ms)."""

    end_ms: float
    request_id: str | None
    status: int
    error_code: int
    duration: float = 0.0
    blocked: float = 0.0
    connecting: float = 0.0
    tls_handshaking: float = 0.0
    sending: float = 0.0
    waiting: float = 0.0
    receiving: float = 0.0

    @property
    def whole(self) -> float:
        """From asking for a connection to the answer's last byte: blocked + duration."""
        return self.blocked + self.duration

    @property
    def left_ms(self) -> float:
        """When the request had left k6 (epoch ms): its end less waiting and receiving."""
        return self.end_ms - self.waiting - self.receiving

    @property
    def start_ms(self) -> float:
        """When k6 asked for a connection (epoch ms)."""
        return self.end_ms - self.whole

    @property
    def dial_failed(self) -> bool:
        """k6 could not connect: error_code 1210-1219 (dial errors)."""
        return 1210 <= self.error_code <= 1219

    @property
    def failed(self) -> bool:
        """k6 counts it in http_req_failed: no answer (status 0) or a status outside 200-399."""
        return not 200 <= self.status <= 399


@dataclass
class SentIds:
    """The load requests the scenarios counted as sent (lt_requests_sent's samples): whether k6's
    samples have the counter at all (a cell recorded before the scenarios counted has none), and
    each sent request's id (None where its sample carried none: a script's request with an
    X-Request-Id of its own)."""

    counted: bool = False
    ids: list[str | None] = field(default_factory=list)
    at_ms: dict[str, float] = field(default_factory=dict)
    """When each request with an id was counted as sent (epoch ms, k6's sample time)."""


def _k6_clock() -> Any:
    """scripts/lib/k6time.py's Clock: the one reader of k6's sample times."""
    spec = importlib.util.spec_from_file_location("k6time", Path(__file__).resolve().parents[1] / "lib" / "k6time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Clock()


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


_POINT = '","type":"Point","data":{"time":"'
_RID = '"metadata":{"rid":"'


def _quoted(line: str, key: str) -> str | None:
    """The string value of key ('"status":"') in a JSON line, or None. A key inside a string
    value would have its quotes escaped, so it cannot match."""
    i = line.find(key)
    if i < 0:
        return None
    i += len(key)
    return line[i:line.index('"', i)]


def _sample(line: str) -> tuple[str, str, float, dict[str, Any], str | None] | None:
    """(metric, time, value, tags, request id) of one of k6's sample lines; None when it is not
    a whole Point. The layout k6's --out json writes ({"metric","type","data":{"time","value",
    "tags","metadata"}}) is read by position; any other line by a JSON parser."""
    try:
        if not line.rstrip().endswith("}}"):
            return None
        m_end = line.index('"', 11)
        if line.startswith(_POINT, m_end):
            t0 = m_end + len(_POINT)
            t1 = line.index('"', t0)
            if line.startswith('","value":', t1):
                v1 = line.index(',"tags":{', t1)
                rid = _quoted(line, _RID)
                if rid is not None or '"metadata":' not in line:
                    tags = {k: v for k in ("status", "error_code", "traffic")
                            if (v := _quoted(line, f'"{k}":"')) is not None}
                    return line[11:m_end], line[t0:t1], float(line[t1 + 10:v1]), tags, rid
        sample = json.loads(line)
        data = sample["data"]
        if sample.get("type") != "Point":
            return None
        meta = data.get("metadata") or {}
        return (sample["metric"], data["time"], float(data["value"]), data.get("tags") or {},
                meta.get(RID) if isinstance(meta, dict) else None)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def k6_requests(lines: Iterable[str], sent: SentIds | None = None) -> list[K6Request]:
    """The load requests among k6's JSON sample lines (--out json): the samples of one request
    share its end time (and id) and are written together; a metric seen again starts the next
    request. Setup traffic (traffic=setup) is left out; a line cut short is skipped. With
    `sent`, the lt_requests_sent samples of the load (a request each; setup's 0 only says the
    counter exists) are collected into it."""
    out: list[K6Request] = []
    clock = _k6_clock()
    key: tuple[str, Any] | None = None
    seen: set[str] = set()
    current: K6Request | None = None
    for line in lines:
        if sent is not None and line.startswith(SENT_PREFIX):
            point = _sample(line)
            if point is not None:
                sent.counted = True
                if point[2] >= 1 and point[3].get("traffic", "load") != "setup":
                    sent.ids.extend([point[4]] * int(point[2]))
                    if point[4] is not None:
                        try:
                            sent.at_ms[point[4]] = int(clock.ns(point[1])) / 1e6
                        except ValueError:
                            pass
            continue
        if not line.startswith(_PREFIXES):
            continue
        sample = _sample(line)
        if sample is None:
            continue
        metric, stamp, value, tags, rid = sample
        if tags.get("traffic", "load") == "setup":
            continue
        field = METRICS[metric]
        if current is None or key != (stamp, rid) or field in seen:
            try:
                end = int(clock.ns(stamp)) / 1e6
            except ValueError:
                current = None
                continue
            current = K6Request(end_ms=end, request_id=rid, status=_int(tags.get("status")),
                                error_code=_int(tags.get("error_code")))
            out.append(current)
            key, seen = (stamp, rid), set()
        seen.add(field)
        setattr(current, field, value)
    return out


def cell_k6_requests(cell_dir: Path, sent: SentIds | None = None) -> list[K6Request] | None:
    """Every k6 process's load requests of a cell (None when no samples file was written:
    K6_SAMPLES=0, or k6 never ran); with `sent`, the requests sent are collected into it."""
    instances = _int((read_cell_env(cell_dir / "cell.env") or {}).get("K6_INSTANCES") or "1") or 1
    files = [f for f in sample_files(cell_dir, instances) if f.is_file()]
    if not files:
        return None
    out: list[K6Request] = []
    for path in files:
        out.extend(k6_requests(read_lines(path), sent))
    return out


@dataclass(slots=True)
class Parts:
    """One request split (ms); start is when k6 asked for its connection (epoch ms)."""

    request_id: str
    start_ms: float
    connect: float
    queued: float
    service: float
    rest: float
    whole: float
    tomcat_after_k6_end: float
    """Tomcat's end (begin + %D) less k6's end: above 0 when Tomcat still counted after k6 had
    the whole answer."""
    handshake: float = 0.0
    """k6's TLS handshake time of the request's connection (0 on plain HTTP or a reused one)."""

    def off_by(self) -> float:
        """How far the two clocks' events are out of order (ms, 0 when in order): Tomcat began
        before the request left k6, or ended after k6 had the answer."""
        return max(0.0, -self.queued, self.tomcat_after_k6_end)


def split(k6: K6Request, app: AppRequest) -> Parts:
    """The parts of one request both sides saw (the module's docstring)."""
    connect = k6.connecting
    handshake = k6.tls_handshaking
    queued = app.begin_ms - k6.left_ms
    service = app.service_ms
    return Parts(request_id=k6.request_id or "", start_ms=k6.start_ms, connect=connect, queued=queued,
                 service=service, rest=k6.whole - connect - handshake - queued - service, whole=k6.whole,
                 tomcat_after_k6_end=app.end_ms - k6.end_ms, handshake=handshake)


@dataclass
class Join:
    """k6's requests beside the application's: the parts of those both saw (answered by
    Tomcat, logged once), and k6's requests the application never logged."""

    parts: list[Parts]
    connect_failed: int
    never_read: int
    ids: bool
    """Whether k6's requests carried ids (without them nothing is joined)."""
    interrupted_never_seen: int | None = None
    """Requests sent that k6 has no sample of (cut off while they waited) and the application
    never logged; None when the sent requests were not counted, or some carried no id."""


def interrupted_never_seen(k6: list[K6Request], logged: set[str], sent: SentIds | None) -> int | None:
    """The requests sent (sent.ids) that k6 gave no result for, i.e. cut off while they waited,
    whose id the application never logged (`logged`): still connecting, or connected and never
    read, when their iteration was cut, or unfinished when the target stopped. None when the
    counter is missing or an id is unknown."""
    if sent is None or not sent.counted or any(i is None for i in sent.ids):
        return None
    returned = {r.request_id for r in k6}
    return sum(1 for i in sent.ids if i not in returned and i not in logged)


def join(k6: list[K6Request], app: list[AppRequest], sent: SentIds | None = None) -> Join:
    """Join on the request id. An id Tomcat logged twice is left out (not one request). With
    `sent`, the requests cut off while they waited are looked up too (interrupted_never_seen)."""
    by_id: dict[str, AppRequest | None] = {}
    for request in app:
        if request.request_id is not None:
            by_id[request.request_id] = None if request.request_id in by_id else request
    parts, connect_failed, never_read = [], 0, 0
    # Requests cut off while they waited have no k6 result, only their sent mark's id.
    ids = any(r.request_id is not None for r in k6) or (sent is not None and any(i is not None for i in sent.ids))
    for request in k6:
        if request.request_id is None:
            continue
        if request.request_id not in by_id:
            if request.dial_failed:
                connect_failed += 1
            else:
                never_read += 1
            continue
        logged = by_id[request.request_id]
        if logged is not None and request.status > 0:
            parts.append(split(request, logged))
    return Join(parts, connect_failed, never_read, ids, interrupted_never_seen(k6, set(by_id), sent))


def _p(values: list[float], fraction: float) -> Any:
    return num(percentile(sorted(values), fraction)) if values else None


def figures(joined: Join | None, tls: bool = False) -> dict[str, Any]:
    """The row's t_* columns, decomposed_reqs, the requests never seen by the application and
    how many joined requests are out of order by more than TOLERANCE_MS; all None when there
    was nothing to join (no samples, no access log, or requests without ids). The handshake's
    (t_handshake_*) only with `tls` (the cell served HTTPS): plain HTTP has no handshake to
    measure, and k6's 0 there is not one."""
    if joined is None or not joined.ids:
        return {name: None for name in EMPTY_FIGURES}
    parts = joined.parts
    handshake = [p.handshake for p in parts] if tls else []
    connect = [p.connect for p in parts]
    queued = [p.queued for p in parts]
    service = [p.service for p in parts]
    return {
        "t_connect_med_ms": _p(connect, 0.5),
        "t_connect_p99_ms": _p(connect, 0.99),
        # The requests that opened a connection (k6's connecting is 0 on a reused one): the round
        # trip users got, where nothing else held the handshake (ltsuite.generator).
        "t_connect_new_med_ms": _p([c for c in connect if c > 0], 0.5),
        "t_handshake_med_ms": _p(handshake, 0.5),
        "t_handshake_p99_ms": _p(handshake, 0.99),
        "t_queued_med_ms": _p(queued, 0.5),
        "t_queued_p99_ms": _p(queued, 0.99),
        "t_service_med_ms": _p(service, 0.5),
        "t_service_p99_ms": _p(service, 0.99),
        "decomposed_reqs": len(parts),
        "reqs_never_seen_by_app_connect_failed": joined.connect_failed,
        "reqs_never_seen_by_app_never_read": joined.never_read,
        "reqs_never_seen_by_app_interrupted": joined.interrupted_never_seen,
        "parts_out_of_order": sum(1 for p in parts if p.off_by() > TOLERANCE_MS),
    }


def failed_wait(request: K6Request, sent: SentIds | None) -> float | None:
    """A failed request's own wait (ms), from being sent to its failure: its end less its sent
    mark (sent.at_ms by its id), else k6's blocked + duration where k6 timed it; None when
    neither measured it (k6 gives a request that failed while connecting no times: 0 is not
    its wait)."""
    at = None if sent is None or request.request_id is None else sent.at_ms.get(request.request_id)
    if at is not None:
        return max(request.end_ms - at, 0.0)
    return request.whole if request.whole > 0 else None


def failed_wait_figures(k6: list[K6Request] | None, sent: SentIds | None = None) -> dict[str, Any]:
    """failed_wait_med_ms and failed_wait_p99_ms: the median and 99th percentile of the failed
    requests' own waits (failed_wait); None without k6's samples or without a failed request
    whose wait was measured."""
    waits = [w for r in k6 or [] if r.failed for w in [failed_wait(r, sent)] if w is not None]
    return {"failed_wait_med_ms": _p(waits, 0.5), "failed_wait_p99_ms": _p(waits, 0.99)}


def connection_figures(k6: list[K6Request] | None, tls: bool, window_s: Any) -> dict[str, Any]:
    """new_conns and new_conns_per_s: the load's requests k6 dialed a connection for (its
    connecting time above 0: a request on a reused connection has 0, and one whose dial failed
    has no times at all), and per second of the load (the row's load_window_s: the first
    request's start to the last one's end, as tps); tls_handshakes and
    tls_handshakes_per_s the same for the TLS handshakes (tls_handshaking above 0), only on
    HTTPS (`tls`); tls_handshakes_end_ms, the last handshake's end after the first request's
    start (ltsuite.tlsburst). None without k6's samples, and the rates without a duration."""
    if k6 is None:
        return {"new_conns": None, "new_conns_per_s": None, "tls_handshakes": None, "tls_handshakes_per_s": None,
                "tls_handshakes_end_ms": None}
    seconds = to_number(window_s)
    new = sum(1 for r in k6 if r.connecting > 0)
    handshakes = sum(1 for r in k6 if r.tls_handshaking > 0) if tls else None
    # The last handshake's end: its request's start + blocked (the connection's whole set-up).
    ends = [r.start_ms + r.blocked for r in k6 if r.tls_handshaking > 0] if tls else []

    def rate(count: int | None) -> Any:
        return None if count is None or not seconds else num(count / seconds)

    return {"new_conns": new, "new_conns_per_s": rate(new), "tls_handshakes": handshakes,
            "tls_handshakes_per_s": rate(handshakes),
            "tls_handshakes_end_ms": tlsburst.handshakes_end_ms([r.start_ms for r in k6], ends)}


def cell_tls(env: dict[str, Any]) -> bool:
    """The cell's users met TLS (its cell.env): at the target (TARGET_TLS=1) or at nginx in front
    (PROXY=nginx with PROXY_TLS=1)."""
    return (str(env.get("TARGET_TLS") or "0") == "1"
            or (env.get("PROXY") == "nginx" and str(env.get("PROXY_TLS") or "0") == "1"))


# ---- Predictions: the waves and the SYN schedule ------------------------------------------------


@dataclass
class Predicted:
    """Each user's predicted connect and queued times (ms), in the order they connect."""

    connect: list[float]
    queued: list[float]


def simulate(users: int, threads: int, max_connections: int, backlog: int, service_ms: float,
             syn_times_s: list[int]) -> Predicted:
    """users requests sent at one instant, each on its own connection that closes after the
    answer, to a server that holds max_connections + backlog + 1 connections
    (rules.server_capacity) and serves them in arrival order on `threads` threads for
    service_ms each: the k-th wave waits (k - 1) x service_ms (seed 003). A user with no room
    has its SYN dropped and sends it again at the SYN schedule's times (rules.syn_send_times);
    at each, as many get in as there is room (connections whose answer has gone free theirs).
    A user still out at the schedule's end is left out (it fails to connect)."""
    capacity = max_connections + backlog + 1
    connect, queued = [], []
    finishes: list[float] = []  # the held connections' ends
    free_at = [0.0] * max(threads, 1)  # when each thread is next free
    waiting = users
    for t_s in syn_times_s:
        now = t_s * 1000.0
        held = sum(1 for f in finishes if f > now)
        room = max(capacity - held, 0)
        for _ in range(min(room, waiting)):
            thread = min(range(len(free_at)), key=lambda i: free_at[i])
            start = max(now, free_at[thread])
            free_at[thread] = start + service_ms
            finishes.append(start + service_ms)
            connect.append(now)
            queued.append(start - now)
            waiting -= 1
        if waiting == 0:
            break
    return Predicted(connect, queued)


def one_request_at_once(env: dict[str, Any]) -> bool:
    """The cells the waves predict: every user sends one request at one instant on its own
    connection to the suite's /hello (a burst of REQUESTS_PER_VU=1: its only request is its
    last and says Connection: close)."""
    return (env.get("script") is None and env.get("SCENARIO") == "burst"
            and (env.get("REQUESTS_PER_VU") or "") == "1" and (env.get("TARGET_CMD") or "") == ""
            and (env.get("TARGET_JAR") or "") == "" and (env.get("TARGET_URL") or "") == "")


def predictions(env: dict[str, Any], sysctls: dict[str, dict[str, str]],
                rtt_applied_ms: float | None = None) -> dict[str, Any]:
    """predicted_t_queued_p99_ms and predicted_t_connect_p99_ms (None where the rule does not
    apply: see one_request_at_once), from simulate() with the cell's knobs, its recorded
    somaxconn (the listen backlog, rules.listen_backlog) and the client's SYN schedule, each
    connect one NET_RTT_MS longer, and the users whose handshake a lossy link lost (NET_LOSS)
    a SYN retransmission later (lost_handshakes). The RTT is the one the delayer applied
    (rtt_applied_ms: net_rtt_applied_ms, its unread wait included) when it measured one, else
    NET_RTT_MS: a delayer that held packets longer delayed every handshake by it. Not behind nginx (PROXY=nginx): there the users connect to
    nginx at once and the server's queue delays nginx's connects, not theirs."""
    none = {"predicted_t_queued_p99_ms": None, "predicted_t_connect_p99_ms": None}
    if not one_request_at_once(env) or design.proxied(env):
        return none
    users, threads = to_number(env.get("VUS")), to_number(env.get("TOMCAT_MAX_THREADS"))
    max_conns, accept = to_number(env.get("TOMCAT_MAX_CONNECTIONS")), to_number(env.get("TOMCAT_ACCEPT_COUNT"))
    somaxconn = to_number((sysctls.get("server") or {}).get("net.core.somaxconn"))
    delay = to_number(env.get("DELAY_MS"))
    retries = design.syn_retries(sysctls)
    timeout_ms = rules.duration_ms(env.get("REQUEST_TIMEOUT") or "")
    if None in (users, threads, max_conns, accept, somaxconn, delay, retries, timeout_ms):
        return none
    schedule = [t for t in rules.syn_send_times(retries, design.syn_linear(sysctls)) if t * 1000 < timeout_ms]
    predicted = simulate(int(users), int(rules.workers(threads, max_conns, design.virtual_threads(env))), int(max_conns),
                         rules.listen_backlog(int(accept), int(somaxconn)), float(delay), schedule)
    # A round trip between the users and the server (NET_RTT_MS, the delayer): every handshake
    # takes one more RTT (SYN out, SYN-ACK back) on top of the SYN schedule, and the request and
    # its answer one more. The queues themselves are simulated without it.
    rtt = float(rtt_applied_ms if rtt_applied_ms is not None else to_number(env.get("NET_RTT_MS") or "0") or 0)
    loss = float(to_number(env.get("NET_LOSS") or "0") or 0)
    # The parts are measured on the answered requests only: a user whose wave comes after its
    # REQUEST_TIMEOUT leaves unanswered (the server still serves its request later).
    answered = [(c + rtt + extra, q, weight)
                for c, q in zip(predicted.connect, predicted.queued)
                for extra, weight in lost_handshakes(loss, schedule)
                if c + rtt + extra + q + delay + rtt <= timeout_ms]
    return {"predicted_t_queued_p99_ms": _weighted_p([(q, w) for _, q, w in answered], 0.99),
            "predicted_t_connect_p99_ms": _weighted_p([(c, w) for c, _, w in answered], 0.99)}


def lost_handshakes(loss: float, schedule: list[int]) -> list[tuple[float, float]]:
    """(extra connect ms, share of users) for a handshake through a link that loses each packet
    with probability `loss` (NET_LOSS, the delayer): an attempt fails when its SYN or the
    SYN-ACK is lost, q = 1 - (1 - loss)^2, and the client tries again at its next SYN
    retransmission (the schedule, s after the first: 1, 3, 7 ...), so a share q^k (1 - q) of
    the users connect schedule[k] - schedule[0] later (tcp_retransmit_timer; the server's
    SYN-ACK retransmissions, at the same times, are not told apart). Without loss: [(0, 1)].
    Users whose every attempt is lost are left out (they never connect)."""
    if loss <= 0 or not schedule:
        return [(0.0, 1.0)]
    fail = 1 - (1 - loss) ** 2
    return [((t - schedule[0]) * 1000.0, fail ** k * (1 - fail)) for k, t in enumerate(schedule)]


def _weighted_p(values: list[tuple[float, float]], fraction: float) -> Any:
    """The value at `fraction` of the total weight (nearest rank): k6's percentile of a sample
    in which each value appears in proportion to its weight; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    if all(w == ordered[0][1] for _, w in ordered):
        return _p([v for v, _ in ordered], fraction)
    total, seen = sum(w for _, w in ordered), 0.0
    for value, weight in ordered:
        seen += weight
        if seen >= fraction * total - 1e-12:
            return num(value)
    return num(ordered[-1][0])


def close_enough(measured: Any, predicted: Any, scale_ms: float) -> bool:
    """A measured part near its prediction: within 10 % of scale_ms (the service time for the
    waves, the SYN schedule's 1 s step for connecting) plus 50 ms for k6's start spread and
    the JVM's first requests."""
    if measured is None or predicted is None:
        return False
    return abs(measured - predicted) <= 0.1 * scale_ms + 50


def verdict(env: dict[str, Any], row: dict[str, Any], figures_: dict[str, Any],
            predicted: dict[str, Any]) -> dict[str, Any]:
    """prediction_check and prediction_notes with the parts' checks folded in, as
    ltsuite.design's prediction_verdict words them ("NAME measured where predicted was
    predicted"): unchanged when no part was predicted or measured."""
    checks = []
    delay = or_default(to_number(env.get("DELAY_MS")), 0)
    # The waves and the SYN schedule start at one instant: users that arrived spread over more
    # than START_SPREAD_LIMIT_MS (design_notes says so) are not the load they predict.
    spread, limit = to_number(row.get("first_request_spread_ms")), to_number(env.get("START_SPREAD_LIMIT_MS"))
    if spread is not None and limit is not None and spread > limit:
        return {}
    pairs = (("t_queued_p99_ms", "predicted_t_queued_p99_ms", delay),
             ("t_connect_p99_ms", "predicted_t_connect_p99_ms", 1000))
    for name, predicted_name, scale in pairs:
        if predicted.get(predicted_name) is None or figures_.get(name) is None:
            continue
        checks.append((name, predicted[predicted_name], figures_[name],
                       close_enough(figures_[name], predicted[predicted_name], scale)))
    if not checks:
        return {}
    off = [c for c in checks if not c[3]]
    check, notes = row.get("prediction_check"), row.get("prediction_notes")
    if not off:
        return {"prediction_check": check or "match"}
    what = "; ".join(f"{name} {text(measured)} where {text(pred)} was predicted" for name, pred, measured, _ in off)
    service = figures_.get("t_service_med_ms")
    why = []
    if service is not None and delay and abs(service - delay) > 0.1 * delay:
        why.append(f"the service took {text(service)} ms (t_service_med_ms), not DELAY_MS={text(delay)}")
    drops, overflows = row.get("listen_drops"), row.get("listen_overflows")
    if drops is not None and overflows is not None and drops > overflows:
        why.append(f"{text(drops - overflows)} SYNs were dropped while the accept queue had room (ListenDrops "
                   f"{text(drops)}, ListenOverflows {text(overflows)}): in a burst the listener holds at most its "
                   "backlog of half-open handshakes (tcp_conn_request(), inet_csk_reqsk_queue_is_full()), so some "
                   "users the queue had room for waited for a SYN retransmit")
    if or_default(row.get("as_designed"), 1) == 0:
        why.append("the load did not run as designed (design_notes)")
    reason = "; ".join(why) if why else "the waves and the SYN schedule do not explain the difference"
    note = f"{what} (within 10 % of the step and 50 ms): {reason}"
    return {"prediction_check": "mismatch", "prediction_notes": f"{notes}; {note}" if notes else note}


# ---- The row's hook -------------------------------------------------------------------------------


#: row_figures' app when the caller has not read the access log.
UNREAD: Any = object()


def row_figures(cell_dir: Path, env: dict[str, Any], sysctls: dict[str, dict[str, str]],
                row: dict[str, Any], app: Any = UNREAD) -> dict[str, Any]:
    """Everything this module adds to a cell's row: the failed requests' own time
    (failed_wait_figures, from k6's samples alone), the application's figures (app_*), the
    parts (t_*), the requests it never saw, the parts' predictions and the prediction check
    with them folded in. Only the failed requests' time when the target wrote no access log
    (TARGET_CMD, TARGET_URL, a target that never started): the row then has none of the other
    keys, and results.csv shows them empty. Without ids in k6's samples (a script of one's own
    that does not send them) the app_* and the never-seen counts from k6's own figures remain.
    app: the load's requests of the access log when the caller read them
    (accesslog.cell_load_requests), else they are read here."""
    sent = SentIds()
    k6 = cell_k6_requests(cell_dir, sent)
    out = failed_wait_figures(k6, sent)
    out.update(connection_figures(k6, cell_tls(env), row.get("load_window_s")))
    if app is UNREAD:
        app = accesslog.cell_load_requests(cell_dir)
    if app is None:
        return out
    out.update(accesslog.app_figures(app))
    joined = join(k6, app, sent) if k6 is not None else None
    out.update(figures(joined, cell_tls(env)))
    if joined is None or not joined.ids:
        why = ("k6 wrote no per-request samples (K6_SAMPLES=0)" if k6 is None else
               "the k6 script's requests carry no request id (k6/http's functions imported by name, "
               "or asyncRequest or batch: docs/time-parts.md)")
        out["notes"] = "; ".join(n for n in (row.get("notes"), f"{why}: the application's own figures (app_*) "
                                 "stand, each request's split (t_*, decomposed_reqs) is empty and the requests it "
                                 "never saw are counted from k6's figures") if n)
        # No per-request join: requests k6 sent that the application did not log, by count.
        failed_connect = row.get("fail_connect")
        sent = row.get("http_reqs")
        out["reqs_never_seen_by_app_connect_failed"] = failed_connect
        if sent is not None and failed_connect is not None:
            out["reqs_never_seen_by_app_never_read"] = max(sent - failed_connect - len(app), 0)
    predicted = predictions(env, sysctls, row.get("net_rtt_applied_ms"))
    out.update(predicted)
    out.update(verdict(env, row, out, predicted))
    return out


def bars(cell_dir: Path, most: int) -> dict[str, Any]:
    """The report's picture of a cell: every joined request's parts (at most `most`, every
    n-th of them above that, in order of start), times in ms from the first request's start."""
    app = accesslog.cell_load_requests(cell_dir)
    k6 = cell_k6_requests(cell_dir) if app is not None else None
    if app is None or k6 is None:
        return {"count": 0, "bars": [], "app_ms": [], "k6_ms": []}
    joined = join(k6, app)
    parts = sorted(joined.parts, key=lambda p: p.start_ms)
    stride = max(1, math.ceil(len(parts) / most)) if most > 0 else 1
    shown = parts[::stride]
    origin = parts[0].start_ms if parts else 0
    answered = sorted(r.whole for r in k6 if r.status > 0)
    served = sorted(r.service_ms for r in app)
    step_k6 = max(1, math.ceil(len(answered) / most)) if most > 0 else 1
    step_app = max(1, math.ceil(len(served) / most)) if most > 0 else 1
    return {
        "count": len(parts),
        "stride": stride,
        "tolerance_ms": TOLERANCE_MS,
        # [start, connect, queued, service, rest] each in ms, to 0.1; the page draws a TLS
        # handshake within rest (the row has it apart: t_handshake_*).
        "bars": [[round(p.start_ms - origin, 1), round(p.connect, 1), round(p.queued, 1), round(p.service, 1),
                  round(p.rest + p.handshake, 1)] for p in shown],
        # Latency distributions, sorted (every n-th above `most`): the application's %D and
        # the users' blocked + duration of answered requests.
        "app_ms": [round(v, 1) for v in served[::step_app]],
        "k6_ms": [round(v, 1) for v in answered[::step_k6]],
    }


def _tag(value: str) -> str:
    """A line-protocol tag value: spaces, commas and equals signs escaped; never empty."""
    out = "".join("\\" + c if c in " ,=\\" else c for c in (value or "none"))
    return out


def influx_lines(cell_dir: Path, run_id: str, cell: str, scenario: str) -> list[str]:
    """The cell's parts as ltsuite_time_parts points of InfluxDB's line protocol, one per second
    of the requests' starts: the mean of each part (ms) and the requests that started in it,
    tagged with the run, the cell and the scenario (Grafana's connection-path dashboard stacks
    them)."""
    app = accesslog.cell_load_requests(cell_dir)
    k6 = cell_k6_requests(cell_dir) if app is not None else None
    if app is None or k6 is None:
        return []
    by_second: dict[int, list[Parts]] = {}
    for part in join(k6, app).parts:
        by_second.setdefault(int(part.start_ms // 1000), []).append(part)
    tags = f"ltsuite_time_parts,run_id={_tag(run_id)},cell={_tag(cell)},scenario={_tag(scenario)}"
    out = []
    for second in sorted(by_second):
        parts = by_second[second]
        # The dashboard stacks these four: a TLS handshake is drawn within rest (the row has it
        # apart, t_handshake_*).
        mean = {name: sum(getattr(p, name) + (p.handshake if name == "rest" else 0.0) for p in parts) / len(parts)
                for name in ("connect", "queued", "service", "rest")}
        fields = ",".join(f"{name}_ms={mean[name]:.3f}" for name in mean) + f",requests={len(parts)}i"
        out.append(f"{tags} {fields} {second * 1_000_000_000}")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 2 and args[0] == "bars":
        most = int(args[2]) if len(args) > 2 else 2000
        json.dump(bars(Path(args[1]), most), sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return 0
    if len(args) == 5 and args[0] == "lines":
        for line in influx_lines(Path(args[1]), args[2], args[3], args[4]):
            sys.stdout.write(line + "\n")
        return 0
    if len(args) != 1:
        sys.stderr.write("usage: python3 -m ltsuite.timeparts CELL_DIR | bars CELL_DIR [N]"
                         " | lines CELL_DIR RUN_ID CELL SCENARIO\n")
        return 2
    cell_dir = Path(args[0])
    row = formats.read_run_file(cell_dir / "row.json") or {}
    json.dump(row_figures(cell_dir, read_cell_env(cell_dir / "cell.env") or {},
                          read_sysctls(cell_dir / "sysctls.tsv"), row), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
