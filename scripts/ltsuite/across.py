"""Findings across cells: for each axis of a run's matrix, what changed with it and what did not,
with the rule that explains it, the cell that met the goal first when one is set, and the knob
that made no difference. Made from the rows (row.json) and the manifest's axes only, so every
number is a column of a cell.

The rules:
  - Two cells are compared along an axis when every other axis has the same value in both (the
    matrix's cross product makes such pairs); a run of repetitions (REPEAT) compares each
    figure's median over a cell's repetitions.
  - An outcome changed with the axis when it differs between such cells: a count
    (server_conns_peak: connections held, failed_reqs) by any amount, a time or a rate
    (lat_p99_ms, tps) by more than CHANGE_PCT percent of the smaller value (5, make compare's
    THRESHOLD_PCT default). An axis that changed no outcome in any pair made no difference.
  - Connections held are explained by DESIGN.md's accept-queue formula: a saturated server holds
    max-connections + the listen backlog + 1 (queue_capacity), where the backlog
    (listen_backlog) is min(accept-count, somaxconn); so somaxconn below accept-count caps it,
    and a knob that moved the backlog moved the connections held by as much.
  - With a goal (GOAL_P99_MS in the cells' settings; GOAL_FAILED_RATE with it, the failed share
    of the requests), the first cell in the run's order whose lat_p99_ms and failed share meet
    both is named; when none does, that is said.

  python3 -m ltsuite.across RUN_DIR    prints the lines
"""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cellfiles import read_cell_env
from .formats import load_run

# Percent a time or rate must move to count as changed (make compare's THRESHOLD_PCT default).
CHANGE_PCT = 5.0
# Each knob as the sentences name it.
KNOB_WORDS = {
    "TOMCAT_ACCEPT_COUNT": "accept-count",
    "TOMCAT_MAX_CONNECTIONS": "max-connections",
    "TOMCAT_MAX_THREADS": "threads.max",
    "SOMAXCONN": "somaxconn",
}


@dataclass(frozen=True)
class Outcome:
    """One figure compared along an axis: its column, its words, and whether any difference
    counts (a count) or only one beyond CHANGE_PCT (a time or rate)."""

    column: str
    words: str
    exact: bool


OUTCOMES = (
    Outcome("server_conns_peak", "connections held", True),
    Outcome("failed_reqs", "failed requests", True),
    Outcome("lat_p99_ms", "the answered users' p99 ms", False),
    Outcome("tps", "requests a second", False),
)


@dataclass(frozen=True)
class Cell:
    """A cell's row figures (medians over its repetitions) and its axis values."""

    name: str
    axes: dict[str, str]
    figures: dict[str, float | None]
    settings: dict[str, str]


def _number(value: Any) -> float | None:
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None


def _show(value: float | None) -> str:
    if value is None:
        return "unmeasured"
    return f"{value:,.0f}" if value == int(value) or abs(value) >= 100 else f"{value:,.1f}"


def _knob(axis: str) -> str:
    return KNOB_WORDS.get(axis, axis)


COLUMNS = [o.column for o in OUTCOMES] + ["listen_backlog", "queue_capacity", "http_reqs"]


def cells_of(rows: list[dict[str, Any]], envs: dict[str, dict[str, str]] | None = None) -> list[Cell]:
    """The run's cells in its order, a cell's repetitions (<cell>_rep-<k>) as one, each figure
    their median; only cells that ran (status ok)."""
    envs = envs or {}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("status") not in (None, "ok"):
            continue
        name = str(row.get("cell") or "?").split("_rep-")[0]
        grouped.setdefault(name, []).append(row)
    cells = []
    for name, reps in grouped.items():
        figures = {}
        for column in COLUMNS:
            values = [v for v in (_number(r.get(column)) for r in reps) if v is not None]
            figures[column] = statistics.median(values) if values else None
        axes = {k: str(v) for k, v in (reps[0].get("axes") or {}).items()}
        settings = envs.get(str(reps[0].get("cell")), {})
        cells.append(Cell(name, axes, figures, settings))
    return cells


def _changed(outcome: Outcome, a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    if outcome.exact:
        return a != b
    low = min(abs(a), abs(b))
    return abs(a - b) > (CHANGE_PCT / 100.0) * low if low > 0 else a != b


def _setting(cell: Cell, knob: str) -> str | None:
    return cell.axes.get(knob) or cell.settings.get(knob)


def _backlog_rule(cell: Cell) -> str | None:
    """Why a cell's backlog is what it is, when somaxconn capped accept-count."""
    backlog, accept, somaxconn = (cell.figures.get("listen_backlog"), _number(_setting(cell, "TOMCAT_ACCEPT_COUNT")),
                                  _number(_setting(cell, "SOMAXCONN")))
    if backlog is None or accept is None or somaxconn is None or accept <= backlog or somaxconn != backlog:
        return None
    return f"somaxconn {_show(somaxconn)} capped accept-count {_show(accept)} to {_show(backlog)}"


def _held_rule(a: Cell, b: Cell) -> str:
    """The accept-queue formula's account of two cells' connections held, when both were full
    (server_conns_peak == queue_capacity): a cell whose backlog somaxconn capped is named with
    what its accept-count alone would have let it hold (held - backlog + accept-count)."""
    held_a, held_b = a.figures.get("server_conns_peak"), b.figures.get("server_conns_peak")
    if held_a is None or held_b is None or held_a != a.figures.get("queue_capacity") \
            or held_b != b.figures.get("queue_capacity"):
        return ""
    for cell in (a, b):
        rule = _backlog_rule(cell)
        if rule:
            held, backlog = cell.figures["server_conns_peak"], cell.figures["listen_backlog"]
            accept = _number(_setting(cell, "TOMCAT_ACCEPT_COUNT"))
            return (f": {rule}, so {cell.name} held {_show(held)} connections instead of "
                    f"{_show(held - backlog + accept)} (max-connections + backlog + 1)")
    return (f": both full, max-connections + backlog + 1, the backlog min(accept-count, somaxconn) "
            f"{_show(a.figures.get('listen_backlog'))} -> {_show(b.figures.get('listen_backlog'))}")


def _others(cell: Cell, axis: str) -> str:
    rest = [f"{_knob(k)} {v}" for k, v in cell.axes.items() if k != axis]
    return f" with {', '.join(rest)}" if rest else ""


def pairs(cells: list[Cell], axis: str) -> list[tuple[Cell, Cell]]:
    """Consecutive cells (in the run's order) along AXIS that agree on every other axis."""
    groups: dict[tuple, list[Cell]] = {}
    for cell in cells:
        if axis not in cell.axes:
            continue
        key = tuple(sorted((k, v) for k, v in cell.axes.items() if k != axis))
        groups.setdefault(key, []).append(cell)
    out = []
    for group in groups.values():
        out.extend(zip(group, group[1:]))
    return out


def axis_line(cells: list[Cell], axis: str) -> str | None:
    """One axis's sentence: what changed with it, pair by pair, with the rule; what did not."""
    compared = pairs(cells, axis)
    if not compared:
        return None
    changed, unchanged = [], []
    for outcome in OUTCOMES:
        moves = []
        for a, b in compared:
            va, vb = a.figures.get(outcome.column), b.figures.get(outcome.column)
            if not _changed(outcome, va, vb):
                continue
            rule = _held_rule(a, b) if outcome.column == "server_conns_peak" else ""
            moves.append(f"{_show(va)} -> {_show(vb)} ({a.name} -> {b.name}{_others(a, axis)}{rule})")
        measured = any(a.figures.get(outcome.column) is not None and b.figures.get(outcome.column) is not None
                       for a, b in compared)
        if moves:
            changed.append(f"{outcome.words} {'; '.join(moves)}")
        elif measured:
            unchanged.append(outcome.words)
    values = []
    for cell in cells:
        if axis in cell.axes and cell.axes[axis] not in values:
            values.append(cell.axes[axis])
    head = f"{_knob(axis)} {' / '.join(values)}"
    if not changed:
        return (f"{head} made no difference: {', '.join(unchanged)} the same in every pair of cells that "
                f"differ only in it (times and rates within {CHANGE_PCT:g} %)")
    text = f"{head} changed {'; '.join(changed)}"
    if unchanged:
        text += f"; it did not change {', '.join(unchanged)} (within {CHANGE_PCT:g} % for times and rates)"
    return text


def goal_line(cells: list[Cell]) -> str | None:
    """The first cell that met the goal (GOAL_P99_MS, with GOAL_FAILED_RATE), when one is set."""
    goals = [c for c in cells if (c.settings.get("GOAL_P99_MS") or "") != ""]
    if not goals:
        return None
    p99_goal = float(goals[0].settings["GOAL_P99_MS"])
    rate_goal = _number(goals[0].settings.get("GOAL_FAILED_RATE")) or 0.0
    goal = f"the goal (p99 at most {_show(p99_goal)} ms, failed share at most {rate_goal:g})"
    for cell in cells:
        p99, failed, reqs = (cell.figures.get("lat_p99_ms"), cell.figures.get("failed_reqs"),
                             cell.figures.get("http_reqs"))
        if p99 is None or failed is None or not reqs:
            continue
        if p99 <= p99_goal and failed / reqs <= rate_goal:
            return (f"{cell.name} met {goal} first: p99 {_show(p99)} ms, {_show(failed)} of {_show(reqs)} "
                    "requests failed")
    return f"no cell met {goal}"


def run_across(run_dir: Path, axes: list[str], rows: list[dict[str, Any]]) -> list[str]:
    """The lines across a run's cells (its manifest's axes, its rows, each cell's cell.env for
    the settings that are no axis): each axis's, then the goal's. Nothing for no axis."""
    envs = {}
    for row in rows:
        name = str(row.get("cell") or "")
        envs[name] = read_cell_env(run_dir / "cells" / name / "cell.env") or {}
    return lines(axes, cells_of(rows, envs))


def lines(axes: list[str], cells: list[Cell]) -> list[str]:
    """across's lines from cells already read."""
    out = [line for line in (axis_line(cells, axis) for axis in axes) if line]
    goal = goal_line(cells)
    if goal:
        out.append(goal)
    return [line[0].upper() + line[1:] + "." for line in out]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python3 -m ltsuite.across RUN_DIR\n")
        return 2
    run = load_run(Path(args[0]))
    for line in run_across(Path(args[0]), run.axes, run.rows):
        sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
