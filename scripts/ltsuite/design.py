"""Did a cell run as designed, and what do the kernel's rules predict for it?

Before the run, design_warnings() names the ways a cell's design makes its result unlikely to
mean what it seems to (the runner prints them; they never refuse). After the run,
design_findings() lists the ways the load that happened differs from the load designed, and
predictions() / prediction_verdict() set the kernel's predicted figures beside the measured ones.

Inputs are plain values: env (the cell's knobs as strings, plus "script": script_facts() for a
script of one's own), sysctls ({"server": {name: value}, "client": {...}}), machine
({"cpus", "nofile", "mem_available_mb", "vu_start_rate", "port_range_default"}) and the row built
so far.

Command line (the runner's check before a run):
  python3 -m ltsuite.design warnings CELL_ENV MACHINE_JSON [INSPECTED_JSON]
prints one warning a line (INSPECTED_JSON: k6 inspect of a script of one's own, or null).
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import netdelay, rules
from .cellfiles import read_cell_env
from .numbers import (at_least, at_most, below, or_default, r1, r2, rounded, smallest, text,
                      tidy, to_number)

Env = dict[str, Any]
Row = dict[str, Any]

#: k6 scenarios whose VUs are all meant to start together (constant-vus, per-vu-iterations).
AT_ONCE = ("spike", "burst", "keepalive")
#: The suite's /hello scenarios: one request per iteration, plus think time.
HELLO = ("spike", "burst", "keepalive", "ramp", "spike-open")
#: Executors that start every VU at once when their start time is 0.
TOGETHER = ("constant-vus", "per-vu-iterations", "shared-iterations")
#: Where the port range is the limit the measured peak may be this many below it: in the suite's
#: client namespace the suite's own sockets (health checks, k6's dashboard) use ports outside the
#: range (netns.sh netns_own_ports) and the users get all of it; a client that is the host (an
#: external target) shares its ports with whatever else runs there.
PORT_SLACK = 10
#: Where open files are the limit, the measured peak (and fail_no_fd) may be this many off the
#: prediction: the files a k6 process holds besides its sockets (rules.K6_OWN_FILES) vary with its
#: outputs, and the target's JVM opened 1 more during a load than it held as the load started
#: (600 files, 57 its own: 643 connections where 644 were predicted).
FILE_SLACK = 10


@dataclass
class Finding:
    """One way the load that happened differs from the load designed. flag: "late" (the
    generator did not keep up), "cut" (work interrupted), "gen" (a saturated generator),
    "none" (no load at all), "settings" (the target did not run the cell's settings),
    "unsampled" (the sampler's figures a check needs are missing), "cold" (the load met a cold
    JVM: cold_jvm)."""

    flag: str
    note: str


def _int(value: Any) -> Any:
    """A knob as a number (None when unset or not a number)."""
    return to_number(value)


def _duration(env: Env, key: str) -> Any:
    return rules.duration_ms(env.get(key) or "")


def script_facts(inspected: dict[str, Any] | None) -> dict[str, Any]:
    """What a k6 script of one's own asks for, from `k6 inspect --execution-requirements`:
    vus (at the peak; None when its executors start VUs only as needed), at_once (every VU is
    meant to start together: constant-vus, per-vu-iterations, shared-iterations, all at time
    0), load_ms (the load's duration when every executor is constant-vus)."""
    scenarios = list(((inspected or {}).get("scenarios") or {}).values())
    fixed = all(s.get("executor") in TOGETHER for s in scenarios)
    if not scenarios:
        vus = None
    elif fixed:
        vus = sum(or_default(s.get("vus"), 1) for s in scenarios)
    elif all(s.get("executor") == "ramping-vus" for s in scenarios):
        vus = sum(max([or_default(s.get("startVUs"), 1)] + [st.get("target") for st in s.get("stages") or []])
                  for s in scenarios)
    else:
        vus = None
    at_once = fixed and bool(scenarios) and all(
        rules.duration_ms(or_default(s.get("startTime"), "0s")) == 0 for s in scenarios)
    load_ms = None
    if scenarios and all(s.get("executor") == "constant-vus" for s in scenarios):
        load_ms = max(rules.duration_ms(s.get("duration") or "") or 0 for s in scenarios)
    return {"vus": vus, "at_once": at_once, "load_ms": load_ms}


#: k6's graceful stop and ramp-down when a scenario sets none
#: (https://grafana.com/docs/k6/latest/using-k6/scenarios/concepts/graceful-stop/): gracefulStop
#: 30s for every executor, gracefulRampDown 30s for ramping-vus.
K6_GRACEFUL_DEFAULT = "30s"


def script_stops(inspected: dict[str, Any] | None) -> str:
    """The graceful stops a script of one's own runs with, from k6 inspect: each scenario's
    gracefulRampDown (ramping-vus) and gracefulStop, as set or k6's default of 30s when unset,
    e.g. "gracefulRampDown 5s and k6's default gracefulStop 30s"; with several scenarios each
    named. "" when the inspection has no scenario."""
    scenarios = ((inspected or {}).get("scenarios") or {})
    out = []
    for name, s in scenarios.items():
        keys = (("gracefulRampDown", "gracefulStop") if s.get("executor") == "ramping-vus" else ("gracefulStop",))
        said = " and ".join(f"{key} {s[key]}" if s.get(key) else f"k6's default {key} {K6_GRACEFUL_DEFAULT}"
                            for key in keys)
        out.append(said if len(scenarios) == 1 else f"scenario '{name}': {said}")
    return "; ".join(out)


def with_script(env: dict[str, str], inspected: dict[str, Any] | None) -> Env:
    """The cell's knobs, plus "script" (script_facts) and "script_stops" (script_stops) for a
    script of one's own (inspected is None for a shipped scenario)."""
    if inspected is None:
        return dict(env)
    return {**env, "script": script_facts(inspected), "script_stops": script_stops(inspected)}


def _script(env: Env) -> dict[str, Any]:
    return env.get("script") or {}


def designed_vus(env: Env) -> Any:
    """The VUs the scenario asks for at its peak (None when its executor starts VUs only as
    needed): VUS for spike, burst and keepalive; the highest STAGES target for ramp and the
    waiting room; k6 inspect's figure for a script of one's own."""
    scenario = env.get("SCENARIO")
    if env.get("script") is not None:
        return _script(env).get("vus")
    if scenario in AT_ONCE:
        return _int(env.get("VUS"))
    if scenario in ("ramp", "waiting-room"):
        return max(_int(stage.split(":")[-1]) for stage in (env.get("STAGES") or "").split(","))
    return None


def cell_capacity(env: Env, sysctls: dict[str, dict[str, str]]) -> Any:
    """The server's capacity (rules.server_capacity) from the cell's knobs and the somaxconn the
    server namespace reported; None without a server side or max-connections."""
    somaxconn = _int((sysctls.get("server") or {}).get("net.core.somaxconn"))
    if somaxconn is None or (env.get("TOMCAT_MAX_CONNECTIONS") or "") == "":
        return None
    return rules.server_capacity(_int(env["TOMCAT_MAX_CONNECTIONS"]), _int(env.get("TOMCAT_ACCEPT_COUNT")),
                                 somaxconn)


# ---- Open files (every socket is a file) --------------------------------------------------------


def k6_nofile(env: Env, machine: dict[str, Any]) -> Any:
    """The open-file limit each k6 process runs with: K6_NOFILE when set, else the hard limit
    (machine "nofile", which k6_start raises the soft limit to); the row's machine gives the
    limit the cell's processes ran with ("k6_nofile", file-limits.tsv)."""
    if machine.get("k6_nofile") is not None:
        return machine["k6_nofile"]
    knob = _int(env.get("K6_NOFILE") or "")
    return knob if knob is not None else machine.get("nofile")


def k6_instances(env: Env, machine: dict[str, Any]) -> int:
    """The k6 processes of the cell: K6_INSTANCES, or for "auto" rules.k6_instances of the
    designed VUs (1 when they are unknown) and k6's open-file limit."""
    knob = or_default(env.get("K6_INSTANCES"), "1")
    if knob != "auto":
        return _int(knob) or 1
    nofile = k6_nofile(env, machine)
    if not nofile:
        return 1
    return rules.k6_instances(or_default(designed_vus(env), 1), nofile)


def burst_lead(env: Env, machine: dict[str, Any]) -> Any:
    """BURST_LEAD_MS in ms, "auto" resolved by rules.burst_lead_ms for the cell's k6 VUs (k6_vus), k6
    processes and the machine's cores (machine "cpus", 1 when unknown); None when unset."""
    knob = env.get("BURST_LEAD_MS")
    if knob != "auto":
        return _int(knob or "")
    return rules.burst_lead_ms(k6_vus(env), k6_instances(env, machine), or_default(machine.get("cpus"), 1))


def users_per_vu(env: Env) -> int:
    """USERS_PER_VU: the users a burst VU carries, "auto" resolved by rules.users_per_vu for the
    cell's scenario, users (VUS) and requests per user; 1 when unset."""
    knob = or_default(env.get("USERS_PER_VU"), "1")
    if knob != "auto":
        return _int(knob) or 1
    return rules.users_per_vu(env.get("SCENARIO"), or_default(designed_vus(env), 1),
                              or_default(_int(env.get("REQUESTS_PER_VU") or ""), 1))


def k6_vus(env: Env) -> int:
    """The VUs k6 runs for the cell's users: one per USERS_PER_VU users (users_per_vu), rounded
    up (scenarios/burst.js); the designed VUs, 1 when unknown, for every other scenario."""
    users = or_default(designed_vus(env), 1)
    if env.get("SCENARIO") != "burst":
        return users
    return -(-users // users_per_vu(env))


def users_of(env: Env, k6_vus: Any) -> Any:
    """The users `k6_vus` VUs (k6's vus_max) carried: users_per_vu each, at most the designed
    VUS (the last VU carries the rest, scenarios/burst.js); k6_vus itself for a VU a user, None
    when unmeasured."""
    per_vu = carried_per_vu(env)
    if k6_vus is None or per_vu == 1:
        return k6_vus
    users = k6_vus * per_vu
    designed = designed_vus(env)
    return users if designed is None else min(users, designed)


def resolved(env: Env, machine: dict[str, Any]) -> dict[str, str]:
    """The knobs a cell leaves to the suite (value "auto"), as the values it runs with:
    K6_INSTANCES (k6_instances), BURST_LEAD_MS (burst_lead) and USERS_PER_VU (users_per_vu).
    cell.env records them."""
    out: dict[str, str] = {}
    if env.get("K6_INSTANCES") == "auto":
        out["K6_INSTANCES"] = str(k6_instances(env, machine))
    if env.get("BURST_LEAD_MS") == "auto":
        out["BURST_LEAD_MS"] = str(burst_lead(env, machine))
    if env.get("USERS_PER_VU") == "auto":
        out["USERS_PER_VU"] = str(users_per_vu(env))
    return out


def client_files(env: Env, machine: dict[str, Any]) -> Any:
    """Connections the cell's k6 processes can open (rules.client_file_room); None when k6's
    open-file limit is unknown."""
    nofile = k6_nofile(env, machine)
    return None if not nofile else rules.client_file_room(k6_instances(env, machine), nofile)


def server_capacity_with_files(env: Env, sysctls: dict[str, dict[str, str]], machine: dict[str, Any]) -> Any:
    """cell_capacity, bounded by the target's own open-file limit when the cell recorded it
    (machine "target_nofile" and the files the JVM had open before the load, "target_own_files":
    rules.server_file_capacity)."""
    capacity = cell_capacity(env, sysctls)
    files = machine.get("target_nofile")
    if capacity is None or files is None:
        return capacity
    somaxconn = _int((sysctls.get("server") or {}).get("net.core.somaxconn"))
    return min(capacity, rules.server_file_capacity(_int(env["TOMCAT_MAX_CONNECTIONS"]), files,
                                                    or_default(machine.get("target_own_files"), 0),
                                                    _int(env.get("TOMCAT_ACCEPT_COUNT")), somaxconn))


def file_limits(cell_dir: Path) -> dict[str, Any]:
    """The open-file limits a cell ran with (file-limits.tsv, written by k6_start: "k6" LIMIT,
    "target" LIMIT OWN_FILES, the JVM's soft limit and its open files as the load started), as
    the machine keys k6_nofile, target_nofile, target_own_files; {} when not recorded."""
    try:
        lines = (cell_dir / "file-limits.tsv").read_text(encoding="utf-8").split("\n")
    except OSError:
        return {}
    out: dict[str, Any] = {}
    for line in lines:
        fields = line.split("\t")
        if fields[0] == "k6" and len(fields) >= 2 and _int(fields[1]) is not None:
            out["k6_nofile"] = _int(fields[1])
        elif fields[0] == "target" and len(fields) >= 3 and _int(fields[1]) is not None:
            out["target_nofile"] = _int(fields[1])
            out["target_own_files"] = _int(fields[2])
    return out


def limit_note(env: Env, sysctls: dict[str, dict[str, str]], machine: dict[str, Any], predicted: Row) -> Any:
    """Which open-file limit bound predicted_server_conns_peak, with its numbers (None when
    neither k6's nor the target's did)."""
    conns = predicted.get("predicted_server_conns_peak")
    if conns is None:
        return None
    files = client_files(env, machine)
    if files is not None and conns == files and below(files, designed_vus(env)):
        nofile = k6_nofile(env, machine)
        return (f"bound by k6's open-file limit: {text(k6_instances(env, machine))} k6 process(es) x ({text(nofile)} "
                f"files less {text(rules.K6_OWN_FILES)} of k6's own) = {text(files)} connections for "
                f"{text(designed_vus(env))} VUs; the others fail with 'too many open files' (fail_no_fd)")
    with_files = server_capacity_with_files(env, sysctls, machine)
    capacity = cell_capacity(env, sysctls)
    if with_files is not None and capacity is not None and with_files < capacity and conns == with_files:
        return (f"bound by the target's open-file limit: {text(machine.get('target_nofile'))} files less the "
                f"{text(machine.get('target_own_files'))} its JVM had open before the load, plus the accept queue "
                f"= {text(with_files)} connections, fewer than TOMCAT_MAX_CONNECTIONS="
                f"{text(env.get('TOMCAT_MAX_CONNECTIONS'))} allows ({text(capacity)})")
    return None


def refusals(env: Env, machine: dict[str, Any]) -> list[str]:
    """Why the cell cannot run as designed on this machine at all (the runner refuses it, exit
    2): a network knob out of its range (netdelay.validate); its VUs need more memory than is available even at k6's lowest measured cost per VU
    (rules.k6_kb_per_user: less per user when a VU carries several)."""
    try:
        netdelay.validate({k: str(v) for k, v in env.items() if k.startswith("NET_")})
    except netdelay.NetDelayError as err:
        return [str(err)]
    vus = designed_vus(env)
    mem = or_default(machine.get("mem_available_mb"), 0)
    low, high = rules.k6_kb_per_user(carried_per_vu(env))
    need = None if vus is None else vus * low / 1024
    if need is not None and mem > 0 and need > mem:
        return [f"{text(vus)} VUs need at least {text(rounded(need, 1))} MB in k6 ({text(low)}-"
                f"{text(high)} KB each, measured), more than the {text(mem)} MB available"]
    return []


def virtual_threads(env: Env) -> bool:
    """The cell runs Tomcat on virtual threads (TOMCAT_VIRTUAL_THREADS=1)."""
    return str(env.get("TOMCAT_VIRTUAL_THREADS") or "0") == "1"


def carried_per_vu(env: Env) -> int:
    """The users one k6 VU carries: users_per_vu for the burst, 1 for every other scenario."""
    return users_per_vu(env) if env.get("SCENARIO") == "burst" else 1


def _workers(env: Env) -> list[Any]:
    """The requests served at once (rules.workers: min of threads and max-connections,
    max-connections alone with virtual threads), as a list of its one bound."""
    threads, conns = _int(env.get("TOMCAT_MAX_THREADS") or ""), _int(env.get("TOMCAT_MAX_CONNECTIONS") or "")
    return [rules.workers(threads, conns, virtual_threads(env))]


def request_time_ms(env: Env) -> Any:
    """The longest a request of a /hello scenario is expected to take: the waves
    (rules.waves_ms) in which the thread pool (or max-connections) serves the designed VUs'
    requests of DELAY_MS each, plus a margin of 100 ms and 10 %, never more than
    REQUEST_TIMEOUT."""
    delay_ms = _int(env.get("DELAY_MS"))
    present = [w for w in _workers(env) if w is not None]
    workers = min(present) if present else None
    served = delay_ms if workers is None else rules.waves_ms(or_default(designed_vus(env), 1), workers, delay_ms)
    return min(rounded(served * 1.1 + 100, 1), _duration(env, "REQUEST_TIMEOUT"))


def syn_retries(sysctls: dict[str, dict[str, str]]) -> Any:
    """The client's net.ipv4.tcp_syn_retries (None when not recorded)."""
    return _int((sysctls.get("client") or {}).get("net.ipv4.tcp_syn_retries"))


def syn_linear(sysctls: dict[str, dict[str, str]]) -> Any:
    """The client's net.ipv4.tcp_syn_linear_timeouts (0 on kernels without it)."""
    return _int((sysctls.get("client") or {}).get("net.ipv4.tcp_syn_linear_timeouts") or "0")


def syn_window_s(env: Env, sysctls: dict[str, dict[str, str]]) -> Any:
    """How long a client that cannot connect keeps trying: until connect() gives up
    (rules.syn_give_up_s) or the request times out (REQUEST_TIMEOUT)."""
    retries = syn_retries(sysctls)
    if retries is None:
        return None
    return tidy(min(rules.syn_give_up_s(retries, syn_linear(sysctls)), _duration(env, "REQUEST_TIMEOUT") / 1000))


def _syns_within(retries: Any, linear: Any, window_s: Any) -> int:
    if window_s is None or retries is None:
        return 0
    return rules.syns_within(retries, linear, window_s)


# ---- nginx in front (PROXY=nginx) ---------------------------------------------------------------

#: The server namespace's SYN schedule when the cell did not record it: the suite creates that
#: namespace and has no knob for it, so it keeps a new namespace's defaults, Linux
#: include/net/tcp.h TCP_SYN_RETRIES (6) and net/ipv4/tcp_ipv4.c tcp_sk_init()
#: (tcp_syn_linear_timeouts 4), as the client namespace reports them when left alone.
SERVER_NS_SYN_RETRIES = 6
SERVER_NS_SYN_LINEAR = 4


def proxied(env: Env) -> bool:
    """nginx stands between the users and the target (PROXY=nginx)."""
    return env.get("PROXY") == "nginx"


def proxy_syn_schedule(sysctls: dict[str, dict[str, str]]) -> tuple[int, int]:
    """(tcp_syn_retries, tcp_syn_linear_timeouts) of nginx's connects to the target: nginx runs in
    the server namespace, so its SYNs follow that namespace's schedule (recorded, else
    SERVER_NS_SYN_RETRIES / SERVER_NS_SYN_LINEAR)."""
    server = sysctls.get("server") or {}
    retries = _int(server.get("net.ipv4.tcp_syn_retries"))
    linear = _int(server.get("net.ipv4.tcp_syn_linear_timeouts"))
    return (SERVER_NS_SYN_RETRIES if retries is None else retries,
            SERVER_NS_SYN_LINEAR if linear is None else linear)


def proxy_window_s(env: Env, sysctls: dict[str, dict[str, str]]) -> Any:
    """How long nginx tries to connect a request to a target whose accept queue is full:
    PROXY_CONNECT_TIMEOUT (ngx_http_proxy_module: past it, "upstream timed out ... while
    connecting to upstream" and a 504), unless its kernel's connect() gives up first
    (rules.syn_give_up_s on the server namespace's schedule) or the user stops waiting
    (REQUEST_TIMEOUT). None when a duration is unknown."""
    connect_ms = _duration(env, "PROXY_CONNECT_TIMEOUT")
    timeout_ms = _duration(env, "REQUEST_TIMEOUT")
    if connect_ms is None or timeout_ms is None:
        return None
    retries, linear = proxy_syn_schedule(sysctls)
    return tidy(min(connect_ms, timeout_ms, rules.syn_give_up_s(retries, linear) * 1000) / 1000)


def per_request_upstream(env: Env) -> bool:
    """Behind nginx without an upstream keep-alive pool (PROXY_UPSTREAM_KEEPALIVE=0) each
    request is a connection of its own at the server (nginx speaks HTTP/1.0 upstream and the
    connection closes after the answer), so a user who sends several requests holds no
    connection at the server between them, and two may overlap as one closes and the next
    opens: measured, one user's 10,000 requests peaked at 2 connections in 6 of 17 cells with a
    connection a request (direct with "Connection: close", or behind nginx; seed004-proxy,
    run 20261127-044823-seed004-proxy). Only a server whose capacity is full keeps a
    predictable count."""
    return (proxied(env) and _int(or_default(env.get("PROXY_UPSTREAM_KEEPALIVE"), "0")) == 0
            and (env.get("REQUESTS_PER_VU") or "1") != "1")


def proxy_holds(env: Env, sysctls: dict[str, dict[str, str]], vus: Any) -> bool:
    """nginx takes every user at once, so no user fails to connect: each user in flight holds
    two of its worker_connections (its own connection and nginx's to the target), and the users'
    SYNs fit its accept queue even if it accepted none of them before they all arrived
    (min(PROXY_BACKLOG, somaxconn) + 1, rules.listen_backlog and sk_acceptq_is_full()). Past
    either, users may fail at nginx and no rule here says how many."""
    workers = _int(env.get("PROXY_WORKER_CONNECTIONS"))
    backlog = _int(env.get("PROXY_BACKLOG"))
    somaxconn = _int((sysctls.get("server") or {}).get("net.core.somaxconn"))
    if None in (vus, workers, backlog, somaxconn):
        return False
    return 2 * vus <= workers and vus <= rules.listen_backlog(backlog, somaxconn) + 1


# ---- Before the run ---------------------------------------------------------------------------


def design_warnings(env: Env, machine: dict[str, Any]) -> list[str]:
    """Sentences about a cell's design that make its result unlikely to mean what it seems to:
    iterations the graceful stop will cut (DELAY_MS in waves of the thread pool, at most
    REQUEST_TIMEOUT), a delay no request outlives, more VUs than k6 starts within DURATION at
    this machine's measured K6_VU_START_RATE, more sockets than a k6 process may open (ulimit
    -Hn), more connections than the ephemeral port range holds (ip_local_port_range, one
    address, one server port), more memory than is available (about 250 KB per VU, measured).
    They warn; they never refuse."""
    scenario = env.get("SCENARIO")
    vus = designed_vus(env)
    out: list[str] = []
    if scenario in HELLO:
        request_ms = request_time_ms(env)
        think_ms = _int(or_default(env.get("THINK_TIME_MS"), "0"))
        grace_ms = _duration(env, "GRACEFUL_STOP")
        if scenario == "burst":
            lead_ms = or_default(burst_lead(env, machine), 0)
            room_ms = (_duration(env, "DURATION") - lead_ms) + grace_ms
            if room_ms < request_ms * _int(or_default(env.get("REQUESTS_PER_VU"), "1")):
                lead = text(lead_ms) + (" (auto)" if env.get("BURST_LEAD_MS") == "auto" else "")
                out.append(
                    f"DURATION={text(env.get('DURATION'))} less BURST_LEAD_MS={lead}, "
                    f"plus GRACEFUL_STOP={text(env.get('GRACEFUL_STOP'))}, leaves {text(room_ms)} ms, less than "
                    f"REQUESTS_PER_VU={text(env.get('REQUESTS_PER_VU'))} requests may take ({text(request_ms)} ms each: "
                    f"DELAY_MS={text(env.get('DELAY_MS'))} in waves of TOMCAT_MAX_THREADS, at most "
                    f"REQUEST_TIMEOUT={text(env.get('REQUEST_TIMEOUT'))}): iterations will be interrupted")
        elif grace_ms < request_ms + think_ms:
            plus = f", plus THINK_TIME_MS={text(think_ms)}" if think_ms > 0 else ""
            out.append(
                f"GRACEFUL_STOP={text(env.get('GRACEFUL_STOP'))} is shorter than an iteration may take "
                f"({text(request_ms + think_ms)} ms: DELAY_MS={text(env.get('DELAY_MS'))} in waves of "
                f"TOMCAT_MAX_THREADS, at most REQUEST_TIMEOUT={text(env.get('REQUEST_TIMEOUT'))}{plus}): "
                "iterations still running when the load ends will be interrupted and their requests lost")
    if scenario in HELLO and _int(env.get("DELAY_MS")) >= _duration(env, "REQUEST_TIMEOUT"):
        out.append(f"DELAY_MS={text(env.get('DELAY_MS'))} is not shorter than REQUEST_TIMEOUT="
                   f"{text(env.get('REQUEST_TIMEOUT'))}: every request times out before the server answers")
    rate = or_default(machine.get("vu_start_rate"), 0)
    if vus is not None and (scenario in ("spike", "keepalive") or _script(env).get("load_ms") is not None) and rate > 0:
        start_s = vus / rate
        duration = or_default(_script(env).get("load_ms"), _duration(env, "DURATION"))
        if start_s * 1000 > duration:
            what = (f"the script's duration is {text(r1(duration / 1000))} s" if env.get("script") is not None
                    else f"DURATION={text(env.get('DURATION'))}")
            out.append(f"k6 needs about {text(r1(start_s))} s to start {text(vus)} VUs here "
                       f"(K6_VU_START_RATE={text(rate)}/s) but {what}: many VUs will start late or never send a "
                       "request; the burst scenario releases them together")
    instances = k6_instances(env, machine)
    nofile = or_default(k6_nofile(env, machine), 0)
    hard = or_default(machine.get("nofile"), 0)
    if (env.get("K6_NOFILE") or "") != "" and hard > 0 and _int(env["K6_NOFILE"]) > hard:
        out.append(f"K6_NOFILE={text(env['K6_NOFILE'])} is above the hard open-file limit {text(hard)} (ulimit -Hn): "
                   f"k6 runs with {text(hard)}")
        nofile = hard
    if vus is not None and nofile > 0 and (vus / instances) + rules.K6_FILE_HEADROOM > nofile:
        limit = (f"K6_NOFILE={text(env['K6_NOFILE'])}" if (env.get("K6_NOFILE") or "") != ""
                 else "ulimit -Hn, which this machine does not let the suite raise")
        out.append(f"{text(vus)} VUs in {text(instances)} k6 process(es) need about {text(math.ceil(vus / instances))} "
                   f"open files each, but a process may open at most {text(nofile)} ({limit}): connects will fail "
                   f"with 'too many open files' (fail_no_fd); K6_INSTANCES=auto runs "
                   f"{text(rules.k6_instances(vus, nofile))}")
    port_range = or_default(env.get("CLIENT_IP_LOCAL_PORT_RANGE"), "")
    if port_range == "":
        port_range = or_default(machine.get("port_range_default"), "32768-60999")
    bounds = [_int(part) for part in port_range.split("-")]
    ports = bounds[1] - bounds[0] + 1
    if vus is not None and _int(or_default(env.get("CLIENT_ADDRESSES"), "1")) * ports < vus:
        out.append(f"{text(vus)} VUs need {text(vus)} connections at once, but one client address has {text(ports)} "
                   f"ephemeral ports ({port_range}) towards one server port: connects will fail with 'cannot assign "
                   "requested address'")
    mem = or_default(machine.get("mem_available_mb"), 0)
    low_kb, high_kb = rules.k6_kb_per_user(carried_per_vu(env))
    high = None if vus is None else vus * high_kb / 1024
    if high is not None and mem > 0 and high > mem * 0.8 and not refusals(env, machine):
        out.append(f"{text(vus)} VUs may need up to {text(rounded(high, 1))} MB in k6 ({text(low_kb)}-"
                   f"{text(high_kb)} KB each, measured), close to or above the {text(mem)} MB "
                   "available")
    return out


# ---- After the run: the load that happened ------------------------------------------------------


def own_stop_counted(env: Env, row: Row) -> bool:
    """A script of one's own whose cut iterations are its own design, counted: its graceful stop
    and ramp-down are the script's own options (gracefulStop, gracefulRampDown, or k6's default
    it left them at; script_stops names them), not the suite's GRACEFUL_STOP, and every request
    they cut while it waited is a failed request (fail_interrupted, causes.tsv), so the users
    the stop cut off are in the failures, not a load that failed to happen. A cell whose cut
    requests were not counted (fail_interrupted empty: recorded before the scenarios counted
    them) is not: a check that was not made never passes."""
    return env.get("script") is not None and row.get("fail_interrupted") is not None


def design_findings(env: Env, row: Row, machine: dict[str, Any]) -> list[Finding]:
    """Every way the load that happened differs from the load designed: no request completed
    (every request sent was cut off, or none was sent); fewer VUs sent a request than the
    scenario asks for; the first requests of VUs meant to start together spread over more than
    START_SPREAD_LIMIT_MS; iterations cut by the graceful stop (k6's iterations_started minus
    iterations), unless a script of one's own cut them by its own stop (own_stop_counted); k6 at
    90 % or more of every core for a second or more (the generator set the pace); iterations k6
    dropped."""
    scenario = env.get("SCENARIO")
    script = env.get("script")
    vus = designed_vus(env)
    out: list[Finding] = []
    cut_requests = or_default(row.get("fail_interrupted"), 0)
    if or_default(row.get("http_reqs"), 0) - cut_requests == 0 and (scenario in HELLO or script is not None):
        out.append(Finding("none", "no request completed (http_reqs is 0)" if cut_requests == 0 else
                                   f"no request completed (every one of the {text(cut_requests)} sent was cut off "
                                   "while it waited: fail_interrupted)"))
    started = row.get("vus_started")
    if vus is not None and started is not None and started < vus:
        after = row.get("first_request_after_s")
        after_text = "?" if after is None else f"{text(r1(after))} s"
        spread = or_default(row.get("first_request_spread_ms"), 0) / 1000
        duration = f", and DURATION is {env['DURATION']}" if env.get("DURATION") is not None else ""
        out.append(Finding("late", f"only {text(started)} of {text(vus)} VUs sent a request: k6 needed {after_text} from "
                                   f"its start to the first request and spread the first requests over "
                                   f"{text(r2(spread))} s{duration}"))
    spread_ms = row.get("first_request_spread_ms")
    saturated_s = or_default(row.get("k6_cpu_saturated_s"), 0)
    busy = (f"k6 used {text(rounded(row.get('k6_cpu_peak_pct'), 1))} % CPU of {text(machine.get('cpus'))} cores "
            f"for {text(r1(saturated_s))} s")
    spread_late = ((scenario in AT_ONCE or or_default(_script(env).get("at_once"), False)) and spread_ms is not None
                   and spread_ms > _int(env.get("START_SPREAD_LIMIT_MS")))
    if spread_late:
        # A generator short of CPU as it releases the users is why they arrive spread: one
        # reason, said once, with its cause.
        cause = f", {busy} to release them" if saturated_s >= 1 else ""
        out.append(Finding("late", f"the first requests of {text(started)} VUs were spread over "
                                   f"{text(r2(spread_ms / 1000))} s (START_SPREAD_LIMIT_MS="
                                   f"{text(env.get('START_SPREAD_LIMIT_MS'))}){cause}: the users did not arrive at "
                                   "once"))
    interrupted = or_default(row.get("iterations_interrupted"), 0)
    if interrupted > 0 and not own_stop_counted(env, row):
        by = (f"the script's own graceful stop ({env.get('script_stops') or 'its options'}), and the requests they cut "
              "were not counted" if script is not None else f"GRACEFUL_STOP={text(env.get('GRACEFUL_STOP'))}")
        before = f" before REQUEST_TIMEOUT={text(env.get('REQUEST_TIMEOUT'))}" if scenario in HELLO else ""
        out.append(Finding("cut", f"{text(interrupted)} of {text(row.get('iterations_started'))} iterations were "
                                  f"interrupted by {by}{before}"))
    if saturated_s >= 1 and not spread_late:
        out.append(Finding("gen", f"{busy}: the generator, not the target, set the pace"))
    dropped = or_default(row.get("dropped_iterations"), 0)
    if dropped > 0:
        out.append(Finding("late", f"k6 dropped {text(dropped)} iterations it was asked to start (no free VU: raise "
                                   "MAX_VUS, or the generator is short of CPU)"))
    return out


#: The load met a cold JVM (cold_jvm) when the application's median time in the load's first
#: second is more than COLD_RATIO times the median of the rest of the load and at least
#: COLD_GAP_MS above it, and above the rest's p99 too: a warm service answers alike in both, and
#: a first second whose typical request is no slower than the rest's slowest hundredth put the
#: cold start in none of the cell's figures (seed 000's waiting room without a warm-up: 9 ms in
#: its first 8 requests against 2.8 ms, within the rest's p99 of 44.8 ms, the same 56 failed users
#: as warm; run 20261129-011933-seed000-waiting-room). Measured on Spring PetClinic at 60
#: requests a second: 60 ms in the first second, 12 ms in the next, 2.9 ms from the 5th on.
COLD_RATIO = 3
COLD_GAP_MS = 5


def cold_jvm(env: Env, cold: Any) -> Finding | None:
    """A finding when the load met a cold JVM, with the figures (cold: ltsuite.accesslog's
    ColdStart of the cell's load, or None when it could not be compared); None otherwise."""
    if cold is None or cold.ratio is None:
        return None
    if cold.ratio <= COLD_RATIO or cold.first_med_ms - cold.rest_med_ms < COLD_GAP_MS:
        return None
    if cold.first_med_ms <= cold.rest_p99_ms:
        return None
    warmup = env.get("WARMUP") or "0s"
    after = ("without a warm-up (WARMUP=0s)" if not rules.duration_ms(warmup)
             else f"after a warm-up of only WARMUP={warmup}")
    return Finding("cold", f"the load met a cold JVM {after}: the application's median time in the load's first "
                           f"second was {text(r1(cold.first_med_ms))} ms ({text(cold.first_reqs)} requests), "
                           f"{text(r1(cold.ratio))} times the {text(r1(cold.rest_med_ms))} ms of the rest "
                           f"({text(cold.rest_reqs)} requests); a longer WARMUP lets it load its classes and "
                           "compile its code first")


# ---- After the run: predicted beside measured -----------------------------------------------------


def one_attempt_burst(env: Env, sysctls: dict[str, dict[str, str]]) -> bool:
    """Every VU makes one attempt that the server holds at least as long as the failing users
    keep trying (syn_window_s; behind nginx, as long as nginx keeps trying to reach the target,
    proxy_window_s), so the users past capacity fail and each of their SYNs meets a full queue:
    a burst or keepalive cell of one request per VU, or a spike whose delay outlasts its
    duration."""
    window_s = proxy_window_s(env, sysctls) if proxied(env) else syn_window_s(env, sysctls)
    delay_ms = _int(env.get("DELAY_MS"))
    timeout_ms = _duration(env, "REQUEST_TIMEOUT")
    if window_s is None:
        return False
    scenario = env.get("SCENARIO")
    if scenario in ("burst", "keepalive"):
        return _int(env.get("REQUESTS_PER_VU")) == 1 and min(delay_ms, timeout_ms) >= window_s * 1000
    if scenario == "spike":
        duration_ms = _duration(env, "DURATION")
        return (delay_ms >= duration_ms and window_s * 1000 >= duration_ms
                and min(delay_ms, timeout_ms) >= window_s * 1000)
    return False


def client_ports(env: Env, sysctls: dict[str, dict[str, str]]) -> Any:
    """Connections the client can hold towards one server address and port: the ephemeral range
    (net.ipv4.ip_local_port_range, as the client namespace reported it; Linux
    __inet_hash_connect() picks a free port from it per destination) times CLIENT_ADDRESSES;
    None if unknown."""
    port_range = (sysctls.get("client") or {}).get("net.ipv4.ip_local_port_range")
    if port_range is None:
        return None
    bounds = [int(n) for n in re.findall(r"[0-9]+", port_range)]
    if len(bounds) != 2:
        return None
    return (bounds[1] - bounds[0] + 1) * _int(or_default(env.get("CLIENT_ADDRESSES"), "1"))


def predictions(env: Env, sysctls: dict[str, dict[str, str]], machine: dict[str, Any]) -> Row:
    """The predicted_* columns (None where no rule applies): the server holds at most
    min(VUs, capacity, client ports, client files) connections (sk_acceptq_is_full(),
    __sys_listen(); capacity bounded by the target's open-file limit,
    server_capacity_with_files; client files: client_files); users past the client's ports or
    files fail at once ("cannot assign requested address", "too many open files") and send no
    SYN; users with a port but no room on the server send their SYNs into a full queue, each
    one a ListenOverflows (tcp_v4_syn_recv_sock()) and all but the first a TCPSynRetrans
    (rules.syns_within); throughput and the latest answer follow the thread pool's waves.

    Behind nginx (PROXY=nginx) the users connect to nginx, which takes them all at once while
    its own queue and worker_connections hold (proxy_holds); the server's capacity still holds
    at the server, and the connections that meet its full queue are nginx's: each sends its
    SYNs on the server namespace's schedule within PROXY_CONNECT_TIMEOUT (proxy_window_s), each
    one a ListenOverflows, and its user gets a 504 (predicted_failed_users, counted in
    proxy_504), while the users' own SYNs are answered at once (predicted_syn_retrans 0)."""
    capacity = server_capacity_with_files(env, sysctls, machine)
    vus = designed_vus(env)
    scenario = env.get("SCENARIO")
    # The client's sockets: its ports, and the files its k6 processes may open.
    ports = smallest([client_ports(env, sysctls), client_files(env, machine)])
    # A burst's users leave after their answer: their connections are all open at once only if
    # each is held longer than the burst takes to arrive.
    if (capacity is None or vus is None or scenario == "waiting-room"
            or (scenario == "keepalive" and env.get("CONNECTION_REUSE") != "1")
            or (per_request_upstream(env) and below(vus, capacity))
            or (scenario == "burst" and _int(env.get("DELAY_MS"))
                < 2 * _int(or_default(env.get("START_SPREAD_LIMIT_MS"), "1000")))):
        conns = None
    else:
        conns = min(vus, capacity, or_default(ports, vus))
    with_port = smallest([vus, or_default(ports, vus)])
    # Past the ports alone (the server has room for every user with a port), users fail at
    # once, so holding the connections does not matter.
    ports_only = (scenario in ("burst", "keepalive") and or_default(env.get("REQUESTS_PER_VU"), "1") == "1"
                  and conns is not None and at_least(capacity, with_port) and below(with_port, vus))
    proxy = proxied(env)
    failed = vus - conns if conns is not None and (one_attempt_burst(env, sysctls) or ports_only) else None
    if proxy and not proxy_holds(env, sysctls, with_port):
        failed = None
    overflowing = None if failed is None else with_port - conns
    retries, linear = proxy_syn_schedule(sysctls) if proxy else (syn_retries(sysctls), syn_linear(sysctls))
    window_s = proxy_window_s(env, sysctls) if proxy else syn_window_s(env, sysctls)
    syns = None if failed is None else _syns_within(retries, linear, window_s)
    workers = smallest(_workers(env))
    delay_ms = _int(env.get("DELAY_MS"))
    hello = scenario in HELLO
    tps = None
    if conns is not None and workers is not None and hello:
        tps = rules.closed_tps(conns, workers, delay_ms, _int(or_default(env.get("THINK_TIME_MS"), "0")))
        tps = None if tps is None else r1(tps)
    lat_max = None
    if conns is not None and workers is not None and delay_ms != 0 and hello:
        lat_max = smallest([rules.waves_ms(conns, workers, delay_ms), _duration(env, "REQUEST_TIMEOUT")])
    return {
        "predicted_server_conns_peak": conns,
        "predicted_failed_users": failed,
        "predicted_listen_overflows": None if failed is None else overflowing * syns,
        "predicted_syn_retrans": None if failed is None else 0 if proxy else overflowing * (syns - 1),
        "predicted_tps": tidy(tps),
        "predicted_lat_max_ms": tidy(lat_max),
    }


def prediction_verdict(env: Env, sysctls: dict[str, dict[str, str]], predicted: Row, row: Row,
                       deltas: dict[str, dict[str, int]], machine: dict[str, Any],
                       findings: list[Finding]) -> Row:
    """{prediction_check, prediction_notes, predicted_failed_users_from}. The kernel figures
    must match: the connection peak within the queue race's slack (rules.capacity_slack; the
    port range's PORT_SLACK when the client's ports are the limit), the failed users (counted
    as dial failures when connect() gives up before REQUEST_TIMEOUT, as failed requests when
    every connected user is answered in time), ListenOverflows and SYN retransmits exactly.
    Latency and throughput are shown, not judged. A mismatch is explained from the cell's
    counters when they can: SYN cookies (tcp_syncookies, cookie_v4_check()), SYN-ACK
    retransmits, an exhausted port range, a late generator."""
    slack = rules.capacity_slack(machine.get("cpus") or 1)
    peak = row.get("server_conns_peak")
    srv = deltas.get("server") or {}
    cookies_knob = or_default(env.get("TCP_SYNCOOKIES"), "")
    timeout_ms = _duration(env, "REQUEST_TIMEOUT")
    present = [w for w in _workers(env) if w is not None]
    workers = min(present) if present else None
    ports = client_ports(env, sysctls)
    files = client_files(env, machine)
    vus = designed_vus(env)
    p_conns = predicted.get("predicted_server_conns_peak")
    file_bound = (files is not None and p_conns is not None and p_conns == files and below(files, vus)
                  and not (ports is not None and ports < files))
    # The target's files bound it: the JVM may open a few more of its own during the load (the
    # access log, a jar of a class first loaded then) than it held as the load started.
    capacity = cell_capacity(env, sysctls)
    target_files_bound = (p_conns is not None and capacity is not None and p_conns < capacity
                          and p_conns == server_capacity_with_files(env, sysctls, machine))
    p_failed = predicted.get("predicted_failed_users")
    p_overflows = predicted.get("predicted_listen_overflows")
    port_bound = ports is not None and p_conns is not None and p_conns == ports and below(ports, vus)
    proxy = proxied(env)
    retries, linear = syn_retries(sysctls), syn_linear(sysctls)
    window_s = syn_window_s(env, sysctls)
    if proxy:
        retries, linear = proxy_syn_schedule(sysctls)
        window_s = proxy_window_s(env, sysctls)
    failed_measure: tuple[str, Any] | None = None
    if p_failed is None:
        failed_measure = None
    elif file_bound and or_default(p_overflows, 0) == 0:
        failed_measure = ("fail_no_fd", row.get("fail_no_fd"))
    elif port_bound and or_default(p_overflows, 0) == 0:
        failed_measure = ("fail_connect", row.get("fail_connect"))
    elif proxy:
        failed_measure = ("proxy_504", row.get("proxy_504"))
    elif retries is not None and rules.syn_give_up_s(retries, linear) * 1000 < timeout_ms:
        failed_measure = ("fail_connect", row.get("fail_connect"))
    elif workers is not None and below(rules.waves_ms(p_conns, workers, _int(env.get("DELAY_MS"))), timeout_ms):
        failed_measure = ("failed_reqs", row.get("failed_reqs"))
    syns = None
    if p_failed is not None and p_overflows is not None:
        syns = _syns_within(retries, linear, window_s)
    # Users with a client port and no room on the server: each SYN they send meets a full queue.
    overflowing = None if not syns else p_overflows / syns
    late_room = acceptor_late_room(env, syns, p_conns, vus, file_bound or port_bound or target_files_bound)
    checks: list[tuple[str, Any, Any, bool]] = []
    if p_conns is not None and peak is not None:
        if file_bound:
            ok = abs(peak - p_conns) <= FILE_SLACK
        elif target_files_bound:
            ok = peak <= p_conns + slack and peak >= p_conns - FILE_SLACK
        elif port_bound:
            ok = peak <= p_conns and peak >= p_conns - PORT_SLACK
        else:
            ok = peak >= p_conns - late_room and peak <= p_conns + (slack if below(p_conns, vus) else 0)
        checks.append(("server_conns_peak", p_conns, peak, ok))
    if p_failed is not None and peak is not None:
        # Users beyond capacity: the queue race may let a few more in, and each of them sends no
        # further SYN; a late acceptor may let fewer in, and each of them is one more overflow.
        extra_in = max(peak - p_conns, -late_room)
        if failed_measure is not None:
            what, measured = failed_measure
            if file_bound:
                ok = measured is not None and abs(measured - p_failed) <= FILE_SLACK
            elif port_bound:
                ok = at_least(measured, p_failed) and at_most(measured, p_failed + PORT_SLACK)
            else:
                ok = measured == p_failed - extra_in
            checks.append((f"failed users ({what})", p_failed, measured, ok))
        expected = None if overflowing is None else max(overflowing - extra_in, 0)
        checks.append(("listen_overflows", p_overflows, row.get("listen_overflows"),
                       expected is not None and row.get("listen_overflows") == expected * syns))
        retrans = 0 if proxy else None if expected is None else expected * (syns - 1)
        checks.append(("syn_retrans", predicted.get("predicted_syn_retrans"), row.get("syn_retrans"),
                       retrans is not None and row.get("syn_retrans") == retrans))
    if proxy:
        checks.extend(proxy_checks(env, sysctls, row, vus, port_bound or file_bound, retries, linear, window_s))
    off = [c for c in checks if not c[3]]
    out: Row
    if not checks:
        out = {"prediction_check": None, "prediction_notes": None}
    elif not off:
        out = {"prediction_check": "match", "prediction_notes": None}
        if late_room and peak is not None and p_conns is not None and peak < p_conns:
            out["prediction_notes"] = acceptor_late_note(env, p_conns - peak, proxy)
    else:
        what = "; ".join(f"{name} {text(measured)} where {text(pred)} was predicted" for name, pred, measured, _ in off)
        cookies = or_default(srv.get("TcpExtTCPReqQFullDoCookies"), 0) + or_default(srv.get("TcpExtSyncookiesSent"), 0)
        more_overflows = or_default(row.get("listen_overflows"), 0) - or_default(p_overflows, 0)
        more_retrans = or_default(row.get("syn_retrans"), 0) - or_default(predicted.get("predicted_syn_retrans"), 0)
        why = []
        if cookies > 0:
            every = ("for every SYN (tcp_syncookies=2)" if cookies_knob == "2"
                     else "because its SYN queue counted as full")
            why.append(f"the server sent SYN cookies (TCPReqQFullDoCookies {text(srv.get('TcpExtTCPReqQFullDoCookies', 0))}, "
                       f"SyncookiesRecv {text(srv.get('TcpExtSyncookiesRecv', 0))}) {every}: those clients completed the "
                       "handshake while the accept queue had no room, their final ACKs overflowed it (counted in "
                       "ListenOverflows) and they retransmitted data instead of SYNs, failing as request timeouts")
        if (peak is not None and p_conns is not None and peak < p_conns
                and or_default(row.get("listen_overflows"), 0) == 0 and or_default(row.get("failed_reqs"), 0) == 0
                and at_least(or_default(row.get("http_reqs"), 0), vus)):
            why.append(f"every user got in (no overflow, no failed request) but not all at once: the first answers "
                       f"(DELAY_MS={text(env.get('DELAY_MS'))}) closed connections while others were still connecting, "
                       "and the peak is sampled every SAMPLE_INTERVAL")
        if or_default(row.get("fail_no_local_port"), 0) > 0:
            why.append(f"{text(row['fail_no_local_port'])} requests failed with 'cannot assign requested address': the "
                       f"client ran out of ephemeral ports ({text(or_default(ports, '?'))} towards the server's address "
                       "and port)")
        if or_default(row.get("fail_no_fd"), 0) > 0:
            why.append(f"{text(row['fail_no_fd'])} requests failed with 'too many open files': k6's "
                       f"{text(k6_instances(env, machine))} process(es) ran out of file descriptors "
                       f"({text(k6_nofile(env, machine))} each)")
        if or_default(srv.get("TcpExtTCPSynRetrans"), 0) > 0:
            why.append(f"the server retransmitted SYN-ACKs {text(srv['TcpExtTCPSynRetrans'])} times (server "
                       "TCPSynRetrans): handshakes whose SYN found room but whose final ACK met a full accept queue "
                       "were dropped there (counted in ListenOverflows); those clients believed they were connected, "
                       "sent no more SYNs and failed as request timeouts")
        if or_default(srv.get("TcpExtTCPReqQFullDrop"), 0) > 0:
            # tcp_conn_request() drops a SYN when inet_csk_reqsk_queue_is_full() (SYN queue at the
            # backlog) and no cookie may be sent; the predictions model the accept queue only.
            rtt = _int(env.get("NET_RTT_MS")) or 0
            held = (f"a round trip each (NET_RTT_MS={text(env.get('NET_RTT_MS'))})" if rtt > 0
                    else "until their final ACKs")
            why.append(f"the server dropped {text(srv['TcpExtTCPReqQFullDrop'])} SYNs because its SYN queue was full "
                       f"(TCPReqQFullDrop, tcp_syncookies=0): half-open handshakes waited there {held} and took the "
                       "backlog's places before the accept queue filled; those users retried on the SYN schedule")
        late = [f.note for f in findings if f.flag == "late"]
        if late:
            why.append(f"k6 did not deliver the designed load ({late[0]})")
        if p_overflows is not None and cookies == 0 and more_overflows > 0 and more_overflows == more_retrans:
            why.append(f"{text(more_overflows)} more overflows and as many more SYN retransmits than predicted: users "
                       "whose first SYNs met a full queue and who connected on a retry, while Tomcat was still "
                       "taking connections off the queue")
        if proxy:
            why.extend(proxy_reasons(env, row))
        if peak is not None and p_conns is not None and peak > p_conns + slack:
            why.append(f"the server held more connections than max-connections + backlog + 1 + {text(slack)} (the "
                       "queue race allows CPUs - 1 more): check the effective accept-count in target.log")
        reason = "; ".join(why) if why else "nothing in the cell's counters explains the difference"
        out = {"prediction_check": "mismatch", "prediction_notes": f"{what}: {reason}"}
    bound = limit_note(env, sysctls, machine, predicted)
    if bound is not None:
        out["prediction_notes"] = bound if out["prediction_notes"] is None else f"{out['prediction_notes']}; {bound}"
    # Which measured column the failed users were checked against (the report draws the
    # prediction beside that one).
    out["predicted_failed_users_from"] = None if failed_measure is None else failed_measure[0]
    return out


def acceptor_late_room(env: Env, syns: int | None, p_conns: Any, vus: Any, client_bound: bool) -> int:
    """How many fewer connections than server_capacity a saturated server may hold when each
    user (or nginx, for each user) sends one SYN within its window: Tomcat's acceptor takes
    connections off the accept queue only once it runs, and a burst's SYNs may all meet the
    queue (backlog + 1) before it has taken the first. Each place it frees after that is never
    taken again, as no second SYN comes. Measured: 5 of 26 held bursts behind nginx (6 users,
    max-connections 1, accept-count 1) held 2, with 4 overflows and 4 504s against 3 and 3.
    At most max-connections fewer (the acceptor took none in time: the queue's backlog + 1
    held); 0 where the burst does not fill the server (fewer users than its capacity), with SYN
    retries, where a later SYN takes the freed place, or where the client's ports or files are
    the bound."""
    max_connections = _int(env.get("TOMCAT_MAX_CONNECTIONS") or "")
    if syns != 1 or client_bound or max_connections is None or p_conns is None or not below(p_conns, vus):
        return 0
    return max_connections


def acceptor_late_note(env: Env, fewer: int, proxy: bool) -> str:
    """The note of a cell where the acceptor was late (acceptor_late_room): why fewer were held."""
    who = (f"nginx's connects sent one SYN each within PROXY_CONNECT_TIMEOUT={text(env.get('PROXY_CONNECT_TIMEOUT'))}"
           if proxy else "the users sent one SYN each before their requests timed out")
    return (f"the server held {text(fewer)} fewer than max-connections + backlog + 1, with as many more overflows "
            f"and failed users: the burst's SYNs filled the accept queue before Tomcat's acceptor took its first "
            f"connection off it, and {who}, so no later SYN took the places it freed")


def proxy_checks(env: Env, sysctls: dict[str, dict[str, str]], row: Row, vus: Any, client_bound: bool,
                 retries: int, linear: int, window_s: Any) -> list[tuple[str, Any, Any, bool]]:
    """The checks across the tiers of a cell behind nginx, (name, predicted, measured, ok): no
    user fails to connect while nginx takes them all (proxy_holds; not judged where the
    client's own ports or files are the limit), and where each of nginx's connects sends one
    SYN within PROXY_CONNECT_TIMEOUT (rules.syns_within on the server namespace's schedule),
    each SYN that met the server's full accept queue (ListenOverflows, tcp_conn_request()) is
    one connect nginx gave up on: proxy_upstream_connect_timeouts = listen_overflows. With
    retransmitted SYNs a connect may get in on a later one, so no count is judged there."""
    checks: list[tuple[str, Any, Any, bool]] = []
    connect = row.get("fail_connect")
    if proxy_holds(env, sysctls, vus) and not client_bound and connect is not None:
        checks.append(("fail_connect", 0, connect, connect == 0))
    overflows, timeouts = row.get("listen_overflows"), row.get("proxy_upstream_connect_timeouts")
    if (window_s is not None and _syns_within(retries, linear, window_s) == 1 and overflows is not None
            and timeouts is not None):
        checks.append(("proxy_upstream_connect_timeouts", overflows, timeouts, timeouts == overflows))
    return checks


def proxy_reasons(env: Env, row: Row) -> list[str]:
    """Why a cell behind nginx differs from the rules, from nginx's own figures."""
    why = []
    if or_default(row.get("fail_connect"), 0) > 0:
        why.append(f"{text(row['fail_connect'])} users failed to connect to nginx itself: its accept queue "
                   f"(PROXY_BACKLOG={text(env.get('PROXY_BACKLOG'))}) or its worker_connections "
                   f"({text(env.get('PROXY_WORKER_CONNECTIONS'))}) ran out")
    if or_default(row.get("proxy_502"), 0) > 0:
        why.append(f"nginx answered {text(row['proxy_502'])} requests with a 502: the target refused or reset its "
                   "connections (tcp_abort_on_overflow=1 resets a final ACK that meets a full queue) instead of "
                   "leaving its SYNs unanswered")
    return why


# ---- Command line -------------------------------------------------------------------------------

USAGE = "usage: python3 -m ltsuite.design warnings|refusals|resolve CELL_ENV MACHINE_JSON [INSPECTED_JSON]\n"


def answers(command: str, env: dict[str, str], machine: dict[str, Any], inspected: dict[str, Any] | None) -> list[str]:
    """One cell's answer to command, a line each: "warnings" (design_warnings), "refusals" (refusals) or
    "resolve" (KEY=VALUE for each knob left at auto, resolved). machine: {cpus, nofile,
    mem_available_mb}; inspected: k6 inspect of a script of one's own, or None."""
    full = with_script(env, inspected)
    machine = {**machine, "vu_start_rate": _int(or_default(full.get("K6_VU_START_RATE"), "0")) or 0}
    if command == "resolve":
        return [f"{key}={value}" for key, value in resolved(full, machine).items()]
    return list((design_warnings if command == "warnings" else refusals)(full, machine))


def main(argv: list[str] | None = None) -> int:
    """`warnings CELL_ENV MACHINE_JSON [INSPECTED_JSON]`: one warning a line; `refusals ...`:
    one reason a line why the cell cannot run here; `resolve ...`: KEY=VALUE for each knob
    left at auto (resolved)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (3, 4) or args[0] not in ("warnings", "refusals", "resolve"):
        sys.stderr.write(USAGE)
        return 2
    env = read_cell_env(Path(args[1]))
    if env is None:
        sys.stderr.write(f"{args[1]}: cannot read the cell's settings\n")
        return 1
    inspected = json.loads(args[3]) if len(args) == 4 and args[3] else None
    for line in answers(args[0], env, json.loads(args[2]), inspected):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
