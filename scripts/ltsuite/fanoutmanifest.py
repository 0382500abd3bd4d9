"""The manifest.json of an SSM fan-out run (ltsuite.fanoutmain): written when the run starts,
updated as it goes, finished once. It records where things went (region, profile name, bucket,
tag filter, target), never how AWS was authenticated. The instances' state is kept in it as
ltsuite.ssm.Invocation entries, which ltsuite.ssm writes while it sends, polls and collects.

Like a local run's (scripts/lib/manifest.sh): "format" first (ltsuite.formats), status running ->
sent / complete / failed / interrupted, ended_at once finished, warnings kept once each.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from . import formats
from .fanoutplan import ROOT, Cell
from .ssm import _write_json


def shown(path: Path) -> str:
    """PATH as the operator is told it: relative to the suite when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def now_utc() -> str:
    """The time as manifests write it (2025-01-01T12:00:00Z)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_manifest(cell: Cell, run_id: str, key_prefix: str) -> dict[str, Any]:
    """The manifest of a new fan-out run of CELL (status running, no instance yet)."""
    s = cell.settings
    return formats.stamp({
        "run_id": run_id, "matrix": shown(cell.matrix),
        "matrix_sha256": hashlib.sha256(cell.matrix.read_bytes()).hexdigest(), "git_commit": cell.git_commit,
        "backend": "ssm", "started_at": now_utc(), "ended_at": None, "status": "running",
        "axes": cell.axes, "cells_total": 1, "cells_done": 0, "cells_failed": 0,
        "cell": {"id": cell.id, "number": cell.number, "of": cell.of},
        "overrides": cell.overrides,
        "fanout": {"region": s.get("FANOUT_REGION", ""), "profile": s.get("FANOUT_PROFILE", ""),
                   "tag_filter": s.get("FANOUT_TAG_FILTER", ""), "s3_bucket": s.get("FANOUT_S3_BUCKET", ""),
                   "s3_key_prefix": key_prefix, "target_url": cell.target_url,
                   "influxdb_url": s.get("FANOUT_INFLUXDB_URL", ""),
                   "influxdb_query_url": s.get("FANOUT_INFLUXDB_QUERY_URL", ""),
                   "poll_interval_s": int(s.get("FANOUT_POLL_INTERVAL") or 5), "start_at_epoch": None,
                   "scenario_files": None, "deadline_epoch": None},
        "instances": [], "warnings": []})


def write(run_dir: Path, data: dict[str, Any]) -> None:
    """RUN_DIR/manifest.json, written whole or not at all."""
    _write_json(run_dir / "manifest.json", data)


def read(run_dir: Path) -> dict[str, Any]:
    """RUN_DIR/manifest.json, refused when of another format (ltsuite.formats)."""
    path = run_dir / "manifest.json"
    return formats.check(json.loads(path.read_text(encoding="utf-8")), path)


def update(run_dir: Path, **changes: Any) -> dict[str, Any]:
    """Set top-level keys of RUN_DIR's manifest (a key "fanout" is merged into its own)."""
    data = read(run_dir)
    fanout = changes.pop("fanout", None)
    data.update(changes)
    if fanout:
        data["fanout"] = {**(data.get("fanout") or {}), **fanout}
    write(run_dir, data)
    return data


def add_warning(run_dir: Path, text: str) -> None:
    """Add a warning to RUN_DIR's manifest (kept once)."""
    data = read(run_dir)
    update(run_dir, warnings=sorted(set((data.get("warnings") or []) + [text])))


def finish(run_dir: Path, status: str) -> None:
    """Record the end of the run: its STATUS and the time."""
    update(run_dir, status=status, ended_at=now_utc())
