"""The percentiles of k6 trend metrics (those a column names: ltsuite.columns Column.trend) from
the merge of their histograms, for a row whose k6 summary has none of its own: a cell run by
several k6 processes (their summaries merge without percentiles, scripts/lib/merge-summaries.jq)
and a fan-out's cell (ltsuite.fanout). Each process or instance reduces its k6 samples to one
histogram of each such trend, beside its latency histogram, in the same pass
(ltsuite.histogram reduce, "trends"); merging loses nothing, so the percentiles are those of all
raw samples within the histogram's accuracy. Kept apart from ltsuite.histogram, which a fan-out
instance runs and which travels in its command.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .histogram import ACCURACY, Histogram, figures, histogram_files, merged, read_trends


@dataclass
class Trends:
    """The percentiles (med, p(90), p(95), p(99)) of trend metrics from merged histograms, by
    metric, and a note for the row (None: nothing to say)."""

    values: dict[str, dict[str, Any]]
    note: str | None


def merged_trends(parts: list[dict[str, Histogram] | None], metrics: list[str], who: str,
                  files: list[str]) -> Trends:
    """The percentiles of each of METRICS from the merge of its histograms in PARTS (one per
    process or instance, FILES naming them); a metric some part has no histogram of is left out
    and named in the note (its percentiles would be those of some parts only)."""
    from .latency import PERCENTILES

    values: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    counts: list[str] = []
    for metric in metrics:
        these = [part.get(metric) if part is not None else None for part in parts]
        if any(h is None for h in these):
            missing.append(metric)
            continue
        whole = merged(h for h in these if h is not None)
        if whole.count == 0:
            continue
        out = figures(whole)
        values[metric] = {k: out[k] for k in PERCENTILES}
        counts.append(f"{metric} {whole.count}")
    notes = []
    if counts:
        notes.append(f"percentiles of {', '.join(counts)} samples from the merged histograms of {who} "
                     f"(within {ACCURACY:.1%} of those of the raw samples)")
    if missing:
        without = [name for name, part in zip(files, parts) if part is None] or files
        notes.append(f"percentiles of {', '.join(missing)} left empty: {', '.join(without)} "
                     f"holds no histogram of them, so {who} cannot all be merged")
    return Trends(values, "; ".join(notes) or None)


def cell_trends(cell_dir: Path, instances: int, metrics: list[str]) -> Trends:
    """The percentiles of METRICS (trend metrics k6's merged summary has without them) for a cell
    run by several k6 processes, from the merge of the histograms each process reduced
    (k6-histograms/<i>.json, "trends"); none, with the reason, when k6 wrote no samples or a
    process's histogram is missing or unreadable."""
    from .latency import sample_files

    if not metrics:
        return Trends({}, None)
    files = histogram_files(cell_dir, instances)
    names = ", ".join(metrics)
    missing = [f for f in files if not f.is_file()]
    if missing and not any(f.is_file() for f in sample_files(cell_dir, instances)):
        return Trends({}, f"percentiles of {names} left empty: {instances} k6 processes ran and k6 wrote no "
                          "samples (K6_SAMPLES=0, or the live InfluxDB output) to reduce to histograms")
    if missing:
        return Trends({}, f"percentiles of {names} left empty: "
                          f"{', '.join(str(f.relative_to(cell_dir)) for f in missing)} is missing, "
                          "so the processes' samples cannot all be merged")
    try:
        parts = [read_trends(f) for f in files]
    except ValueError as error:
        return Trends({}, f"percentiles of {names} left empty: {error}")
    return merged_trends(parts, metrics, f"{instances} k6 processes", [str(f.relative_to(cell_dir)) for f in files])
