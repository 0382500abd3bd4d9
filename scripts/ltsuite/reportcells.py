"""The report's per-cell parts, every cell of a run in one process: what its charts draw (the
cell's row, the knobs the charts use from cell.env, samples.tsv's columns by name) and its section
of links (k6's report and every file of the cell with its size).

report.html (scripts/lib/report.sh) used to make these in the shell, a few programs a cell and a
file (about 4,400 commands for a 3-cell run, docs/performance.md "The whole run"); the rule is the
suite's: decisions and readings of data in Python, once per phase, the page written by the shell.
The values are those the shell's jq made, in the same order, so the page is byte for byte the
same: cells and files in the C locale's order (the shell's globs under the runner's C.UTF-8), an
empty or unreadable field of samples.tsv null (jq's `tonumber? // null`), HTML escaped as
report_escape escapes it (&, <, >, ").
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .cellfiles import read_cell_env

# The knobs the charts read from a cell's cell.env (report.js), in the page's order.
CHART_KNOBS = ("TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS", "DELAY_MS", "K6_INSTANCES")


def c_sorted(paths: list[Path]) -> list[Path]:
    """PATHS in the C locale's order of their names (bytes), as the shell's globs give them."""
    return sorted(paths, key=lambda p: os.fsencode(p.name))


def cell_dirs(run_dir: Path) -> list[Path]:
    """The run's cell directories (cells/*/, hidden ones left out as a glob does)."""
    cells = run_dir / "cells"
    if not cells.is_dir():
        return []
    return c_sorted([p for p in cells.iterdir() if not p.name.startswith(".") and p.is_dir()])


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def tsv_number(field: str | None) -> float | None:
    """One field of samples.tsv as the chart data holds it: a number when the field is one, else
    null (empty, missing or not a number). As jq 1.6's tonumber reads it: a number's characters
    (digits, ".", "e", signs; leading zeros and a negative zero kept as strtod reads them) between
    optional blanks; the page's JSON prints it as jq does."""
    text = (field or "").strip(" \t\r\n")
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


_NUMBER = re.compile(r"[0-9.eE+-]+")


def samples_columns(text: str) -> dict[str, list[Any]]:
    """samples.tsv's columns by header name, e.g. {"ts": [...], "listen_recvq": [...]}: every line
    after the header split at tabs, a field beyond a short line null."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = [line.split("\t") if line else [] for line in lines]
    if not rows:
        return {}
    head, body = rows[0], rows[1:]
    columns: dict[str, list[Any]] = {}
    for i, name in enumerate(head):
        columns[name] = [tsv_number(row[i] if i < len(row) else None) for row in body]
    return columns


def cell_data(cell_dir: Path) -> dict[str, Any] | None:
    """One cell's entry of the chart data, without its k6 series (report_data adds them): its
    row.json as written ({} without one), the chart knobs of its cell.env (null when unset) and
    samples.tsv's columns ({} without it). None when its row.json is not JSON (the cell is left
    out of the charts, as jq left it)."""
    row: Any = {}
    if _nonempty(cell_dir / "row.json"):
        try:
            row = json.loads((cell_dir / "row.json").read_bytes().decode("utf-8", errors="replace"))
        except (OSError, ValueError):
            return None
    env = (read_cell_env(cell_dir / "cell.env") or {}) if _nonempty(cell_dir / "cell.env") else {}
    samples: dict[str, list[Any]] = {}
    if _nonempty(cell_dir / "samples.tsv"):
        samples = samples_columns((cell_dir / "samples.tsv").read_bytes().decode("utf-8", errors="replace"))
    return {"cell": cell_dir.name, "row": row, "env": {key: env.get(key) for key in CHART_KNOBS},
            "samples": samples}


def _alt(value: Any, default: Any) -> Any:
    """jq's `value // default`: the default when the value is null or false."""
    return default if value is None or value is False else value


def chart_data(run_dir: Path, labels: Any, series: dict[str, Any] | None) -> dict[str, Any]:
    """What the charts draw (report_data in report.sh): the run's id and axes (its manifest), the
    columns' labels, every cell's entry (cell_data) with its k6 series (null without) and the
    cells' time-part bars."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    s = _alt(series, {})
    k6 = _alt(s.get("k6"), {})
    cells = []
    for cell_dir in cell_dirs(run_dir):
        entry = cell_data(cell_dir)
        if entry is not None:
            entry["k6"] = _alt(k6.get(entry["cell"]), None)
            cells.append(entry)
    return {"run_id": manifest.get("run_id"), "axes": _alt(manifest.get("axes"), []), "labels": labels,
            "cells": cells, "time_parts": _alt(s.get("time_parts"), {"cells": {}})}


def escape(text: str) -> str:
    """TEXT with HTML's special characters escaped, as report_escape (report.sh) does."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def size_text(size: int) -> str:
    """A file's size for people (812 B, 14 KB, 3.2 MB), as awk's printf rounds it."""
    if size < 1024:
        return "%d B" % size
    if size < 1048576:
        return "%.0f KB" % (size / 1024)
    return "%.1f MB" % (size / 1048576)


def cells_html(run_dir: Path) -> str:
    """The page's Cells section: per cell its place for charts, its k6 report (or why none) and
    every file with its size."""
    out = ["<h2>Cells</h2>\n"]
    for cell_dir in cell_dirs(run_dir):
        cell = escape(cell_dir.name)
        out.append(f'<h3 id="cell-{cell}"><code>{cell}</code></h3>\n')
        out.append(f'<div class="charts" id="charts-{cell}"></div>\n')
        if _nonempty(cell_dir / "k6-report.html"):
            out.append(f'<p><a href="cells/{cell}/k6-report.html">k6 report</a> (k6 web dashboard export:'
                       " request rate, latency and VUs over time)</p>\n")
        else:
            out.append("<p>No k6 report for this cell (K6_HTML_REPORT=0, or k6 did not finish).</p>\n")
        out.append("<ul>\n")
        for file in c_sorted([p for p in cell_dir.iterdir() if not p.name.startswith(".")]):
            if not file.is_file():
                continue
            name = escape(file.name)
            out.append(f'<li><a href="cells/{cell}/{name}">{name}</a> ({size_text(file.lstat().st_size)})</li>\n')
        out.append("</ul>\n")
    return "".join(out)
