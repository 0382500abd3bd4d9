"""A cell's phases in one process each: what the runner used to ask Python once per question.

  python3 -S -m ltsuite.cell finish CELL_DIR --run-dir RUN_DIR [ltsuite.row's options: --run-id ID
                            --status ok|failed --error TEXT --axes JSON --wall-s S --repeat JSON --k6-exit N]
  python3 -m ltsuite.cell warnings CELLS_DIR TOTAL MACHINE_JSON

warnings, before the run: the design warnings of every cell (ltsuite.design), "INDEX<TAB>warning" a
line, from CELLS_DIR/INDEX.env and INDEX.json (k6's inspection of a script of one's own, if any).

finish, after the cell's processes stopped: the counter deltas (netstat-delta.tsv, ltsuite.counters),
the phase mark `files`, the row (row.json, ltsuite.row), the mark `row`, then the run's tables
(results.csv and results.md, ltsuite.tables) and the mark `tables`. Each step keeps its own module's
rules; this one only calls them in order, so a cell starts Python once to finish instead of once for
each file (the rule: decisions in Python, called once per phase of a cell).

Deltas that cannot be computed make the cell failed with that reason, as the row then says. The exit
status is the row's: 1 when only a failed row saying why could be written, or none at all. Tables that cannot be
written leave the cell as it is: a warning, or nothing on a full disk, which the runner reports in
one line after the cell (space.sh).
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import io
import sys
import time
from pathlib import Path

from . import counters, design, row, tables

PROG = "ltsuite.cell"


def phase_mark(cell_dir: Path, name: str) -> None:
    """Append NAME<TAB>epoch ms to the cell's phases.tsv, as the runner's phase_mark does."""
    with open(cell_dir / "phases.tsv", "a", encoding="utf-8") as marks:
        marks.write(f"{name}\t{time.time_ns() // 1_000_000}\n")


def joined(error: str, reason: str) -> str:
    """The cell's error with one more reason after it ("; " between, as the runner joins them)."""
    return f"{error}; {reason}" if error else reason


def finish(args: argparse.Namespace) -> int:
    """Deltas, row and tables of one cell (see the module's doc); the row's exit status."""
    cell_dir: Path = args.cell_dir
    status, error = args.status, args.error
    try:
        counters.main([str(cell_dir)])
    except Exception:  # noqa: BLE001 - any failure is the cell's, named in its row
        status, error = "failed", joined(error, "cannot compute the counter deltas")
    phase_mark(cell_dir, "files")
    try:
        code = row.write(argparse.Namespace(**{**vars(args), "status": status, "error": error}))
    except OSError as err:
        # The row was built but cannot be written; a full disk is the runner's to say (space.sh).
        if err.errno != errno.ENOSPC:
            print(f"{PROG}: {cell_dir / 'row.json'}: cannot write the row: {err.strerror}", file=sys.stderr)
        code = 1
    phase_mark(cell_dir, "row")
    try:
        tables.render(args.run_dir)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            print(f"{PROG}: warning: cannot render the results tables: {err}", file=sys.stderr)
    except tables.TableError as err:
        print(f"{PROG}: warning: cannot render the results tables: {err}", file=sys.stderr)
    phase_mark(cell_dir, "tables")
    return code


def warnings(args: argparse.Namespace) -> int:
    """The design warnings of every cell of a run before it starts (ltsuite.design warnings), in one
    process: "INDEX<TAB>warning" a line, from CELLS_DIR/INDEX.env and, for a script of one's own,
    k6's inspection in CELLS_DIR/INDEX.json."""
    for index in range(args.total):
        inspected = args.cells_dir / f"{index}.json"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = design.main(["warnings", str(args.cells_dir / f"{index}.env"), args.machine,
                                inspected.read_text(encoding="utf-8") if inspected.is_file() else ""])
        if code != 0:
            return code
        for line in out.getvalue().splitlines():
            print(f"{index}\t{line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python3 -m {PROG}", description="A cell's phases, one process each.")
    commands = parser.add_subparsers(dest="command", required=True)
    done = commands.add_parser("finish", help="counter deltas, row.json and the run's tables")
    row.add_arguments(done)
    done.add_argument("--run-dir", type=Path, required=True)
    check = commands.add_parser("warnings", help="the design warnings of a run's cells")
    check.add_argument("cells_dir", type=Path)
    check.add_argument("total", type=int)
    check.add_argument("machine")
    args = parser.parse_args(argv)
    return finish(args) if args.command == "finish" else warnings(args)


if __name__ == "__main__":
    sys.exit(main())
