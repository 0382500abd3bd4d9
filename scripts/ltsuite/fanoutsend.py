"""What an SSM fan-out sends (ltsuite.fanoutmain): the bundle the instances unpack, every
instance's command (ltsuite.ssmcommand), the run's time bounds, and the dry run's plan of it.

- The bundle: the cell's k6 archive (script.tar, ltsuite.fanoutplan.prepare_script) and the
  modules that reduce k6's samples to an instance's latency histogram (ltsuite.ssm
  write_instance_modules), as a tar.gz made byte for byte the same from the same files (sorted
  names, mtime 0, owner 0), so its sha256 names its content.
- The run's timeout, counted from the send: FANOUT_TIMEOUT, else FANOUT_START_DELAY + the longest
  the scenario can run + 120 s.
- The delivery timeout: how long SSM may take to hand a command to an instance, FANOUT_START_DELAY
  + 30 s and never under 30 (one delivered after the common start would start late).
"""
from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from . import fanoutmanifest as manifest
from .cellfiles import read_json
from .fanoutplan import Cell, Script, Stop
from .ssm import write_instance_modules
from .ssmcommand import Settings, TooLarge, write_commands


def key_prefix(settings: dict[str, str], run_id: str, cell_id: str) -> str:
    """The S3 key prefix of the run's output (and of the bundle)."""
    return f"{settings.get('FANOUT_S3_PREFIX', '').rstrip('/')}/{run_id}/{cell_id}"


def run_timeout(settings: dict[str, str], script: Script) -> int:
    """Seconds to wait for every invocation, counted from the send (module docstring)."""
    if settings.get("FANOUT_TIMEOUT"):
        return int(settings["FANOUT_TIMEOUT"])
    return int(settings.get("FANOUT_START_DELAY") or 0) + script.planned_seconds + 120


def delivery_timeout(settings: dict[str, str]) -> int:
    """Seconds SSM may take to deliver a command (module docstring)."""
    return max(30, int(settings.get("FANOUT_START_DELAY") or 0) + 30)


def bundle(work: Path, out: Path) -> None:
    """OUT: WORK/script.tar and the instance's modules as a reproducible tar.gz (module docstring)."""
    write_instance_modules(work)
    names = ["ltsuite", *sorted(f"ltsuite/{p.name}" for p in (work / "ltsuite").iterdir()), "script.tar"]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in names:
            info = tar.gettarinfo(str(work / name), arcname=name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o755 if info.isdir() else 0o644
            if info.isdir():
                tar.addfile(info)
            else:
                with (work / name).open("rb") as data:
                    tar.addfile(info, data)
    with out.open("wb") as target, gzip.GzipFile(filename="", mode="wb", fileobj=target, mtime=0,
                                                 compresslevel=9) as packed:
        packed.write(raw.getvalue())


def build_commands(out: Path, cell: Cell, script: Script, run_id: str, instances: list[str], start_at: int) -> str:
    """OUT/command-<id>.sh, params-<id>.json and instances.json (ltsuite.ssmcommand), with the bundle
    OUT/scenarios.tar.gz; "inline" or "s3": how the scenario files travel."""
    s = cell.settings
    bundle(cell.work, out / "scenarios.tar.gz")
    settings = Settings(run_id=run_id, cell_id=cell.id, start_at=start_at,
                        cell_env=cell.env_path.read_text(encoding="utf-8"), k6_args=script.k6_args,
                        bundle=out / "scenarios.tar.gz", target_url=cell.target_url,
                        workdir=s.get("FANOUT_WORKDIR", ""), k6_path=s.get("FANOUT_K6_PATH", ""),
                        influxdb_url=s.get("FANOUT_INFLUXDB_URL", ""),
                        keep_samples=s.get("FANOUT_KEEP_SAMPLES") or "0", region=s.get("FANOUT_REGION", ""))
    try:
        return write_commands(out, settings, instances, timeout=run_timeout(s, script),
                              max_bytes=int(s.get("FANOUT_MAX_COMMAND_BYTES") or 0),
                              bucket=s.get("FANOUT_S3_BUCKET", ""), key_prefix=key_prefix(s, run_id, cell.id))
    except TooLarge as error:
        raise Stop(str(error)) from None


def write_plan(out: Path, cell: Cell, script: Script, run_id: str, instances: list[str], start_at: int,
               lookup: str) -> str:
    """The dry run: the commands and a manifest as the real run writes them, in OUT; the report of
    the boto3 calls the run would make and of the commands (ltsuite.fanoutrun.plan_text)."""
    from .fanoutrun import plan_text

    files = build_commands(out, cell, script, run_id, instances, start_at)
    data = manifest.new_manifest(cell, run_id, key_prefix(cell.settings, run_id, cell.id))
    data["fanout"].update(start_at_epoch=start_at, scenario_files=files)
    data["instances"] = read_json(out / "instances.json")
    manifest.write(out, data)
    return plan_text(data, out, lookup=lookup, delivery_timeout=delivery_timeout(cell.settings),
                     run_timeout=run_timeout(cell.settings, script), cells_total=cell.of)
