"""Exact latency percentiles over every k6 process of a cell.

Percentiles of parts do not combine, so with K6_INSTANCES > 1 the merged summary has none
(scripts/lib/merge-summaries.jq). Every process's per-request samples (k6 --out json) are on
disk: k6-samples.json.gz for the first process, k6-samples-<n>.json.gz for the n-th (named as
its log, k6-<n>.log). The percentiles of answered load requests (http_req_duration with
expected_response=true and traffic=load, the summary's own submetric) are computed from all of
them the way k6 computes a trend's percentile (lib/metrics/sink.go, TrendSink.P: linear
interpolation between the two nearest ranks), so one process's file gives k6's own figures.

  python3 -m ltsuite.latency FILE...    prints {"count", "min", "med", "p(90)", ..., "max"}
"""
from __future__ import annotations

import gzip
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

PREFIX = '{"metric":"http_req_duration"'
PERCENTILES = {"med": 0.5, "p(90)": 0.9, "p(95)": 0.95, "p(99)": 0.99}


def percentile(ordered: list[float], fraction: float) -> float:
    """k6's percentile of sorted values (TrendSink.P): the value at rank fraction * (n - 1),
    interpolated linearly between the two nearest ranks."""
    if not ordered:
        return 0.0
    if len(ordered) == 1:
        return ordered[0]
    rank = fraction * (len(ordered) - 1)
    low, high = ordered[math.floor(rank)], ordered[math.ceil(rank)]
    return low + (high - low) * (rank - math.floor(rank))


def answered_durations(lines: Iterable[str]) -> list[float]:
    """http_req_duration of the answered load requests among k6's JSON sample lines. A line cut
    short by a killed k6 is skipped."""
    out = []
    for line in lines:
        if not line.startswith(PREFIX) or '"expected_response":"true"' not in line:
            continue
        try:
            sample = json.loads(line)
            data = sample["data"]
            tags = data.get("tags") or {}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if sample.get("type") != "Point" or tags.get("traffic") != "load":
            continue
        value = data.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append(float(value))
    return out


def read_lines(path: Path) -> Iterable[str]:
    """The lines of a samples file, gzip or plain; a truncated gzip ends where it can be read."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                yield line
    except (OSError, EOFError):
        return


def figures(durations: list[float]) -> dict[str, Any]:
    """count, min, avg, the percentiles and max of durations (as k6's summary names them)."""
    ordered = sorted(durations)
    out: dict[str, Any] = {"count": len(ordered)}
    if not ordered:
        return out
    out["min"] = ordered[0]
    out["max"] = ordered[-1]
    out["avg"] = sum(ordered) / len(ordered)
    for name, fraction in PERCENTILES.items():
        out[name] = percentile(ordered, fraction)
    return out


def sample_files(cell_dir: Path, instances: int) -> list[Path]:
    """The samples file of each of a cell's k6 processes, in process order (missing ones
    included, for the caller to name)."""
    names = ["k6-samples.json.gz"] + [f"k6-samples-{n}.json.gz" for n in range(2, instances + 1)]
    return [cell_dir / name for name in names]


@dataclass
class Exact:
    """Percentiles from every process's samples (values None when some file is missing) and a
    note for the row."""

    values: dict[str, Any] | None
    note: str | None


def cell_percentiles(cell_dir: Path, instances: int) -> Exact:
    """The median and p90/p95/p99 of a cell run by several k6 processes, from all their samples;
    None with the reason when a process's samples are missing (the percentiles would then be
    those of some processes only)."""
    files = sample_files(cell_dir, instances)
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        why = "k6 wrote no samples (K6_SAMPLES=0)" if len(missing) == len(files) else f"{', '.join(missing)} is missing"
        return Exact(None, f"latency percentiles left empty: {instances} k6 processes ran and {why}, so their "
                           "samples cannot all be read")
    durations: list[float] = []
    for path in files:
        durations.extend(answered_durations(read_lines(path)))
    out = figures(durations)
    if not durations:
        return Exact(None, "latency percentiles left empty: the k6 processes' samples hold no answered request")
    return Exact({k: out[k] for k in PERCENTILES},
                 f"latency percentiles computed from all {len(durations)} answered requests of {instances} k6 processes")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stderr.write("usage: python3 -m ltsuite.latency SAMPLES_FILE...\n")
        return 2
    durations: list[float] = []
    for name in args:
        durations.extend(answered_durations(read_lines(Path(name))))
    json.dump(figures(durations), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
