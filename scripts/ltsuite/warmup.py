"""A cell's warm-up (WARMUP, scripts/lib/warmup.sh and scenarios/lib/warmup.js): its figures
beside the row, read from its own files, never the load's.

  warmup-summary.json  k6's summary of the warm-up, with "warmup": the path it asked, its VUs, the
                       requests a VU sent at most on its one connection and their pace
  warmup.tsv           side, time_wait_removed, time_wait_left: the TIME-WAIT sockets its
                       connections left, removed before the load (ss -K): the client's and the
                       server's towards the users' port, and nginx's to the target (upstream)
  warmup-settle.json   with WARMUP_UNTIL=settled, what ended it (time or settled) and the
                       application's time when it settled (ltsuite.warmsettle)
  phases.tsv           warmup_start .. warmup_end

A cell without a warm-up (WARMUP=0s, or one that failed before it) has none of these files: its
warmup_* columns are empty, never 0.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import warmsettle
from .cellfiles import Phases, Summary, read_json, read_text
from .numbers import num, to_number

SUMMARY = "warmup-summary.json"
SOCKETS = "warmup.tsv"
#: warmup.tsv's sides, as the notes name them.
WHERE = {"client": "in the client namespace", "server": "in the server namespace",
         "upstream": "between nginx and the target"}
COLUMNS = ("warmup_s", "warmup_path", "warmup_reqs", "warmup_failed_reqs", "warmup_first_ms", "warmup_last_ms",
           "warmup_ended_by", "warmup_settled_ms")


def _summary(cell_dir: Path) -> tuple[Summary, dict[str, Any]] | None:
    """The warm-up's k6 summary and its "warmup" facts; None when it wrote none."""
    value = read_json(cell_dir / SUMMARY)
    if not isinstance(value, dict) or not isinstance(value.get("metrics"), dict):
        return None
    facts = value.get("warmup")
    return Summary(value["metrics"], value.get("state") or {}), facts if isinstance(facts, dict) else {}


def _median(summary: Summary, name: str) -> Any:
    """The median of one of the warm-up's trends; None when it has no sample (k6 leaves a trend
    that never got one out of its summary)."""
    values = summary.exact(name) or {}
    if not values.get("count"):
        return None
    return num(values.get("med"))


def row_columns(cell_dir: Path, phases: Phases) -> dict[str, Any]:
    """warmup_s (its phase's wall time: k6's start, its requests, the sockets' close and removal),
    the path it asked, its requests and failed requests, and the median time of the requests
    answered in its first and in its last second (ms, as k6 measured them); what ended it (time,
    unless warmup-settle.json says settled) and the application's time when it settled."""
    seconds = phases.seconds("warmup_start", "warmup_end")
    read = _summary(cell_dir)
    out: dict[str, Any] = dict.fromkeys(COLUMNS)
    out["warmup_s"] = None if seconds is None else num(seconds)
    if read is None:
        return out
    summary, facts = read
    reqs, failed = summary.values("http_reqs"), summary.values("http_req_failed")
    out.update({
        "warmup_path": facts.get("path") if isinstance(facts.get("path"), str) else None,
        "warmup_reqs": None if reqs is None else reqs.get("count"),
        "warmup_failed_reqs": (0 if reqs is not None and failed is None
                               else None if failed is None else failed.get("passes")),
        "warmup_first_ms": _median(summary, "warmup_first_second"),
        "warmup_last_ms": _median(summary, "warmup_last_second"),
    })
    settle = warmsettle.read(cell_dir) or {}
    out["warmup_ended_by"] = settle.get("ended_by") if settle.get("ended_by") in ("settled", "count") else "time"
    out["warmup_settled_ms"] = num(settle["settled_med_ms"]) if out["warmup_ended_by"] == "settled" \
        and isinstance(settle.get("settled_med_ms"), (int, float)) else None
    return out


def sockets_left(cell_dir: Path) -> dict[str, int]:
    """warmup.tsv: the warm-up's TIME-WAIT sockets the kernel would not remove, by side (only the
    sides with some)."""
    left: dict[str, int] = {}
    for line in (read_text(cell_dir / SOCKETS) or "").split("\n")[1:]:
        fields = line.split("\t")
        if len(fields) == 3 and (to_number(fields[2]) or 0) > 0:
            left[fields[0]] = int(fields[2])
    return left


def notes(cell_dir: Path, env: dict[str, Any]) -> list[str]:
    """What the row's notes say of the warm-up (row.NOTE_SOURCES): TIME-WAIT sockets of it the
    load's figures still count, its failed requests, and a path that is not the load's."""
    out = []
    left = sockets_left(cell_dir)
    if left:
        where = ", ".join(f"{count} {WHERE.get(side, side)}" for side, count in left.items())
        out.append(f"the warm-up left TIME-WAIT sockets the kernel would not remove ({where}; warmup.tsv): "
                   "the TIME-WAIT peaks and the client's free ports count them")
    figures = row_columns(cell_dir, Phases())
    if figures["warmup_failed_reqs"]:
        out.append(f"{figures['warmup_failed_reqs']} of the warm-up's {figures['warmup_reqs']} requests to "
                   f"{figures['warmup_path']} failed (warmup.log)")
    scenario = str(env.get("SCENARIO") or "")
    if figures["warmup_path"] is not None and ("/" in scenario or scenario.endswith(".js")) \
            and (env.get("TARGET_PATH") or "") == "":
        out.append(f"the warm-up asked {figures['warmup_path']}: a script of one's own does not say its path "
                   "(TARGET_PATH names it)")
    elif figures["warmup_path"] is not None and scenario in ("waiting-room", "websocket"):
        out.append(f"the warm-up asked {figures['warmup_path']}, not the {scenario} scenario's own endpoints, "
                   "whose state the load must find empty")
    return out
