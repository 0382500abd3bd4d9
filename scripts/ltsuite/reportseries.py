"""The report's series over time, every cell of a run in one process.

  python3 -S -m ltsuite.reportseries RUN_DIR LATENCY_POINTS TIME_PART_BARS
  python3 -S -m ltsuite.reportseries --inputs [--no-series] RUN_DIR LATENCY_POINTS TIME_PART_BARS

One JSON object on stdout: {"k6": {CELL: series}, "time_parts": {"cells": {CELL: bars}}}, where a cell's
series are k6's samples as requests per second by cause and the answered requests' latency at their
start (scripts/lib/k6-series.py's series, for cells with k6-samples.json.gz) and its bars are each
request's parts (ltsuite.timeparts bars, for cells whose target wrote tomcat-access.log). A cell
whose files cannot be read gets null, never a figure. report.sh draws them (report.js, time-parts.js).
The rule: decisions and readings of data in Python, called once per phase (here once per report), not
once per cell and question.

With --inputs, everything the report reads from Python, in that one start (report_inputs):
{"head": results.csv's header (ltsuite.tables head), "columns": the columns' schema (ltsuite.columns
--json), "data": what the charts draw (ltsuite.reportcells chart_data: the manifest's run id and
axes, the columns' labels, every cell's row, chart knobs, samples.tsv's columns and the series
above), or null with --no-series (a report without charts), "cells_html": the page's Cells section
(ltsuite.reportcells cells_html)}. The runner's last step makes the same object in the process that
renders the run's tables (ltsuite.tables render --report-inputs), so a run ends with one Python
start, not four, and the page's shell runs no loop over cells or files.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from . import formats, timeparts
from .cellfiles import read_cell_env

LIB = Path(__file__).resolve().parents[1] / "lib"


def _k6_series() -> ModuleType:
    """scripts/lib/k6-series.py, the one reader of k6's samples for the report."""
    if str(LIB) not in sys.path:
        sys.path.insert(0, str(LIB))
    spec = importlib.util.spec_from_file_location("k6_series", LIB / "k6-series.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def latency_stride(row: dict[str, Any], env: dict[str, str], most: int) -> int:
    """Draw every Nth answered request, so a cell gives at most `most` points: N is the answered
    requests (http_reqs - failed_reqs) of the k6 process that writes samples (the first of
    K6_INSTANCES: its share) over most, rounded up, at least 1."""
    try:
        instances = int(env.get("K6_INSTANCES") or "1")
    except ValueError:
        instances = 1
    answered = (row.get("http_reqs") or 0) - (row.get("failed_reqs") or 0)
    share = answered / max(instances, 1)
    stride = -(-share // most) if most > 0 else 1
    return max(int(stride), 1)


def sample_lines(path: Path) -> Iterator[str]:
    """The lines of a gzip file, as far as it can be read: a file cut short by a killed k6 gives what
    it has (as `gzip -dc` does)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as lines:
            yield from lines
    except (EOFError, OSError, zlib.error):
        return


def _row(cell_dir: Path) -> dict[str, Any]:
    row = formats.read_run_file(cell_dir / "row.json")
    return row if isinstance(row, dict) else {}


def run_series(run_dir: Path, latency_points: int, time_part_bars: int) -> dict[str, Any]:
    """Every cell's k6 series and time-part bars (see the module's doc)."""
    k6_series = None
    out: dict[str, Any] = {"k6": {}, "time_parts": {"cells": {}}}
    cells = run_dir / "cells"
    for cell_dir in sorted(cells.iterdir()) if cells.is_dir() else []:
        if not cell_dir.is_dir():
            continue
        samples = cell_dir / "k6-samples.json.gz"
        if samples.is_file() and samples.stat().st_size > 0:
            k6_series = k6_series or _k6_series()
            stride = latency_stride(_row(cell_dir), read_cell_env(cell_dir / "cell.env") or {}, latency_points)
            out["k6"][cell_dir.name] = k6_series.series(sample_lines(samples), stride)
        access = cell_dir / "tomcat-access.log"
        if access.is_file() and access.stat().st_size > 0:
            try:
                out["time_parts"]["cells"][cell_dir.name] = timeparts.bars(cell_dir, time_part_bars)
            except Exception:  # noqa: BLE001 - a cell that cannot be read is drawn without its parts
                out["time_parts"]["cells"][cell_dir.name] = None
    return out


def report_inputs(run_dir: Path, latency_points: int, time_part_bars: int, series: bool = True) -> dict[str, Any]:
    """What report.html reads from Python, in one object (see the module's doc)."""
    from . import columns, reportcells  # the series alone need them not

    run = formats.load_run(run_dir)
    schema = columns.export()
    data = None
    if series:
        data = reportcells.chart_data(run_dir, schema.get("labels"),
                                      run_series(run_dir, latency_points, time_part_bars))
    return {"head": columns.csv_head(run.axes, columns.extra_names(run.rows)), "columns": schema,
            "data": data, "cells_html": reportcells.cells_html(run_dir)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    inputs = bool(args) and args[0] == "--inputs"
    if inputs:
        args = args[1:]
    series = not (inputs and args[:1] == ["--no-series"])
    if not series:
        args = args[1:]
    if len(args) != 3 or not args[1].isdigit() or not args[2].isdigit():
        sys.stderr.write("usage: python3 -m ltsuite.reportseries [--inputs [--no-series]] RUN_DIR LATENCY_POINTS TIME_PART_BARS\n")
        return 2
    if inputs:
        try:
            out = report_inputs(Path(args[0]), int(args[1]), int(args[2]), series)
        except (OSError, ValueError) as err:
            sys.stderr.write(f"ltsuite.reportseries: {err}\n")
            return 1
    else:
        out = run_series(Path(args[0]), int(args[1]), int(args[2]))
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
