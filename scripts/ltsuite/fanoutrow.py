"""A fan-out cell's rows, once its outputs are collected (ltsuite.fanoutmain): each instance that
did not fail gets its row (ltsuite.fanout.write_instance_row, from its summary.json and the cell's
env), then the cell gets one row from them (ltsuite.fanout.aggregate_row), written as
cells/<cell>/row.json; the manifest gets the row's notes.

  python3 -m ltsuite.fanoutrow RUN_DIR

The instances, their errors, the axes and the InfluxDB settings come from RUN_DIR/manifest.json.
The percentiles come from the merge of the instances' latency histograms (ltsuite.fanout); only
when some instance shipped none, and FANOUT_INFLUXDB_URL was set, from InfluxDB's PERCENTILE over
every instance's raw samples (answered load requests of this run and cell); failing that they stay
empty, and the notes and a manifest warning say why. Never an average of percentiles.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from . import fanout, formats
from .cellfiles import read_cell_env
from .fanoutplan import influx_db
from .numbers import num
from .ssm import _write_json

NOT_MERGEABLE = ("percentiles not mergeable: each instance's summary has its own, and percentiles of parts do not "
                 "combine; set FANOUT_INFLUXDB_URL to get them from the raw samples (min, max and the "
                 "request-weighted mean are exact)")


def influx_percentiles(url: str, query_url: str, run_id: str, cell: str,
                       timeout: float = 60) -> tuple[dict[str, Any] | None, str]:
    """The latency percentiles of the run's and cell's answered load requests over every
    instance's raw samples in InfluxDB (QUERY_URL, else URL: where this machine reaches it), with
    their count: ({"lat_med_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "samples"}, ""), or
    (None, why not)."""
    if not re.fullmatch(r"[A-Za-z0-9._:-]+", run_id + cell):  # the ids go into the query's text
        return None, f"run or cell id with unexpected characters: {run_id} {cell}"
    base = re.match(r"https?://[^/]+", query_url or url)
    base_url = base.group(0) if base else (query_url or url)
    query = ('SELECT PERCENTILE("value", 50) AS p50, PERCENTILE("value", 90) AS p90, '
             'PERCENTILE("value", 95) AS p95, PERCENTILE("value", 99) AS p99, COUNT("value") AS samples '
             f"FROM \"http_req_duration\" WHERE \"run_id\" = '{run_id}' AND \"cell\" = '{cell}' "
             "AND \"traffic\" = 'load' AND \"expected_response\" = 'true'")
    address = f"{base_url}/query?" + urllib.parse.urlencode({"db": influx_db(url), "q": query})
    try:
        with urllib.request.urlopen(address, timeout=timeout) as answer:
            data = json.load(answer)
    except (OSError, ValueError) as error:
        return None, f"query to {base_url} failed: {str(error)[:200]}"
    try:
        series = data["results"][0]["series"][0]
        values = dict(zip(series["columns"], series["values"][0]))
    except (KeyError, IndexError, TypeError):
        return None, f"InfluxDB has no http_req_duration samples for run {run_id}, cell {cell}"

    def ms(key: str) -> Any:
        # To 0.001 ms, a half away from zero (as the row's other figures).
        return None if values.get(key) is None else num(math.floor(values[key] * 1000 + 0.5) / 1000)

    return {"lat_med_ms": ms("p50"), "lat_p90_ms": ms("p90"), "lat_p95_ms": ms("p95"), "lat_p99_ms": ms("p99"),
            "samples": values.get("samples")}, ""


def histograms_complete(cell_dir: Path) -> bool:
    """Every instance with a row also brought back its latency histogram (and there is one)."""
    dirs = [path.parent for path in cell_dir.glob("instances/*/row.json")]
    return bool(dirs) and all((d / "histogram.json").is_file() and (d / "histogram.json").stat().st_size > 0
                              for d in dirs)


def write_rows(run_dir: Path) -> dict[str, Any]:
    """The instances' rows and the cell's row of the fan-out in RUN_DIR (module docstring)."""
    manifest_path = run_dir / "manifest.json"
    manifest = formats.check(json.loads(manifest_path.read_text(encoding="utf-8")), manifest_path)
    run_id, cell = manifest["run_id"], manifest["cell"]["id"]
    cell_dir = run_dir / "cells" / cell
    env = read_cell_env(cell_dir / "cell.env") or {}
    axes = {key: env.get(key) for key in manifest.get("axes") or []}
    errors = []
    for entry in manifest.get("instances") or []:
        if entry.get("error"):
            errors.append(" ".join(str(entry["error"]).split("\n")))
            continue
        instance_dir = cell_dir / "instances" / entry["instance_id"]
        shutil.copyfile(cell_dir / "cell.env", instance_dir / "cell.env")
        fanout.write_instance_row(instance_dir, run_id=run_id, cell=cell, axes=axes)
    percentiles, notes = fanout.merged_percentiles(cell_dir)
    warnings = []
    if percentiles is None:
        influx = (manifest.get("fanout") or {}).get("influxdb_url") or ""
        fallback, fallback_notes = None, NOT_MERGEABLE
        if influx and not histograms_complete(cell_dir):
            query_url = (manifest.get("fanout") or {}).get("influxdb_query_url") or ""
            fallback, why = influx_percentiles(influx, query_url, run_id, cell)
            if fallback is not None:
                fallback_notes = f"percentiles from InfluxDB over {fallback['samples']} raw samples of every instance"
            else:
                fallback_notes = f"percentiles not mergeable, and InfluxDB gave none: {why}"
                warnings.append(f"no percentiles from InfluxDB: {why}")
        percentiles = fallback
        notes = "; ".join(text for text in (notes, fallback_notes) if text)
    percentiles, notes = fanout.with_trends(cell_dir, env, percentiles, notes)
    row = fanout.aggregate_row(fanout.instance_rows(cell_dir), run_id=run_id, cell=cell, axes=axes, env=env,
                               status="failed" if errors else "ok", error="; ".join(errors),
                               percentiles=percentiles, notes=notes)
    _write_json(cell_dir / "row.json", row)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["notes"] = row.get("notes") or ""
    manifest["warnings"] = sorted(set((manifest.get("warnings") or []) + warnings))
    _write_json(manifest_path, manifest)
    return row


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m ltsuite.fanoutrow RUN_DIR", file=sys.stderr)
        return 2
    write_rows(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
