"""The mergeable histogram (ltsuite.histogram): merging loses nothing, and the percentiles of the
merged histogram are those of all raw samples within its stated accuracy."""
import json
import random
import subprocess
import sys

import pytest

from ltsuite import latency
from ltsuite.histogram import ACCURACY, Histogram, figures, merged, of

from conftest import ROOT

FIXTURES = ROOT / "tests/python/fixtures"
# The recorded samples with answered requests (cut-off-counted has none: every request was cut off).
RECORDED = [p for p in sorted(FIXTURES.glob("*/k6-samples.json.gz")) if latency.answered_durations(latency.read_lines(p))]


def close(estimate, exact, accuracy=ACCURACY):
    return abs(estimate - exact) <= accuracy * abs(exact) + 1e-12


def test_the_merge_of_parts_is_the_histogram_of_the_whole():
    rng = random.Random(7)
    values = [rng.lognormvariate(3, 1) for _ in range(20_000)]
    parts = [of(values[i::8]) for i in range(8)]
    whole, merge = of(values), merged(parts)
    assert merge.bins == whole.bins
    assert (merge.count, merge.low, merge.high) == (whole.count, whole.low, whole.high)
    assert merge.total == pytest.approx(whole.total)


@pytest.mark.parametrize("seed", range(5))
def test_percentiles_of_a_merged_histogram_are_the_raw_samples_within_its_accuracy(seed):
    rng = random.Random(seed)
    # A heavy tail and some zeros (a timed-out request's duration is not among them; 0 ms can be).
    values = [0.0] * 3 + [rng.paretovariate(1.5) * 2 for _ in range(30_000)]
    exact = latency.figures(values)
    estimate = figures(merged(of(values[i::100]) for i in range(100)))
    for name in latency.PERCENTILES:
        assert close(estimate[name], exact[name]), (name, estimate[name], exact[name])
    assert (estimate["count"], estimate["min"], estimate["max"]) == (exact["count"], exact["min"], exact["max"])


def test_a_coarser_histogram_misses_the_bound_the_finer_one_keeps():
    """The bound is the histogram's, not luck: at 10 % the same check fails at 0.5 %."""
    rng = random.Random(3)
    values = [rng.lognormvariate(3, 1) for _ in range(5_000)]
    exact = latency.figures(values)
    coarse = figures(of(values, accuracy=0.1))
    assert not all(close(coarse[n], exact[n]) for n in latency.PERCENTILES)
    assert all(close(coarse[n], exact[n], 0.1) for n in latency.PERCENTILES)


@pytest.mark.parametrize("samples", RECORDED, ids=[p.parent.name for p in RECORDED])
def test_a_recorded_k6_run_split_in_parts_gives_its_raw_percentiles(samples):
    durations = latency.answered_durations(latency.read_lines(samples))
    assert durations
    exact = latency.figures(durations)
    estimate = figures(merged(of(durations[i::3]) for i in range(3)))
    for name in latency.PERCENTILES:
        assert close(estimate[name], exact[name]), (samples, name, estimate[name], exact[name])


def test_histograms_of_another_accuracy_do_not_merge():
    with pytest.raises(ValueError, match="accuracy"):
        merged([of([1.0]), of([1.0], accuracy=0.01)])


def test_reduce_then_merge_on_the_command_line(tmp_path):
    files = []
    for n, samples in enumerate(RECORDED):
        out = subprocess.run([sys.executable, "-m", "ltsuite.histogram", "reduce", str(samples)], check=True,
                             capture_output=True, text=True, cwd=ROOT / "scripts").stdout
        files.append(tmp_path / f"h{n}.json")
        files[-1].write_text(out)
        assert Histogram.from_json(json.loads(out)).count == len(latency.answered_durations(latency.read_lines(samples)))
    out = subprocess.run([sys.executable, "-m", "ltsuite.histogram", "merge", *map(str, files)], check=True,
                         capture_output=True, text=True, cwd=ROOT / "scripts").stdout
    merged_figures = json.loads(out)
    exact = latency.figures([d for s in RECORDED for d in latency.answered_durations(latency.read_lines(s))])
    assert merged_figures["count"] == exact["count"]
    assert all(close(merged_figures[n], exact[n]) for n in latency.PERCENTILES)
