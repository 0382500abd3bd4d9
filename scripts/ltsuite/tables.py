"""results.csv and results.md of a run, from its cells' rows (cells/*/row.json).

The columns and their order come from ltsuite.columns. The text of every value is the one the
tables have always had, when jq wrote them: numbers as jq 1.6 prints a double (shortest
round-trip digits, integral values without a fraction, exponent past 17 digits), CSV fields
quoted only when they hold a quote, comma or line break (RFC 4180), so results.csv stays byte
for byte what it was for the same rows.

Run ``PYTHONPATH=scripts python3 -m ltsuite.tables render RUN_DIR`` to write both files, or
``... head RUN_DIR`` for results.csv's header as JSON (the report's results table uses it).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from . import across, columns, words
from .columns import extra_names
from .formats import Run, TableError, load_run  # TableError: what callers of render catch (ltsuite.cell)

PROG = "ltsuite.tables"


# --- values as jq writes them -------------------------------------------------------------------

def jq_number(value: float | int) -> str:
    """A number as jq 1.6 prints it (jv_dump_term -> jvp_dtoa_fmt, David Gay's g_fmt with jq's
    threshold): the shortest digits that read back to the same double; exponent form when the
    decimal point is 4 or more places left of the first digit or more than 15 places right of
    the last one, with a signed exponent of at least two digits."""
    x = float(value)
    if math.isnan(x):
        return "null"
    if math.isinf(x):
        x = math.copysign(sys.float_info.max, x)
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    x = abs(x)
    if x == 0:
        return sign + "0"
    digits, decpt = _shortest_digits(x)
    if decpt <= -4 or decpt > len(digits) + 15:
        text = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        e = decpt - 1
        return f"{sign}{text}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if decpt <= 0:
        return f"{sign}0.{'0' * -decpt}{digits}"
    if decpt >= len(digits):
        return sign + digits + "0" * (decpt - len(digits))
    return f"{sign}{digits[:decpt]}.{digits[decpt:]}"


def _shortest_digits(x: float) -> tuple[str, int]:
    """(digits, decpt) of a positive double: x = 0.DIGITS x 10^decpt, digits the shortest that
    read back to x (Python's repr is the same algorithm as dtoa's mode 0)."""
    text = repr(x)
    mantissa, _, exp = text.partition("e")
    exponent = int(exp) if exp else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    raw = whole + frac
    stripped = raw.lstrip("0")
    leading = len(raw) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    decpt = len(whole) - leading + exponent
    return digits, decpt


def jq_dump(value: Any) -> str:
    """A value as jq's compact JSON (tostring of an array or object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return jq_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(jq_dump(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jq_dump(v) for k, v in value.items()) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


def jq_tostring(value: Any) -> str:
    """jq's tostring: a string as it is, anything else as compact JSON."""
    return value if isinstance(value, str) else jq_dump(value)


def jq_truthy(value: Any) -> bool:
    """jq's truth: everything but null and false (0 and "" are true)."""
    return value is not None and value is not False


def jq_alt(*values: Any) -> Any:
    """jq's a // b // c: the first value that is neither null nor false, else the last."""
    for value in values:
        if jq_truthy(value):
            return value
    return values[-1]


def jq_key(value: Any) -> tuple:
    """A sort key in jq's order: null < false < true < numbers < strings < arrays < objects."""
    if value is None:
        return (0,)
    if value is False:
        return (1,)
    if value is True:
        return (2,)
    if isinstance(value, (int, float)):
        return (3, value)
    if isinstance(value, str):
        return (4, value.encode("utf-8"))
    if isinstance(value, list):
        return (5, tuple(jq_key(v) for v in value))
    if isinstance(value, dict):
        return (6, tuple(sorted(value)), tuple(jq_key(value[k]) for k in sorted(value)))
    raise TypeError(f"not a JSON value: {value!r}")


def is_number(value: Any) -> bool:
    """A JSON number (not a boolean)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- rows ---------------------------------------------------------------------------------------

def unknown_extra(names: Iterable[str]) -> list[str]:
    """Scenario columns a row carries that ltsuite.columns does not define."""
    return [n for n in names if columns.BY_NAME.get(n) is None or columns.BY_NAME[n].scenario is None]


def unknown_keys(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Keys at a row's top that ltsuite.columns does not define: no table shows them."""
    names: list[str] = []
    for row in rows:
        for key in row:
            if key not in ("axes", "extra") and key not in columns.BY_NAME and key not in names:
                names.append(key)
    return names


def csv_head(run: Run) -> list[str]:
    """results.csv's header for this run."""
    return columns.csv_head(run.axes, extra_names(run.rows))


def _csv_value(row: dict[str, Any], key: str) -> Any:
    """A row's value for a column: its own key, else its scenario's, else its axis value."""
    if key in row:
        return row[key]
    extra = row.get("extra") or {}
    if key in extra:
        return extra[key]
    axes = row.get("axes")
    return axes.get(key) if isinstance(axes, dict) else None


def csv_field(value: Any) -> str:
    """One CSV field: empty for null; a string quoted only when it needs it (RFC 4180), so
    numbers stay bare."""
    if value is None:
        return ""
    if isinstance(value, str) and any(ch in value for ch in '",\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return jq_tostring(value)


def render_csv(run: Run) -> str:
    """results.csv: the header and one line per row."""
    if not run.files:
        return "run_id,cell,scenario,status\n"
    head = csv_head(run)
    lines = [",".join(head)]
    for row in run.rows:
        lines.append(",".join(csv_field(_csv_value(row, key)) for key in head))
    return "\n".join(lines) + "\n"


# --- results.md ---------------------------------------------------------------------------------

def md_text(value: Any) -> str:
    """A table cell: empty for null, "|" escaped and line breaks as spaces."""
    text = "" if value is None else jq_tostring(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _md_value(row: dict[str, Any], key: str) -> Any:
    axes = row.get("axes")
    return jq_alt(row.get(key), (row.get("extra") or {}).get(key), axes.get(key) if isinstance(axes, dict) else None)


@dataclass(frozen=True)
class Spread:
    """A figure over a matrix cell's repetitions."""

    median: float | int | None
    low: float | int | None
    high: float | int | None
    n: int

    def text(self) -> str:
        """"median (min..max)", or the one value when the repetitions agree."""
        if self.median is None:
            return ""
        if self.n == 1 or self.low == self.high:
            return jq_number(self.median)
        return f"{jq_number(self.median)} ({jq_number(self.low)}..{jq_number(self.high)})"


def spread(values: list[float | int]) -> Spread:
    """Median, min, max and count of numbers (the median of an even count is the mean of the
    two middle ones)."""
    if not values:
        return Spread(None, None, None, 0)
    ordered = sorted(values)
    n = len(ordered)
    middle = ordered[n // 2] if n % 2 == 1 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return Spread(middle, ordered[0], ordered[-1], n)


def figure(row: dict[str, Any], key: str) -> float | int | None:
    """A row's number for a column, from the row or its scenario's columns."""
    value = jq_alt(row.get(key), (row.get("extra") or {}).get(key))
    return value if is_number(value) else None


@dataclass
class Group:
    """The rows of one matrix cell (REPEAT runs every cell several times)."""

    cell: Any
    axes: dict[str, Any]
    rows: list[dict[str, Any]]
    figures: dict[str, Spread]

    @property
    def ok(self) -> int:
        return sum(1 for r in self.rows if r.get("status") == "ok")

    @property
    def as_designed(self) -> int:
        return sum(1 for r in self.rows if is_number(r.get("as_designed")) and r.get("as_designed") == 1)

    def value(self, key: str) -> str:
        """A figure as text: a number's median (min..max), else the repetitions' distinct values
        joined by "/" (prediction_check's "match/mismatch")."""
        if key in self.figures:
            return self.figures[key].text()
        seen: list[Any] = []
        for row in self.rows:
            value = jq_alt(row.get(key), (row.get("extra") or {}).get(key))
            if not any(jq_key(value) == jq_key(s) for s in seen):
                seen.append(value)
        seen.sort(key=jq_key)
        return "/".join("" if v is None else jq_tostring(v) for v in seen)


def repeat_groups(rows: list[dict[str, Any]]) -> list[Group]:
    """The rows grouped by the matrix cell they repeat, in cell order, with every number's
    spread over the group's rows that ran (status ok: a failed repetition's figures are left
    out, as are empty ones); a row from before repetitions stands for its own cell."""
    def cell_of(row: dict[str, Any]) -> Any:
        return jq_alt(row.get("repeat_of"), row.get("cell"))

    groups: list[Group] = []
    for row in sorted(rows, key=lambda r: jq_key(cell_of(r))):
        if groups and jq_key(cell_of(groups[-1].rows[0])) == jq_key(cell_of(row)):
            groups[-1].rows.append(row)
        else:
            axes = jq_alt(row.get("axes"), {})
            groups.append(Group(cell=cell_of(row), axes=axes if isinstance(axes, dict) else {}, rows=[row], figures={}))
    for group in groups:
        keys = set()
        ran = [r for r in group.rows if r.get("status") == "ok"]
        for row in ran:
            for source in (row, jq_alt(row.get("extra"), {})):
                keys.update(k for k, v in source.items() if is_number(v))
        keys.discard("repeat")
        for key in sorted(keys, key=lambda k: k.encode("utf-8")):
            group.figures[key] = spread([v for v in (figure(r, key) for r in ran) if v is not None])
    return groups


def _md_line(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(md_text(c) for c in cells) + " |"


def _md_table_head(head: list[str]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]


def render_md(run: Run) -> str:
    """results.md: the rows as a Markdown table of results.md's columns (the proxy's only when
    a row has a proxy). A run with REPEAT > 1
    first gets a table of the matrix cells, each figure the median (min..max) of its
    repetitions, then every repetition's row."""
    if not run.files:
        return "No cell finished.\n"
    extra = extra_names(run.rows)
    # The proxy's view beside the users' only in a run where a cell had one.
    proxy = any(r.get("proxy_reqs") is not None for r in run.rows)
    figures = columns.md_figures(proxy) + extra
    head = columns.md_head(run.axes, extra, proxy)
    lines: list[str] = []
    if any(jq_key(jq_alt(r.get("repeat"), 1)) > jq_key(1) for r in run.rows):
        groups = repeat_groups(run.rows)
        lines += ["Each matrix cell's figures: the median (min..max) of its repetitions that ran (ok); "
                  "failed repetitions and empty figures are left out.", ""]
        lines += _md_table_head(["cell", "repetitions", "ok", "as_designed"] + run.axes + figures)
        for g in groups:
            lines.append(_md_line([g.cell, len(g.rows), g.ok, g.as_designed] + [g.axes.get(a) for a in run.axes]
                                  + [g.value(f) for f in figures]))
        lines += ["", "Every repetition, in the order of the cells:", ""]
    lines += _md_table_head(head)
    for row in run.rows:
        lines.append(_md_line(_md_value(row, key) for key in head))
    return "\n".join(lines) + "\n"


# --- files --------------------------------------------------------------------------------------

def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a reader never sees half a file, and an
    empty text never replaces a file."""
    if not text:
        raise TableError(f"{path}: nothing to write")
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def findings_md(findings: list[str], across_lines: list[str] | None = None) -> str:
    """results.md's first lines: what changed across the cells with each axis (ltsuite.across),
    then what each cell found, in words (ltsuite.words), before the tables; nothing when there
    is neither."""
    text = ""
    if across_lines:
        text += "Across cells:\n\n" + "".join(f"- {line}\n" for line in across_lines) + "\n"
    if findings:
        text += "What happened:\n\n" + "".join(f"- {line}\n" for line in findings) + "\n"
    return text


def render(run_dir: Path, with_words: bool = True) -> None:
    """Write RUN_DIR/results.csv and results.md from its rows, and (with_words) findings.txt: what
    each cell found, in words (ltsuite.words), one line a cell, for the report; results.md (which
    the terminal prints at the run's end) then says them first, before its tables. After each cell
    the runner renders the tables only (ltsuite.cell finish); the words are made once, when the run
    ends or is interrupted (results_render), where the terminal and report.html read them."""
    run = load_run(run_dir)
    unknown = unknown_extra(extra_names(run.rows))
    if unknown:
        print(f"{PROG}: {run_dir}: column(s) not in scripts/ltsuite/columns.py (shown anyway): "
              + ", ".join(unknown), file=sys.stderr)
    hidden = unknown_keys(run.rows)
    if hidden:
        print(f"{PROG}: {run_dir}: row key(s) not in scripts/ltsuite/columns.py (in row.json only): "
              + ", ".join(hidden), file=sys.stderr)
    findings = words.run_words(run_dir) if with_words else []
    across_lines = across.run_across(run_dir, run.axes, run.rows) if with_words else []
    csv_text = render_csv(run)
    md_text_ = findings_md(findings, across_lines) + render_md(run)
    write_atomic(run_dir / "results.csv", csv_text)
    write_atomic(run_dir / "results.md", md_text_)
    if not with_words:
        return
    for name, found in (("findings.txt", findings), ("across.txt", across_lines)):
        if found:
            write_atomic(run_dir / name, "".join(line + "\n" for line in found))
        else:
            (run_dir / name).unlink(missing_ok=True)


def _write_report_inputs(run_dir: Path, file: str, points: str, bars: str) -> None:
    """FILE: the report's inputs (see main); on failure nothing, said on stderr."""
    from . import reportseries

    try:
        data = reportseries.report_inputs(run_dir, int(points), int(bars))
        write_atomic(Path(file), json.dumps(data, separators=(",", ":")) + "\n")
    except (OSError, ValueError, TableError) as err:
        Path(file).unlink(missing_ok=True)
        print(f"{PROG}: the report's inputs: {err}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """render RUN_DIR: write results.csv and results.md; head RUN_DIR: results.csv's header as
    a JSON array. Exit 1 with the file's name when the run cannot be read. render's
    --report-inputs FILE LATENCY_POINTS TIME_PART_BARS also writes FILE: what report.html reads
    from Python (ltsuite.reportseries report_inputs), so the runner's last step, the tables and
    the report, starts Python once; a FILE that cannot be made is left out (the report then
    makes its own), the tables stand."""
    parser = argparse.ArgumentParser(prog=PROG, description="results.csv and results.md of a run.")
    parser.add_argument("command", choices=("render", "head"))
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--report-inputs", nargs=3, metavar=("FILE", "LATENCY_POINTS", "TIME_PART_BARS"))
    args = parser.parse_args(argv)
    try:
        if args.command == "render":
            render(args.run_dir)
            if args.report_inputs:
                _write_report_inputs(args.run_dir, *args.report_inputs)
        else:
            print(json.dumps(csv_head(load_run(args.run_dir)), separators=(",", ":")))
    except (TableError, OSError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
