"""How much can it take: for the settings a file fixes and a goal, the highest load they hold (users
of a burst or of a closed loop, or an open model's arrival rate), found by a search that starts
where the rules put the limit, brackets it and bisects, each answer a real cell
(scripts/capacity.sh is the command; this module is the model, the search and the answer).

The model's limit (rules.py, each rule citing its source; workers = rules.workers: min of threads
and max-connections, max-connections alone with virtual threads):
  - burst (SCENARIO=burst, one request a user): users are answered in waves of workers DELAY_MS
    each (rules.waves_ms); the 99th-percentile user's wave (advise.p99_rank) within GOAL_P99_MS,
    the last wave within REQUEST_TIMEOUT, and users past the server's capacity
    (rules.server_capacity) fail, within GOAL_FAILED_RATE.
  - closed loop (spike, keepalive: VUS users that send again once answered): on kept-alive
    connections without think time a thread that has answered finds its connection's next
    request already there and serves it (Tomcat's Http11Processor keeps a connection while
    requests wait on it), so the first `workers` users keep the threads and a user past them gets
    one now and then, after turns of waiting (measured on 10 threads of 5 s, a 20 s load: 20
    users, median 5,013 ms, p99 22,586 ms; 13 users, 43 requests, the 3 past the threads answered
    once each, after 15 s): the limit is the workers. Otherwise (think time, a new connection a
    request) the users take turns of workers, the last turn within the goal and the timeout,
    and users who think Z between requests are away for it: Little's law for a closed loop,
    workers x (turns x DELAY_MS + Z) / DELAY_MS (10 threads of 100 ms, 1 s think, 500 ms: 150,
    not 50). Kept-alive users each hold a connection (rules.server_capacity); others hold one
    only while they wait.
  - open model (spike-open: RATE arrivals per TIME_UNIT): the workers serve c = workers /
    DELAY_MS (Little's law); arrivals past c grow the queue for the whole load, so the last of a
    DURATION T waits (rate - c) x T / c more: rate <= c x (1 + (goal - DELAY_MS) / T), which tends
    to c as the load gets longer (measured: 4 threads of 200 ms, c = 20/s, a 10 s load, goal 1 s:
    20/s p99 514 ms, 21/s 882 ms); and k6 needs a VU per request in flight (MAX_VUS).
The endpoint's time is DELAY_MS, or for a service of one's own (TARGET_JAR) or a path of the
target (TARGET_PATH) the p90 of make advise's calibration cell (service_time, steady.calibrate),
which capacity.json's service_time and capacity.md name.
The model's limit has no margin (the search verifies it; advise.py's margin is for a setting to
recommend). The search: the predicted maximum, then the load above it; on a pass the step doubles
up, on a failure down, until a held load and a failed one bracket the limit, then bisection until
they are one apart or ADVISE_MAX_CELLS cells have run.

Command line (scripts/capacity.sh runs it after validating the file):
  python3 -m ltsuite.capacity run CELL_ENV BASE_MATRIX OUT_DIR SOURCE
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from . import rules, steady
from .advicebase import SOMAXCONN_DEFAULT, Goal, Runner, p99_rank, read_env
from .advise import load_from_env

#: The scenarios the model knows, and the knob that is their load.
LOAD_KNOB = {"burst": "VUS", "spike": "VUS", "keepalive": "VUS", "spike-open": "RATE"}
#: What a unit of each load is called.
LOAD_UNIT = {"VUS": "users", "RATE": "arrivals per TIME_UNIT"}


@dataclass(frozen=True)
class Setting:
    """What the file fixes: the scenario, the endpoint's time and the server's settings."""

    scenario: str
    delay_ms: float
    timeout_ms: float
    threads: int
    max_connections: int
    accept_count: int
    somaxconn: int = SOMAXCONN_DEFAULT
    virtual_threads: bool = False
    #: spike-open: RATE counts arrivals per TIME_UNIT (ms), and at most MAX_VUS are in flight.
    time_unit_ms: float = 1000
    max_vus: int | None = None
    #: The load's DURATION (ms): how long an arrival rate past the workers grows the queue.
    duration_ms: float = 0
    #: A closed loop: its users keep their connections (spike; keepalive with CONNECTION_REUSE=1)
    #: and pause THINK_TIME_MS between requests.
    kept_alive: bool = True
    think_ms: float = 0
    #: Where delay_ms came from: DELAY_MS, or a calibration cell (service_time).
    delay_source: str = "DELAY_MS"

    @property
    def knob(self) -> str:
        return LOAD_KNOB[self.scenario]

    def workers(self) -> int:
        """Requests served at once (rules.workers)."""
        return int(rules.workers(self.threads, self.max_connections, self.virtual_threads) or 0)

    def capacity(self) -> int:
        """Connections the server holds (rules.server_capacity)."""
        return rules.server_capacity(self.max_connections, self.accept_count, self.somaxconn)


@dataclass
class Limit:
    """The model's highest load within the goal (None: none holds) and why."""

    load: int | None
    why: str


def model_limit(s: Setting, goal: Goal) -> Limit:
    """The highest load the rules say holds the goal (see the module's docstring)."""
    w, d = s.workers(), s.delay_ms
    if w <= 0 or d <= 0:
        return Limit(None, "the model needs DELAY_MS > 0 and at least one worker (threads, max-connections)")
    bound = s.timeout_ms if goal.p99_ms is None else min(goal.p99_ms, s.timeout_ms)
    if d > bound:
        return Limit(None, f"one request takes {s.delay_source} {d:g} ms, more than {bound:g} ms (the goal or "
                           "REQUEST_TIMEOUT): no load holds")
    if s.scenario == "spike-open":
        served = w * s.time_unit_ms / d
        rate = math.floor(served * (1 + (bound - d) / s.duration_ms) + 1e-9) if s.duration_ms else math.floor(served)
        why = (f"Little's law: {w} workers of {d:g} ms serve {served:g} per {s.time_unit_ms:g} ms; past that the "
               f"queue grows for the whole load, and the last arrival of a {s.duration_ms / 1000:g} s load waits "
               f"(rate - {served:g}) x {s.duration_ms / 1000:g} s / {served:g} more: within {bound:g} ms up to {rate} "
               "(a longer load holds less)")
        if s.max_vus is not None and s.max_vus < w and rate * d / s.time_unit_ms > s.max_vus:
            rate = math.floor(s.max_vus * s.time_unit_ms / d)
            why = f"the generator: MAX_VUS {s.max_vus} requests in flight at {d:g} ms each ({rate} per TIME_UNIT)"
        return Limit(rate, why)
    turns = math.floor(bound / d)
    if s.scenario == "burst":
        return _burst_limit(s, goal, turns)
    if s.kept_alive and s.think_ms == 0:
        users = min(w, s.capacity())
        return Limit(users, f"kept-alive users without think time keep their threads: {w} workers serve {w} users, "
                            f"a user past them waits turns for a thread; capacity {s.capacity()}")
    return _closed_limit(s, w, d, turns, bound)


def _closed_limit(s: Setting, w: int, d: float, turns: int, bound: float) -> Limit:
    """Closed-loop users who take turns of the workers: Little's law for a closed loop,
    N = X x (R + Z), with X = w / d at most and R = turns x d the longest wait within the goal:
    N = w x (turns x d + Z) / d users (Z the think time; with none, w x turns, users in waves).
    Users on kept-alive connections each hold one (N <= capacity); a user with a new
    connection a request holds one only for R of every R + Z (N <= capacity x (R + Z) / R)."""
    held = turns * d
    users = math.floor(w * (held + s.think_ms) / d + 1e-9)
    cap = s.capacity() if s.kept_alive else math.floor(s.capacity() * (held + s.think_ms) / held + 1e-9)
    think = f" + {s.think_ms:g} ms of think time" if s.think_ms else ""
    why = (f"{w} workers x {turns} turn(s) of {d:g} ms within {bound:g} ms{think} "
           f"(Little's law for a closed loop: {w} x ({turns} x {d:g}{think and f' + {s.think_ms:g}'}) / {d:g}), "
           f"capacity {cap}" + (" (the capacity is the bound)" if cap < users else ""))
    return Limit(min(users, cap), why)


def _burst_limit(s: Setting, goal: Goal, turns: int) -> Limit:
    """A burst: the largest N whose p99 user's wave and last wave are in time and whose users past
    the capacity are within the failed rate (both monotone in N: bisection)."""
    w = s.workers()

    def holds(n: int) -> bool:
        served = min(n, s.capacity())
        if n - served > goal.allowed_failures(n):
            return False
        if (rules.waves_ms(served, w, s.delay_ms) or 0) > s.timeout_ms:
            return False
        return goal.p99_ms is None or (rules.waves_ms(p99_rank(n), w, s.delay_ms) or 0) <= goal.p99_ms

    if not holds(1):
        return Limit(None, "one user alone misses the goal")
    lo, hi = 1, 2
    while holds(hi) and hi < 10 ** 7:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return Limit(lo, f"waves of {w} workers x {s.delay_ms:g} ms: the p99 user (rank {p99_rank(lo)}) within "
                     f"{turns} wave(s), capacity {s.capacity()}")


@dataclass
class Probe:
    """One cell of the search: its load and the run's verdict (True held, False failed, None not
    judged, with why)."""

    load: int
    passed: bool | None
    why: str
    row: dict[str, Any] = field(default_factory=dict)
    run: str = ""
    cell: str = ""


@dataclass
class Search:
    """The answer: the highest load a cell held, the lowest one above it that failed (one apart
    when the search closed in), every probe, and why it stopped."""

    maximum: int | None
    first_failing: int | None
    probes: list[Probe]
    stopped: str
    predicted: int | None

    @property
    def exact(self) -> bool:
        return self.maximum is not None and self.first_failing == self.maximum + 1


def search(start: int, budget: int, judge: Callable[[int], Probe], top: int | None = None) -> Search:
    """From the model's limit `start`: judge it, then step away (1, 2, 4, ... up while cells hold,
    down while they fail) until a held and a failed load bracket the limit, then bisect; at most
    `budget` cells, none below 1 or above `top`. A cell that cannot be judged stops the search
    there (its load is neither held nor failed)."""
    probes: list[Probe] = []
    lo: int | None = None
    hi: int | None = None

    def probe(load: int) -> bool | None:
        result = judge(load)
        probes.append(result)
        return result.passed

    x = max(1, start if top is None else min(start, top))
    step = 1
    while len(probes) < budget:
        verdict = probe(x)
        if verdict is None:
            return Search(lo, hi, probes, f"the cell of {x} could not be judged: {probes[-1].why}", start)
        if verdict:
            lo = x
        else:
            hi = x
        if lo is not None and hi is not None:
            break
        if verdict:
            if top is not None and x >= top:
                return Search(lo, hi, probes, f"held up to the highest load tried ({top})", start)
            x = x + step if top is None else min(x + step, top)
        else:
            if x <= 1:
                return Search(None, hi, probes, "even a load of 1 failed", start)
            x = max(1, x - step)
        step *= 2
    while lo is not None and hi is not None and hi - lo > 1 and len(probes) < budget:
        mid = (lo + hi) // 2
        verdict = probe(mid)
        if verdict is None:
            return Search(lo, hi, probes, f"the cell of {mid} could not be judged: {probes[-1].why}", start)
        lo, hi = (mid, hi) if verdict else (lo, mid)
    stopped = ("closed in: the next load failed" if lo is not None and hi == lo + 1
               else f"the budget of {budget} cells ran out")
    return Search(lo, hi, probes, stopped, start)


def fell_behind(row: dict[str, Any], setting: Setting | None, load: int) -> bool:
    """An arrival rate whose only design finding is dropped iterations, with VUs enough for a
    server that keeps up (load x DELAY_MS per TIME_UNIT within MAX_VUS): k6 ran
    out of VUs because the answers slowed, so the server did not hold the rate (the row is the
    server's, not the generator's)."""
    notes = [n for n in (row.get("design_notes") or "").split("; ") if n]
    if setting is None or setting.scenario != "spike-open" or not notes:
        return False
    if not all(n.startswith("k6 dropped ") for n in notes):
        return False
    need = load * setting.delay_ms / setting.time_unit_ms
    return setting.max_vus is None or need <= setting.max_vus


def judge_row(row: dict[str, Any], scenario: str, load: int, goal: Goal,
              setting: Setting | None = None) -> tuple[bool | None, str]:
    """Did a cell hold the goal at its load: (True/False, why) or (None, why it cannot say). Not
    judged: the cell failed, did not run as designed, or was cut off by GRACEFUL_STOP (its missing
    requests are no measure). A failure: failed requests past GOAL_FAILED_RATE (of the users for a
    burst, of the requests otherwise), p99 past GOAL_P99_MS, or (spike-open) arrivals k6 dropped
    because every VU was still waiting: the rate was not held. A burst must send every user's
    request."""
    if row.get("status") != "ok":
        return None, f"status {row.get('status')}: {row.get('error') or 'no row'}"
    if row.get("as_designed") != 1 and not fell_behind(row, setting, load):
        return None, f"not as designed ({row.get('design_notes') or 'not judged'})"
    interrupted, reqs, failed = row.get("iterations_interrupted"), row.get("http_reqs"), row.get("failed_reqs")
    if interrupted is None or interrupted > 0:
        return None, f"{'unmeasured' if interrupted is None else interrupted} iterations cut off by GRACEFUL_STOP"
    if reqs is None or failed is None or reqs == 0:
        return None, "no requests measured"
    if scenario == "burst" and reqs != load:
        return None, f"{reqs} requests sent of the {load} users"
    dropped = row.get("dropped_iterations")
    if scenario == "spike-open" and dropped is None:
        return None, "dropped_iterations unmeasured"
    if scenario == "spike-open" and dropped > 0:
        return False, (f"{dropped} arrivals dropped (every VU was waiting: the rate was not held"
                       + (f", p99 {row['lat_p99_ms']:g} ms)" if row.get("lat_p99_ms") is not None else ")"))
    allowed = goal.allowed_failures(load) if scenario == "burst" else math.floor(goal.failed_rate * reqs + 1e-9)
    if failed > allowed:
        return False, f"{failed} failed of {reqs} (at most {allowed})"
    p99 = row.get("lat_p99_ms")
    if goal.p99_ms is not None:
        if p99 is None:
            return None, "no p99 measured"
        if p99 > goal.p99_ms:
            return False, f"p99 {p99:g} ms > {goal.p99_ms} ms"
    return True, f"{failed} failed of {reqs}, p99 {p99:g} ms" if p99 is not None else f"{failed} failed of {reqs}"


def setting_from_env(env: dict[str, str]) -> Setting:
    """The setting from the resolved knobs."""
    return Setting(scenario=env["SCENARIO"], delay_ms=float(env["DELAY_MS"]),
                   timeout_ms=float(rules.duration_ms(env["REQUEST_TIMEOUT"]) or 0),
                   threads=int(env["TOMCAT_MAX_THREADS"]), max_connections=int(env["TOMCAT_MAX_CONNECTIONS"]),
                   accept_count=int(env["TOMCAT_ACCEPT_COUNT"]),
                   somaxconn=int(env.get("SOMAXCONN") or SOMAXCONN_DEFAULT),
                   virtual_threads=(env.get("TOMCAT_VIRTUAL_THREADS") or "0") == "1",
                   time_unit_ms=float(rules.duration_ms(env.get("TIME_UNIT") or "1s") or 1000),
                   max_vus=int(env["MAX_VUS"]) if (env.get("MAX_VUS") or "").isdigit() else None,
                   duration_ms=float(rules.duration_ms(env.get("DURATION") or "") or 0),
                   kept_alive=env["SCENARIO"] == "spike" or (env.get("CONNECTION_REUSE") or "1") == "1",
                   think_ms=float(env.get("THINK_TIME_MS") or 0))


def probe_of(cell: dict[str, Any], scenario: str, load: int, goal: Goal, setting: Setting | None = None) -> Probe:
    """A Runner cell as a probe of the search."""
    passed, why = judge_row(cell["row_data"], scenario, load, goal, setting)
    return Probe(load, passed, why, cell["row_data"], cell["run"], cell["cell"])


def service_time(env: dict[str, str], setting: Setting,
                 calibrate: Callable[[], steady.Calibration] | None) -> tuple[Setting, dict[str, Any]]:
    """The endpoint's time the model uses, and where it came from (capacity.json's service_time):
    DELAY_MS for the suite's own endpoint; for a service of one's own or a path of the target
    (steady.time_measured) the p90 of the calibration cell make advise runs (steady.calibrate:
    a few users, the access log's %D), its p50 and p99 beside it. None as the time when the cell
    logged no request (nothing can be searched)."""
    if not steady.time_measured(env) or calibrate is None:
        return setting, {"source": "DELAY_MS", "used_ms": setting.delay_ms,
                         "text": f"DELAY_MS {setting.delay_ms:g}"}
    c = calibrate()
    cell = f"{c.cell['run']}/{c.cell['cell']}"
    answer = {"source": "calibration", "used_ms": c.service_ms, "p50_ms": c.p50_ms, "p90_ms": c.p90_ms,
              "p99_ms": c.p99_ms, "requests": c.count, "cell": cell, "row": c.cell["row"]}
    if c.service_ms is None:
        answer["text"] = f"unmeasured: calibration cell {cell} logged no load request"
        return setting, answer
    answer["text"] = (f"service time p50 {c.p50_ms:g} ms / p99 {c.p99_ms:g} ms measured in calibration cell {cell} "
                      f"(%D of {c.count} requests); the model uses its p90, {c.p90_ms:g} ms, not DELAY_MS")
    return replace(setting, delay_ms=c.service_ms, delay_source=f"the p90 of calibration cell {cell},"), answer


def capacity(setting: Setting, goal: Goal, budget: int, run_cell: Callable[[int], dict[str, Any] | None],
             service: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole answer as a dict (capacity.json): the endpoint's time used (service_time), the
    model's limit, the search, every cell."""
    service = service or {"source": "DELAY_MS", "used_ms": setting.delay_ms, "text": f"DELAY_MS {setting.delay_ms:g}"}
    if service["used_ms"] is None:
        limit = Limit(None, f"the endpoint's time is {service['text']}")
    else:
        limit = model_limit(setting, goal)
    answer: dict[str, Any] = {
        "service_time": service,
        "knob": setting.knob, "unit": LOAD_UNIT[setting.knob], "scenario": setting.scenario,
        "setting": asdict(setting), "workers": setting.workers(), "server_capacity": setting.capacity(),
        "goal": {"failed_rate": goal.failed_rate, "p99_ms": goal.p99_ms}, "budget": budget,
        "model": {"limit": limit.load, "why": limit.why}, "maximum": None, "first_failing": None,
        "exact": False, "stopped": None, "cells": [], "knee": None,
    }
    if limit.load is None:
        answer["stopped"] = f"cannot: {limit.why}"
        return answer

    def judge(load: int) -> Probe:
        cell = run_cell(load)
        if cell is None:
            return Probe(load, None, "the run left no row for the cell")
        return probe_of(cell, setting.scenario, load, goal, setting)

    result = search(limit.load, budget, judge)
    answer.update({"maximum": result.maximum, "first_failing": result.first_failing, "exact": result.exact,
                   "stopped": result.stopped})
    answer["cells"] = [{"load": p.load, "passed": p.passed, "why": p.why, "run": p.run, "cell": p.cell,
                        "tps": p.row.get("tps"), "lat_p99_ms": p.row.get("lat_p99_ms"),
                        "failed_reqs": p.row.get("failed_reqs"), "http_reqs": p.row.get("http_reqs")}
                       for p in result.probes]
    if result.maximum is not None:
        answer["knee"] = result.maximum
    return answer


# ---- The answer's text and picture ------------------------------------------------------------


def svg(answer: dict[str, Any], width: int = 720, height: int = 420) -> str:
    """Throughput (req/s) and p99 (ms) against the load of every cell, one panel each, held cells
    filled and failed ones hollow, the knee (the verified maximum) a dashed line, the goal's p99 a
    dotted one."""
    cells = sorted((c for c in answer["cells"] if c["passed"] is not None), key=lambda c: c["load"])
    pad_l, pad_r, pad_t, gap = 70, 20, 30, 40
    panel_h = (height - pad_t - gap - 40) / 2
    loads = [c["load"] for c in cells] or [0, 1]
    span = max(loads) - min(loads) or max(loads) or 1
    x_lo, x_hi = min(loads) - span * 0.1, max(loads) + span * 0.1

    def x_of(v: float) -> float:
        return pad_l + (v - x_lo) / (x_hi - x_lo or 1) * (width - pad_l - pad_r)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{pad_l}" y="18" font-size="14">How much it takes: {answer["knob"]} '
           f'({answer["unit"]}), knee at {answer["knee"]}</text>']
    goal_p99 = answer["goal"]["p99_ms"]
    for i, (key, label, color) in enumerate((("tps", "throughput (req/s)", "#1f77b4"),
                                             ("lat_p99_ms", "p99 (ms)", "#d62728"))):
        top_y = pad_t + i * (panel_h + gap)
        values = [c[key] for c in cells if c[key] is not None]
        extra = [goal_p99] if key == "lat_p99_ms" and goal_p99 is not None else []
        y_hi = max(values + extra + [1]) * 1.25

        def y_of(v: float, top_y: float = top_y, y_hi: float = y_hi) -> float:
            return top_y + panel_h - v / y_hi * panel_h

        out.append(f'<line x1="{pad_l}" y1="{top_y + panel_h}" x2="{width - pad_r}" y2="{top_y + panel_h}" stroke="#444"/>')
        out.append(f'<line x1="{pad_l}" y1="{top_y}" x2="{pad_l}" y2="{top_y + panel_h}" stroke="#444"/>')
        out.append(f'<text x="{width - pad_r}" y="{top_y + 12}" text-anchor="end" fill="{color}">{label}</text>')
        for frac in (0, 0.5, 1):
            v = y_hi / 1.25 * frac
            out.append(f'<text x="{pad_l - 6}" y="{y_of(v) + 4:.1f}" text-anchor="end">'
                       f'{f"{v:,.0f}" if v >= 100 else f"{v:.3g}"}</text>')
        points = [(x_of(c["load"]), y_of(c[key]), c["passed"]) for c in cells if c[key] is not None]
        if points:
            out.append('<polyline fill="none" stroke="{}" points="{}"/>'.format(
                color, " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)))
        for x, y, passed in points:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" stroke="{color}" '
                       f'fill="{color if passed else "white"}"/>')
        if extra:
            out.append(f'<line x1="{pad_l}" y1="{y_of(goal_p99):.1f}" x2="{width - pad_r}" y2="{y_of(goal_p99):.1f}" '
                       f'stroke="#888" stroke-dasharray="2,3"/><text x="{width - pad_r}" y="{y_of(goal_p99) - 4:.1f}" '
                       f'text-anchor="end" fill="#666">goal {goal_p99} ms</text>')
        if answer["knee"] is not None:
            kx = x_of(answer["knee"])
            out.append(f'<line x1="{kx:.1f}" y1="{top_y}" x2="{kx:.1f}" y2="{top_y + panel_h}" stroke="#2ca02c" '
                       f'stroke-dasharray="6,4"/><text x="{kx + 4:.1f}" y="{top_y + panel_h - 6}" fill="#2ca02c">'
                       f'knee {answer["knee"]}</text>')
    axis_y = height - 25
    for v in sorted(set(loads)):
        out.append(f'<text x="{x_of(v):.1f}" y="{axis_y}" text-anchor="middle">{v}</text>')
    out.append(f'<text x="{width / 2:.0f}" y="{height - 6}" text-anchor="middle">{answer["knob"]} '
               f'(filled: held the goal, hollow: failed; dashed green: the knee)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def verdict(answer: dict[str, Any]) -> str:
    """The answer in words (capacity.md's and report.html's first line): the verified maximum and
    the first load above it that failed, or that none was verified."""
    if answer["maximum"] is None:
        return "No load verified"
    knob, unit = answer["knob"], answer["unit"]
    return (f"Verified maximum: {knob}={answer['maximum']} {unit}; "
            + (f"the first load above it that fails: {knob}={answer['first_failing']}"
               if answer["first_failing"] is not None else "no load above it failed"))


def markdown(answer: dict[str, Any]) -> str:
    """capacity.md: the answer first, then the model, the cells and the picture."""
    goal = answer["goal"]
    goal_text = ("no failed request" if not goal["failed_rate"] else f"at most a rate of {goal['failed_rate']} failed")
    goal_text += f", p99 within {goal['p99_ms']} ms" if goal["p99_ms"] is not None else ""
    s = answer["setting"]
    out = [f"# How much can it take: {answer.get('source', '')}", "",
           f"Settings: {answer['scenario']}, "
           + (answer.get("service_time") or {}).get("text", f"DELAY_MS {s['delay_ms']:g}")
           + f", {s['threads']} threads"
           + (" (virtual threads)" if s["virtual_threads"] else "")
           + f", max-connections {s['max_connections']}, accept-count {s['accept_count']}: "
             f"{answer['workers']} workers, capacity {answer['server_capacity']}. Goal: {goal_text}.", ""]
    head, _, tail = verdict(answer).partition("; ")
    out.append(f"**{head}**" + (f"; {tail}" if tail else ""))
    out += ["", f"Stopped: {answer['stopped']}.", "",
            f"Model: {answer['model']['limit']} ({answer['model']['why']})"
            + ("" if answer["model"]["limit"] is None or answer["maximum"] is None else
               f"; the runs put it at {answer['maximum']}"
               + (" (the model was exact)" if answer["maximum"] == answer["model"]["limit"] else "")) + ".", ""]
    if answer["cells"]:
        out += ["| # | load | the run | why | req/s | p99 ms | cell |", "|---|---|---|---|---|---|---|"]
        for i, c in enumerate(answer["cells"], 1):
            word = {True: "held", False: "failed", None: "not judged"}[c["passed"]]
            out.append(f"| {i} | {c['load']} | {word} | {c['why']} | {'' if c['tps'] is None else c['tps']} | "
                       f"{'' if c['lat_p99_ms'] is None else c['lat_p99_ms']} | "
                       + (f"[{c['run']}/{c['cell']}](runs/{c['run']}/cells/{c['cell']}/row.json)" if c["run"] else "")
                       + " |")
        out += ["", "![throughput and p99 against the load](capacity.svg)", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """run CELL_ENV BASE_MATRIX OUT_DIR SOURCE: search, write capacity.json, .md and .svg, print
    the answer. Exit 0 with a verified maximum, 3 without."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5 or args[0] != "run":
        print("usage: python3 -m ltsuite.capacity run CELL_ENV BASE_MATRIX OUT_DIR SOURCE", file=sys.stderr)
        return 2
    env = read_env(Path(args[1]))
    setting = setting_from_env(env)
    goal = Goal(float(env.get("GOAL_FAILED_RATE") or 0), int(env["GOAL_P99_MS"]) if env.get("GOAL_P99_MS") else None)
    out = Path(args[3])
    runner = Runner(Path(__file__).resolve().parents[2], out, Path(args[2]).read_text().splitlines(), list(env))

    def run_cell(load: int) -> dict[str, Any] | None:
        cells = runner.run(f"load-{len(runner.cells) + 1:02d}-{load}", {setting.knob: load}, {})
        return cells[0] if cells else None

    try:
        setting, service = service_time(env, setting, lambda: steady.calibrate(env, runner, load_from_env(env)[0].settings))
        answer = capacity(setting, goal, int(env.get("ADVISE_MAX_CELLS") or 8), run_cell, service)
    except RuntimeError as error:
        print(f"capacity: {error}; nothing is verified (runs so far: {out}/runs)", file=sys.stderr)
        return 1
    answer["source"] = args[4]
    answer["verdict"] = verdict(answer)
    (out / "capacity.json").write_text(json.dumps(answer, indent=2) + "\n")
    (out / "capacity.svg").write_text(svg(answer))
    (out / "capacity.md").write_text(markdown(answer))
    if answer["maximum"] is not None:
        print(f"verified maximum: {setting.knob}={answer['maximum']}"
              + (f", first failing: {setting.knob}={answer['first_failing']}" if answer["first_failing"] else ""))
    else:
        print(f"no load verified: {answer['stopped']}")
    print(f"capacity: {out}/capacity.md")
    return 0 if answer["maximum"] is not None else 3


if __name__ == "__main__":
    sys.exit(main())
