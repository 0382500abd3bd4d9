"""Kernel counter deltas of a cell from its nstat snapshots, as exact integers.

  python3 -m ltsuite.counters CELL_DIR     writes CELL_DIR/netstat-delta.tsv
  python3 -m ltsuite.counters delta SIDE BEFORE AFTER   prints the lines of one side

netstat-delta.tsv: a header "counter<TAB>side<TAB>delta", then one line per counter that changed,
server side first. Octet counters of a long cell pass 2^31 (and, in time, 2^53): Python's integers
keep every digit, where awk's printf %d stopped at 2147483647.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .cellfiles import read_nstat

#: Gauges in nstat's output: they go down as well as up, so a difference means nothing.
GAUGES = frozenset({"TcpCurrEstab"})


def deltas(before: dict[str, int], after: dict[str, int]) -> list[tuple[str, int]]:
    """(counter, after - before) for every counter of after that changed, in after's order; a
    counter missing from before counts from 0 (nstat -z lists zeros, so it was not there yet)."""
    out = []
    for name, value in after.items():
        if name in GAUGES:
            continue
        delta = value - before.get(name, 0)
        if delta != 0:
            out.append((name, delta))
    return out


def side_lines(side: str, before_path: Path, after_path: Path) -> list[str]:
    """The delta lines of one side, or none when a snapshot is missing or empty."""
    before, after = read_nstat(before_path), read_nstat(after_path)
    if before is None or after is None:
        return []
    return [f"{name}\t{side}\t{delta}" for name, delta in deltas(before, after)]


def cell_deltas(cell_dir: Path) -> str:
    """netstat-delta.tsv's text for a cell directory (both sides whose snapshots exist)."""
    lines = ["counter\tside\tdelta"]
    for side in ("server", "client"):
        lines += side_lines(side, cell_dir / f"nstat-{side}-before.txt", cell_dir / f"nstat-{side}-after.txt")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 4 and args[0] == "delta":
        for line in side_lines(args[1], Path(args[2]), Path(args[3])):
            print(line)
        return 0
    if len(args) == 1:
        cell_dir = Path(args[0])
        out = cell_dir / "netstat-delta.tsv"
        tmp = out.with_name(f"{out.name}.tmp.{os.getpid()}")
        tmp.write_text(cell_deltas(cell_dir), encoding="utf-8")
        os.replace(tmp, out)
        return 0
    sys.stderr.write("usage: python3 -m ltsuite.counters CELL_DIR | delta SIDE BEFORE AFTER\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
