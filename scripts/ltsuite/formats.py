"""A run directory's files as the readers get them (load_run: the manifest's axes and the rows in
cell order, for the tables, the words and the lines across cells), and their format.

manifest.json and cells/*/row.json carry a "format" key,
RUN_FORMAT of scripts/formats.env (the one source of the number; scripts/lib/manifest.sh reads
it too, for the manifest it writes and the runs it resumes or reports).

The rule, Flent's habit for its data files: a file names the format it was written in, and a
reader that meets a format it does not know refuses the file by name instead of reading keys whose
meaning may have changed. A file without the key is format 1: the layout the files had before
the key existed, which format 1 keeps (keys were only ever added). Any other format is refused
with the file, the format it carries and the one this suite reads.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cellfiles import read_cell_env, read_json

FORMATS_ENV = Path(__file__).resolve().parents[1] / "formats.env"
RUN_FORMAT = int((read_cell_env(FORMATS_ENV) or {})["RUN_FORMAT"])
UNVERSIONED = 1


class FormatError(ValueError):
    """A run file in a format this suite does not read; the message names the file."""


def format_of(doc: dict[str, Any]) -> Any:
    """The format a run file says it has: its "format", or 1 when it has none (see the module)."""
    return doc.get("format", UNVERSIONED)


def check(doc: Any, path: Path) -> Any:
    """DOC as read from PATH when its format is RUN_FORMAT (or it is not a JSON object, which
    the caller judges); FormatError naming PATH otherwise."""
    if isinstance(doc, dict) and format_of(doc) != RUN_FORMAT:
        raise FormatError(f"{path}: format {format_of(doc)!r}, but this suite reads format {RUN_FORMAT}"
                          " (scripts/formats.env): read it with the suite's version that wrote it")
    return doc


def read_run_file(path: Path) -> Any:
    """A row.json or manifest.json, checked (check): None when it is missing, empty or not
    JSON, as cellfiles.read_json."""
    return check(read_json(path), path)


def stamp(doc: dict[str, Any]) -> dict[str, Any]:
    """DOC with "format" first, as every writer of a row or a manifest writes it."""
    return {"format": RUN_FORMAT, **{k: v for k, v in doc.items() if k != "format"}}


@dataclass(frozen=True)
class Run:
    """What the tables are made of: the manifest's axes and the rows, in cell order."""

    axes: list[str]
    rows: list[dict[str, Any]]
    # row.json files found, the empty ones (a cell being written) included.
    files: int = 0


class TableError(Exception):
    """A run whose files cannot be tabled; the message names the file."""


def load_run(run_dir: Path) -> Run:
    """The manifest's axes and every cells/*/row.json, in cell order. An empty row.json is
    skipped (a cell still being written); a row that is not a JSON object is an error."""
    manifest = run_dir / "manifest.json"
    try:
        axes = check(json.loads(manifest.read_text(encoding="utf-8")), manifest).get("axes") or []
    except FormatError as err:
        raise TableError(str(err)) from err
    except (OSError, ValueError, AttributeError) as err:
        raise TableError(f"{manifest}: cannot read the run's axes ({err})") from err
    rows = []
    paths = sorted((run_dir / "cells").glob("*/row.json"), key=lambda p: os.fsencode(p.parent.name))
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise TableError(f"{path}: {err}") from err
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except ValueError as err:
            raise TableError(f"{path}: not JSON ({err})") from err
        if not isinstance(row, dict):
            raise TableError(f"{path}: not a JSON object")
        try:
            rows.append(check(row, path))
        except FormatError as err:
            raise TableError(str(err)) from err
    return Run(axes=list(axes), rows=rows, files=len(paths))
