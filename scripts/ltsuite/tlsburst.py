"""What a burst of new TLS connections costs the server's cores: the calibrated handshake cost,
its prediction and the check of it against the cell.

The rule (docs/tls.md): Tomcat makes each new connection's TLS handshake on one of its worker
threads (NIO's SecureNioChannel.handshake(), run by the connector's executor), and a full
handshake costs the server c ms of CPU, measured on this machine per key type by
``make tls-calibrate`` (scripts/tls-calibrate.sh: the JVM's utime + stime over the handshakes
``openssl s_time -new`` made). A burst of N users, each on a new connection at one instant, to a
server that holds them all (N within max-connections + backlog + 1) is then N x c ms of CPU
spread over min(cores, worker threads) at once: the last handshake ends

    predicted_tls_handshakes_end_ms = N x c / min(cores, workers)

after the burst's first request. Tomcat's acceptor takes the connections off the listener's
queue as they come while max-connections has room (the handshake waits for a worker and the
CPU inside Tomcat, not in the kernel), so the accept queue the burst implies is

    predicted_tls_accept_queue_peak = min(N - max-connections, backlog + 1), 0 when N <= max-connections

The measured side: tls_handshakes_end_ms, from k6's samples, the last handshaking request's
start + blocked (its connection's whole set-up: connecting and tls_handshaking) less the first
request's start. The check: within 25 % of the prediction plus 50 ms (k6's start spread); the
accept queue's peak (sampled) exactly. The prediction counts the server's CPU alone: a mismatch
names how much wall time each handshake took on the cores (end x cores / N) against the
calibrated cost, and what else ran on them (the users' half of each handshake in k6, a cold JVM,
a late generator).

Where the cost comes from: the run's copy of the newest calibration (the cell's
tls-calibration.tsv, written by scripts/lib/tls.sh when the cell's key is made). Without one,
or outside the rule (not a one-request burst at the target's own HTTPS, TARGET_TLS=1; nginx's
handshakes, PROXY_TLS=1, are on nginx's cost, not calibrated; more users than the server
holds), the predicted columns are empty.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import design, rules
from .numbers import num, or_default, text, to_number

#: The calibration's copy in a cell directory.
CALIBRATION_FILE = "tls-calibration.tsv"

#: The check's tolerance: a share of the prediction, plus k6's start spread.
SHARE = 0.25
SPREAD_MS = 50.0

EMPTY = {"tls_handshake_cpu_ms": None, "predicted_tls_handshakes_end_ms": None,
         "predicted_tls_accept_queue_peak": None}


@dataclass(frozen=True)
class Calibration:
    """The server's CPU per full handshake (ms), per key type, and the file it was read from
    (its "# from" line: the calibration run's calibration.tsv)."""

    cpu_ms: dict[str, float]
    source: str


def read_calibration(path: Path) -> Calibration | None:
    """A calibration.tsv (scripts/tls-calibrate.sh: a header naming
    server_cpu_ms_per_handshake, a line per key); None when the file is missing or names no
    cost. Lines starting with # are comments ("# from PATH" names the source)."""
    if not path.is_file():
        return None
    source, header, costs = str(path), None, {}
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
    return Calibration(costs, source) if costs else None


def at_target(env: dict[str, Any]) -> bool:
    """The users' handshakes are the target's own (TARGET_TLS=1), not nginx's."""
    return str(env.get("TARGET_TLS") or "0") == "1"


def burst_of_new(env: dict[str, Any]) -> bool:
    """Every user makes one request on its own new connection at one instant: the burst of
    REQUESTS_PER_VU=1 (its only request says Connection: close)."""
    return (env.get("script") is None and env.get("SCENARIO") == "burst"
            and (env.get("REQUESTS_PER_VU") or "") == "1")


def predictions(env: dict[str, Any], sysctls: dict[str, dict[str, str]], cpus: Any,
                calibration: Calibration | None) -> dict[str, Any]:
    """tls_handshake_cpu_ms (the calibrated cost of the cell's TLS_KEY, whenever the cell
    served HTTPS at the target and a calibration was copied), predicted_tls_handshakes_end_ms
    and predicted_tls_accept_queue_peak (the module's rule; None outside it)."""
    out = dict(EMPTY)
    if not at_target(env) or calibration is None:
        return out
    cost = calibration.cpu_ms.get(env.get("TLS_KEY") or "ec")
    out["tls_handshake_cpu_ms"] = None if cost is None else num(round(cost, 3))
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
    out["predicted_tls_handshakes_end_ms"] = num(round(users * cost / at_once, 1))
    out["predicted_tls_accept_queue_peak"] = (0 if users <= max_conns
                                              else int(min(users - max_conns, backlog + 1)))
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


def verdict(env: dict[str, Any], row: dict[str, Any], predicted: dict[str, Any], cpus: Any) -> dict[str, Any]:
    """prediction_check and prediction_notes with the handshakes' checks folded in, worded as
    ltsuite.design's prediction_verdict ("NAME measured where predicted was predicted"): {} when
    nothing was predicted or measured. A mismatch says how long each handshake held the cores
    (tls_handshakes_end_ms x cores / handshakes) against the calibrated server cost, and what
    else the row shows on the cores: k6's CPU and the machine's while the users were released
    (ltsuite.generator), a cold JVM, a late generator, a spread start."""
    checks = []
    end, p_end = row.get("tls_handshakes_end_ms"), predicted.get("predicted_tls_handshakes_end_ms")
    if end is not None and p_end is not None:
        checks.append(("tls_handshakes_end_ms", p_end, end, close_enough(end, p_end)))
    queue, p_queue = row.get("accept_queue_peak"), predicted.get("predicted_tls_accept_queue_peak")
    if queue is not None and p_queue is not None:
        checks.append(("accept_queue_peak", p_queue, queue, queue == p_queue))
    if not checks:
        return {}
    check, notes = row.get("prediction_check"), row.get("prediction_notes")
    off = [c for c in checks if not c[3]]
    if not off:
        return {"prediction_check": check or "match"}
    what = "; ".join(f"{name} {text(measured)} where {text(pred)} was predicted" for name, pred, measured, _ in off)
    why = []
    handshakes, cost = row.get("tls_handshakes"), predicted.get("tls_handshake_cpu_ms")
    cores = to_number(cpus)
    if end is not None and handshakes and cores and cost:
        held = end * cores / handshakes
        why.append(f"each of the {text(handshakes)} handshakes held the {text(int(cores))} cores {text(num(round(held, 2)))} ms "
                   f"(tls_handshakes_end_ms x cores / tls_handshakes), {text(num(round(held / cost, 1)))} times the "
                   f"server's calibrated {text(cost)} ms: the users' half of each handshake (k6, on the same cores) "
                   "and whatever else ran there are not in the server's calibration")
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
    reason = "; ".join(why) if why else "nothing in the row explains the difference"
    note = f"{what} (within {int(SHARE * 100)} % and {int(SPREAD_MS)} ms): {reason}"
    return {"prediction_check": "mismatch", "prediction_notes": f"{notes}; {note}" if notes else note}


def row_columns(cell_dir: Path, env: dict[str, Any], sysctls: dict[str, dict[str, str]], row: dict[str, Any],
                cpus: Any) -> dict[str, Any]:
    """Everything this module adds to a cell's row: the calibrated cost and the predictions
    (from the cell's tls-calibration.tsv), and the prediction check with them folded in."""
    predicted = predictions(env, sysctls, cpus, read_calibration(cell_dir / CALIBRATION_FILE))
    out = dict(predicted)
    out.update(verdict(env, row, predicted, cpus))
    return out
