"""From a burst and a goal to Tomcat and kernel settings, predicted by the rules, then verified by
real cells (scripts/advise.sh is the command; this module is the model and the advice).

The model (every rule from ltsuite.rules, each citing its Linux or Tomcat source):
  - capacity = max-connections + min(accept-count, somaxconn) + 1 (rules.server_capacity); a
    burst of N users with at most F failures needs capacity >= N - F. The kernel's accept queue
    is raised first (a slot costs nothing until a user waits in it), max-connections only when
    the queue may not change (each connection Tomcat holds costs a socket and its buffers).
  - the users are answered in waves of workers = min(max-threads, max-connections)
    (rules.waves_ms): the last answer comes after ceil(N / workers) x DELAY_MS, which must be
    within REQUEST_TIMEOUT (else the users of the late waves fail as timeouts) and, with
    GOAL_P99_MS, the wave of the 99th-percentile user within the goal. Threads are raised before
    memory: each costs a stack (THREAD_STACK_MB) and a box has only so much.
  - a margin of 10 % and 100 ms on a wave's time (connect, scheduling and k6's own timing: the
    same margin as design.request_time_ms) before a setting counts as meeting a time.
  - a boundary cell (the next cheaper setting of a knob the advice raised) is the largest value
    the model says must fail: capacity + rules.capacity_slack(cpus) below the users, or the
    user's wave past the time.

Command line (scripts/advise.sh runs it after validating the file):
  python3 -m ltsuite.advise run CELL_ENV BASE_MATRIX OUT_DIR SOURCE
CELL_ENV: every knob as KEY=VALUE (the resolved file); BASE_MATRIX: the lines of the generated
matrix that are not tuned; OUT_DIR: results/advise-<id>/; SOURCE: the file given, for the advice.
"""
from __future__ import annotations

import functools
import math
import os
import resource
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import rules, steady, sysctls, virtualthreads
from .advicebase import (TUNABLE, VIRTUAL, Goal, Runner, ms, not_as_asked, p99_rank, read_env,
                         starting_point, verdict_lines, verification_axes, virtual_cannot, with_margin,
                         write_advice)
from .plan import Plan

#: A Java thread's stack on x86_64 Linux (the JVM's default -Xss, 1 MiB): what a thread costs.
THREAD_STACK_MB = 1
#: Memory k6 took per VU here (../shared/DESIGN.md: 420 KB per VU at 30,000 users).
K6_KB_PER_VU = 420
#: Descriptors a k6 process keeps besides its VUs' sockets (logs, outputs, its API).
K6_FD_OVERHEAD = 50
#: The least value of each knob type a tuned knob has (env/defaults.env's header: count is a whole
#: number > 0; uint, >= 0; bool, 0 or 1).
TYPE_MINIMUM = {"count": 1, "uint": 0, "bool": 0}


@functools.cache
def knob_minimum(knob: str) -> int:
    """The least value a matrix may give KNOB: that of its type in env/defaults.env (the "# type:"
    line before KNOB=, a trailing "?" only allowing it empty), which scripts/run-matrix.sh checks
    every cell against. ValueError for a knob or a type TYPE_MINIMUM does not know."""
    kind = ""
    for line in sysctls.DEFAULTS.read_text(encoding="utf-8").splitlines():
        if line.startswith("# type:"):
            kind = line.split(":", 1)[1].strip().rstrip("?")
        elif line.startswith(f"{knob}="):
            if kind not in TYPE_MINIMUM:
                raise ValueError(f"{sysctls.DEFAULTS}: {knob}: type '{kind}' has no least value here")
            return TYPE_MINIMUM[kind]
    raise ValueError(f"{sysctls.DEFAULTS}: no knob {knob}")


@dataclass(frozen=True)
class Load:
    """What the advice file fixes: a burst of `users` (one request each) against an endpoint of
    delay_ms, with the settings it starts from."""

    users: int
    delay_ms: int
    timeout_ms: int
    settings: dict[str, int]
    syncookies: int = 1
    cpus: int = 2
    k6_instances: int = 1
    #: How long a client that cannot connect keeps sending SYNs (design.syn_window_s), s.
    syn_window_s: float = 127
    #: When the server gives up on a handshake it answered (tcp_synack_retries), s.
    synack_expiry_s: float = 63
    #: Why the target cannot run on virtual threads here (virtualthreads.cannot), None when it can.
    virtual_cannot: str | None = None


@dataclass
class Prediction:
    """What the rules say one setting gives: capacity, workers, the waves of the last user and of
    the 99th-percentile user, and whether the goal is met (with the margin) or surely missed."""

    capacity: int
    workers: int
    last_ms: int
    p99_ms: int
    meets: bool
    fails: bool
    why: str


def backlog(settings: dict[str, int]) -> int:
    """The listen backlog granted: rules.listen_backlog (accept-count capped by somaxconn)."""
    return rules.listen_backlog(settings["TOMCAT_ACCEPT_COUNT"], settings["SOMAXCONN"])


def rescued(load: Load, settings: dict[str, int]) -> int:
    """Users past the capacity who may still be served: a handshake the server answered while
    the accept queue had room, whose final ACK then met a full queue, leaves the client
    connected and the server a request socket (at most backlog + 1 of them: the SYN queue counts
    as full past the backlog, inet_csk_reqsk_queue_is_full()); its retransmitted request gets in
    once Tomcat frees room, unless the server gave up on it first (tcp_synack_retries, then a
    reset: docs/seeds.md, seed 001). With SYN cookies on, clients past the SYN queue are answered
    too, so more may be rescued than this bound (the bisection finds how many)."""
    if load.syncookies == 0 and load.synack_expiry_s * 1000 < load.delay_ms:
        return 0
    return backlog(settings) + 1


def predict(load: Load, goal: Goal, settings: dict[str, int]) -> Prediction:
    """The rules applied to one setting (see the module's docstring)."""
    capacity = rules.server_capacity(settings["TOMCAT_MAX_CONNECTIONS"], settings["TOMCAT_ACCEPT_COUNT"],
                                     settings["SOMAXCONN"])
    workers = int(rules.workers(settings["TOMCAT_MAX_THREADS"], settings["TOMCAT_MAX_CONNECTIONS"],
                                settings.get(VIRTUAL, 0) == 1) or 0)
    served = min(load.users, capacity)
    last_ms = int(rules.waves_ms(served, workers, load.delay_ms) or 0)
    p99_ms = int(rules.waves_ms(p99_rank(served), workers, load.delay_ms) or 0)
    need = load.users - goal.allowed_failures(load.users)
    slack = rules.capacity_slack(load.cpus) + rescued(load, settings)
    meets = capacity >= need and with_margin(last_ms) <= load.timeout_ms
    fails = (capacity + slack < need and load.syn_window_s * 1000 <= load.delay_ms) or last_ms > load.timeout_ms
    why = f"capacity {capacity} for {need} users, last wave at {last_ms} ms"
    if goal.p99_ms is not None:
        meets = meets and with_margin(p99_ms) <= goal.p99_ms
        fails = fails or p99_ms > goal.p99_ms
        why += f", p99 {p99_ms} ms"
    return Prediction(capacity, workers, last_ms, p99_ms, meets, fails and not meets, why)


def _need_workers(load: Load, goal: Goal) -> tuple[int | None, str]:
    """Workers the waves need: the last wave within REQUEST_TIMEOUT and the p99 user's within
    GOAL_P99_MS, each with the margin; None (and why) when one wave alone is too long."""
    waves_timeout = math.floor((load.timeout_ms - 100) / (1.1 * load.delay_ms)) if load.delay_ms else load.users
    if waves_timeout < 1:
        return None, (f"one request takes DELAY_MS {load.delay_ms} ms, {with_margin(load.delay_ms):.0f} ms with "
                      f"the margin, beyond REQUEST_TIMEOUT {load.timeout_ms} ms: no setting makes it shorter")
    users = load.users - goal.allowed_failures(load.users)
    need = math.ceil(users / waves_timeout)
    if goal.p99_ms is not None:
        waves_goal = math.floor((goal.p99_ms - 100) / (1.1 * load.delay_ms)) if load.delay_ms else load.users
        if waves_goal < 1:
            return None, (f"one request takes DELAY_MS {load.delay_ms} ms ({with_margin(load.delay_ms):.0f} ms "
                          f"with the margin), more than GOAL_P99_MS {goal.p99_ms}: the endpoint, not a queue "
                          f"or a thread, is the limit")
        need = max(need, math.ceil(p99_rank(load.users) / waves_goal))
    return need, ""


def plan(load: Load, goal: Goal, tune: list[str], memory_mb: int, nofile: int) -> Plan:
    """The cheapest settings the rules predict to meet the goal (_plan), on platform threads or,
    with TOMCAT_VIRTUAL_THREADS in TUNE, on virtual threads where they need fewer resources or
    platform threads cannot meet it (virtualthreads.consider)."""
    def plan_with(virtual: int, rest: list[str]) -> Plan:
        return _plan(replace(load, settings={**load.settings, VIRTUAL: virtual}), goal, rest, memory_mb, nofile)
    return virtualthreads.consider(tune, load.settings, load.virtual_cannot, plan_with,
                                   lambda settings: predict(load, goal, settings).fails)


def _plan(load: Load, goal: Goal, tune: list[str], memory_mb: int, nofile: int) -> Plan:
    """The cheapest settings on the file's threads (platform or virtual): keep every knob that
    already suffices, raise threads (then max-connections; max-connections alone on virtual
    threads) for the waves, then the kernel queue (accept-count and somaxconn) for the capacity,
    max-connections only if the queue may not change. Refuses (cannot) what the generator or the
    box cannot hold."""
    s = {VIRTUAL: 0, **load.settings}
    virtual = s[VIRTUAL] == 1
    if virtual and load.virtual_cannot:
        return Plan(None, cannot=f"TOMCAT_VIRTUAL_THREADS=1 cannot run here: {load.virtual_cannot}")
    reasons: dict[str, str] = {}
    per_process = math.ceil(load.users / load.k6_instances) + K6_FD_OVERHEAD
    if per_process > nofile:
        return Plan(None, cannot=(f"the generator is the limit: {load.users} users need about {per_process} "
                                  f"open files in each of {load.k6_instances} k6 process(es), the limit is "
                                  f"{nofile} (raise K6_INSTANCES)"))
    if load.users * K6_KB_PER_VU / 1024 > memory_mb:
        return Plan(None, cannot=(f"the generator is the limit: {load.users} users take about "
                                  f"{load.users * K6_KB_PER_VU // 1024} MB of k6 (420 KB each), "
                                  f"{memory_mb} MB are available"))
    workers, why = _need_workers(load, goal)
    if workers is None:
        return Plan(None, cannot=why)
    bound = "max-connections, on virtual threads" if virtual else "min of threads and max-connections"
    for knob, label in (("TOMCAT_MAX_THREADS", "threads"), ("TOMCAT_MAX_CONNECTIONS", "max-connections")):
        if s[knob] >= workers or (virtual and knob == "TOMCAT_MAX_THREADS"):
            continue
        if knob not in tune:
            return Plan(None, cannot=(f"the waves need {workers} workers ({bound}: "
                                      f"rules.waves_ms), {label} is {s[knob]} and {knob} is not in TUNE"))
        if knob == "TOMCAT_MAX_THREADS" and workers * THREAD_STACK_MB > memory_mb:
            return Plan(None, cannot=(f"the goal needs {workers} threads, {workers * THREAD_STACK_MB} MB of "
                                      f"stacks ({THREAD_STACK_MB} MB each), more than the {memory_mb} MB available"))
        reasons[knob] = (f"the waves rule (rules.waves_ms): {load.users} users in waves of {workers} workers "
                         f"({bound}) x {load.delay_ms} ms meet the time; "
                         f"{s[knob]} asked, {workers} needed")
        s[knob] = workers
    need = load.users - goal.allowed_failures(load.users)
    queue = need - s["TOMCAT_MAX_CONNECTIONS"] - 1
    if backlog(s) < queue:
        queue_knobs = [k for k in ("TOMCAT_ACCEPT_COUNT", "SOMAXCONN") if s[k] < queue]
        if all(k in tune for k in queue_knobs):
            for knob in queue_knobs:
                s[knob] = queue
            granted = rules.listen_backlog(load.settings["TOMCAT_ACCEPT_COUNT"], load.settings["SOMAXCONN"])
            for knob in queue_knobs:
                reasons[knob] = (f"capacity rule (rules.server_capacity): {need} users need max-connections "
                                 f"{s['TOMCAT_MAX_CONNECTIONS']} + a queue of {queue} + 1; somaxconn caps "
                                 f"accept-count: {load.settings['TOMCAT_ACCEPT_COUNT']} asked, {granted} granted")
        elif "TOMCAT_MAX_CONNECTIONS" in tune:
            mc = need - backlog(s) - 1
            reasons["TOMCAT_MAX_CONNECTIONS"] = (
                f"capacity rule (rules.server_capacity): the queue may not change ({', '.join(queue_knobs)} not "
                f"in TUNE, backlog {backlog(s)}), so max-connections carries {need} users: {mc} + {backlog(s)} + 1")
            s["TOMCAT_MAX_CONNECTIONS"] = mc
        else:
            return Plan(None, cannot=(f"capacity {rules.server_capacity(s['TOMCAT_MAX_CONNECTIONS'], s['TOMCAT_ACCEPT_COUNT'], s['SOMAXCONN'])} "
                                      f"< {need} users (rules.server_capacity) and no knob of TUNE raises it"))
    if load.syncookies == 0 and "TCP_MAX_SYN_BACKLOG" in tune and 0 < s["TCP_MAX_SYN_BACKLOG"] < backlog(s):
        reasons["TCP_MAX_SYN_BACKLOG"] = (
            f"without SYN cookies tcp_conn_request() drops SYNs once the SYN queue nears "
            f"tcp_max_syn_backlog: raised with the backlog, {s['TCP_MAX_SYN_BACKLOG']} asked, {backlog(s)} set")
        s["TCP_MAX_SYN_BACKLOG"] = backlog(s)
    prediction = predict(load, goal, s)
    start = {VIRTUAL: 0, **load.settings}
    changed = [k for k in TUNABLE if k in s and s[k] != start.get(k)]
    for knob in tune:
        if knob not in reasons:
            reasons[knob] = _kept_reason(knob, load, s, prediction)
    result = Plan(s, reasons, None, {}, changed, prediction)
    for knob in changed:
        value = cheaper_value(load, goal, s, knob)
        result.sure[knob] = value is not None
        if value is None and s[knob] - 1 >= knob_minimum(knob):
            # No value surely fails (clients that retry past the hold, handshakes that wait):
            # the next one below shows what the run does there.
            value = s[knob] - 1
        if value is not None:
            result.cheaper[knob] = value
    return result


def _kept_reason(knob: str, load: Load, s: dict[str, int], prediction: Prediction) -> str:
    """Why a knob keeps its value."""
    if knob == "TOMCAT_MAX_THREADS" and s.get(VIRTUAL) == 1:
        return (f"kept at {s[knob]}: on virtual threads Tomcat keeps no pool, so it bounds nothing "
                f"(rules.workers: max-connections alone)")
    if knob == "TCP_MAX_SYN_BACKLOG":
        if load.syncookies != 0:
            return ("kept: with SYN cookies on, a full SYN queue answers with cookies (tcp_conn_request()), "
                    "so tcp_max_syn_backlog does not bound the burst")
        if not s[knob]:
            return "kept at the kernel's default (not set): the advice raises it only when set below the backlog"
        return f"kept at {s[knob]}: not below the backlog {backlog(s)}"
    return (f"kept at {s[knob]}: it already suffices ({prediction.why}; capacity rule "
            f"rules.server_capacity and waves rule rules.waves_ms)")


def cheaper_value(load: Load, goal: Goal, settings: dict[str, int], knob: str) -> int | None:
    """The largest value below the recommended one, and not below the knob's least
    (knob_minimum), at which the model says the goal must fail (binary search: failing is
    monotone in each knob); None when none does."""
    lo, hi = knob_minimum(knob), settings[knob] - 1
    if hi < lo or not predict(load, goal, {**settings, knob: lo}).fails:
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if predict(load, goal, {**settings, knob: mid}).fails:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cell_passes(row: dict[str, Any], goal: Goal, users: int) -> bool | None:
    """Did a cell meet the goal: complete, as asked (not_as_asked), its failed users within the
    rate, its p99 within GOAL_P99_MS. None when the cell did not give the figures (not ok, no
    requests) or did not run the load it was asked for."""
    if row.get("status") != "ok" or row.get("failed_reqs") is None or not_as_asked(row, users):
        return None
    if row["failed_reqs"] > goal.allowed_failures(users):
        return False
    if goal.p99_ms is not None:
        p99 = row.get("lat_p99_ms")
        if p99 is None:
            return None
        return p99 <= goal.p99_ms
    return True


# ---- Orchestration: the runs ------------------------------------------------------------------


def load_from_env(env: dict[str, str]) -> tuple[Load, Goal, list[str], int]:
    """The burst, the goal, TUNE and ADVISE_MAX_CELLS from the resolved knobs (the settings, the
    goal and the budget as advicebase.starting_point reads them for every model)."""
    settings, goal, tune, budget = starting_point(env)
    users = int(env["VUS"])
    instances = env.get("K6_INSTANCES") or "1"
    if not instances.isdigit():
        # auto: as many k6 processes as the users need (one below the open-file limit).
        instances = str(math.ceil(users / max(nofile_limit() - 100, 1)))
    timeout_ms = ms(env["REQUEST_TIMEOUT"])
    # The kernel's defaults where the file leaves them: tcp_syn_retries 6, tcp_synack_retries 5.
    syn_retries = int(env.get("CLIENT_TCP_SYN_RETRIES") or 6)
    linear = int(env.get("CLIENT_TCP_SYN_LINEAR_TIMEOUTS") or 4)
    load = Load(users=users, delay_ms=int(env["DELAY_MS"]), timeout_ms=timeout_ms,
                settings=settings, syncookies=int(env.get("TCP_SYNCOOKIES") or 1),
                cpus=os.cpu_count() or 1, k6_instances=int(instances),
                syn_window_s=min(rules.syn_give_up_s(syn_retries, linear), timeout_ms / 1000),
                synack_expiry_s=rules.syn_model_timeout_s(int(env.get("TCP_SYNACK_RETRIES") or 5)),
                virtual_cannot=virtual_cannot(env))
    return load, goal, tune, budget


def nofile_limit() -> int:
    """The open-file hard limit a k6 process gets (RLIMIT_NOFILE)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def memory_available_mb() -> int:
    """MemAvailable of /proc/meminfo, in MB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def advise(load: Load, goal: Goal, tune: list[str], budget: int, runner: Runner | None,
           memory_mb: int, nofile: int) -> dict[str, Any]:
    """The whole advice: the model's plan, the verification matrix, a bisection where the runs
    disagree, as a dict (advice.json)."""
    p = plan(load, goal, tune, memory_mb, nofile)
    advice: dict[str, Any] = {
        "goal": {"users": load.users, "failed_rate": goal.failed_rate, "allowed_failures":
                 goal.allowed_failures(load.users), "p99_ms": goal.p99_ms},
        "starting_from": {k: {VIRTUAL: 0, **load.settings}[k] for k in TUNABLE},
        "tune": tune, "budget": budget, "recommended": {}, "verified": False, "cannot": p.cannot,
        "model": None, "boundary": [], "cells": [], "reasons": p.reasons, "model_wrong": [],
        "stopped": None,
    }
    if p.settings is None or runner is None:
        return advice
    pred = p.prediction
    advice["model"] = {"settings": {k: p.settings[k] for k in tune}, "capacity": pred.capacity,
                       "virtual_threads": p.settings.get(VIRTUAL) == 1,
                       "workers": pred.workers, "last_wave_ms": pred.last_ms, "p99_wave_ms": pred.p99_ms,
                       "capacity_margin": pred.capacity - (load.users - goal.allowed_failures(load.users)),
                       "p99_margin_ms": None if goal.p99_ms is None else goal.p99_ms - pred.p99_ms,
                       "cheaper": p.cheaper}
    axes = verification_axes(p, budget)
    try:
        cells = runner.run("verify", {k: p.settings[k] for k in TUNABLE}, axes)
    except RuntimeError as error:
        return _stopped(advice, runner, error)
    for cell in cells:
        cell["predicted_pass"] = _predicted(predict(load, goal, cell["settings"]))
        cell["passed"] = cell_passes(cell["row_data"], goal, load.users)
    rec = _cell_with(cells, {k: p.settings[k] for k in axes})
    if rec is None:
        return _missing_cell(advice, runner, "verify", {k: p.settings[k] for k in TUNABLE})
    recommended = dict(p.settings)
    verified = rec["passed"] is True
    used = len(cells)
    if not verified:
        # The model said it holds and it did not: raise every changed knob towards the users and
        # bisect between the two (fraction f of the way), within the budget.
        # Not virtual threads: a switch, not a value to raise.
        changed = [k for k in p.changed or tune if k not in ("TCP_MAX_SYN_BACKLOG", VIRTUAL)]
        top = {k: max(p.settings[k], load.users) for k in changed}
        # Nothing to raise (every knob already at the users): no probe can differ.
        room = bool(changed) and any(top[k] > p.settings[k] for k in changed)
        lo, hi, best = 0.0, 1.0, None
        while room and used < budget:
            f = hi if best is None else (lo + hi) / 2
            probe = {**p.settings, **{k: p.settings[k] + math.ceil(f * (top[k] - p.settings[k])) for k in changed}}
            try:
                (cell,) = runner.run(f"bisect-{used + 1:02d}", {k: probe[k] for k in TUNABLE}, {})
            except RuntimeError as error:
                advice["stopped"] = _stopped_text(error)
                break
            cell["predicted_pass"], cell["passed"] = True, cell_passes(cell["row_data"], goal, load.users)
            used += 1
            if cell["passed"]:
                best, hi = probe, f
            elif best is None:
                break
            else:
                lo = f
            if best is not None and all(math.ceil(hi * (top[k] - p.settings[k])) - math.ceil(lo * (top[k] - p.settings[k])) <= 1 for k in changed):
                break
        if best is not None:
            recommended, verified = best, True
            advice["model_wrong"].append(
                "the model's setting failed; the cheapest that held: " + ", ".join(
                    f"{k} {p.settings[k]} -> {best[k]} (+{best[k] - p.settings[k]})" for k in changed))
        else:
            advice["model_wrong"].append("the model's setting failed and no raised setting within the budget held")
            advice["cannot"] = (f"no setting of TUNE tried held: the model predicted {pred.why}, yet the run "
                                f"failed; the limit is elsewhere (the generator, the box, the network): see the cells")
    else:
        for knob in axes:
            want = {k: p.cheaper[k] if k == knob else p.settings[k] for k in axes}
            lower = _cell_with(cells, want)
            if lower is None:
                advice["boundary"].append({"knob": knob, "value": p.cheaper[knob], "cell": None, "run": "verify",
                                           "passed": None, "predicted": "fail" if p.sure[knob] else "may fail",
                                           "failed_reqs": None, "failed_by": {}, "lat_p99_ms": None,
                                           "not_as_asked": "the run has no row for the cell with "
                                                           + _settings_text({**p.settings, **want})})
                continue
            advice["boundary"].append({"knob": knob, "value": p.cheaper[knob], "cell": lower["cell"],
                                       "run": lower["run"], "passed": lower["passed"],
                                       "predicted": "fail" if p.sure[knob] else "may fail",
                                       "failed_reqs": lower["row_data"].get("failed_reqs"),
                                       "failed_by": {k: lower["row_data"].get(k) for k in
                                                     ("fail_connect", "fail_reset", "fail_timeout")},
                                       "lat_p99_ms": lower["row_data"].get("lat_p99_ms"),
                                       "not_as_asked": not_as_asked(lower["row_data"], load.users)})
            if lower["passed"] is True and p.sure[knob] and knob == VIRTUAL:
                advice["model_wrong"].append(f"platform threads (TOMCAT_VIRTUAL_THREADS=0) held where the model said "
                                             f"they must fail ({predict(load, goal, {**p.settings, **want}).why})")
            elif lower["passed"] is True and p.sure[knob]:
                try:
                    used = _bisect_down(load, goal, p, knob, runner, used, budget, advice)
                except RuntimeError as error:
                    advice["stopped"] = _stopped_text(error)
                    break
    _finish_cells(advice, runner, load.users)
    advice["verified"] = verified
    if verified:
        advice["recommended"] = {k: recommended[k] for k in tune if k != "TCP_MAX_SYN_BACKLOG" or recommended[k] > 0}
    return advice


def _stopped_text(error: RuntimeError) -> str:
    """Why the advice ended before its plan did: a run that did not happen (Runner.run)."""
    return f"{error}; the advice ends with what the runs before it verified"


def _stopped(advice: dict[str, Any], runner: Runner, error: RuntimeError) -> dict[str, Any]:
    """The advice when its first run did not happen: nothing verified, the run named."""
    advice["stopped"] = _stopped_text(error)
    advice["cannot"] = f"the verify run did not happen ({error})"
    _finish_cells(advice, runner, advice["goal"]["users"])
    return advice


def _settings_text(settings: dict[str, int]) -> str:
    return " ".join(f"{k}={settings[k]}" for k in TUNABLE if k in settings and (k != VIRTUAL or settings[k]))


def _cell_with(cells: list[dict[str, Any]], settings: dict[str, int]) -> dict[str, Any] | None:
    """The cell of a run with these values of the axes, None when the run has no row for it."""
    return next((c for c in cells if all(c["settings"][k] == v for k, v in settings.items())), None)


def _missing_cell(advice: dict[str, Any], runner: Runner, run: str, settings: dict[str, int]) -> dict[str, Any]:
    """The advice when the cell of the model's setting left no row (cells/*/row.json): nothing is
    verified, and the advice names the cell that is missing."""
    advice["cannot"] = (f"the {run} run has no row for the cell with the model's setting "
                        f"({_settings_text(settings)}): it did not finish; see its run under runs/")
    _finish_cells(advice, runner, advice["goal"]["users"])
    return advice


def _finish_cells(advice: dict[str, Any], runner: Runner, users: int) -> None:
    """Every cell run, with the figures advice.json keeps and why a cell was not judged."""
    for cell in runner.cells:
        row = cell.pop("row_data")
        cell["not_as_asked"] = not_as_asked(row, users)
        cell.update({"failed_reqs": row.get("failed_reqs"), "http_reqs": row.get("http_reqs"),
                     "lat_p99_ms": row.get("lat_p99_ms"), "status": row.get("status"),
                     "server_conns_peak": row.get("server_conns_peak"),
                     "listen_overflows": row.get("listen_overflows")})
        cell.setdefault("predicted_pass", None)
        cell.setdefault("passed", None)
    advice["cells"] = runner.cells


def _predicted(prediction: Prediction) -> bool | None:
    """A cell's prediction: True (meets the goal), False (surely misses it), None (may miss it)."""
    return True if prediction.meets else False if prediction.fails else None


def _bisect_down(load: Load, goal: Goal, p: Plan, knob: str, runner: Runner, used: int, budget: int,
                 advice: dict[str, Any]) -> int:
    """The cheaper cell held where the model said it must fail: bisect the knob between the user's
    own value (probed first) and the cheaper value, never below the knob's least value
    (knob_minimum: scripts/run-matrix.sh refuses a cell there); the advice says by how much the
    model was wrong."""
    lo_fail, hi_pass = None, p.cheaper[knob]
    # The user's own value first (it failed in the model too), or nothing when that was the cheaper one.
    candidate = min(load.settings[knob], hi_pass - 1)
    while used < budget and candidate >= knob_minimum(knob) and (lo_fail is None or hi_pass - lo_fail > 1):
        probe = {**p.settings, knob: candidate}
        (cell,) = runner.run(f"bisect-{used + 1:02d}", {k: probe[k] for k in TUNABLE}, {})
        cell["predicted_pass"] = _predicted(predict(load, goal, probe))
        cell["passed"] = cell_passes(cell["row_data"], goal, load.users)
        used += 1
        if cell["passed"]:
            hi_pass = candidate
            if lo_fail is None:
                break
        else:
            lo_fail = candidate
        if lo_fail is not None:
            candidate = (lo_fail + hi_pass) // 2
    model_min = p.cheaper[knob] + 1
    advice["model_wrong"].append(
        f"{knob}: the model said {p.cheaper[knob]} must fail, it held; the lowest that held was {hi_pass}"
        + (f" and {lo_fail} failed" if lo_fail is not None else " (down to the starting value)")
        + f": the model's boundary was {model_min - hi_pass} too high")
    return used


# ---- The advice's text ------------------------------------------------------------------------


_WORD = {True: "holds", False: "fails", None: "may fail"}


def _outcome(passed: bool | None, why_not: str | None) -> str:
    """What a run says of a boundary cell: held, missed the goal, or not judged and why."""
    if why_not:
        return f"not judged: {why_not}"
    return "held" if passed else "missed the goal"


def markdown(advice: dict[str, Any]) -> str:
    """advice.md: the answer first, then the reasons, the lines to paste, the cells."""
    goal = advice["goal"]
    out = [f"# Advice for {advice['source']}", "",
           f"Goal: {goal['users']} users at once, at most {goal['allowed_failures']} failed "
           f"(GOAL_FAILED_RATE {goal['failed_rate']})"
           + (f", p99 within {goal['p99_ms']} ms" if goal["p99_ms"] is not None else "") + ".", ""]
    if advice.get("stopped"):
        out += [f"**Stopped early**: {advice['stopped']}.", ""]
    verdict, paste = verdict_lines(advice)
    out += verdict
    if advice["verified"]:
        model = advice["model"]
        out += ["", f"Model: capacity {model['capacity']} (margin {model['capacity_margin']} users), "
                    f"{model['workers']} workers"
                    + (" (virtual threads: max-connections is the bound)" if model.get("virtual_threads") else "")
                    + f", last wave at {model['last_wave_ms']} ms"
                    + (f", p99 wave at {model['p99_wave_ms']} ms (margin {model['p99_margin_ms']} ms)"
                       if model["p99_margin_ms"] is not None else "") + ". The margin is what the rules leave: "
                    "the capacity rule is exact on this kernel, so no users are added; a wave's time gets 10 % "
                    "and 100 ms.", "", *paste]
    if advice["boundary"]:
        out += ["Boundary (the next cheaper setting):", ""]
        out += [f"- `{b['knob']}` = {b['value']} (the model: {b['predicted']}): "
                + (f"not judged: {b['not_as_asked']}" if b["cell"] is None else
                   f"cell {b['run']}/{b['cell']}, {b['failed_reqs']} failed"
                   + "".join(f" ({kinds})" for kinds in
                             [", ".join(f"{k} {v}" for k, v in b["failed_by"].items() if v)] if kinds)
                   + f", p99 {b['lat_p99_ms']} ms, " + _outcome(b["passed"], b.get("not_as_asked")))
                for b in advice["boundary"]]
        out.append("")
    if advice["model_wrong"]:
        out += ["Where the model was wrong:", "", *[f"- {w}" for w in advice["model_wrong"]], ""]
    out += ["Reasons:", "", *[f"- `{k}`: {v}" for k, v in advice["reasons"].items()], ""]
    if advice["cells"]:
        out += ["Cells:", "", "| run | cell | settings | failed | p99 ms | the model | the run |", "|---|---|---|---|---|---|---|"]
        for c in advice["cells"]:
            settings = " ".join(f"{k}={v}" for k, v in c["settings"].items()
                                if k in advice["tune"] and (v or k != "TCP_MAX_SYN_BACKLOG"))
            out.append(f"| {c['run']} | [{c['cell']}]({c['row']}) | {settings} | {c['failed_reqs']} | "
                       f"{c['lat_p99_ms']} | {_WORD[c['predicted_pass']]} | "
                       + (f"not judged: {c['not_as_asked']}" if c.get("not_as_asked") else _WORD[c["passed"]]) + " |")
        out += ["", "Reports: " + ", ".join(sorted({f"[{Path(c['report']).parent.name}]({c['report']})"
                                                     for c in advice["cells"]})), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """run CELL_ENV BASE_MATRIX OUT_DIR SOURCE: advise, write advice.json and advice.md, print
    the recommendation and the path. Exit 0 with a verified setting, 3 with none."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5 or args[0] != "run":
        print("usage: python3 -m ltsuite.advise run CELL_ENV BASE_MATRIX OUT_DIR SOURCE", file=sys.stderr)
        return 2
    env = read_env(Path(args[1]))
    load, goal, tune, budget = load_from_env(env)
    out = Path(args[3])
    root = Path(__file__).resolve().parents[2]
    runner = Runner(root, out, Path(args[2]).read_text().splitlines(), list(env))
    if env.get("SCENARIO") not in ("burst", None):
        # A steady load (an arrival rate, kept-alive users): ltsuite.steady has its model.
        return steady.main(env, runner, args[4])
    try:
        advice = advise(load, goal, tune, budget, runner, memory_available_mb(), nofile_limit())
    except RuntimeError as error:
        # A run that did not happen (the host-wide lock held, a failure before its first cell):
        # nothing is recommended; the runs that did happen stay in OUT_DIR/runs/.
        print(f"advise: {error}; nothing is recommended (runs so far: {out}/runs)", file=sys.stderr)
        return 1
    return write_advice(out, advice, args[4], markdown)


if __name__ == "__main__":
    sys.exit(main())
