"""A mergeable latency histogram with a stated relative precision: what a k6 process can ship
instead of its raw samples, so that percentiles over many processes come from the merged
histogram.

The rule (logarithmic buckets, as DDSketch: Masson, Rim and Lee, "DDSketch: a fast and
fully-mergeable quantile sketch with relative-error guarantees", VLDB 2019): with
gamma = (1 + a) / (1 - a), a value v > 0 goes into bucket i = ceil(log_gamma(v)), which holds
(gamma^(i-1), gamma^i]; the bucket's value is 2 gamma^i / (gamma + 1), within a relative error a
of every value in it. Values <= 0 are counted apart (as 0). Merging adds the counts of equal
buckets, so the merge of the histograms of parts is the histogram of the whole: merging loses
nothing, whatever the number of parts.

A percentile is k6's (ltsuite.latency.percentile: the value at rank q (n - 1), interpolated
linearly between the two nearest ranks) with each of the two ranked samples replaced by its
bucket's value: within a relative error a of the percentile of all raw samples. ACCURACY is a.

  python3 -m ltsuite.histogram reduce [--trends M,...] SAMPLES_FILE...
                                                        prints the histogram (JSON) of the
                                                        answered load requests in k6 sample files
                                                        (each k6 process of a cell: k6_wait in
                                                        scripts/lib/k6.sh; each fan-out instance:
                                                        scripts/ssm-instance.sh), and under
                                                        "trends" one of each trend metric M in
                                                        the same pass (by default the metrics of
                                                        the columns, ltsuite.columns.trend_metrics)
  python3 -m ltsuite.histogram merge HISTOGRAM_FILE...  prints the merged histogram's figures
  python3 -m ltsuite.histogram cost                     prints what it costs (docs/performance.md)
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

#: Relative precision of every percentile (0.5 %).
ACCURACY = 0.005


@dataclass
class Histogram:
    """Counts per logarithmic bucket (see the module's docstring), plus the exact count, sum, min
    and max (those merge exactly too)."""

    accuracy: float = ACCURACY
    bins: dict[int, int] = field(default_factory=dict)
    zeros: int = 0
    count: int = 0
    total: float = 0.0
    low: float | None = None
    high: float | None = None

    @property
    def gamma(self) -> float:
        return (1 + self.accuracy) / (1 - self.accuracy)

    def add(self, value: float) -> None:
        """Count one sample."""
        self.count += 1
        self.total += value
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)
        if value <= 0:
            self.zeros += 1
            return
        index = math.ceil(math.log(value) / math.log(self.gamma))
        self.bins[index] = self.bins.get(index, 0) + 1

    def merge(self, other: "Histogram") -> None:
        """Add OTHER's counts (same accuracy only: buckets of another width do not line up)."""
        if other.accuracy != self.accuracy:
            raise ValueError(f"cannot merge histograms of accuracy {self.accuracy} and {other.accuracy}")
        for index, n in other.bins.items():
            self.bins[index] = self.bins.get(index, 0) + n
        self.zeros += other.zeros
        self.count += other.count
        self.total += other.total
        for value in (other.low, other.high):
            if value is not None:
                self.low = value if self.low is None else min(self.low, value)
                self.high = value if self.high is None else max(self.high, value)

    def _value_at(self, rank: int, ordered: list[tuple[int, int]]) -> float:
        """The bucket value of the sample at RANK (0-based, in sorted order)."""
        if rank < self.zeros:
            return 0.0
        seen = self.zeros
        for index, n in ordered:
            seen += n
            if rank < seen:
                value = 2 * self.gamma ** index / (self.gamma + 1)
                # The extremes are known exactly; no bucket value lies outside them.
                return min(max(value, self.low or value), self.high or value)
        return float(self.high or 0.0)

    def percentile(self, fraction: float) -> float | None:
        """k6's percentile (module docstring) within ACCURACY; None when empty."""
        if self.count == 0:
            return None
        ordered = sorted(self.bins.items())
        rank = fraction * (self.count - 1)
        low = self._value_at(math.floor(rank), ordered)
        high = self._value_at(math.ceil(rank), ordered)
        return low + (high - low) * (rank - math.floor(rank))

    def to_json(self) -> dict[str, Any]:
        """The histogram as shipped: buckets as two parallel lists (compact JSON)."""
        ordered = sorted(self.bins.items())
        return {"accuracy": self.accuracy, "count": self.count, "sum": self.total, "min": self.low,
                "max": self.high, "zeros": self.zeros, "index": [i for i, _ in ordered],
                "counts": [n for _, n in ordered]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Histogram":
        """A histogram from to_json's form."""
        if len(data["index"]) != len(data["counts"]):
            raise ValueError("histogram: index and counts differ in length")
        return cls(accuracy=float(data["accuracy"]), bins=dict(zip(map(int, data["index"]), map(int, data["counts"]))),
                   zeros=int(data["zeros"]), count=int(data["count"]), total=float(data["sum"]),
                   low=data["min"], high=data["max"])


def of(values: Iterable[float], accuracy: float = ACCURACY) -> Histogram:
    """The histogram of VALUES."""
    out = Histogram(accuracy=accuracy)
    for value in values:
        out.add(value)
    return out


def merged(histograms: Iterable[Histogram]) -> Histogram:
    """The merge of HISTOGRAMS (an empty histogram when there are none)."""
    out: Histogram | None = None
    for histogram in histograms:
        if out is None:
            out = Histogram(accuracy=histogram.accuracy)
        out.merge(histogram)
    return out or Histogram()


def figures(histogram: Histogram) -> dict[str, Any]:
    """count, min, avg, med, p(90), p(95), p(99) and max, as ltsuite.latency.figures names them."""
    from .latency import PERCENTILES

    out: dict[str, Any] = {"count": histogram.count}
    if histogram.count == 0:
        return out
    out.update({"min": histogram.low, "max": histogram.high, "avg": histogram.total / histogram.count})
    out.update({name: histogram.percentile(q) for name, q in PERCENTILES.items()})
    return out


def read(path: Path) -> Histogram:
    """A histogram file as reduce wrote it; ValueError naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Histogram.from_json(data)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a histogram: {error}") from error


def reduce_lines(lines: Iterable[str], latency: Histogram, trends: dict[str, Histogram]) -> None:
    """Add to LATENCY the answered load requests of k6's sample LINES (ltsuite.latency) and to
    TRENDS[M] every Point of metric M, in one pass (a line cut short by a killed k6 is skipped).
    k6's JSON output starts each line with its metric's name ('{"metric":"M",'), so a line of
    another metric is passed over unparsed."""
    from .latency import answered_value

    head = '{"metric":"'
    for line in lines:
        value = answered_value(line)
        if value is not None:
            latency.add(value)
            continue
        if not trends or not line.startswith(head):
            continue
        part = trends.get(line[len(head):line.find('"', len(head))])
        if part is None:
            continue
        try:
            sample = json.loads(line)
            point = sample["data"]["value"] if sample.get("type") == "Point" else None
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(point, (int, float)) and not isinstance(point, bool):
            part.add(float(point))


def reduce_files(paths: Iterable[Path], trends: Iterable[str]) -> dict[str, Any]:
    """reduce's JSON: the latency histogram of PATHS (as to_json), with "trends": the histogram of
    each metric of TRENDS (an empty one for a metric with no sample)."""
    from .latency import read_lines

    latency = Histogram()
    parts = {name: Histogram() for name in trends}
    for path in paths:
        reduce_lines(read_lines(path), latency, parts)
    return {**latency.to_json(), "trends": {name: h.to_json() for name, h in sorted(parts.items())}}


def read_trends(path: Path) -> dict[str, Histogram] | None:
    """The trend histograms of a reduce file (None when it has none: written before trends were
    reduced); ValueError naming the file when they are not histograms."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        trends = data.get("trends") if isinstance(data, dict) else None
        if trends is None:
            return None
        if not isinstance(trends, dict):
            raise ValueError("trends is not a JSON object")
        return {str(name): Histogram.from_json(part) for name, part in trends.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not a histogram: {error}") from error


def histogram_files(cell_dir: Path, instances: int) -> list[Path]:
    """The histogram file of each of a cell's k6 processes, in process order:
    k6-histograms/<i>.json, i from 0 (as k6_instance_file in scripts/lib/k6.sh names it)."""
    return [cell_dir / "k6-histograms" / f"{i}.json" for i in range(instances)]


@dataclass
class Merged:
    """The percentiles of a merged histogram (values None when some part is missing) and a note
    for the row."""

    values: dict[str, Any] | None
    note: str | None


def merged_percentiles(parts: list[Histogram], who: str) -> Merged:
    """med, p(90), p(95) and p(99) of the merge of PARTS (every part present), with the note
    that says where they come from; WHO names the parts ("2 k6 processes")."""
    whole = merged(parts)
    if whole.count == 0:
        return Merged(None, f"latency percentiles left empty: the histograms of {who} hold no answered request")
    out = figures(whole)
    from .latency import PERCENTILES

    return Merged({k: out[k] for k in PERCENTILES},
                  f"latency percentiles from the merged histograms of {who} ({whole.count} answered requests; "
                  f"within {whole.accuracy:.1%} of those of the raw samples)")


def cell_percentiles(cell_dir: Path, instances: int) -> Merged:
    """The median and p90/p95/p99 of a cell run by several k6 processes, from the merge of
    their histograms; None with the reason when a process's histogram is missing or unreadable
    (the percentiles would then be those of some processes only)."""
    from .latency import sample_files

    files = histogram_files(cell_dir, instances)
    missing = [f for f in files if not f.is_file()]
    if missing and not any(f.is_file() for f in sample_files(cell_dir, instances)):
        return Merged(None, f"latency percentiles left empty: {instances} k6 processes ran and k6 wrote no "
                            "samples (K6_SAMPLES=0, or the live InfluxDB output) to reduce to histograms")
    if missing:
        names = ", ".join(str(f.relative_to(cell_dir)) for f in missing)
        return Merged(None, f"latency percentiles left empty: {instances} k6 processes ran and {names} is missing, "
                            "so their latencies cannot all be merged")
    try:
        parts = [read(f) for f in files]
    except ValueError as error:
        return Merged(None, f"latency percentiles left empty: {error}")
    return merged_percentiles(parts, f"{instances} k6 processes")


def cost(instances: int = 100, per_instance: int = 100_000) -> dict[str, Any]:
    """Simulated cost: the bytes of one histogram of a million requests (lognormal around 20 ms,
    capped at 60 s), and the seconds to parse, merge and take the percentiles of INSTANCES
    histograms of PER_INSTANCE requests each (best and median of 5)."""
    import gzip
    import random
    import time

    def latencies(seed: int, n: int) -> Iterable[float]:
        rng = random.Random(seed)
        return (min(rng.lognormvariate(3, 1.0), 60_000.0) for _ in range(n))

    one = of(latencies(1, 1_000_000))
    shipped = json.dumps(one.to_json(), separators=(",", ":")).encode()
    texts = [json.dumps(of(latencies(seed, per_instance)).to_json(), separators=(",", ":")) for seed in range(instances)]
    times = []
    for _ in range(5):
        start = time.perf_counter()
        figures(merged(Histogram.from_json(json.loads(text)) for text in texts))
        times.append(time.perf_counter() - start)
    times.sort()
    return {"buckets_per_million": len(one.bins), "bytes_per_million": len(shipped),
            "gzip_bytes_per_million": len(gzip.compress(shipped, 9)), "instances": instances,
            "merge_s_best": round(times[0], 4), "merge_s_median": round(times[2], 4)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["cost"]:
        json.dump(cost(), sys.stdout)
        sys.stdout.write("\n")
        return 0
    if len(args) < 2 or args[0] not in ("reduce", "merge"):
        sys.stderr.write("usage: python3 -m ltsuite.histogram reduce SAMPLES_FILE... | merge HISTOGRAM_FILE... | cost\n")
        return 2
    if args[0] == "reduce":
        files = args[1:]
        if files[:1] == ["--trends"] and len(files) >= 3:
            trends = [name for name in files[1].split(",") if name]
            files = files[2:]
        else:
            # The columns' trend metrics (the modules of a fan-out instance have no ltsuite.columns:
            # its command names them with --trends).
            from .columns import trend_metrics

            trends = list(trend_metrics())
        json.dump(reduce_files(map(Path, files), trends), sys.stdout, separators=(",", ":"))
    else:
        try:
            parts = [read(Path(name)) for name in args[1:]]
        except ValueError as error:
            sys.stderr.write(f"{error}\n")
            return 1
        json.dump(figures(merged(parts)), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
