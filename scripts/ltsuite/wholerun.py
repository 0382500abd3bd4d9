"""Where a whole run's time goes outside k6, as its user waits for it (``make bench``'s
``wholerun`` section).

Rule: what a user waits for is the wall of ``make run-matrix``, from the command to its exit.
k6's own test time (each row's ``duration_s``) and the warm-ups asked for (``WARMUP``, each
cell's ``warmup_start`` to ``warmup_end``) are the load asked for; the rest is the run's own
cost, and its floor is the target's bare start once a cell (``bench_bare_start``, taken in the
same bench run). A wait for another run's lock is no cost of this one: it is said apart and left
out. The rest is split by the cells' phase marks (``phases.tsv``, epoch ms) and by the kernel's
record of every program the run started (``tests/tools/execwatch.py``'s log, epoch ms):

- ``make``: from the command to the runner's exec (make's prerequisites);
- ``before_first_cell``: the runner's exec to the first cell's ``cell_start``, less the lock wait;
- each cell: its ``cell_start`` to the next cell's (the last: to its ``stopped``), less its k6
  test time and warm-up: what a cell costs beside its load (its finish runs beside the next
  cell's start, so it is in no cell's period but the last's, below);
- ``after_last_cell``: the last cell's ``stopped`` to the end: its finish (deltas, row, tables),
  then the run's own tables, manifest and ``report.html``.

Python starts (an exe named ``python3*``, once a process) are placed the same way: in make,
before the first cell, in the cells (the live line apart), after the last.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

PYTHON_EXE = re.compile(r"/python3[.0-9]*$")
#: The runner's exec (through env or bash: the first program whose arguments name it).
RUNNER = re.compile(r"(^|\s)\S*run-matrix\.sh(\s|$)")


@dataclass
class Exec:
    """One program started, as execwatch logged it."""

    ms: int
    pid: int
    exe: str
    args: str


@dataclass
class Cell:
    """One cell's marks and load time."""

    name: str
    start_ms: int
    stopped_ms: int | None
    k6_s: float
    warmup_s: float


@dataclass
class Breakdown:
    """A whole run's wall split as the module docstring says (seconds, 3 decimals)."""

    cells: int
    wall_s: float
    k6_s: float
    warmup_s: float
    lock_wait_s: float
    outside_k6_s: float
    make_s: float | None
    before_first_cell_s: float | None
    cells_s: list[float] = field(default_factory=list)
    after_last_cell_s: float | None = None
    last_finish_s: float | None = None
    python_make: int = 0
    python_before: int = 0
    python_cells: int = 0
    python_live: int = 0
    python_after: int = 0
    python_after_what: list[str] = field(default_factory=list)
    python_before_what: list[str] = field(default_factory=list)
    execs: int = 0


def _r3(seconds: float) -> float:
    return round(seconds, 3)


def read_execs(path: Path) -> list[Exec]:
    """execwatch's lines "ms<TAB>pid<TAB>exe<TAB>args"; LOST lines are refused (a count would be
    short). A program's arguments may hold newlines (jq's programs): a line that does not begin
    with "ms<TAB>pid" goes on the one before and is skipped."""
    execs = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split("\t", 3)
        if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        if parts[2] == "LOST":
            raise ValueError(f"{path}: execwatch lost events; the counts would be short")
        execs.append(Exec(int(parts[0]), int(parts[1]), parts[2], parts[3] if len(parts) > 3 else ""))
    return execs


def marks(phases: Path) -> dict[str, list[int]]:
    """A cell's phase marks, each name with its times in order."""
    out: dict[str, list[int]] = {}
    for line in phases.read_text(encoding="utf-8").splitlines():
        name, _, ms = line.partition("\t")
        if ms.strip().isdigit():
            out.setdefault(name, []).append(int(ms))
    return out


def read_cells(run_dir: Path) -> list[Cell]:
    """The run's cells in the order they ran (by their ``cell_start``)."""
    cells = []
    for cell_dir in sorted((run_dir / "cells").iterdir()):
        phases = cell_dir / "phases.tsv"
        if not phases.is_file():
            continue
        m = marks(phases)
        if "cell_start" not in m:
            continue
        row_file = cell_dir / "row.json"
        row = json.loads(row_file.read_text(encoding="utf-8")) if row_file.is_file() else {}
        warm = 0.0
        if m.get("warmup_start") and m.get("warmup_end"):
            warm = (m["warmup_end"][-1] - m["warmup_start"][-1]) / 1000
        cells.append(Cell(cell_dir.name, m["cell_start"][0], (m.get("stopped") or [None])[-1],
                          float(row.get("duration_s") or 0), warm))
    return sorted(cells, key=lambda c: c.start_ms)


def lock_wait_ms(execs: list[Exec]) -> int:
    """The runner's wait for the run lock: from its ``flock -w`` to its first step once it holds
    it, the lock's state file written (``mktemp LOCK_FILE.pid.XXXXXX`` then ``mv -fT`` of it,
    lock_state_write in scripts/lib/lock.sh; the first of the two execwatch could read); 0 when
    it did not wait. Not the next program logged: a process execwatch could not follow to its
    parents (another's, on a busy host) is logged too."""
    for i, ex in enumerate(execs):
        if ex.args.startswith("flock -w"):
            after = next((e for e in execs[i + 1:]
                          if e.args.startswith(("mktemp ", "mv -fT ")) and ".pid." in e.args), None)
            return after.ms - ex.ms if after else 0
    return 0


def breakdown(execs: list[Exec], cells: list[Cell], start_ms: int, end_ms: int) -> Breakdown:
    """The whole run's wall from START_MS to END_MS split by CELLS' marks and EXECS."""
    wait = lock_wait_ms(execs)
    k6 = sum(c.k6_s for c in cells)
    warm = sum(c.warmup_s for c in cells)
    wall = (end_ms - start_ms) / 1000
    runner = next((e.ms for e in execs if RUNNER.search(e.args)), None)
    out = Breakdown(cells=len(cells), wall_s=_r3(wall), k6_s=_r3(k6), warmup_s=_r3(warm), lock_wait_s=_r3(wait / 1000),
                    outside_k6_s=_r3(wall - k6 - warm - wait / 1000), make_s=None, before_first_cell_s=None,
                    execs=len(execs))
    if runner is not None:
        out.make_s = _r3((runner - start_ms) / 1000)
    if not cells:
        return out
    first, last = cells[0], cells[-1]
    if runner is not None:
        out.before_first_cell_s = _r3((first.start_ms - runner - wait) / 1000)
    for cell, nxt in zip(cells, cells[1:] + [None]):
        end = nxt.start_ms if nxt else cell.stopped_ms
        if end is not None:
            out.cells_s.append(_r3((end - cell.start_ms) / 1000 - cell.k6_s - cell.warmup_s))
    if last.stopped_ms is not None:
        out.after_last_cell_s = _r3((end_ms - last.stopped_ms) / 1000)
    seen: set[int] = set()
    for ex in execs:
        if not PYTHON_EXE.search(ex.exe) or ex.pid in seen:
            continue
        seen.add(ex.pid)
        what = " ".join(w for w in ex.args.split() if w.startswith("ltsuite.") or w.endswith(".py"))[:80] or ex.args[:80]
        if runner is not None and ex.ms < runner:
            out.python_make += 1
        elif ex.ms < first.start_ms:
            out.python_before += 1
            out.python_before_what.append(what)
        elif last.stopped_ms is not None and ex.ms > last.stopped_ms:
            out.python_after += 1
            out.python_after_what.append(what)
        elif "ltsuite.live" in ex.args:
            out.python_live += 1
        else:
            out.python_cells += 1
    return out


def last_finish_s(run_dir: Path, last: Cell) -> float | None:
    """The last cell's finish (its ``stopped`` to its ``finished`` mark), serial after the
    last cell."""
    m = marks(run_dir / "cells" / last.name / "phases.tsv")
    if last.stopped_ms is None or not m.get("finished"):
        return None
    return round((m["finished"][-1] - last.stopped_ms) / 1000, 3)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ltsuite.wholerun", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("execs", type=Path, help="tests/tools/execwatch.py's log of the run")
    parser.add_argument("start_ms", type=int, help="the command's start, epoch ms")
    parser.add_argument("end_ms", type=int, help="the command's end, epoch ms")
    args = parser.parse_args(argv)
    cells = read_cells(args.run_dir)
    out = breakdown(read_execs(args.execs), cells, args.start_ms, args.end_ms)
    if cells:
        out.last_finish_s = last_finish_s(args.run_dir, cells[-1])
    print(json.dumps(asdict(out), separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
