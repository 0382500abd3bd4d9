"""What a burst of new TLS connections costs the cores: the calibrated handshake cost (the
server's and the users'), its prediction and the check of it against the cell.

The rule (docs/tls.md): Tomcat makes each new connection's TLS handshake on one of its worker
threads (NIO's SecureNioChannel.handshake(), run by the connector's executor), and a full
handshake costs the server s ms of CPU, measured on this machine per key type by
``make tls-calibrate`` (scripts/tls-calibrate.sh: the JVM's utime + stime over the handshakes
``openssl s_time -new`` made). The users' half of each handshake (k6's dial, its handshake, its
request and the answer) costs k6 c ms of CPU, measured by the same calibration (k6's CPU time
over two runs of new connections, the difference over the difference in connections). The local
runner starts the target on the machine k6 runs on (a cell without TARGET_URL; TARGET_TLS=1 is
refused with TARGET_URL), so both halves share its cores. A burst of N users, each on a new
connection at one instant, to a server that holds them all (N within max-connections + backlog +
1) is then N x (s + c) ms of CPU over the cores, and N x s on at most min(cores, workers) of them:
the last handshake ends

    predicted_tls_handshakes_end_ms = max(N x s / min(cores, workers), N x (s + c) / cores)

after the burst's first request (c = 0 when the calibration has no client figure). Tomcat's
acceptor takes the connections off the listener's queue as they come while max-connections has
room (the handshake waits for a worker and the CPU inside Tomcat, not in the kernel), so the accept
queue the burst implies is

    predicted_tls_accept_queue_peak = min(N - max-connections, backlog + 1), 0 when N <= max-connections

The first failures: k6's REQUEST_TIMEOUT (T) counts from the request's start, dial and handshake
included. The handshakes run in waves of W = min(N, workers) at once, one a worker thread, and the
threads share the cores fairly (the kernel's scheduler), so a wave's handshakes progress together
and end together, W x (s + c) / cores after the wave began (W x s / min(cores, W) if that is
longer). The users of the waves that end within T get their answer; every user of a later wave
times out:

    predicted_tls_failed = N - W x floor(T / wave), wave = max(W x (s + c) / cores, W x s / min(cores, W))

(0 when every wave ends within T; all N when even the first does not: with 200 threads, a burst of
200 handshakes either all end within T or none does). Each of them fails after T
(predicted_tls_failure_wait_ms, checked against failed_wait_med_ms: a timeout, not a reset; the
first of them T after the burst's start). Users past the server's capacity (queue overflow,
failed connects) are the burst rules' of ltsuite.design, outside this one.

The measured side: tls_handshakes_end_ms, from k6's samples, the last handshaking request's
start + blocked (its connection's whole set-up: connecting and tls_handshaking) less the first
request's start; over that window the sampler's 50 ms trace (k6-cpu.tsv) gives k6's CPU and the
machine's busy CPU per handshake (tls_k6_cpu_ms_per_handshake, tls_machine_cpu_ms_per_handshake).
The check: the end within 25 % of the prediction plus 50 ms (k6's start spread); the accept
queue's peak (sampled) exactly; the failures (fail_timeout + fail_tls) exactly, and their
failed_wait_med_ms within 25 % plus 50 ms of T. A mismatch names how much wall time each handshake took
on the cores (end x cores / N) against the calibrated s + c, and the measured CPU per handshake of
k6 and of the machine, which tell the users' half from the rest.

nginx in front (PROXY=nginx, PROXY_TLS=1): nginx makes the handshakes, its CPU n ms a full one
(the same calibration: nginx with the run's key, one worker, ``openssl s_time -new``), in its one
worker process (scripts/ltsuite/proxy.py's worker_processes 1), whose event loop interleaves every
connection's handshake: one core for nginx, one wave of all N, so

    predicted_tls_handshakes_end_ms = max(N x n, N x (n + c) / cores)
    predicted_tls_failed = N when that end is past REQUEST_TIMEOUT, else 0

for a burst nginx holds (N within half its worker_connections, a client and an upstream connection
each, and within its listen backlog, PROXY_BACKLOG capped by somaxconn). The accept queue is
not predicted there (the sampler's is Tomcat's listener, behind nginx).

Where the costs come from: the run's copy of the newest calibration (the cell's
tls-calibration.tsv, written by scripts/lib/tls.sh when the cell's key is made). Without one,
or outside the rule (not a one-request burst at the target's own HTTPS or at nginx's; more users
than the server holds), the predicted columns are empty.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
from typing import Any

from . import design, generator, rules
from .numbers import num, or_default, text, to_number

#: The calibration's copy in a cell directory.
CALIBRATION_FILE = "tls-calibration.tsv"

#: The check's tolerance: a share of the prediction, plus k6's start spread.
SHARE = 0.25
SPREAD_MS = 50.0

EMPTY = {"tls_handshake_cpu_ms": None, "tls_client_cpu_ms": None, "predicted_tls_handshakes_end_ms": None,
         "predicted_tls_accept_queue_peak": None, "predicted_tls_failed": None,
         "predicted_tls_failure_wait_ms": None}

#: The measured CPU per handshake (trace_cpu), empty.
TRACE_EMPTY = {"tls_k6_cpu_ms_per_handshake": None, "tls_target_cpu_ms_per_handshake": None,
               "tls_machine_cpu_ms_per_handshake": None}

#: The trace must cover this share of the handshakes' window for the CPU per handshake it gives.
TRACE_COVER = 0.8


@dataclass(frozen=True)
class Calibration:
    """The server's CPU per full handshake (ms), per key type, k6's CPU per new TLS connection
    and nginx's per full handshake (ms, per key type; absent from calibrations made before they
    were measured), and
    the file it was read from (its "# from" line: the calibration run's calibration.tsv)."""

    cpu_ms: dict[str, float]
    source: str
    client_cpu_ms: dict[str, float] | None = None
    nginx_cpu_ms: dict[str, float] | None = None


def read_calibration(path: Path) -> Calibration | None:
    """A calibration.tsv (scripts/tls-calibrate.sh: a header naming
    server_cpu_ms_per_handshake, a line per key); None when the file is missing or names no
    cost. Lines starting with # are comments ("# from PATH" names the source)."""
    if not path.is_file():
        return None
    source, header, costs, client, nginx = str(path), None, {}, {}, {}
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            if line.startswith("# from "):
                source = line[len("# from "):].strip()
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            continue
        if "key" not in header or "server_cpu_ms_per_handshake" not in header or len(fields) != len(header):
            continue
        value = to_number(fields[header.index("server_cpu_ms_per_handshake")])
        if value is not None and value > 0:
            costs[fields[header.index("key")]] = float(value)
        for column, into in (("client_cpu_ms_per_handshake", client), ("nginx_cpu_ms_per_handshake", nginx)):
            if column in header:
                value = to_number(fields[header.index(column)])
                if value is not None and value > 0:
                    into[fields[header.index("key")]] = float(value)
    return Calibration(costs, source, client, nginx) if costs else None


def at_target(env: dict[str, Any]) -> bool:
    """The users' handshakes are the target's own (TARGET_TLS=1), not nginx's."""
    return str(env.get("TARGET_TLS") or "0") == "1"


#: nginx's worker processes (scripts/ltsuite/proxy.py writes worker_processes 1).
NGINX_WORKERS = 1


def at_nginx(env: dict[str, Any]) -> bool:
    """The users' handshakes are nginx's (PROXY=nginx with PROXY_TLS=1)."""
    return env.get("PROXY") == "nginx" and str(env.get("PROXY_TLS") or "0") == "1"


def nginx_holds(env: dict[str, Any], sysctls: dict[str, dict[str, str]], users: int) -> bool:
    """nginx takes the whole burst at once: each user within half its worker_connections (a client
    and an upstream connection each) and within its listen backlog (PROXY_BACKLOG, at most the
    server namespace's somaxconn)."""
    connections = to_number(env.get("PROXY_WORKER_CONNECTIONS") or "4096")
    backlog = to_number(env.get("PROXY_BACKLOG") or "511")
    somaxconn = to_number((sysctls.get("server") or {}).get("net.core.somaxconn"))
    if None in (connections, backlog, somaxconn):
        return False
    return users <= connections // 2 and users <= min(backlog, somaxconn)


def nginx_predictions(env: dict[str, Any], sysctls: dict[str, dict[str, str]], cpus: Any,
                      calibration: Calibration) -> dict[str, Any]:
    """The rule at nginx (the module's docstring): nginx's calibrated cost as tls_handshake_cpu_ms,
    k6's as tls_client_cpu_ms, the end of the burst's handshakes and the users past REQUEST_TIMEOUT;
    the accept queue not predicted."""
    out = dict(EMPTY)
    key = env.get("TLS_KEY") or "ec"
    cost = (calibration.nginx_cpu_ms or {}).get(key)
    client = (calibration.client_cpu_ms or {}).get(key) if shares_cores(env) else None
    out["tls_handshake_cpu_ms"] = None if cost is None else num(round(cost, 3))
    out["tls_client_cpu_ms"] = None if client is None else num(round(client, 3))
    users, cores = design.designed_vus(env), to_number(cpus)
    if cost is None or not burst_of_new(env) or users is None or not cores or not nginx_holds(env, sysctls, int(users)):
        return out
    end = max(users * cost / min(int(cores), NGINX_WORKERS), users * (cost + (client or 0.0)) / int(cores))
    out["predicted_tls_handshakes_end_ms"] = num(round(end, 1))
    timeout = rules.duration_ms(env.get("REQUEST_TIMEOUT") or "")
    if timeout:
        out["predicted_tls_failed"] = int(users) if end > timeout else 0
        out["predicted_tls_failure_wait_ms"] = num(round(timeout, 1)) if end > timeout else None
    return out


def shares_cores(env: dict[str, Any]) -> bool:
    """k6 and the target run on one machine: the local runner starts the target beside k6 unless
    TARGET_URL names one elsewhere (the remote runners, ssm-fanout.sh and k6-operator.sh, always
    do, and TARGET_TLS=1 is refused with TARGET_URL)."""
    return not env.get("TARGET_URL")


def burst_of_new(env: dict[str, Any]) -> bool:
    """Every user makes one request on its own new connection at one instant: the burst of
    REQUESTS_PER_VU=1 (its only request says Connection: close)."""
    return (env.get("script") is None and env.get("SCENARIO") == "burst"
            and (env.get("REQUESTS_PER_VU") or "") == "1")


def predictions(env: dict[str, Any], sysctls: dict[str, dict[str, str]], cpus: Any,
                calibration: Calibration | None) -> dict[str, Any]:
    """tls_handshake_cpu_ms and tls_client_cpu_ms (the calibrated costs of the cell's TLS_KEY,
    whenever the cell served HTTPS at the target and a calibration was copied; the client's only
    when k6 shares the cores), predicted_tls_handshakes_end_ms, predicted_tls_accept_queue_peak,
    predicted_tls_failed and predicted_tls_failure_wait_ms (the module's rule; None outside it)."""
    out = dict(EMPTY)
    if calibration is not None and at_nginx(env):
        return nginx_predictions(env, sysctls, cpus, calibration)
    if not at_target(env) or calibration is None:
        return out
    key = env.get("TLS_KEY") or "ec"
    cost = calibration.cpu_ms.get(key)
    client = (calibration.client_cpu_ms or {}).get(key) if shares_cores(env) else None
    out["tls_handshake_cpu_ms"] = None if cost is None else num(round(cost, 3))
    out["tls_client_cpu_ms"] = None if client is None else num(round(client, 3))
    users = design.designed_vus(env)
    capacity = design.cell_capacity(env, sysctls)
    threads, max_conns = to_number(env.get("TOMCAT_MAX_THREADS")), to_number(env.get("TOMCAT_MAX_CONNECTIONS"))
    workers = (None if threads is None or max_conns is None
               else rules.workers(int(threads), int(max_conns), design.virtual_threads(env)))
    cores = to_number(cpus)
    if (cost is None or not burst_of_new(env) or None in (users, capacity, workers, max_conns, cores)
            or users > capacity or not workers or not cores):
        return out
    at_once = min(int(cores), int(workers))
    backlog = capacity - int(max_conns) - 1
    both = cost + (client or 0.0)
    end = max(users * cost / at_once, users * both / int(cores))
    out["predicted_tls_handshakes_end_ms"] = num(round(end, 1))
    out["predicted_tls_accept_queue_peak"] = (0 if users <= max_conns
                                              else int(min(users - max_conns, backlog + 1)))
    timeout = rules.duration_ms(env.get("REQUEST_TIMEOUT") or "")
    if timeout:
        failed = failures(int(users), int(workers), int(cores), cost, client or 0.0, timeout)
        out["predicted_tls_failed"] = failed
        out["predicted_tls_failure_wait_ms"] = num(round(timeout, 1)) if failed else None
    return out


def failures(users: int, workers: int, cores: int, cost: float, client: float, timeout_ms: float) -> int:
    """The users of a burst whose handshake cannot end within REQUEST_TIMEOUT (the module's rule):
    waves of W = min(users, workers) handshakes sharing the cores, each wave max(W x (s + c) / cores,
    W x s / min(cores, W)) ms; the users of the waves that end within the timeout are answered."""
    wave_users = min(users, workers)
    wave_ms = max(wave_users * (cost + client) / cores, wave_users * cost / min(cores, wave_users))
    answered = wave_users * int(timeout_ms // wave_ms)
    return max(0, users - answered)


def trace_cpu(cell_dir: Path, first_ms: Any, end_ms: Any, handshakes: Any, cpus: Any) -> dict[str, Any]:
    """tls_k6_cpu_ms_per_handshake, tls_target_cpu_ms_per_handshake and
    tls_machine_cpu_ms_per_handshake: k6's CPU, the target JVM's (the trace's sixth column, when the
    sampler found it) and the machine's busy CPU (every core) over the handshakes' window (first_ms, epoch ms, the burst's
    first request, to first_ms + end_ms), from the sampler's 50 ms trace (k6-cpu.tsv), over the
    handshakes (the row's only when every dialed connection's handshake ended, all_ended). The window is the trace's points at or before its start to the last point within it
    (the sampler may stop before the last handshake's end), and must cover TRACE_COVER of it;
    None otherwise, or when the set of k6 processes changed within it."""
    out = dict(TRACE_EMPTY)
    first, end, count, cores = to_number(first_ms), to_number(end_ms), to_number(handshakes), to_number(cpus)
    if None in (first, end, count, cores) or not count or not end or not cores:
        return out
    trace = generator.read_trace(cell_dir / "k6-cpu.tsv")
    start_s, stop_s = first / 1000, (first + end) / 1000
    before = [p for p in trace if p[0] <= start_s]
    inside = [p for p in trace if start_s < p[0] <= stop_s + 0.05]
    if not before or not inside:
        return out
    a, b = before[-1], inside[-1]
    if (b[0] - max(a[0], start_s)) < TRACE_COVER * (stop_s - start_s) or b[3] <= a[3] or b[1] < a[1]:
        return out
    if any(p[4] != a[4] for p in trace if a[0] <= p[0] <= b[0]):
        return out
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    seconds = b[0] - a[0]
    busy = (b[2] - a[2]) / (b[3] - a[3])
    out["tls_k6_cpu_ms_per_handshake"] = num(round((b[1] - a[1]) * tick_ms / count, 2))
    out["tls_machine_cpu_ms_per_handshake"] = num(round(busy * cores * seconds * 1000 / count, 2))
    target = generator.read_target(cell_dir / "k6-cpu.tsv")
    if a[0] in target and b[0] in target and target[b[0]] >= target[a[0]]:
        out["tls_target_cpu_ms_per_handshake"] = num(round((target[b[0]] - target[a[0]]) * tick_ms / count, 2))
    return out


def handshakes_end_ms(starts_ms: list[float], handshake_ends_ms: list[float]) -> Any:
    """tls_handshakes_end_ms: the last handshake's end less the first request's start (ms, to
    0.1); None without a handshake."""
    if not handshake_ends_ms or not starts_ms:
        return None
    return num(round(max(handshake_ends_ms) - min(starts_ms), 1))


def close_enough(measured: Any, predicted: Any) -> bool:
    """Within SHARE of the prediction plus SPREAD_MS."""
    if measured is None or predicted is None:
        return False
    return abs(measured - predicted) <= SHARE * predicted + SPREAD_MS


def all_ended(row: dict[str, Any]) -> bool:
    """Every connection the load dialed finished its handshake (tls_handshakes = new_conns; true
    when new_conns was not measured): only then is tls_handshakes_end_ms the end of the burst's
    handshakes, and the CPU over it theirs, rather than the end of the few that ended before the
    rest timed out."""
    new, handshakes = row.get("new_conns"), row.get("tls_handshakes")
    return new is None or handshakes == new


def verdict(env: dict[str, Any], row: dict[str, Any], predicted: dict[str, Any], cpus: Any) -> dict[str, Any]:
    """prediction_check and prediction_notes with the handshakes' checks folded in, worded as
    ltsuite.design's prediction_verdict ("NAME measured where predicted was predicted"): {} when
    nothing was predicted or measured. A mismatch says how long each handshake held the cores
    (tls_handshakes_end_ms x cores / handshakes) against the calibrated server + client cost, the
    CPU per handshake k6 and the machine used over the handshakes (the sampler's trace), and what
    else the row shows on the cores: k6's CPU and the machine's while the users were released
    (ltsuite.generator), a cold JVM, a late generator, a spread start."""
    checks = []
    end, p_end = row.get("tls_handshakes_end_ms"), predicted.get("predicted_tls_handshakes_end_ms")
    whole = all_ended(row)
    if end is not None and p_end is not None and whole:
        checks.append(("tls_handshakes_end_ms", p_end, end, close_enough(end, p_end)))
    queue, p_queue = row.get("accept_queue_peak"), predicted.get("predicted_tls_accept_queue_peak")
    if queue is not None and p_queue is not None:
        checks.append(("accept_queue_peak", p_queue, queue, queue == p_queue))
    p_failed = predicted.get("predicted_tls_failed")
    timeouts, tls_failed = row.get("fail_timeout"), row.get("fail_tls")
    failed = None if timeouts is None and tls_failed is None else (timeouts or 0) + (tls_failed or 0)
    if failed is not None and p_failed is not None:
        checks.append(("fail_timeout + fail_tls", p_failed, failed, failed == p_failed))
    wait, p_wait = row.get("failed_wait_med_ms"), predicted.get("predicted_tls_failure_wait_ms")
    if p_failed and failed == p_failed and wait is not None and p_wait is not None:
        checks.append(("failed_wait_med_ms", p_wait, wait, close_enough(wait, p_wait)))
    if not checks:
        return {}
    check, notes = row.get("prediction_check"), row.get("prediction_notes")
    off = [c for c in checks if not c[3]]
    if not off:
        return {"prediction_check": check or "match"}
    what = "; ".join(f"{name} {text(measured)} where {text(pred)} was predicted" for name, pred, measured, _ in off)
    why = []
    handshakes, cost = row.get("tls_handshakes"), predicted.get("tls_handshake_cpu_ms")
    client = predicted.get("tls_client_cpu_ms")
    cores = to_number(cpus)
    server = "nginx's" if at_nginx(env) else "the server's"
    if end is not None and handshakes and cores and cost and whole:
        held = end * cores / handshakes
        both = cost + (client or 0)
        calibrated = (f"the calibrated {text(cost)} ms of {server} and {text(client)} ms of k6's (on the same cores)"
                      if client else
                      f"the server's calibrated {text(cost)} ms: the users' half of each handshake (k6, on the same "
                      "cores) and whatever else ran there are not in the server's calibration")
        why.append(f"each of the {text(handshakes)} handshakes held the {text(int(cores))} cores {text(num(round(held, 2)))} ms "
                   f"(tls_handshakes_end_ms x cores / tls_handshakes), {text(num(round(held / both, 1)))} times "
                   f"{calibrated}")
    k6_each, machine_each = row.get("tls_k6_cpu_ms_per_handshake"), row.get("tls_machine_cpu_ms_per_handshake")
    target_each = row.get("tls_target_cpu_ms_per_handshake")
    if k6_each is not None and machine_each is not None and target_each is not None and at_nginx(env):
        rest = num(round(max(0.0, machine_each - k6_each - target_each), 2))
        why.append(f"over the handshakes the machine's cores were busy {text(machine_each)} ms a handshake: the target's "
                   f"JVM behind nginx {text(target_each)} ms (answering the requests nginx passed on, not in the rule), "
                   f"k6 {text(k6_each)} ms" + (f" (calibrated {text(client)} ms)" if client else "")
                   + f", nginx and every other process {text(rest)} ms" + (f" (nginx's calibrated {text(cost)} ms)" if cost else "")
                   + " (tls_target_cpu_ms_per_handshake, tls_k6_cpu_ms_per_handshake, tls_machine_cpu_ms_per_handshake)")
    elif k6_each is not None and machine_each is not None and target_each is not None:
        rest = num(round(max(0.0, machine_each - k6_each - target_each), 2))
        why.append(f"over the handshakes the machine's cores were busy {text(machine_each)} ms a handshake: the target "
                   f"{text(target_each)} ms" + (f" ({text(num(round(target_each / cost, 1)))} times its calibrated "
                                                f"{text(cost)} ms)" if cost else "")
                   + f", k6 {text(k6_each)} ms" + (f" (calibrated {text(client)} ms)" if client else "")
                   + f", other processes {text(rest)} ms (tls_target_cpu_ms_per_handshake, tls_k6_cpu_ms_per_handshake, "
                     "tls_machine_cpu_ms_per_handshake)")
    elif k6_each is not None and machine_each is not None:
        rest = num(round(machine_each - k6_each, 2))
        why.append(f"over the handshakes the machine's cores were busy {text(machine_each)} ms a handshake, k6 "
                   f"{text(k6_each)} of them (tls_machine_cpu_ms_per_handshake, tls_k6_cpu_ms_per_handshake): "
                   f"the other {text(rest)} ms ran outside k6 (the target and anything else on the machine)"
                   + (f", {text(num(round(rest / cost, 1)))} times the server's calibrated cost" if cost else ""))
    k6_cpu, busy = row.get("k6_release_cpu_pct"), row.get("machine_release_busy_pct")
    if k6_cpu is not None and busy is not None:
        why.append(f"while the users were released k6 used {text(k6_cpu)} % of a core and the machine was "
                   f"{text(busy)} % busy (k6_release_cpu_pct, machine_release_busy_pct)")
    if row.get("cold_start_ratio") is not None and or_default(row.get("cold_start_ratio"), 0) > 2:
        why.append(f"the load met a cold JVM (cold_start_ratio {text(row['cold_start_ratio'])}): the calibration "
                   "measured handshakes after a warm-up")
    if or_default(row.get("generator_bound"), 0) == 1:
        why.append("k6 set the pace (generator_bound)")
    spread = row.get("first_request_spread_ms")
    if spread is not None and p_end is not None and spread > p_end:
        why.append(f"the users arrived over {text(spread)} ms (first_request_spread_ms), longer than the handshakes "
                   "were predicted to take")
    if p_queue is not None and queue is not None and queue != p_queue:
        why.append("the accept queue's peak is sampled every SAMPLE_INTERVAL; Tomcat's acceptor takes connections "
                   "while max-connections has room")
    if failed is not None and p_failed is not None and failed != p_failed:
        timeout = rules.duration_ms(env.get("REQUEST_TIMEOUT") or "")
        if timeout:
            last = "" if end is None else f", the last {text(end)} ms after the first request"
            why.append(f"{text(handshakes or 0)} of the {text(row.get('new_conns'))} connections' handshakes ended"
                       f"{last}, with REQUEST_TIMEOUT {text(num(round(timeout, 1)))} ms: the failures follow the "
                       "handshakes' measured pace, slower or faster than the calibrated one")
    reason = "; ".join(why) if why else "nothing in the row explains the difference"
    timed = any(name in ("tls_handshakes_end_ms", "failed_wait_med_ms") for name, _, _, _ in off)
    note = f"{what}{f' (within {int(SHARE * 100)} % and {int(SPREAD_MS)} ms)' if timed else ''}: {reason}"
    return {"prediction_check": "mismatch", "prediction_notes": f"{notes}; {note}" if notes else note}


def row_columns(cell_dir: Path, env: dict[str, Any], sysctls: dict[str, dict[str, str]], row: dict[str, Any],
                cpus: Any, first_request_ms: Any = None) -> dict[str, Any]:
    """Everything this module adds to a cell's row: the calibrated costs and the predictions
    (from the cell's tls-calibration.tsv), k6's and the machine's CPU per handshake over the
    handshakes (from first_request_ms, epoch ms: the burst's first request), and the prediction
    check with them folded in."""
    predicted = predictions(env, sysctls, cpus, read_calibration(cell_dir / CALIBRATION_FILE))
    out = dict(predicted)
    out.update(trace_cpu(cell_dir, first_request_ms, row.get("tls_handshakes_end_ms"), row.get("tls_handshakes"), cpus)
               if (at_target(env) or at_nginx(env)) and all_ended(row) else dict(TRACE_EMPTY))
    out.update(verdict(env, {**row, **out}, predicted, cpus))
    return out
