"""Exact latency percentiles from k6's per-request samples.

Each k6 process can write its per-request samples (k6 --out json): k6-samples.json.gz for the
first process of a cell, k6-samples-<n>.json.gz for the n-th (named as its log, k6-<n>.log).
The percentiles of answered load requests (http_req_duration with expected_response=true and
traffic=load, the summary's own submetric) are computed the way k6 computes a trend's
percentile (lib/metrics/sink.go, TrendSink.P: linear interpolation between the two nearest
ranks), so one process's file gives k6's own figures. A cell of several processes merges their
histograms instead (ltsuite.histogram), which each process reduces from its own file.

  python3 -m ltsuite.latency FILE...    prints {"count", "min", "med", "p(90)", ..., "max"}
"""
from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

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


def answered(lines: Iterable[str]) -> Iterator[float]:
    """http_req_duration of the answered load requests among k6's JSON sample lines, one at a
    time (a file of millions of requests is never held whole). A line cut short by a killed k6
    is skipped."""
    for line in lines:
        value = answered_value(line)
        if value is not None:
            yield value


def answered_value(line: str) -> float | None:
    """The http_req_duration of one sample line when it is an answered load request's, else None
    (answered() line by line, for a reader that takes other metrics from the same pass)."""
    if not line.startswith(PREFIX) or '"expected_response":"true"' not in line:
        return None
    try:
        sample = json.loads(line)
        data = sample["data"]
        tags = data.get("tags") or {}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if sample.get("type") != "Point" or tags.get("traffic") != "load":
        return None
    value = data.get("value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def answered_durations(lines: Iterable[str]) -> list[float]:
    """answered() as a list."""
    return list(answered(lines))


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
