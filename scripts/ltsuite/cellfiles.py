"""Typed readers of the files a cell directory holds (scripts/lib/cell.sh writes them).

  cell.env            the cell's knobs, KEY=VALUE a line (never sourced)
  phases.tsv          phase<TAB>epoch ms, one line per mark, in the order they were made
  sysctls.tsv         side<TAB>name<TAB>value: the effective sysctls of both namespaces
  nstat-SIDE-*.txt    `nstat -asz` snapshots (absolute counter values)
  netstat-delta.tsv   counter<TAB>side<TAB>delta, the counters that changed
  samples.tsv         the sampler's rows (header: scripts/lib/sampler.py's COLUMNS)
  summary.json        k6's end-of-test summary (merged from k6-summaries/ with K6_INSTANCES > 1)
  k6-script.json      k6 inspect of a script of one's own
  connector.json      the connector settings the target reports against the cell's knobs
  *-stats.json        the server's own account of a scenario (waiting room, WebSocket)
  k6*.log             k6's output, one per k6 process
A file that is missing or unreadable reads as empty; the row says what that leaves unmeasured.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .numbers import to_number


def read_text(path: Path) -> str | None:
    """A file's text, or None when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_json(path: Path) -> Any:
    """A JSON file's value, or None when it is missing, empty or not JSON."""
    body = read_text(path)
    if not body or not body.strip():
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def env_text(text: str) -> dict[str, str]:
    """KEY=VALUE text (cell.env, runner.env, the knobs advise.sh resolved) as {KEY: value}, in
    order: every line with a "=" after a non-empty key, split at the first one, the last of a
    key winning. The one reader of such text on the Python side; the shell's load_cell_env in
    scripts/lib/common.sh reads it the same way."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key:
            env[key] = value
    return env


def read_cell_env(path: Path) -> dict[str, str] | None:
    """cell.env as {KEY: value} (env_text); None when the file is missing."""
    body = read_text(path)
    return None if body is None else env_text(body)


@dataclass
class Phases:
    """The phase marks of a cell (phases.tsv), every mark in the order it was made."""

    marks: list[tuple[str, int]] = field(default_factory=list)

    def last(self) -> dict[str, int]:
        """{phase: epoch ms} with the last mark of each name (a phase marked again counts from
        its last mark)."""
        return dict(self.marks)

    def seconds(self, start: str, end: str) -> float | None:
        """Seconds from the last mark of start to the last mark of end (None if either is
        missing)."""
        last = self.last()
        if start not in last or end not in last:
            return None
        return (last[end] - last[start]) / 1000


def read_phases(path: Path) -> Phases:
    """phases.tsv: lines of exactly two fields whose second is a number of ms."""
    marks = []
    for line in (read_text(path) or "").split("\n"):
        fields = line.split("\t")
        if len(fields) == 2 and fields[1].strip().lstrip("-").isdigit():
            marks.append((fields[0], int(fields[1])))
    return Phases(marks)


def read_sysctls(path: Path) -> dict[str, dict[str, str]]:
    """sysctls.tsv as {"server": {name: value}, "client": {...}}."""
    out: dict[str, dict[str, str]] = {}
    for line in (read_text(path) or "").split("\n"):
        fields = line.split("\t")
        if len(fields) == 3:
            out.setdefault(fields[0], {})[fields[1]] = fields[2]
    return out


def read_nstat(path: Path) -> dict[str, int] | None:
    """An `nstat -asz` snapshot as {counter: value} (exact integers: octet counters pass 2^31
    and 2^53 in long cells). None when the file is missing or empty."""
    body = read_text(path)
    if not body:
        return None
    counters = {}
    for line in body.split("\n"):
        fields = line.split()
        if len(fields) >= 2 and not fields[0].startswith("#"):
            try:
                counters[fields[0]] = int(fields[1])
            except ValueError:
                continue
    return counters


def read_deltas(path: Path) -> dict[str, dict[str, int]]:
    """netstat-delta.tsv as {side: {counter: delta}} (lines whose delta is an integer)."""
    out: dict[str, dict[str, int]] = {}
    for line in (read_text(path) or "").split("\n"):
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        try:
            delta = int(fields[2])
        except ValueError:
            continue
        out.setdefault(fields[1], {})[fields[0]] = delta
    return out


@dataclass
class Samples:
    """The sampler's rows (samples.tsv): columns by header name, values as numbers (None for an
    empty field: that probe had no answer)."""

    columns: list[str]
    rows: list[dict[str, float | int | None]]

    def peak(self, name: str) -> float | int | None:
        """The highest value of a column (None when it was never read)."""
        values = [row.get(name) for row in self.rows]
        present = [v for v in values if v is not None]
        return max(present) if present else None

    def values(self, name: str) -> list[float | int]:
        """The values of a column that were read, in time order."""
        return [row[name] for row in self.rows if row.get(name) is not None]


def read_samples(path: Path) -> Samples | None:
    """samples.tsv; None when the file is missing or has no header. A header with no row (the
    sampler never sampled: python3 missing, a crash) gives Samples with no rows."""
    body = read_text(path)
    if not body:
        return None
    lines = [line for line in body.split("\n") if line != ""]
    if not lines:
        return None
    columns = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        fields = line.split("\t")
        row: dict[str, float | int | None] = {}
        for name, value in zip(columns, fields):
            row[name] = None if value == "" else to_number(value)
        rows.append(row)
    return Samples(columns, rows)


def summary_problem(path: Path) -> str | None:
    """Why k6's summary cannot be used (missing, empty, not JSON, no metrics), or None."""
    if not path.exists():
        return "k6 wrote no summary.json"
    body = read_text(path)
    if not body:
        return "summary.json is empty"
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("metrics"), dict):
        return "summary.json is not a k6 summary (truncated or not JSON)"
    return None


@dataclass
class Summary:
    """k6's end-of-test summary (handleSummary's data): metrics by name (a name with a tag set,
    such as http_req_duration{traffic:load}, is a submetric) and state."""

    metrics: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    def values(self, name: str) -> dict[str, Any] | None:
        """A metric's values, that of its load traffic ({traffic:load}) first."""
        metric = self.metrics.get(name + "{traffic:load}")
        if metric is None or metric is False:
            metric = self.metrics.get(name)
        if not isinstance(metric, dict):
            return None
        values = metric.get("values")
        return values if isinstance(values, dict) else None

    def exact(self, name: str) -> dict[str, Any] | None:
        """The values of exactly this metric or submetric name."""
        metric = self.metrics.get(name)
        if not isinstance(metric, dict) or not isinstance(metric.get("values"), dict):
            return None
        return metric["values"]

    def count(self, name: str) -> int | float | None:
        """A counter's count: 0 when k6 ran and never counted it (k6 leaves a counter that never
        moved out of its summary), None when there is no summary to read (k6 never ran, or its
        summary is unusable): unmeasured is empty, never 0."""
        if not self.metrics:
            return None
        values = self.values(name) or {}
        count = values.get("count")
        return 0 if count is None else count


def read_summary(path: Path) -> Summary:
    """summary.json (an empty Summary when it cannot be used: see summary_problem)."""
    value = read_json(path)
    if not isinstance(value, dict) or not isinstance(value.get("metrics"), dict):
        return Summary()
    return Summary(value["metrics"], value.get("state") or {})


def read_object(path: Path) -> Any:
    """A JSON object file (connector.json, *-stats.json, k6-script.json), or None."""
    value = read_json(path)
    return None if value is None or value is False else value


def log_count(cell_dir: Path, text: str) -> int:
    """Lines of the cell's k6 logs (k6.log, k6-2.log, ... one per k6 process) that contain
    text."""
    count = 0
    for log in sorted(cell_dir.glob("k6*.log")):
        body = read_text(log) or ""
        count += sum(1 for line in body.split("\n") if text in line)
    return count


def machine_cpus() -> int:
    """The CPUs this process may use (as nproc counts them)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
