"""The row of a fan-out cell (scripts/ssm-fanout.sh, and a k6-operator TestRun's pods: ltsuite.testrun):
one row for the whole cell from the rows of its instances, each built by ltsuite.row from that
instance's k6 summary (instance-row, write_instance_row).

  python3 -m ltsuite.fanout CELL_DIR --run-id ID --cell CELL_ID --axes JSON [--status ok|failed]
                            [--error TEXT] [--percentiles JSON] [--notes TEXT]
  python3 -m ltsuite.fanout instance-row INSTANCE_DIR --run-id ID --cell CELL_ID --axes JSON
  python3 -m ltsuite.fanout segments N

reads CELL_DIR/cell.env, CELL_DIR/instances/*/row.json and their histogram.json, and prints the
cell's row.

The columns of the cell's row, and how each is made from the instances' rows, are those of
ltsuite.columns with a fanout rule (the one table of columns; fanout_columns, combine): counters,
VUs and rates add up; min and max are the extremes; the mean latency is weighted by each
instance's answered requests (lat_count); tps and the failed rate are computed from the sums (the
failed rate empty when no instance measured its failed requests: unmeasured is empty, never 0).
Percentiles of parts do not combine:
they come from the merge of every instance's latency histogram (ltsuite.histogram: those of all
raw samples within its 0.5 %), else from InfluxDB's PERCENTILE over every raw sample
(--percentiles, with its --notes), else stay empty; never an average of percentiles. The
percentiles of a scenario's own trends (ws_*_p95_ms, wr_admission_*: the columns with a trend and
the rule "merged") come from the merge of the instances' histograms of the trend, which each
instance reduces beside its latency's (histogram.json's "trends"), else stay empty. What only a local run measures (the
server's counters, queues and the sampler's peaks) is left out: the instances do not see the
server.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import histogram, trends
from .causes import failure_causes
from . import formats
from .cellfiles import read_cell_env, read_json
from .columns import COLUMNS, Column
from .numbers import num, or_default, tidy

def fraction(num: int, den: int) -> str:
    """NUM/DEN as k6 writes a segment bound: "0", "1" or "num/den"."""
    return "0" if num == 0 else "1" if num == den else f"{num}/{den}"


def segment(index: int, count: int) -> str:
    """The execution segment of instance INDEX (0-based) of COUNT: INDEX/COUNT:(INDEX+1)/COUNT. An
    SSM instance gets it in its command; k6-operator gives the same to its runner INDEX+1 (its
    pkg/segmentation; a single runner gets no segment flag, the whole 0:1)."""
    return f"{fraction(index, count)}:{fraction(index + 1, count)}"


def segment_sequence(count: int) -> str:
    """"0,1/COUNT,...,1": every instance gets the same sequence, so k6 hands out VUs, iterations
    and arrival rates consistently and the instances together run the configured load once."""
    return ",".join(fraction(i, count) for i in range(count + 1))


#: The counters that add up over instances: one fail_<cause> column per cause of a failed request,
#: from causes.tsv (ltsuite.causes), the one list of them.
TOTALS = tuple(f"fail_{cause}" for cause in failure_causes())

#: The identity of a row, the same in every instance's row and the cell's.
IDENTITY = ("run_id", "cell", "scenario", "status", "axes")


def fanout_columns(scenario: str | None = None) -> list[Column]:
    """The columns a fan-out's row has (those with a fanout rule in ltsuite.columns, the one table of
    columns): every row's, and those of SCENARIO's own (its "extra") when given."""
    return [c for c in COLUMNS if c.fanout and (c.scenario is None if scenario is None else c.scenario == scenario)]


def combine(column: Column, rows: list[dict[str, Any]], percentiles: dict[str, Any]) -> Any:
    """COLUMN of the cell's row from its instances' ROWS (or their "extra"), by its fanout rule;
    None when no instance measured it ("derived" columns are computed by aggregate_row)."""
    values = [row[column.name] for row in rows if row.get(column.name) is not None]
    rule = column.fanout
    if rule == "merged":
        return percentiles.get(column.name)
    if rule == "mean":
        timed = [row for row in rows if row.get(column.name) is not None and or_default(row.get("lat_count"), 0) > 0]
        return (None if not timed else
                num(sum(r[column.name] * r["lat_count"] for r in timed) / sum(r["lat_count"] for r in timed)))
    if not values or rule == "derived":
        return None
    if rule == "same":
        return values[0] if len(set(map(str, values))) == 1 and len(values) == len(rows) else None
    return {"sum": sum, "min": min, "max": max}[rule](values)


def aggregate_row(rows: list[dict[str, Any]], *, run_id: str, cell: str, axes: Any, env: dict[str, str],
                  status: str, error: str, percentiles: dict[str, Any] | None, notes: str,
                  backend: str = "ssm") -> dict[str, Any]:
    """The cell's row from its instances' rows (see the module's docstring for the rules)."""
    pct = percentiles or {}
    scenario = env.get("SCENARIO")
    row: dict[str, Any] = {"format": formats.RUN_FORMAT, "run_id": run_id, "cell": cell, "scenario": scenario,
                           "status": status, "axes": axes, "backend": backend, "instances": len(rows)}
    row.update({column.name: combine(column, rows, pct) for column in fanout_columns()})
    reqs, duration, failed = row.get("http_reqs"), row.get("duration_s"), row.get("failed_reqs")
    row["tps"] = None if reqs is None or or_default(duration, 0) == 0 else num(reqs / duration)
    row["failed_rate"] = None if failed is None or reqs is None or reqs == 0 else num(failed / reqs)
    extras = [row_["extra"] for row_ in rows if isinstance(row_.get("extra"), dict)]
    extra = {column.name: combine(column, extras, pct) for column in fanout_columns(scenario or "")}
    if extras and any(value is not None for value in extra.values()):
        row["extra"] = extra
    row["error"] = error
    row["notes"] = notes
    return {key: tidy(value) for key, value in row.items()}


#: The fields of an instance's row: the identity, the columns a fan-out's row has (fanout_columns)
#: and the scenario's own ("extra"), with the instance's own figures (its percentiles are exact
#: for it). The others (the target's kernel counters and samples) only a local run measures, so
#: they stay empty instead of a misleading 0.
ROW_FIELDS = (*IDENTITY, *(column.name for column in fanout_columns()), "error", "extra")
#: The summary's metric whose count the instance's latency mean is over (to weigh means with).
ANSWERED = "http_req_duration{traffic:load,expected_response:true}"


def write_json(path: Path, data: Any) -> None:
    """DATA as indented JSON in PATH, written whole or not at all."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def write_instance_row(instance_dir: Path, *, run_id: str, cell: str, axes: Any) -> dict[str, Any]:
    """INSTANCE_DIR/row.json: one instance's row built as a local cell's (ltsuite.row, from its
    summary.json and cell.env), marked with the cell and the instance, with only ROW_FIELDS and the
    count of answered requests its latency figures are over (lat_count)."""
    from . import row as row_module

    row_module.main([str(instance_dir), "--run-id", run_id, "--status", "ok", "--axes", json.dumps(axes)])
    full = read_json(instance_dir / "row.json") or {}
    summary = read_json(instance_dir / "summary.json") or {}
    answered = ((summary.get("metrics") or {}).get(ANSWERED) or {}).get("values") or {}
    out = formats.stamp({key: full[key] for key in ROW_FIELDS if key in full})
    out.update(cell=cell, instance=instance_dir.name, lat_count=answered.get("count"))
    write_json(instance_dir / "row.json", out)
    return out


def instance_rows(cell_dir: Path) -> list[dict[str, Any]]:
    """The rows of the instances that succeeded (CELL_DIR/instances/*/row.json), in name order."""
    rows = [formats.read_run_file(path) for path in sorted(cell_dir.glob("instances/*/row.json"))]
    return [row for row in rows if isinstance(row, dict)]


def merged_percentiles(cell_dir: Path) -> tuple[dict[str, Any] | None, str]:
    """The percentiles (row columns) of the merge of the histograms of the instances that
    succeeded (those with a row.json), and the note that says so; (None, why) when one of them
    shipped none (the reason names it) or there is no instance."""
    dirs = [path.parent for path in sorted(cell_dir.glob("instances/*/row.json"))]
    if not dirs:
        return None, ""
    missing = [d.name for d in dirs if not (d / "histogram.json").is_file()]
    if missing:
        return None, (f"no latency histogram from {', '.join(missing)} (the instance needs python3 to reduce "
                      "k6's samples; see its stdout.txt)")
    try:
        parts = [histogram.read(d / "histogram.json") for d in dirs]
    except ValueError as error:
        return None, str(error)
    merged = histogram.merged_percentiles(parts, f"{len(dirs)} instance{'s' if len(dirs) != 1 else ''}")
    if merged.values is None:
        return None, merged.note or ""
    columns = {"med": "lat_med_ms", "p(90)": "lat_p90_ms", "p(95)": "lat_p95_ms", "p(99)": "lat_p99_ms"}
    return {columns[k]: num(v) for k, v in merged.values.items()}, merged.note or ""


def merged_trend_columns(cell_dir: Path, scenario: str | None) -> tuple[dict[str, Any], str]:
    """SCENARIO's trend percentile columns (a trend and the rule "merged") from the merge of the
    trend histograms of the instances that succeeded (histogram.json's "trends"), and the note
    that says where they come from or why they are empty."""
    wanted = [c for c in fanout_columns(scenario or "") if c.fanout == "merged" and c.trend is not None]
    dirs = [path.parent for path in sorted(cell_dir.glob("instances/*/row.json"))]
    if not wanted or not dirs:
        return {}, ""
    metrics = sorted({c.trend[0] for c in wanted if c.trend is not None})
    files = [d / "histogram.json" for d in dirs]
    try:
        parts = [histogram.read_trends(f) if f.is_file() else None for f in files]
    except ValueError as error:
        return {}, f"percentiles of {', '.join(metrics)} left empty: {error}"
    who = f"{len(dirs)} instance{'s' if len(dirs) != 1 else ''}"
    merge = trends.merged_trends(parts, metrics, who, [str(f.relative_to(cell_dir)) for f in files])
    values = {c.name: num(merge.values[c.trend[0]][c.trend[1]]) for c in wanted
              if c.trend is not None and c.trend[0] in merge.values}
    return values, merge.note or ""


def with_trends(cell_dir: Path, env: dict[str, str], percentiles: dict[str, Any] | None,
                notes: str) -> tuple[dict[str, Any] | None, str]:
    """PERCENTILES and NOTES with the scenario's trend percentiles (merged_trend_columns) added."""
    values, note = merged_trend_columns(cell_dir, env.get("SCENARIO"))
    if values:
        percentiles = {**(percentiles or {}), **values}
    return percentiles, "; ".join(text for text in (notes, note) if text)


def instance_row_main(argv: list[str]) -> int:
    """instance-row INSTANCE_DIR --run-id ID --cell CELL --axes JSON: write_instance_row."""
    parser = argparse.ArgumentParser(prog="python3 -m ltsuite.fanout instance-row")
    parser.add_argument("instance_dir", type=Path)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--cell", required=True)
    parser.add_argument("--axes", default="{}")
    args = parser.parse_args(argv)
    write_instance_row(args.instance_dir, run_id=args.run_id, cell=args.cell, axes=json.loads(args.axes))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["instance-row"]:
        return instance_row_main(argv[1:])
    if argv[:1] == ["segments"] and len(argv) == 2 and argv[1].isdigit() and int(argv[1]) > 0:
        # One line an instance: its segment and the sequence, a tab between.
        for index in range(int(argv[1])):
            print(f"{segment(index, int(argv[1]))}\t{segment_sequence(int(argv[1]))}")
        return 0
    parser = argparse.ArgumentParser(prog="python3 -m ltsuite.fanout", description="Print a fan-out cell's row.")
    parser.add_argument("cell_dir", type=Path)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--cell", required=True)
    parser.add_argument("--axes", default="{}")
    parser.add_argument("--status", default="ok")
    parser.add_argument("--error", default="")
    parser.add_argument("--percentiles", default="null", help="from InfluxDB, when the histograms are not all there")
    parser.add_argument("--notes", default="", help="the notes that go with --percentiles")
    args = parser.parse_args(argv)
    percentiles, notes = merged_percentiles(args.cell_dir)
    if percentiles is None:
        percentiles = json.loads(args.percentiles)
        notes = "; ".join(text for text in (notes, args.notes) if text)
    env = read_cell_env(args.cell_dir / "cell.env") or {}
    percentiles, notes = with_trends(args.cell_dir, env, percentiles, notes)
    row = aggregate_row(instance_rows(args.cell_dir), run_id=args.run_id, cell=args.cell,
                        axes=json.loads(args.axes), env=env,
                        status=args.status, error=args.error, percentiles=percentiles, notes=notes)
    json.dump(row, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
