"""The row of a fan-out cell (scripts/ssm-fanout.sh, and a k6-operator TestRun's pods: ltsuite.testrun):
one row for the whole cell from the rows of its instances, each built by ltsuite.row from that
instance's k6 summary (instance-row, write_instance_row).

  python3 -m ltsuite.fanout CELL_DIR --run-id ID --cell CELL_ID --axes JSON [--status ok|failed]
                            [--error TEXT] [--percentiles JSON] [--notes TEXT]
  python3 -m ltsuite.fanout instance-row INSTANCE_DIR --run-id ID --cell CELL_ID --axes JSON
  python3 -m ltsuite.fanout segments N

reads CELL_DIR/cell.env, CELL_DIR/instances/*/row.json and their histogram.json, and prints the
cell's row.

Counters and VUs add up over the instances; min and max are the extremes; the mean latency is
weighted by each instance's answered requests (lat_count); the failed rate is the failed requests
over the requests, empty when no instance measured its failed requests (unmeasured is empty,
never 0). Percentiles of parts do not combine:
they come from the merge of every instance's latency histogram (ltsuite.histogram: those of all
raw samples within its 0.5 %), else from InfluxDB's PERCENTILE over every raw sample
(--percentiles, with its --notes), else stay empty; never an average of percentiles. What only
a local run measures (the server's counters, queues and the sampler's peaks) is left out: the
instances do not see the server.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import histogram
from .causes import failure_causes
from . import formats
from .cellfiles import read_cell_env, read_json
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


def aggregate_row(rows: list[dict[str, Any]], *, run_id: str, cell: str, axes: Any, env: dict[str, str],
                  status: str, error: str, percentiles: dict[str, Any] | None, notes: str,
                  backend: str = "ssm") -> dict[str, Any]:
    """The cell's row from its instances' rows (see the module's docstring for the rules)."""
    def present(key: str) -> list[Any]:
        return [row[key] for row in rows if row.get(key) is not None]

    def total(key: str) -> Any:
        values = present(key)
        return sum(values) if values else None

    reqs = total("http_reqs")
    durations = present("duration_s")
    duration = max(durations) if durations else None
    failed = total("failed_reqs")
    timed = [row for row in rows if row.get("lat_avg_ms") is not None and or_default(row.get("lat_count"), 0) > 0]
    pct = percentiles or {}
    lat_min, lat_max = present("lat_min_ms"), present("lat_max_ms")
    row: dict[str, Any] = {
        "format": formats.RUN_FORMAT, "run_id": run_id, "cell": cell, "scenario": env.get("SCENARIO"), "status": status, "axes": axes,
        "backend": backend, "instances": len(rows),
        "vus_max": total("vus_max"),
        "duration_s": duration,
        "http_reqs": reqs,
        "tps": None if reqs is None or or_default(duration, 0) == 0 else num(reqs / duration),
        "lat_min_ms": min(lat_min) if lat_min else None,
        "lat_avg_ms": (None if not timed else
                       num(sum(r["lat_avg_ms"] * r["lat_count"] for r in timed) / sum(r["lat_count"] for r in timed))),
        "lat_med_ms": pct.get("lat_med_ms"),
        "lat_p90_ms": pct.get("lat_p90_ms"),
        "lat_p95_ms": pct.get("lat_p95_ms"),
        "lat_p99_ms": pct.get("lat_p99_ms"),
        "lat_max_ms": max(lat_max) if lat_max else None,
        "failed_reqs": failed,
        "failed_rate": None if failed is None or reqs is None or reqs == 0 else num(failed / reqs),
    }
    row.update({key: total(key) for key in TOTALS})
    row["iterations"] = total("iterations")
    row["dropped_iterations"] = total("dropped_iterations")
    row["error"] = error
    row["notes"] = notes
    return {key: tidy(value) for key, value in row.items()}


#: The fields of an instance's row: those k6's summary gives. The others (the target's kernel
#: counters and samples) only a local run measures, so they stay empty instead of a misleading 0.
ROW_FIELDS = ("run_id", "cell", "scenario", "status", "axes", "vus_max", "duration_s", "http_reqs", "tps",
              "lat_min_ms", "lat_avg_ms", "lat_med_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms",
              "failed_reqs", "failed_rate", *TOTALS, "iterations", "dropped_iterations", "error", "extra")
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
        # One line an instance: its segment and the sequence, a tab between (ssm_plan_segments).
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
    row = aggregate_row(instance_rows(args.cell_dir), run_id=args.run_id, cell=args.cell,
                        axes=json.loads(args.axes), env=read_cell_env(args.cell_dir / "cell.env") or {},
                        status=args.status, error=args.error, percentiles=percentiles, notes=notes)
    json.dump(row, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
