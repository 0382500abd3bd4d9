"""A scenario's own trend percentiles in a cell run by several k6 processes (ltsuite.row
trend_percentiles, ltsuite.histogram reduce): they come from the merge of the histograms each
process reduces from its samples, as the latency's do, and are those of all raw samples within the
histogram's accuracy.

The cell, tests/python/fixtures/websocket-two-processes, was recorded by run 20261129-082315-ws2
(`make run-matrix` of SCENARIO=websocket K6_INSTANCES=2 VUS=4 WS_SESSIONS_PER_VU=2 WS_MESSAGES=3
WS_WORK_MS=20 WS_THINK_MS=10 DURATION=4s), its nstat snapshots and target's files left out. Its
k6-histograms/ are those the run wrote before the trends were reduced (latency only), and its
row.json the row it wrote then: the ws_*_p95 columns empty."""
import gzip
import json
import shutil
import subprocess
import sys

import pytest

from ltsuite import columns, latency
from ltsuite.histogram import ACCURACY
from ltsuite.row import Cell, build_row

from conftest import ROOT

FIXTURE = ROOT / "tests/python/fixtures/websocket-two-processes"
SAMPLES = ("k6-samples.json.gz", "k6-samples-2.json.gz")
#: The WebSocket columns that are percentiles of a trend (Column.trend), with their metric and stat.
PERCENTILE_COLUMNS = {c.name: c.trend for c in columns.COLUMNS
                      if c.scenario == "websocket" and c.trend is not None and c.trend[1] in latency.PERCENTILES}


def raw(metric, files):
    """Every Point of METRIC in the samples FILES, sorted."""
    out = []
    for path in files:
        with gzip.open(path, "rt") as handle:
            for line in handle:
                sample = json.loads(line)
                if sample.get("metric") == metric and sample.get("type") == "Point":
                    out.append(sample["data"]["value"])
    return sorted(out)


def reduce_into(cell_dir):
    """What k6_histograms (scripts/lib/k6.sh) does after the cell: each process's samples reduced
    by the same command to k6-histograms/<i>.json."""
    for i, name in enumerate(SAMPLES):
        out = subprocess.run([sys.executable, "-m", "ltsuite.histogram", "reduce", str(cell_dir / name)],
                             env={"PYTHONPATH": str(ROOT / "scripts")}, capture_output=True, text=True,
                             check=True, timeout=60).stdout
        (cell_dir / "k6-histograms" / f"{i}.json").write_text(out)


def row_of(cell_dir):
    rec = json.loads((FIXTURE / "row.json").read_text())
    return build_row(Cell.read(cell_dir), run_id=rec["run_id"], status="ok", error="", axes=rec["axes"], cpus=2)


@pytest.fixture
def cell(tmp_path):
    target = tmp_path / "cell"
    shutil.copytree(FIXTURE, target)
    return target


def test_the_recorded_row_has_no_websocket_percentile_and_its_summary_none():
    rec = json.loads((FIXTURE / "row.json").read_text())
    summary = json.loads((FIXTURE / "summary.json").read_text())
    assert sorted(PERCENTILE_COLUMNS) == ["ws_close_p95_ms", "ws_close_p99_ms", "ws_connect_p95_ms", "ws_message_p95_ms"]
    assert all(rec["extra"][name] is None for name in PERCENTILE_COLUMNS)
    assert all(summary["metrics"][m]["values"].get(stat) is None for m, stat in PERCENTILE_COLUMNS.values())


def test_reduce_writes_a_histogram_of_each_trend_the_columns_name():
    out = json.loads(subprocess.run([sys.executable, "-m", "ltsuite.histogram", "reduce", str(FIXTURE / SAMPLES[0])],
                                    env={"PYTHONPATH": str(ROOT / "scripts")}, capture_output=True, text=True,
                                    check=True, timeout=60).stdout)
    assert sorted(out["trends"]) == sorted(columns.trend_metrics())
    for metric in ("ws_connect", "ws_message", "ws_close"):
        # The process's own summary (k6's) counted as many samples of it.
        own = json.loads((FIXTURE / "k6-summaries/0.json").read_text())["metrics"][metric]["values"]
        assert out["trends"][metric]["count"] == own["count"] > 0
        assert out["trends"][metric]["max"] == pytest.approx(own["max"])
    assert out["trends"]["wr_time_to_admission"]["count"] == 0


def test_a_two_process_row_has_the_websocket_percentiles_of_all_raw_samples_within_the_accuracy(cell):
    reduce_into(cell)
    row = row_of(cell)
    for name, (metric, stat) in PERCENTILE_COLUMNS.items():
        exact = latency.percentile(raw(metric, [cell / s for s in SAMPLES]), latency.PERCENTILES[stat])
        assert row["extra"][name] == pytest.approx(exact, rel=ACCURACY, abs=0.001), name
    # What the merged summary has exactly stays k6's.
    assert row["extra"]["ws_close_max_ms"] == pytest.approx(5.99)
    assert "percentiles of ws_close 8, ws_connect 8, ws_message 24 samples from the merged histograms of " \
           "2 k6 processes (within 0.5% of those of the raw samples)" in row["notes"]


def test_histograms_written_before_the_trends_leave_them_empty_and_say_so(cell):
    row = row_of(cell)
    assert all(row["extra"][name] is None for name in PERCENTILE_COLUMNS)
    assert ("percentiles of ws_close, ws_connect, ws_message left empty: k6-histograms/0.json, "
            "k6-histograms/1.json holds no histogram of them") in row["notes"]


def test_without_samples_the_percentiles_stay_empty_and_the_notes_say_why(cell):
    for name in SAMPLES:
        (cell / name).unlink()
    shutil.rmtree(cell / "k6-histograms")
    (cell / "cell.env").write_text((cell / "cell.env").read_text().replace("K6_SAMPLES=1", "K6_SAMPLES=0"))
    row = row_of(cell)
    assert all(row["extra"][name] is None for name in PERCENTILE_COLUMNS)
    assert ("percentiles of ws_close, ws_connect, ws_message left empty: 2 k6 processes ran and k6 wrote no "
            "samples (K6_SAMPLES=0") in row["notes"]


def test_every_trend_column_names_a_stat_the_summary_has():
    stats = (ROOT / "scenarios/lib/summary.js").read_text()
    for column in columns.COLUMNS:
        if column.trend is not None:
            assert f"'{column.trend[1]}'" in stats, column.name


# --- A fan-out: each process of the recorded cell as an instance ---------------------------------

def fan_out_cell(tmp_path):
    """A fan-out cell whose two instances ran the recorded cell's two processes: each with a row,
    and the histogram.json scripts/ssm-instance.sh prints (reduce --trends LT_TRENDS), LT_TRENDS as
    the command sets it (ltsuite.ssmcommand)."""
    from ltsuite import ssmcommand

    trends = ",".join(ssmcommand.trend_metrics())
    for i, name in enumerate(SAMPLES):
        d = tmp_path / "instances" / f"i-{i}"
        d.mkdir(parents=True)
        summary = json.loads((FIXTURE / f"k6-summaries/{i}.json").read_text())
        (d / "row.json").write_text(json.dumps({"extra": {"ws_sessions": summary["metrics"]["ws_sessions"]["values"]["count"]}}))
        out = subprocess.run([sys.executable, "-m", "ltsuite.histogram", "reduce", "--trends", trends,
                              str(FIXTURE / name)], env={"PYTHONPATH": str(ROOT / "scripts")},
                             capture_output=True, text=True, check=True, timeout=60).stdout
        (d / "histogram.json").write_text(out)
    (tmp_path / "cell.env").write_text("SCENARIO=websocket\n")


def fan_out_row(cell_dir):
    run = subprocess.run([sys.executable, "-m", "ltsuite.fanout", str(cell_dir), "--run-id", "r", "--cell", "01"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "scripts")}, check=True,
                         timeout=60)
    return json.loads(run.stdout)


def test_a_fan_outs_websocket_percentiles_come_from_the_instances_trend_histograms(tmp_path):
    fan_out_cell(tmp_path)
    row = fan_out_row(tmp_path)
    assert row["extra"]["ws_sessions"] == 8
    for name, (metric, stat) in PERCENTILE_COLUMNS.items():
        exact = latency.percentile(raw(metric, [FIXTURE / s for s in SAMPLES]), latency.PERCENTILES[stat])
        assert row["extra"][name] == pytest.approx(exact, rel=ACCURACY, abs=0.001), name
    assert "percentiles of ws_close 8, ws_connect 8, ws_message 24 samples from the merged histograms of " \
           "2 instances" in row["notes"]


def test_an_instance_histogram_without_trends_leaves_them_empty_and_is_named(tmp_path):
    fan_out_cell(tmp_path)
    shutil.copyfile(FIXTURE / "k6-histograms/1.json", tmp_path / "instances/i-1/histogram.json")
    row = fan_out_row(tmp_path)
    assert all(row["extra"].get(name) is None for name in PERCENTILE_COLUMNS)
    assert ("percentiles of ws_close, ws_connect, ws_message left empty: instances/i-1/histogram.json holds no "
            "histogram of them, so 2 instances cannot all be merged") in row["notes"]


def test_a_new_trend_column_is_one_line_in_columns_filled_in_one_and_two_process_rows(cell, monkeypatch):
    """A column that is a stat of a k6 trend (Column.trend) needs no code in row.py: added to
    ltsuite.columns alone (its stat one summary.js keeps), it is filled from the summary, and with
    several k6 processes from their merged histograms."""
    from ltsuite import row as row_module
    added = columns._extra("websocket", "ws_connect_p99_ms", columns.NUMBER, "ms", "a new one",
                           fanout="merged", trend=("ws_connect", "p(99)"))
    monkeypatch.setattr(row_module, "scenario_columns", lambda: [*columns.scenario_columns(), added])
    reduce_into(cell)
    exact = latency.percentile(raw("ws_connect", [cell / s for s in SAMPLES]), latency.PERCENTILES["p(99)"])
    assert row_of(cell)["extra"]["ws_connect_p99_ms"] == pytest.approx(exact, rel=ACCURACY, abs=0.001)
    # One process: the summary's own figure.
    summary = json.loads((cell / "summary.json").read_text())
    summary["metrics"]["ws_connect"]["values"]["p(99)"] = 42.5
    (cell / "summary.json").write_text(json.dumps(summary))
    assert row_of(cell)["extra"]["ws_connect_p99_ms"] == 42.5
