"""A k6 script of one's own (SCENARIO=path/to/script.js) in make advise: its load as the steady
model has it (ltsuite.steady), read from `k6 inspect --execution-requirements` (its options as
k6 resolved them, with the file's knobs as its environment: scripts/advise.sh runs k6 once and
writes OUT_DIR/k6-inspect.json).

The mapping, one scenario (k6's executors: https://grafana.com/docs/k6/latest/using-k6/scenarios/executors/):
  - constant-arrival-rate: the open model, `rate` iterations per `timeUnit` for `duration`, a
    pool of `preAllocatedVUs` (each keeps a connection) and at most `maxVUs` (k6's default: the
    pool); rate x duration iterations asked for.
  - ramping-arrival-rate: the open model at its highest stage target (or `startRate`) per
    `timeUnit`, for the stages' whole duration (the peak sizes the threads; the count of
    iterations is the run's own).
  - constant-vus (`vus` for `duration`, k6's shorthand `vus`/`duration` too), ramping-vus (the
    highest of `startVUs` and the stage targets: `stages` in the shorthand), per-vu-iterations
    (`vus` x `iterations` asked for) and shared-iterations (`iterations` asked for, shared by
    `vus`): the closed model, each VU a user who sends again once answered (k6's defaults: 1 VU,
    1 iteration).
  - anything else (another executor, more than one scenario, a scenario that starts late): the
    model has one load from the start, so "cannot", naming the scenario and its executor.
The model takes one request an iteration and no think time (a script's sleep() is not in its
options): more in service than a sleeping user keeps, so threads on the safe side; an iteration of
several requests makes a count-asked cell "not as asked" (its http_reqs are not the iterations).
Connections are kept alive unless the script sets noConnectionReuse. A request's timeout is not in
the options (params.timeout): the model keeps REQUEST_TIMEOUT.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import rules

#: The inspection scripts/advise.sh writes into the advice's directory.
INSPECTED = "k6-inspect.json"
#: The executors of the open model and of the closed one.
OPEN_EXECUTORS = ("constant-arrival-rate", "ramping-arrival-rate")
CLOSED_EXECUTORS = ("constant-vus", "ramping-vus", "per-vu-iterations", "shared-iterations")


@dataclass(frozen=True)
class Scenario:
    """One k6 scenario as `k6 inspect` shows it: its name and executor, and the figures the model
    reads (None where the script leaves k6's default)."""

    name: str
    executor: str
    vus: int | None = None
    iterations: int | None = None
    rate: float | None = None
    time_unit_ms: float = 1000
    duration_ms: float = 0
    pre_allocated_vus: int | None = None
    max_vus: int | None = None
    start_rate: float = 0
    start_vus: int | None = None
    stages: tuple[tuple[float, float], ...] = ()
    start_time_ms: float = 0


@dataclass(frozen=True)
class ScriptLoad:
    """A script's load in the steady model's terms: open (rate_per_s, pool, max_vus) or closed
    (users), its duration, the iterations asked for (None: the run's own count), whether its
    connections are kept alive, and the sentence that says how it was read."""

    scenario: str
    executor: str
    open: bool
    duration_ms: float
    rate_per_s: float = 0.0
    pool: int = 0
    max_vus: int = 0
    users: int = 0
    requests: int | None = None
    requests_per_user: int | None = None
    keepalive: bool = True
    described: str = ""


def is_own(scenario: str) -> bool:
    """A script of one's own, as the runner tells one (common.sh k6_own_script): a path or a .js."""
    return "/" in scenario or scenario.endswith(".js")


def _ms(text: Any) -> float:
    return float(rules.duration_ms(str(text)) or 0) if text else 0.0


def scenarios(inspected: dict[str, Any]) -> list[Scenario]:
    """The scenarios of an inspection, in k6's order."""
    found = []
    for name, s in (inspected.get("scenarios") or {}).items():
        stages = tuple((_ms(st.get("duration")), float(st.get("target") or 0)) for st in s.get("stages") or [])
        found.append(Scenario(
            name=name, executor=s.get("executor") or "", vus=s.get("vus"), iterations=s.get("iterations"),
            rate=s.get("rate"), time_unit_ms=_ms(s.get("timeUnit")) or 1000, duration_ms=_ms(s.get("duration")),
            pre_allocated_vus=s.get("preAllocatedVUs"), max_vus=s.get("maxVUs"),
            start_rate=float(s.get("startRate") or 0), start_vus=s.get("startVUs"), stages=stages,
            start_time_ms=_ms(s.get("startTime"))))
    return found


def script_load(inspected: dict[str, Any], script: str) -> ScriptLoad | str:
    """The script's load (module docstring), or why the model cannot take it (a sentence naming
    the scenario and its executor)."""
    found = scenarios(inspected)
    if len(found) != 1:
        named = ", ".join(f"'{s.name}' ({s.executor})" for s in found) or "none"
        return (f"{script} has {len(found)} k6 scenarios ({named}): the model takes one load of one endpoint; "
                f"advise each as a script of its own")
    s = found[0]
    keepalive = not inspected.get("noConnectionReuse")
    if s.start_time_ms:
        return (f"{script}: scenario '{s.name}' ({s.executor}) starts at {s.start_time_ms / 1000:g} s "
                f"(startTime): the model's load runs from the start")
    per = f"per {s.time_unit_ms:g} ms"
    if s.executor == "constant-arrival-rate":
        rate = float(s.rate or 0) * 1000 / s.time_unit_ms
        pool = int(s.pre_allocated_vus or 0)
        return ScriptLoad(s.name, s.executor, True, s.duration_ms, rate_per_s=rate, pool=pool,
                          max_vus=int(s.max_vus or pool), keepalive=keepalive,
                          requests=int(rate * s.duration_ms / 1000 + 1e-9),
                          described=f"'{s.name}' (constant-arrival-rate): {s.rate:g} {per} = {rate:g}/s for "
                                    f"{s.duration_ms / 1000:g} s, {pool} VUs up front, {int(s.max_vus or pool)} at most")
    if s.executor == "ramping-arrival-rate":
        peak = max([s.start_rate] + [t for _, t in s.stages])
        rate = peak * 1000 / s.time_unit_ms
        pool = int(s.pre_allocated_vus or 0)
        duration = sum(d for d, _ in s.stages)
        return ScriptLoad(s.name, s.executor, True, duration, rate_per_s=rate, pool=pool,
                          max_vus=int(s.max_vus or pool), keepalive=keepalive,
                          described=f"'{s.name}' (ramping-arrival-rate): its peak, {peak:g} {per} = {rate:g}/s, "
                                    f"over {duration / 1000:g} s of stages, {pool} VUs up front, "
                                    f"{int(s.max_vus or pool)} at most")
    if s.executor in CLOSED_EXECUTORS:
        vus = int(s.vus or 1)
        if s.executor == "ramping-vus":
            vus = max([int(s.start_vus or 1)] + [int(t) for _, t in s.stages])
            duration = sum(d for d, _ in s.stages)
            return ScriptLoad(s.name, s.executor, False, duration, users=vus, keepalive=keepalive,
                              described=f"'{s.name}' (ramping-vus): its peak, {vus} users, over "
                                        f"{duration / 1000:g} s of stages")
        if s.executor == "constant-vus":
            return ScriptLoad(s.name, s.executor, False, s.duration_ms, users=vus, keepalive=keepalive,
                              described=f"'{s.name}' (constant-vus): {vus} users for {s.duration_ms / 1000:g} s")
        iterations = int(s.iterations or 1)
        if s.executor == "per-vu-iterations":
            return ScriptLoad(s.name, s.executor, False, s.duration_ms, users=vus, keepalive=keepalive,
                              requests=vus * iterations, requests_per_user=iterations,
                              described=f"'{s.name}' (per-vu-iterations): {vus} users, {iterations} requests each")
        return ScriptLoad(s.name, s.executor, False, s.duration_ms, users=min(vus, iterations),
                          keepalive=keepalive, requests=iterations,
                          described=f"'{s.name}' (shared-iterations): {iterations} requests shared by "
                                    f"{min(vus, iterations)} users")
    return (f"{script}: scenario '{s.name}' uses the executor '{s.executor}', which the model does not read "
            f"(it reads {', '.join(OPEN_EXECUTORS + CLOSED_EXECUTORS)})")


def read(path: Path, script: str) -> ScriptLoad | str:
    """script_load of an inspection file (OUT_DIR/k6-inspect.json)."""
    return script_load(json.loads(path.read_text()), script)
