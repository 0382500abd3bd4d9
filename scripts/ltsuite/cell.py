"""A cell's phases in one process each: what the runner used to ask Python once per question.

  python3 -S -m ltsuite.cell finish CELL_DIR --run-dir RUN_DIR [ltsuite.row's options: --run-id ID
                            --status ok|failed --error TEXT --axes JSON --wall-s S --repeat JSON --k6-exit N]
  python3 -S -m ltsuite.cell refusals MACHINE_JSON [--plan-dir DIR --repeat N] < "INDEX<TAB>KEY=VALUE" lines
  python3 -S -m ltsuite.cell plan CELLS_DIR TOTAL MACHINE_JSON [--resolved-dir DIR]
  python3 -S -m ltsuite.cell resolve [--inspected K6_INSPECT_JSON] < cell settings > resolved settings

resolve, for the one cell a remote runner runs (ssm-fanout.sh, k6-operator.sh): the cell's settings
(KEY=VALUE lines, as matrix_cell_values prints them) with every knob left at auto replaced by the
value chosen (ltsuite.design resolve) on this machine's cores and k6's open-file limit here
(machine_here), every other line as it was. K6_INSTANCES=auto that cannot be chosen runs 1 process,
with a warning on stderr.

refusals, before the run takes its lock: why cells cannot run on this machine at all
(ltsuite.design), "INDEX<TAB>reason" a line, every cell's settings read from stdin. With --plan-dir
and none refused, the same start plans the whole run (plan_ahead: what plan and ltsuite.space would
say after the lock, for a run whose cells need no k6 inspection), so the work before the first cell
starts Python once.

plan, before the first cell: the design warnings of every cell (ltsuite.design), "INDEX<TAB>warning"
a line, from CELLS_DIR/INDEX.env and INDEX.json (k6's inspection of a script of one's own, if any),
and each cell's settings with its auto knobs resolved (DIR/INDEX.env). Each is one process for the
whole run, not one for each cell.

finish, after the cell's processes stopped: the counter deltas (netstat-delta.tsv, ltsuite.counters),
the phase mark `files`, the row (row.json, ltsuite.row), the mark `row`, then the run's tables
(results.csv and results.md, ltsuite.tables; findings.txt only at the run's end) and the mark `tables`. Each step keeps its own module's
rules; this one only calls them in order, so a cell starts Python once to finish instead of once for
each file (the rule: decisions in Python, called once per phase of a cell).

Deltas that cannot be computed make the cell failed with that reason, as the row then says. The exit
status is the row's: 1 when only a failed row saying why could be written, or none at all. Tables that cannot be
written leave the cell as it is: a warning, or nothing on a full disk, which the runner reports in
one line after the cell (space.sh).
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from . import counters, design, row, tables
from .cellfiles import env_text, read_cell_env

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
        tables.render(args.run_dir, with_words=False)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            print(f"{PROG}: warning: cannot render the results tables: {err}", file=sys.stderr)
    except tables.TableError as err:
        print(f"{PROG}: warning: cannot render the results tables: {err}", file=sys.stderr)
    phase_mark(cell_dir, "tables")
    return code


def cells_read(stream: TextIO) -> dict[int, dict[str, str]]:
    """Every cell's settings from "INDEX<TAB>KEY=VALUE" lines (matrix_cell_values of each cell, each line
    after its index), {index: {KEY: value}}; a line is split as read_cell_env splits cell.env's."""
    cells: dict[int, dict[str, str]] = {}
    for line in stream.read().split("\n"):
        index, _, setting = line.partition("\t")
        if not index.isdigit() or "=" not in setting:
            continue
        key, value = setting.split("=", 1)
        cells.setdefault(int(index), {})[key] = value
    return cells


def refusals(args: argparse.Namespace) -> int:
    """Why cells cannot run as designed on this machine at all (ltsuite.design refusals), every cell's
    in one process before the run starts: "INDEX<TAB>reason" a line, the cells' settings from stdin
    (cells_read). Nothing is written: the runner refuses the run before it has a directory, but
    the suite's modules, compiled (precompile), for the run's later Python starts."""
    machine = json.loads(args.machine)
    cells = cells_read(sys.stdin)
    refused = False
    for index, env in sorted(cells.items()):
        for reason in design.answers("refusals", env, machine, None):
            print(f"{index}\t{reason}")
            refused = True
    sys.stdout.flush()
    if args.plan_dir is not None and not refused:
        plan_ahead(cells, machine, args.plan_dir, args.repeat)
    precompile()
    return 0


def plan_ahead(cells: dict[int, dict[str, str]], machine: dict, plan_dir: Path, repeat: int) -> None:
    """The run planned in the refusals' start, for cells with no script of one's own (no k6
    inspection to wait for): PLAN_DIR/warnings.tsv, the design warnings as plan prints them;
    PLAN_DIR/resolved/INDEX.env, each cell's settings with its auto knobs resolved, as plan writes
    them; PLAN_DIR/space, the bytes the cells write, each REPEAT times (ltsuite.space estimate).
    The runner reads them after its lock instead of starting Python twice more (check_space,
    check_design)."""
    from . import space

    resolved = plan_dir / "resolved"
    resolved.mkdir(parents=True, exist_ok=True)
    warnings = []
    for index, env in sorted(cells.items()):
        warnings += [f"{index}\t{line}\n" for line in design.answers("warnings", env, machine, None)]
        chosen = env_text("\n".join(design.answers("resolve", env, machine, None)))
        settings = "".join(f"{key}={value}\n" for key, value in env.items())
        (resolved / f"{index}.env").write_text(with_values(settings, chosen), encoding="utf-8")
    (plan_dir / "warnings.tsv").write_text("".join(warnings), encoding="utf-8")
    (plan_dir / "space").write_text(f"{space.estimate([(env, repeat) for env in cells.values()])}\n",
                                    encoding="utf-8")


def precompile() -> None:
    """The suite's modules compiled (scripts/ltsuite/__pycache__, which git ignores) by the run's
    first Python start, so the later ones (the plan, each cell's sampler and finish) read them
    instead of compiling them again: with PYTHONDONTWRITEBYTECODE set every start did, 0.11 CPU-s
    to import ltsuite.cell instead of 0.06 (docs/performance.md). An up-to-date file is left as it
    is; the modules run from source when one cannot be written."""
    import compileall
    try:
        compileall.compile_dir(str(Path(__file__).parent), quiet=2, maxlevels=0)
    except OSError:
        pass


def plan(args: argparse.Namespace) -> int:
    """Every cell of a run decided before its first cell starts, in one process: the design warnings
    (ltsuite.design warnings), "INDEX<TAB>warning" a line on stdout, and RESOLVED_DIR/INDEX.env, the
    cell's settings with every knob left at auto replaced by the value chosen (ltsuite.design resolve),
    which the cell copies to its cell.env. From CELLS_DIR/INDEX.env and, for a script of one's own,
    k6's inspection in CELLS_DIR/INDEX.json."""
    machine = json.loads(args.machine)
    if args.resolved_dir is not None:
        args.resolved_dir.mkdir(parents=True, exist_ok=True)
    for index in range(args.total):
        settings = args.cells_dir / f"{index}.env"
        env = read_cell_env(settings)
        if env is None:
            print(f"{PROG}: {settings}: cannot read the cell's settings", file=sys.stderr)
            return 1
        inspected_file = args.cells_dir / f"{index}.json"
        inspected = json.loads(inspected_file.read_text(encoding="utf-8")) if inspected_file.is_file() else None
        for line in design.answers("warnings", env, machine, inspected):
            print(f"{index}\t{line}")
        if args.resolved_dir is not None:
            chosen = env_text("\n".join(design.answers("resolve", env, machine, inspected)))
            out = args.resolved_dir / f"{index}.env"
            tmp = out.with_name(f"{out.name}.tmp.{os.getpid()}")
            tmp.write_text(with_values(settings.read_text(encoding="utf-8"), chosen), encoding="utf-8")
            os.replace(tmp, out)
    return 0


def with_values(settings: str, chosen: dict[str, str]) -> str:
    """KEY=VALUE lines with the value of each key in chosen replaced, every other line as it was (as
    resolve replaces them for a single cell)."""
    lines = []
    for line in settings.splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={chosen[key]}" if "=" in line and key in chosen else line)
    return "".join(f"{line}\n" for line in lines)


def machine_here(env: dict[str, str]) -> dict[str, int]:
    """This machine's cores and the open-file limit k6 runs with: K6_NOFILE, at most the hard limit,
    else the hard limit (as k6_nofile in scripts/lib/k6.sh)."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    wanted = env.get("K6_NOFILE", "")
    nofile = int(wanted) if wanted.isdigit() and int(wanted) <= hard else hard
    return {"cpus": os.cpu_count() or 1, "nofile": nofile}


def resolve_text(settings: str, machine: dict[str, int] | None = None,
                 inspected: dict | None = None) -> tuple[str, list[str]]:
    """One cell's settings with its auto knobs resolved (see the module's doc), and the warnings."""
    env = env_text(settings)
    if "auto" not in (env.get("K6_INSTANCES"), env.get("BURST_LEAD_MS"), env.get("USERS_PER_VU")):
        return with_values(settings, {}), []
    chosen = env_text("\n".join(design.answers("resolve", env, machine or machine_here(env), inspected)))
    warnings = []
    if env.get("K6_INSTANCES") == "auto" and not chosen.get("K6_INSTANCES"):
        warnings.append("K6_INSTANCES=auto: cannot choose; running 1 k6 process")
        chosen["K6_INSTANCES"] = "1"
    return with_values(settings, {k: v for k, v in chosen.items() if v}), warnings


def resolve(args: argparse.Namespace) -> int:
    """resolve (the module's doc): settings on stdin, resolved on stdout, warnings on stderr."""
    inspected = None
    if args.inspected is not None and args.inspected.is_file() and args.inspected.stat().st_size:
        inspected = json.loads(args.inspected.read_text(encoding="utf-8"))
    text, warnings = resolve_text(sys.stdin.read(), inspected=inspected)
    for warning in warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python3 -m {PROG}", description="A cell's phases, one process each.")
    commands = parser.add_subparsers(dest="command", required=True)
    done = commands.add_parser("finish", help="counter deltas, row.json and the run's tables")
    row.add_arguments(done)
    done.add_argument("--run-dir", type=Path, required=True)
    ahead = commands.add_parser("plan", help="the design warnings and resolved settings of a run's cells")
    ahead.add_argument("cells_dir", type=Path)
    ahead.add_argument("total", type=int)
    ahead.add_argument("machine")
    ahead.add_argument("--resolved-dir", type=Path)
    refuse = commands.add_parser("refusals", help="why cells cannot run on this machine (settings on stdin)")
    refuse.add_argument("machine")
    refuse.add_argument("--plan-dir", type=Path)
    refuse.add_argument("--repeat", type=int, default=1)
    one = commands.add_parser("resolve", help="one cell's settings (stdin) with its auto knobs resolved here")
    one.add_argument("--inspected", type=Path)
    args = parser.parse_args(argv)
    return {"finish": finish, "plan": plan, "refusals": refusals, "resolve": resolve}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
