"""The three sources of a user's connect time, told apart in a cell: the load generator's own
delay, the network asked (NET_RTT_MS) and the delayer that makes it (ltsuite.netdelay).

The generator. A burst's users are released in about a quarter of a second; the sampler's
once-a-second rows cannot see k6 saturate the cores for that long. Its k6 trace (k6-cpu.tsv,
scripts/lib/sampler.py --k6-trace: every 50 ms, k6's CPU ticks and the machine's busy and total
ticks) can: ``release`` reads k6's CPU and the machine's busy share over the release (the first to
the last VU's first request, lt_vu_first_request, widened to the trace points around it). k6 set
the users' pace there (``release_finding``, a design finding: generator_bound 1) when it used at
least GEN_SHARE of every core, surely: the CPU it used less what the ticks' resolution may have
added (TICK_ERROR a process), since over one 50 ms trace step a tick of 10 ms is 20 % of a core.
When k6 had less but the machine was at least BUSY_SHARE busy (the target and other processes
took the rest), k6 could not get the CPU to release the users at once
either: ``busy_note`` says so in the row's notes, a fact of the machine the cell ran on rather
than a load other than the one designed. Either way the wait is in every timing of the users
(connect, first-request spread, latency).

The network asked. Where neither k6 nor the machine was saturated while the users were released and no SYN
was retransmitted (a connect is then one round trip and the kernels' own microseconds), the
users' median new connect is the round trip users got: off NET_RTT_MS by more than max(NET_ABS_MS,
NET_SHARE of it) the cell is not as designed (``network_finding``), both figures in the note.

The split (``split_columns``): connect_delayer_ms is the RTT the delayer applied less the one asked
(its unread wait included: ltsuite.netdelay), connect_beyond_rtt_ms the users' median new connect
less the RTT applied: the generator's and the kernels' own part.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .design import Finding
from .numbers import text, to_number

#: k6 at this share of every core while it released the users: it set their pace (the sampler's
#: k6_cpu_saturated_s uses the same 90 %).
GEN_SHARE = 0.9
#: The machine this busy while the users were released: k6 could not have had more. Measured (make
#: bench, results/bench-20261129-004623, bursts of 1,000 and 2,000 users at NET_RTT_MS=50 on 2
#: shared cores): with the machine 94 % and 92 % busy over the release and k6 at 51-70 % CPU, the
#: users' median new connect was 60 and 213 ms beyond the RTT the delayer applied.
BUSY_SHARE = 0.9
#: A connect median off NET_RTT_MS by more than max(NET_ABS_MS, NET_SHARE x NET_RTT_MS) is not the
#: round trip asked (ms; issue "what users' timings hold").
NET_ABS_MS = 2.0
NET_SHARE = 0.1
#: What the ticks' resolution may add to a process's CPU between two readings (ticks): utime and
#: stime of /proc/PID/stat are each whole ticks (the kernel's nsec_to_clock_t truncates), so each
#: one's difference is within one tick of the time used. Over a release read across one 50 ms
#: trace step (a release of a few ms), two ticks are 40 % of a core: the trace of cell 01 of a
#: tests/integration/own-app.bats run (16 users, their first requests 2 ms apart) read k6 at 194 %
#: of 2 cores over 46.4 ms, 9 ticks, which 7 ticks (152 %) could also have given.
TICK_ERROR = 2


@dataclass(frozen=True)
class Release:
    """k6's CPU (100 = one core) and the machine's busy share (100 = every core) over the
    window measured (ms: at least one trace step) around the users' release."""

    k6_cpu_pct: float
    busy_pct: float
    window_ms: float
    #: k6's CPU less what the ticks' resolution may have added (TICK_ERROR a process), the least
    #: it surely used; None where only the figures above are known.
    k6_cpu_sure_pct: float | None = None


def read_trace(path: Path) -> list[tuple[float, int, int, int, int]]:
    """The trace's lines (epoch s, k6 ticks, busy ticks, all ticks, set of k6 processes; 0 in a
    trace of four columns; the target's ticks of a sixth column are read_target's); [] when absent.
    A line cut short (the sampler stopped mid-write) is left out."""
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        cols = line.split("\t")
        if len(cols) not in (4, 5, 6):
            continue
        try:
            out.append((float(cols[0]), int(cols[1]), int(cols[2]), int(cols[3]), int(cols[4]) if len(cols) == 5 else 0))
        except ValueError:
            continue
    return out


def read_target(path: Path) -> dict[float, int]:
    """The target JVM's CPU ticks by the trace line's epoch s (the sixth column, sampler.py's
    --target-mark); lines without it, or with it empty (no JVM found), are left out."""
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        cols = line.split("\t")
        if len(cols) == 6 and cols[5].isdigit():
            try:
                out[float(cols[0])] = int(cols[5])
            except ValueError:
                continue
    return out


def release(trace: list[tuple[float, int, int, int, int]], start_s: float, end_s: float,
            clk_tck: int, processes: int = 1) -> Release | None:
    """k6's and the machine's CPU from the last trace point at or before start_s to the first at
    or after end_s, and the least k6 surely used (TICK_ERROR ticks a process of its PROCESSES
    less); None when the trace does not cover the window, or the set of k6 processes read changed
    within it (a sum over other processes is no rate)."""
    before = [p for p in trace if p[0] <= start_s]
    if not before:
        return None
    first = before[-1]
    after = [p for p in trace if p[0] >= end_s and p[0] > first[0]]  # one step at least
    if not after:
        return None
    last = after[0]
    if any(p[4] != first[4] for p in trace if first[0] <= p[0] <= last[0]):
        return None
    seconds = last[0] - first[0]
    if seconds <= 0 or last[1] < first[1] or last[3] <= first[3]:
        return None
    sure_ticks = max(0, last[1] - first[1] - TICK_ERROR * processes)
    return Release(k6_cpu_pct=round((last[1] - first[1]) / clk_tck / seconds * 100, 1),
                   busy_pct=round((last[2] - first[2]) / (last[3] - first[3]) * 100, 1),
                   window_ms=round(seconds * 1000, 1),
                   k6_cpu_sure_pct=round(sure_ticks / clk_tck / seconds * 100, 1))


def cell_release(cell_dir: Path, first_request: dict[str, Any] | None, processes: int = 1) -> Release | None:
    """The release of a cell: its k6-cpu.tsv over lt_vu_first_request's min to max (epoch ms),
    k6 running as PROCESSES processes (K6_INSTANCES)."""
    if not first_request or first_request.get("min") is None or first_request.get("max") is None:
        return None
    return release(read_trace(cell_dir / "k6-cpu.tsv"), first_request["min"] / 1000, first_request["max"] / 1000,
                   os.sysconf("SC_CLK_TCK"), processes)


def saturated(rel: Release | None, cpus: int | None) -> bool | None:
    """k6 at GEN_SHARE of every core or the machine at BUSY_SHARE during the release; None unknown."""
    if rel is None or not cpus:
        return None
    return k6_saturated(rel, cpus) or rel.busy_pct >= BUSY_SHARE * 100


def _every_core(pct: float, cpus: int | None) -> bool:
    """A CPU figure (100 = one core) at GEN_SHARE of every one of CPUS cores."""
    return bool(cpus) and pct >= GEN_SHARE * 100 * (cpus or 0)


def k6_saturated(rel: Release | None, cpus: int | None) -> bool:
    """k6 itself at GEN_SHARE of every core during the release, surely (k6_cpu_sure_pct where
    the release has it)."""
    if rel is None:
        return False
    return _every_core(rel.k6_cpu_pct if rel.k6_cpu_sure_pct is None else rel.k6_cpu_sure_pct, cpus)


def release_columns(rel: Release | None) -> dict[str, Any]:
    """k6_release_cpu_pct, machine_release_busy_pct, release_window_ms (None when unmeasured)."""
    return {"k6_release_cpu_pct": None if rel is None else rel.k6_cpu_pct,
            "machine_release_busy_pct": None if rel is None else rel.busy_pct,
            "release_window_ms": None if rel is None else rel.window_ms}


def _busy(rel: Release, cpus: int | None, whose: str) -> str:
    return (f"k6 used {text(rel.k6_cpu_pct)} % CPU of {text(cpus)} cores (the machine {text(rel.busy_pct)} % busy) "
            f"over the {text(rel.window_ms)} ms it released the users in: {whose}, and that wait is in their "
            "connect times (t_connect_*; connect_beyond_rtt_ms is about how much of the median), "
            "first_request_spread_ms and lat_*")


def release_finding(rel: Release | None, cpus: int | None) -> Finding | None:
    """A "gen" finding when k6 itself set the users' pace as it released them (k6_saturated),
    naming the timings it inflated; None otherwise."""
    if rel is None or not k6_saturated(rel, cpus):
        return None
    return Finding("gen", _busy(rel, cpus, "the generator set their pace"))


def busy_note(rel: Release | None, cpus: int | None) -> str | None:
    """The row's note when k6 was not surely at GEN_SHARE but the machine at BUSY_SHARE over the
    release: the target and other processes took the rest, or, where k6 read at GEN_SHARE but
    the ticks' resolution leaves it unsure, that neither is told; None otherwise."""
    if rel is None or k6_saturated(rel, cpus) or not saturated(rel, cpus):
        return None
    if _every_core(rel.k6_cpu_pct, cpus):
        return _busy(rel, cpus, f"k6 itself at every core as read, but surely only at {text(rel.k6_cpu_sure_pct)} % "
                                "(the ticks of so short a window), so whether k6 or the machine's other processes "
                                "set their pace is not told")
    return _busy(rel, cpus, "the rest of the CPU went to the target and the machine's other processes, so k6 "
                            "could not get the CPU to release them at once")


def split_columns(env: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """connect_delayer_ms (the RTT applied less NET_RTT_MS) and connect_beyond_rtt_ms (the users'
    median new connect less the RTT applied, or less 0 without a delayer); None when unmeasured."""
    asked = float(to_number(env.get("NET_RTT_MS") or "0") or 0)
    applied = row.get("net_rtt_applied_ms")
    median = row.get("t_connect_new_med_ms")
    base = applied if applied is not None else (0.0 if asked == 0 else None)
    return {"connect_delayer_ms": None if applied is None else round(applied - asked, 3),
            "connect_beyond_rtt_ms": None if median is None or base is None else round(median - base, 3)}


def network_finding(env: dict[str, Any], row: dict[str, Any], rel: Release | None,
                    cpus: int | None) -> Finding | None:
    """A "net" finding when the users' median new connect is off NET_RTT_MS by more than
    max(NET_ABS_MS, NET_SHARE of it), where a round trip was asked (NET_RTT_MS > 0: at 0 nothing
    was asked of the network, and 50 users on the 2 shared cores connected in a median 2.3-2.7 ms,
    runs 20261129-005132 and -005856-timings-burst), the generator was not saturated while it
    released them and no SYN was retransmitted (syn_retrans 0); None otherwise or when unknown."""
    if saturated(rel, cpus) is not False or row.get("syn_retrans") != 0:
        return None
    if float(to_number(env.get("NET_RTT_MS") or "0") or 0) <= 0:
        return None
    median = row.get("t_connect_new_med_ms")
    if median is None:
        return None
    asked = float(to_number(env.get("NET_RTT_MS") or "0") or 0)
    allowed = max(NET_ABS_MS, NET_SHARE * asked)
    if abs(median - asked) <= allowed:
        return None
    applied = row.get("net_rtt_applied_ms")
    by = ("" if applied is None else f"; the delayer applied {text(applied)} ms, so "
          f"{text(round(median - applied, 3))} ms came from elsewhere")
    assert rel is not None
    return Finding("net", f"the users' median new connect was {text(median)} ms where NET_RTT_MS={text(asked)} "
                          f"was asked (off by more than {text(allowed)} ms, with k6 at {text(rel.k6_cpu_pct)} % CPU "
                          f"and the machine {text(rel.busy_pct)} % busy while it released them, and no SYN "
                          f"retransmitted{by}): the users did not get the round trip asked")
