"""Steady loads for make advise: an arrival rate (the open model, scenarios/spike-open.js) or
users that each send their requests one after the other over a kept-alive connection (the
closed model, scenarios/keepalive.js and scenarios/ramp.js). The model, each rule with its
source:

  - Little's law (L = lambda x W, J. D. C. Little, Operations Research 9(3), 1961): requests in
    service = arrival rate x service time. The open model's rate is RATE per TIME_UNIT; a closed
    user sends one request every service time + think time (THINK_TIME_MS), so users x S / (S + Z)
    of them are in service (the same law on the users' cycle: rules.closed_tps).
  - Threads: Tomcat serves at most min(max-threads, max-connections) requests at once
    (advise.predict's workers), so it completes at most workers / S requests a second. Arrivals
    faster than that grow the queue for the whole run: a request arriving at t waits
    (lambda / mu - 1) x t, so however long REQUEST_TIMEOUT is, a long enough run misses the goal;
    the model predicts the p99 of this run from the request at 0.99 of DURATION. Threads are set
    to ceil(1.1 x requests in service) (the 10 % of design.request_time_ms as headroom).
  - Kept-alive connections hold a max-connections slot each while they are open, idle or not
    (Tomcat's LimitLatch counts connections, not requests). k6 keeps one connection a VU: an
    arrival-rate executor hands iterations to its PRE_ALLOCATED_VUS in turn, so all of them hold
    one (the recorded fixture tests/python/fixtures/spike-open: 5 VUs, 4 requests in service,
    server_conns_peak 5); a closed load holds one a user. A connection past max-connections waits
    in the kernel's accept queue (rules.server_capacity) until a held one closes: after
    TOMCAT_MAX_KEEP_ALIVE_REQUESTS requests on it, or TOMCAT_KEEP_ALIVE_TIMEOUT idle. When that
    is later than REQUEST_TIMEOUT its requests fail (seed 000's waiting room in another form).
  - A cell verifies only when it ran every request it was asked for: as designed, none dropped
    or cut off by GRACEFUL_STOP (advise.not_as_asked) and, for the open model, RATE x DURATION
    requests sent (k6 starts one at 0 and may start one at DURATION's end too: the fixture above,
    20/s for 5 s, sent 101).

A script of one's own (SCENARIO=path/to/script.js): its load is its one k6 scenario as k6 inspect
shows it, mapped onto the open or the closed model by ltsuite.ownscript.

A service of one's own (TARGET_JAR) or a path of the target (TARGET_PATH): its time is not
DELAY_MS, so one calibration cell of a few users (calibrate; make capacity runs the same)
measures it from the access log's %D (ltsuite.accesslog) and the model uses its p90
(CALIBRATION_PERCENTILE) as the service time, and its measured p99 as the p99 of a setting where
no request waits for a thread (with DELAY_MS, a fixed time, both are DELAY_MS). Where the
verifying cells show the time grown under load (their p90 past the model's by more than the
headroom), the plan is made again with the time (p90 and p99) measured there, and the advice says
so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import accesslog, latency, ownscript, rules, virtualthreads
from .advicebase import (TUNABLE, VIRTUAL, Goal, Runner, ms, not_as_asked, verdict_lines,
                         starting_point, verification_axes, virtual_cannot, with_margin, write_advice)
from .plan import Plan

#: The scenarios of the open model and of the closed one with kept-alive connections.
OPEN = ("spike-open",)
CLOSED = ("keepalive", "ramp")
#: The headroom on requests in service (the 10 % of design.request_time_ms).
HEADROOM = 1.1
#: The figure of the calibration cell's %D the model uses: the p90 (a slow tenth would set the
#: threads by its outliers; the median would leave a tenth of the requests longer than planned).
CALIBRATION_PERCENTILE = 0.9
#: The calibration cell: this many users of the keepalive scenario, each this many requests.
#: 99 each: 198 requests, enough that the p99 is not the slowest one alone (with 20 it was: a
#: p99 that no longer held at the load), and within Tomcat's 100 requests a kept-alive connection
#: (TOMCAT_MAX_KEEP_ALIVE_REQUESTS' default), so each user connects once. The cell runs after the
#: target's warm-up (WARMUP), as every cell does.
CALIBRATION_USERS = 2
CALIBRATION_REQUESTS = 99
#: The calibration cell's bound on its time (k6's maxDuration), at least: its users end when their
#: requests are sent, and the file's DURATION is the load's, not the calibration's (a 100 ms
#: endpoint needs 9.9 s for 99 requests a user; DURATION=5s cut it to about half).
CALIBRATION_MIN_DURATION_S = 30


@dataclass(frozen=True)
class SteadyLoad:
    """A steady load: the open model (rate_per_s) or the closed one (users), the endpoint's time
    service_ms (and where it came from), and the settings it starts from."""

    scenario: str
    service_ms: float
    timeout_ms: int
    duration_ms: int
    settings: dict[str, int]
    service_source: str = "DELAY_MS"
    rate_per_s: float = 0.0
    pool: int = 0
    max_vus: int = 0
    users: int = 0
    requests_per_user: int | None = None
    think_ms: int = 0
    keepalive: bool = True
    keepalive_timeout_ms: int = 60000
    max_keepalive_requests: int = 100
    #: Why the target cannot run on virtual threads here (virtualthreads.cannot), None when it can.
    virtual_cannot: str | None = None
    #: The p99 of the endpoint's time where it was measured (%D), None where the time is DELAY_MS:
    #: the p99 predicted where no request waits for a thread.
    service_p99_ms: float | None = None
    #: A script of one's own (ltsuite.ownscript): how its load was read, whether it is the open
    #: model, and the iterations it asks for (None: the run's own count).
    script: str = ""
    script_open: bool = False
    asked: int | None = None

    @property
    def open(self) -> bool:
        """The open model: arrivals do not wait for answers."""
        return self.script_open if self.script else self.scenario in OPEN


def arrival_rate(load: SteadyLoad) -> float:
    """Requests a second: RATE per TIME_UNIT (open); users / (S + Z) (closed, each user's cycle)."""
    if load.open:
        return load.rate_per_s
    return load.users * 1000 / (load.service_ms + load.think_ms)


def in_service(load: SteadyLoad) -> float:
    """Little's law: requests in service = arrival rate x service time."""
    return arrival_rate(load) * load.service_ms / 1000


def threads_needed(load: SteadyLoad) -> int:
    """ceil(HEADROOM x requests in service), at least 1; a closed load never needs more threads
    than users."""
    need = max(1, math.ceil(HEADROOM * in_service(load) - 1e-9))
    return min(need, load.users) if not load.open else need


def connections(load: SteadyLoad) -> int:
    """Connections the load keeps open: with keep-alive one a k6 VU (open: the pool, or the
    requests in service if more) or one a user (closed); without it, the requests in service."""
    busy = math.ceil(in_service(load) - 1e-9)
    if not load.keepalive:
        return busy
    return max(load.pool, busy) if load.open else load.users


def expected_requests(load: SteadyLoad) -> int | None:
    """Requests the load asks for: RATE x DURATION (open), users x REQUESTS_PER_VU (keepalive);
    None where the count is the run's (ramp: users loop through the stages). A script of one's own:
    the iterations its executor asks for (ltsuite.ownscript), one request each."""
    if load.script:
        return load.asked
    if load.open:
        return math.floor(load.rate_per_s * load.duration_ms / 1000 + 1e-9)
    return load.users * load.requests_per_user if load.requests_per_user else None


def held_for_ms(load: SteadyLoad) -> float:
    """How long a kept-alive connection holds its slot before Tomcat closes it: after
    TOMCAT_MAX_KEEP_ALIVE_REQUESTS requests on it (one every pool / rate, open; one every S + Z,
    closed), or TOMCAT_KEEP_ALIVE_TIMEOUT after a user's last request (keepalive's users stop)."""
    if load.open:
        return load.max_keepalive_requests * load.pool * 1000 / max(load.rate_per_s, 1e-9)
    cycle = load.service_ms + load.think_ms
    if load.requests_per_user is not None and load.requests_per_user < load.max_keepalive_requests:
        return load.requests_per_user * cycle + load.keepalive_timeout_ms
    return load.max_keepalive_requests * cycle


@dataclass
class SteadyPrediction:
    """What the model says one setting gives: workers, requests in service, the p99 latency, and
    whether the goal is met (with the headroom) or surely missed, and why."""

    workers: int
    busy: float
    p99_ms: float
    meets: bool
    fails: bool
    why: str


def predict(load: SteadyLoad, goal: Goal, settings: dict[str, int]) -> SteadyPrediction:
    """The rules of the module's docstring applied to one setting. Where no request waits for a
    thread the p99 is the endpoint's own: the measured p99 (service_p99_ms) when there is one,
    else the service time (DELAY_MS)."""
    workers = int(rules.workers(settings["TOMCAT_MAX_THREADS"], settings["TOMCAT_MAX_CONNECTIONS"],
                                settings.get(VIRTUAL, 0) == 1) or 0)
    busy = in_service(load)
    s = load.service_ms
    why = [f"{busy:.2f} requests in service ({arrival_rate(load):.1f}/s x {s:.1f} ms), {workers} workers"]
    fails = False
    if busy > workers:
        if load.open:
            # The queue grows all run: the request at 0.99 of DURATION waits (lambda / mu - 1) x t.
            p99 = s + (busy / workers - 1) * 0.99 * load.duration_ms
            in_flight = load.rate_per_s * p99 / 1000
            why.append(f"arrivals above {workers * 1000 / s:.1f}/s grow the queue all run: p99 about {p99:.0f} ms")
            if in_flight > load.max_vus:
                why.append(f"{in_flight:.0f} in flight need more than MAX_VUS {load.max_vus}: k6 drops iterations")
                fails = True
        else:
            # A closed load waits instead: users x S / workers a cycle (Little's law on the cycle).
            p99 = max(s, load.users * s / workers - load.think_ms)
            why.append(f"users queue for threads: about {p99:.0f} ms a request")
    else:
        p99 = s if load.service_p99_ms is None else load.service_p99_ms
    if p99 > load.timeout_ms:
        fails = True
        why.append(f"beyond REQUEST_TIMEOUT {load.timeout_ms} ms")
    meets = threads_needed(load) <= workers and with_margin(p99) <= load.timeout_ms
    if goal.p99_ms is not None:
        meets = meets and with_margin(p99) <= goal.p99_ms
        fails = fails or p99 > goal.p99_ms
    conns, slots = connections(load), settings["TOMCAT_MAX_CONNECTIONS"]
    if conns > slots:
        held = held_for_ms(load)
        why.append(f"{conns} kept-alive connections for {slots} slots: {conns - slots} wait in the accept queue "
                   f"about {held / 1000:.0f} s for a slot")
        meets = False
        fails = fails or held > load.timeout_ms
    return SteadyPrediction(workers, busy, p99, meets, fails and not meets, "; ".join(why))


def plan(load: SteadyLoad, goal: Goal, tune: list[str]) -> Plan:
    """The cheapest settings the model predicts to meet the goal (_plan), on platform threads or,
    with TOMCAT_VIRTUAL_THREADS in TUNE, on virtual threads where they need fewer resources or
    platform threads cannot meet it (virtualthreads.consider)."""
    def plan_with(virtual: int, rest: list[str]) -> Plan:
        return _plan(replace(load, settings={**load.settings, VIRTUAL: virtual}), goal, rest)
    return virtualthreads.consider(tune, load.settings, load.virtual_cannot, plan_with,
                                   lambda settings: predict(load, goal, settings).fails)


def _plan(load: SteadyLoad, goal: Goal, tune: list[str]) -> Plan:
    """The cheapest settings on the file's threads: threads from Little's law (on virtual threads
    max-connections instead: Tomcat keeps no pool), max-connections from the connections the load
    keeps, the queue kept (no connection waits in it once max-connections hold them all).
    Refuses (cannot) what no knob of TUNE changes."""
    s = {VIRTUAL: 0, **load.settings}
    virtual = s[VIRTUAL] == 1
    if virtual and load.virtual_cannot:
        return Plan(None, cannot=f"TOMCAT_VIRTUAL_THREADS=1 cannot run here: {load.virtual_cannot}")
    reasons: dict[str, str] = {}
    s_ms = load.service_ms
    if with_margin(s_ms) > load.timeout_ms:
        return Plan(None, cannot=(f"one request takes {s_ms:.0f} ms ({load.service_source}), "
                                        f"{with_margin(s_ms):.0f} ms with the margin, beyond REQUEST_TIMEOUT "
                                        f"{load.timeout_ms} ms: no setting makes it shorter"))
    if goal.p99_ms is not None and with_margin(s_ms) > goal.p99_ms:
        return Plan(None, cannot=(f"one request takes {s_ms:.0f} ms ({load.service_source}), "
                                        f"{with_margin(s_ms):.0f} ms with the margin, more than GOAL_P99_MS "
                                        f"{goal.p99_ms}: the endpoint, not a queue or a thread, is the limit"))
    busy = in_service(load)
    if load.open and HEADROOM * busy > load.max_vus:
        return Plan(None, cannot=(f"the generator is the limit: {busy:.1f} requests in service (Little's law: "
                                        f"{load.rate_per_s:.1f}/s x {s_ms:.0f} ms) need more than MAX_VUS "
                                        f"{load.max_vus} k6 VUs, so k6 would drop iterations (raise MAX_VUS)"))
    threads = threads_needed(load)
    if load.open and load.pool < threads:
        return Plan(None, cannot=(f"the generator is the limit: {busy:.1f} requests in service need {threads} "
                                        f"k6 VUs with the headroom and PRE_ALLOCATED_VUS is {load.pool}: k6 drops "
                                        f"iterations while it creates more (raise PRE_ALLOCATED_VUS)"))
    law = f"Little's law: {arrival_rate(load):.1f}/s x {s_ms:.1f} ms ({load.service_source}) = {busy:.2f} in service"
    if s["TOMCAT_MAX_THREADS"] < threads and not virtual:
        if "TOMCAT_MAX_THREADS" not in tune:
            return Plan(None, cannot=(f"{law}, {threads} threads with the headroom, and TOMCAT_MAX_THREADS "
                                            f"{s['TOMCAT_MAX_THREADS']} is not in TUNE"))
        fewer = ("arrivals outpace the threads and the queue grows all run" if load.open
                 else "users wait for a thread, users x time / threads a request")
        reasons["TOMCAT_MAX_THREADS"] = f"{law}; x {HEADROOM} headroom -> {threads} threads (fewer: {fewer})"
        s["TOMCAT_MAX_THREADS"] = threads
    # max-connections bounds the requests in service too: with the threads, or alone (virtual threads).
    workers = threads if virtual else s["TOMCAT_MAX_THREADS"] if load.open else min(threads, load.users)
    conns = max(connections(load), workers)
    if s["TOMCAT_MAX_CONNECTIONS"] < conns:
        if "TOMCAT_MAX_CONNECTIONS" not in tune:
            return Plan(None, cannot=(f"the load keeps {conns} connections and TOMCAT_MAX_CONNECTIONS "
                                            f"{s['TOMCAT_MAX_CONNECTIONS']} is not in TUNE"))
        pool = (f"k6 keeps a connection for each of its PRE_ALLOCATED_VUS {load.pool}" if load.open
                else f"each of {load.users} users keeps its connection")
        if conns > connections(load):
            reasons["TOMCAT_MAX_CONNECTIONS"] = (
                f"{law}; x {HEADROOM} headroom -> {threads} requests at once, and on virtual threads "
                f"max-connections alone bounds them (no pool), so {conns} (fewer: the queue grows)")
        else:
            reasons["TOMCAT_MAX_CONNECTIONS"] = (
                f"kept-alive connections hold a slot each, idle or not: {pool}, so {conns} (fewer: the rest wait "
                f"in the accept queue about {held_for_ms(load) / 1000:.0f} s for a slot)")
        s["TOMCAT_MAX_CONNECTIONS"] = conns
    prediction = predict(load, goal, s)
    if not prediction.meets:
        return Plan(None, cannot=f"no setting of TUNE meets the goal: {prediction.why}")
    for knob in tune:
        reasons.setdefault(knob, _kept_reason(knob, load, s, prediction))
    start = {VIRTUAL: 0, **load.settings}
    changed = [k for k in TUNABLE if s.get(k) != start.get(k)]
    result = Plan(s, reasons, None, {}, changed, prediction)
    for knob in changed:
        if s[knob] > 1:
            # One below: the boundary; the model says whether it must fail or only may.
            result.cheaper[knob] = s[knob] - 1
            result.sure[knob] = predict(load, goal, {**s, knob: s[knob] - 1}).fails
    threads = "TOMCAT_MAX_THREADS"
    if threads not in changed and threads in tune and not virtual and s[threads] > 1:
        # The file's threads already suffice: one below them is the boundary still, so the advice
        # shows what the file's pool holds in hand, measured (KEPT_BOUNDARY).
        result.cheaper[threads] = s[threads] - 1
        result.sure[threads] = predict(load, goal, {**s, threads: s[threads] - 1}).fails
        result.kept_boundary.append(threads)
    return result


def _kept_reason(knob: str, load: SteadyLoad, s: dict[str, int], prediction: SteadyPrediction) -> str:
    """Why a knob keeps its value under a steady load."""
    if knob == "TOMCAT_MAX_THREADS" and s.get(VIRTUAL) == 1:
        return (f"kept at {s[knob]}: on virtual threads Tomcat keeps no pool, so it bounds nothing "
                f"(rules.workers: max-connections alone)")
    if knob in ("TOMCAT_ACCEPT_COUNT", "SOMAXCONN", "TCP_MAX_SYN_BACKLOG"):
        return (f"kept at {s[knob] or 'the default'}: a connection waits in the accept queue only while "
                f"max-connections are all held, and {s['TOMCAT_MAX_CONNECTIONS']} hold the {connections(load)} "
                f"the load keeps")
    return f"kept at {s[knob]}: it already suffices ({prediction.why})"


# ---- Reading the load and judging cells ---------------------------------------------------------


def load_from_env(env: dict[str, str], settings: dict[str, int], service_ms: float | None = None,
                  source: str | None = None, script: ownscript.ScriptLoad | None = None,
                  service_p99_ms: float | None = None) -> SteadyLoad:
    """The steady load of the resolved knobs, or of a script of one's own as k6 inspect showed it
    (`script`: no think time the model can read); the endpoint's time is DELAY_MS unless measured
    (service_ms, and its p99 service_p99_ms)."""
    scenario = env["SCENARIO"]
    common = dict(scenario=scenario, timeout_ms=ms(env["REQUEST_TIMEOUT"]), settings=settings,
                  service_ms=float(env["DELAY_MS"]) if service_ms is None else service_ms,
                  service_p99_ms=None if service_ms is None else service_p99_ms,
                  service_source=source or f"DELAY_MS {env['DELAY_MS']}",
                  think_ms=int(env.get("THINK_TIME_MS") or 0),
                  keepalive_timeout_ms=int(env.get("TOMCAT_KEEP_ALIVE_TIMEOUT") or 60000),
                  max_keepalive_requests=int(env.get("TOMCAT_MAX_KEEP_ALIVE_REQUESTS") or 100),
                  virtual_cannot=virtual_cannot(env))
    if script is not None:
        return SteadyLoad(**{**common, "think_ms": 0}, duration_ms=int(script.duration_ms),
                          rate_per_s=script.rate_per_s, pool=script.pool, max_vus=script.max_vus,
                          users=script.users, requests_per_user=script.requests_per_user,
                          keepalive=script.keepalive, script=script.described, script_open=script.open,
                          asked=script.requests)
    if scenario in OPEN:
        return SteadyLoad(**common, duration_ms=ms(env["DURATION"]),
                          rate_per_s=int(env["RATE"]) * 1000 / ms(env["TIME_UNIT"]),
                          pool=int(env["PRE_ALLOCATED_VUS"]), max_vus=int(env["MAX_VUS"]))
    if scenario == "keepalive":
        return SteadyLoad(**common, duration_ms=ms(env["DURATION"]), users=int(env["VUS"]),
                          requests_per_user=int(env["REQUESTS_PER_VU"]),
                          keepalive=env.get("CONNECTION_REUSE", "1") == "1")
    stages = [(ms(d), int(t)) for d, t in (part.split(":") for part in env["STAGES"].split(","))]
    return SteadyLoad(**common, duration_ms=sum(d for d, _ in stages), users=max(t for _, t in stages))


def steady_not_as_asked(row: dict[str, Any], expected: int | None) -> str | None:
    """advise.not_as_asked with the load's own count: the open model may send RATE x DURATION or
    one more (module docstring); a ramp's count is its own (only none dropped or cut off)."""
    if expected is not None and row.get("http_reqs") == expected + 1:
        expected += 1
    return not_as_asked(row, expected)


def steady_passes(row: dict[str, Any], goal: Goal, expected: int | None) -> bool | None:
    """Did a cell meet the goal: True only when it ran as asked (steady_not_as_asked), its failed
    requests are within GOAL_FAILED_RATE of those asked for (of those sent, for a ramp) and its
    p99 within the goal. A cell not as asked never passes: False when the requests it did send
    already miss the goal (what it left unsent cannot mend that), else None (it verifies nothing)."""
    if row.get("status") != "ok" or row.get("failed_reqs") is None:
        return None
    asked = expected if expected is not None else row.get("http_reqs") or 0
    p99 = row.get("lat_p99_ms")
    missed = row["failed_reqs"] > goal.allowed_failures(asked) or (
        goal.p99_ms is not None and p99 is not None and p99 > goal.p99_ms)
    if steady_not_as_asked(row, expected):
        return False if missed else None
    if missed:
        return False
    return None if goal.p99_ms is not None and p99 is None else True


def app_percentile_ms(cell_dir: Path, fraction: float = CALIBRATION_PERCENTILE) -> tuple[float | None, int]:
    """The percentile of the load requests' %D in a cell's access log (ms) and their count; None
    without a log or a request."""
    requests = accesslog.cell_load_requests(cell_dir)
    if not requests:
        return None, 0
    times = sorted(r.service_ms for r in requests)
    return round(latency.percentile(times, fraction), 3), len(times)


# ---- The runs: calibration, verification, correction ----------------------------------------


@dataclass(frozen=True)
class Calibration:
    """What the calibration cell measured: the p50, p90 and p99 of the load requests' %D (ms; None
    without a logged request), their count, the cell (a Runner cell), and the figure the model
    uses as the service time (the p90: CALIBRATION_PERCENTILE) with the sentence that says where
    it came from; the model's p99 where nothing queues is the p99."""

    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    count: int
    cell: dict[str, Any]

    @property
    def service_ms(self) -> float | None:
        """The time the model uses: the p90."""
        return self.p90_ms

    @property
    def source(self) -> str:
        return (f"p90 of the application's time (%D) over {self.count} requests of calibration cell "
                f"{self.cell['run']}/{self.cell['cell']}, {CALIBRATION_USERS} users")


def time_measured(env: dict[str, str]) -> bool:
    """Whether the endpoint's time is measured rather than DELAY_MS: a service of one's own
    (TARGET_JAR), or a path of the target that DELAY_MS does not reach (TARGET_PATH: no delayMs
    is sent)."""
    return bool(env.get("TARGET_JAR") or env.get("TARGET_PATH"))


def calibrate(env: dict[str, str], runner: Runner, settings: dict[str, int]) -> Calibration:
    """One cell of CALIBRATION_USERS users of the keepalive scenario, CALIBRATION_REQUESTS requests
    each, on the file's target and path (TARGET_PATH), with at least a thread and a connection a
    user: the percentiles of its %D (make advise and make capacity use the same cell)."""
    duration_s = (rules.duration_ms(env.get("DURATION") or "") or 0) / 1000
    override = {"SCENARIO": "keepalive", "VUS": str(CALIBRATION_USERS),
                "REQUESTS_PER_VU": str(CALIBRATION_REQUESTS), "CONNECTION_REUSE": "1", "THINK_TIME_MS": "0",
                "DURATION": f"{math.ceil(max(duration_s, CALIBRATION_MIN_DURATION_S))}s"}
    few = {**settings, "TOMCAT_MAX_THREADS": max(settings["TOMCAT_MAX_THREADS"], CALIBRATION_USERS),
           "TOMCAT_MAX_CONNECTIONS": max(settings["TOMCAT_MAX_CONNECTIONS"], CALIBRATION_USERS)}
    # The base's own lines of the knobs set here go (a knob is given once a matrix).
    base = [line for line in runner.base if line.split("=", 1)[0] not in {**override, **few}]
    base += [f"{k}={v}" for k, v in override.items()]
    saved, runner.base = runner.base, base
    try:
        (cell,) = runner.run("calibrate", few, {})
    finally:
        runner.base = saved
    cell["purpose"] = "calibration"
    cell_dir = (runner.out / cell["row"]).parent
    figures = [app_percentile_ms(cell_dir, fraction)[0] for fraction in (0.5, CALIBRATION_PERCENTILE, 0.99)]
    return Calibration(*figures, app_percentile_ms(cell_dir)[1], cell)


def _verify(load: SteadyLoad, goal: Goal, p: Plan, runner: Runner, name: str, budget: int) -> list[dict]:
    """The verification matrix of a plan (advise.verification_axes); each cell judged strictly."""
    axes = verification_axes(p, budget)  # type: ignore[arg-type]
    cells = runner.run(name, {k: p.settings[k] for k in TUNABLE}, axes)
    for cell in cells:
        cell["predicted_pass"] = _word(predict(load, goal, cell["settings"]))
        cell["passed"] = steady_passes(cell["row_data"], goal, expected_requests(load))
    return cells


def _word(prediction: SteadyPrediction) -> bool | None:
    return True if prediction.meets else False if prediction.fails else None


def _cell_with(cells: list[dict], settings: dict[str, int]) -> dict | None:
    return next((c for c in cells if all(c["settings"][k] == v for k, v in settings.items())), None)


def advise(env: dict[str, str], runner: Runner | None) -> dict[str, Any]:
    """The whole advice for a steady load: calibrate (a jar of one's own), plan, verify, correct
    once where the time grew under load, as a dict (advice.json)."""
    settings, goal, tune, budget = starting_point(env)
    advice: dict[str, Any] = {"scenario": env["SCENARIO"], "starting_from": dict(settings), "tune": tune,
                              "budget": budget, "recommended": {}, "verified": False, "cannot": None,
                              "model": None, "boundary": [], "cells": [], "reasons": {}, "model_wrong": [],
                              "notes": []}
    script = None
    if ownscript.is_own(env["SCENARIO"]):
        # A script of one's own: its load is what k6 inspect showed (scripts/advise.sh wrote it).
        read = ownscript.read(runner.out / ownscript.INSPECTED, env["SCENARIO"]) if runner else "no k6 inspect"
        if isinstance(read, str):
            advice["cannot"] = read
            return _finish(advice, runner, None)
        script = read
    service, source, service_p99 = None, None, None
    if time_measured(env) and runner is not None:
        calibration = calibrate(env, runner, settings)
        service, source, service_p99 = calibration.service_ms, calibration.source, calibration.p99_ms
        if service is None:
            advice["cannot"] = "the calibration cell logged no load request (its access log): the time is unmeasured"
            return _finish(advice, runner, None)
    load = load_from_env(env, settings, service, source, script, service_p99)
    expected = expected_requests(load)
    advice["goal"] = {"scenario": load.scenario, "script": load.script or None, "rate_per_s": load.rate_per_s if load.open else None,
                      "users": None if load.open else load.users, "requests": expected,
                      "failed_rate": goal.failed_rate, "p99_ms": goal.p99_ms,
                      "allowed_failures": None if expected is None else goal.allowed_failures(expected)}
    p = plan(load, goal, tune)
    advice["reasons"], advice["cannot"] = p.reasons, p.cannot
    used = len(runner.cells) if runner else 0
    for attempt in (1, 2):
        if p.settings is None or runner is None:
            return _finish(advice, runner, expected)
        pred = p.prediction
        advice["model"] = {"service_ms": load.service_ms, "service_source": load.service_source,
                           "in_service": round(pred.busy, 3), "workers": pred.workers,
                           "connections": connections(load), "p99_ms": round(pred.p99_ms, 1),
                           "virtual_threads": p.settings.get(VIRTUAL) == 1,
                           "why": pred.why, "cheaper": p.cheaper}
        cells = _verify(load, goal, p, runner, "verify" if attempt == 1 else "verify-2", budget - used)
        used += len(cells)
        rec = _cell_with(cells, {k: p.settings[k] for k in p.settings})
        if rec is None:
            advice["cannot"] = f"the verify run has no row for the model's setting: see {cells[0]['run'] if cells else 'runs/'}"
            return _finish(advice, runner, expected)
        grown, measured = _grown(load, runner, rec)
        if rec["passed"] is True:
            advice["verified"] = True
            advice["recommended"] = {k: p.settings[k] for k in tune
                                     if k != "TCP_MAX_SYN_BACKLOG" or p.settings[k] > 0}
            if grown:
                advice["notes"].append(grown)
            _boundary(advice, load, goal, p, cells, expected)
            return _finish(advice, runner, expected)
        if not grown or attempt == 2 or used >= budget:
            why = rec.get("passed") is None and steady_not_as_asked(rec["row_data"], expected)
            advice["model_wrong"].append(f"the model's setting ({_text(p.settings)}) "
                                         + (f"was not judged: {why}" if why else "missed the goal"))
            advice["cannot"] = (f"the model predicted {pred.why}, yet the run did not hold"
                                + (f"; {grown}" if grown else "") + ": see the cells")
            return _finish(advice, runner, expected)
        # The time grew under load: plan again with the time measured there.
        advice["notes"].append(grown + "; planned again with it")
        load = load_from_env(env, settings, measured,
                             f"p90 of the application's time under load, cell {rec['run']}/{rec['cell']}", script,
                             app_percentile_ms((runner.out / rec["row"]).parent, 0.99)[0])
        p = plan(load, goal, tune)
        advice["reasons"], advice["cannot"] = p.reasons, p.cannot
    return _finish(advice, runner, expected)


def _grown(load: SteadyLoad, runner: Runner, cell: dict) -> tuple[str | None, float | None]:
    """Did the endpoint's time grow under load: the cell's p90 of %D past the model's time by more
    than the headroom. The sentence for the advice and the time measured."""
    p90, _ = app_percentile_ms((runner.out / cell["row"]).parent)
    if p90 is None or p90 <= HEADROOM * load.service_ms:
        return None, p90
    return (f"the endpoint's time grows with load: p90 {p90:.1f} ms in cell {cell['run']}/{cell['cell']} against "
            f"{load.service_ms:.1f} ms the model used ({load.service_source})"), p90


def _boundary(advice: dict, load: SteadyLoad, goal: Goal, p: Plan, cells: list[dict],
              expected: int | None) -> None:
    """The cheaper cell of each raised knob, what the model said of it and what the run did."""
    for knob, value in p.cheaper.items():
        lower = _cell_with(cells, {**{k: p.settings[k] for k in p.cheaper}, knob: value})
        lower_meets = predict(load, goal, {**p.settings, knob: value}).meets
        entry = {"knob": knob, "value": value,
                 "predicted": "fail" if p.sure[knob] else "hold" if lower_meets else "may fail",
                 "kept": knob in p.kept_boundary,
                 "predicted_p99_ms": round(predict(load, goal, {**p.settings, knob: value}).p99_ms, 1),
                 "cell": None, "run": None, "passed": None, "failed_reqs": None, "lat_p99_ms": None,
                 "not_as_asked": "not run (the budget)"}
        if lower is not None:
            row = lower["row_data"]
            entry.update(cell=lower["cell"], run=lower["run"], passed=lower["passed"],
                         failed_reqs=row.get("failed_reqs"), lat_p99_ms=row.get("lat_p99_ms"),
                         not_as_asked=steady_not_as_asked(row, expected))
            if lower["passed"] is True and p.sure[knob]:
                advice["model_wrong"].append(f"{knob}: the model said {value} must fail ({predict(load, goal, {**p.settings, knob: value}).why}); it held")
        advice["boundary"].append(entry)


def _text(settings: dict[str, int]) -> str:
    return " ".join(f"{k}={settings[k]}" for k in TUNABLE if k in settings and (k != VIRTUAL or settings[k]))


def _finish(advice: dict, runner: Runner | None, expected: int | None) -> dict:
    """Every cell run, with the figures advice.json keeps and why a cell was not judged."""
    for cell in runner.cells if runner else []:
        row = cell.pop("row_data", None)
        if row is None:
            continue
        p90, _ = app_percentile_ms((runner.out / cell["row"]).parent)
        cell["not_as_asked"] = None if cell.get("purpose") else steady_not_as_asked(row, expected)
        cell.update({k: row.get(k) for k in ("failed_reqs", "http_reqs", "lat_p99_ms", "status",
                                              "dropped_iterations", "iterations_interrupted",
                                              "server_conns_peak", "tomcat_threads_busy_peak")})
        cell["app_p90_ms"] = p90
        cell.setdefault("predicted_pass", None)
        cell.setdefault("passed", None)
        cell.setdefault("purpose", "verification")
    advice["cells"] = runner.cells if runner else []
    return advice


_WORD = {True: "holds", False: "fails", None: "may fail"}


def markdown(advice: dict[str, Any], source: str) -> str:
    """advice.md for a steady load: the answer, the model, the boundary, the reasons, the cells."""
    g = advice.get("goal") or {}
    load = (f"{g.get('rate_per_s')} requests a second" if g.get("rate_per_s") is not None
            else f"{g.get('users')} users with kept-alive connections")
    out = [f"# Advice for {source}", "",
           f"Goal: {advice['scenario']}, {load}"
           + (f", {g['requests']} requests" if g.get("requests") is not None else "")
           + f", at most {g.get('allowed_failures')} failed (GOAL_FAILED_RATE {g.get('failed_rate')})"
           + (f", p99 within {g['p99_ms']} ms" if g.get("p99_ms") is not None else "") + ".", ""]
    if g.get("script"):
        out += [f"The script's load (k6 inspect): {g['script']}.", ""]
    verdict, paste = verdict_lines(advice)
    out += verdict + (["", *paste] if advice["verified"] else [])
    m = advice.get("model")
    if m:
        out += [f"Model: the endpoint's time {m['service_ms']:.1f} ms ({m['service_source']}); "
                f"{m['why']}" + (" (virtual threads: max-connections is the bound)" if m.get("virtual_threads") else "")
                + f"; p99 about {m['p99_ms']:.0f} ms; {m['connections']} connections kept.", ""]
    for note in advice["notes"]:
        out += [f"Note: {note}.", ""]
    if advice["boundary"]:
        out += ["Boundary (one below each raised knob, or below the file's threads where they already suffice):", ""]
        out += [f"- `{b['knob']}` = {b['value']} (the model: {b['predicted']}): "
                + (f"not judged: {b['not_as_asked']}" if b["passed"] is None else
                   f"cell {b['run']}/{b['cell']}, {b['failed_reqs']} failed, p99 {b['lat_p99_ms']} ms "
                   f"(the model: {b['predicted_p99_ms']:.0f} ms), " + ("held" if b["passed"] else "missed the goal")
                   + (f" ({b['not_as_asked']})" if b["not_as_asked"] else "")) for b in advice["boundary"]]
        out.append("")
    if advice["model_wrong"]:
        out += ["Where the model was wrong:", "", *[f"- {w}" for w in advice["model_wrong"]], ""]
    out += ["Reasons:", "", *[f"- `{k}`: {v}" for k, v in advice["reasons"].items()], ""]
    if advice["cells"]:
        out += ["Cells:", "", "| run | cell | purpose | threads | max-conns | sent | dropped | failed | p99 ms | "
                "app p90 ms | the model | the run |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in advice["cells"]:
            run = "-" if c["purpose"] == "calibration" else _WORD[c["passed"]] if c["passed"] is not None else (
                f"not judged: {c['not_as_asked']}")
            if c["passed"] is False and c["not_as_asked"]:
                run += f" ({c['not_as_asked']})"
            out.append(f"| {c['run']} | [{c['cell']}]({c['row']}) | {c['purpose']} | "
                       f"{'virtual' if c['settings'].get(VIRTUAL) == 1 else c['settings']['TOMCAT_MAX_THREADS']} | "
                       f"{c['settings']['TOMCAT_MAX_CONNECTIONS']} | "
                       f"{c['http_reqs']} | {c['dropped_iterations']} | {c['failed_reqs']} | {c['lat_p99_ms']} | "
                       f"{c['app_p90_ms']} | {'-' if c['purpose'] == 'calibration' else _WORD[c['predicted_pass']]} | "
                       f"{run} |")
        out.append("")
    return "\n".join(out)


def main(env: dict[str, str], runner: Runner, source: str) -> int:
    """advise.main for a steady load: advice.json and advice.md in the runner's directory; exit 0
    with a verified setting, 3 with none, 1 when a run did not happen."""
    import sys
    try:
        advice = advise(env, runner)
    except RuntimeError as error:
        print(f"advise: {error}; nothing is recommended (runs so far: {runner.out}/runs)", file=sys.stderr)
        return 1
    return write_advice(runner.out, advice, source, lambda a: markdown(a, source))
