"""The format of a run's files (ltsuite.formats): written by every writer, checked by the readers.

Over the recorded runs of fixtures/runs/ (written before the key existed: format 1) and the
recorded cell tiny-spike.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ltsuite import formats, reportseries, tables, words
from ltsuite.cellfiles import read_cell_env
from ltsuite.row import Cell, build_row

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNS = HERE / "fixtures" / "runs"


def copy_run(name: str, tmp_path: Path) -> Path:
    run_dir = tmp_path / name
    shutil.copytree(RUNS / name, run_dir)
    return run_dir


def set_format(path: Path, value: object) -> None:
    doc = json.loads(path.read_text())
    doc["format"] = value
    path.write_text(json.dumps(doc))


def test_the_format_is_the_one_line_of_formats_env():
    assert read_cell_env(ROOT / "scripts" / "formats.env") == {"RUN_FORMAT": str(formats.RUN_FORMAT)}


def test_a_built_row_says_its_format_first():
    row = build_row(Cell.read(HERE / "fixtures" / "tiny-spike"), run_id="r", status="ok", error="", axes={})
    assert list(row)[0] == "format" and row["format"] == formats.RUN_FORMAT


def test_a_run_written_before_the_key_reads_as_format_1():
    run = tables.load_run(RUNS / "default")
    assert run.rows and all("format" not in row for row in run.rows)
    assert formats.format_of(run.rows[0]) == 1 == formats.UNVERSIONED


@pytest.mark.parametrize("which", ["manifest.json", "row.json"])
def test_tables_refuse_a_run_file_in_another_format_and_name_it(tmp_path, which):
    run_dir = copy_run("default", tmp_path)
    path = run_dir / "manifest.json" if which == "manifest.json" else sorted(run_dir.glob("cells/*/row.json"))[-1]
    set_format(path, formats.RUN_FORMAT + 1)
    with pytest.raises(tables.TableError) as refused:
        tables.load_run(run_dir)
    assert str(refused.value) == (f"{path}: format {formats.RUN_FORMAT + 1}, but this suite reads format "
                                  f"{formats.RUN_FORMAT} (scripts/formats.env): read it with the suite's version "
                                  "that wrote it")
    run = subprocess.run([sys.executable, "-m", "ltsuite.tables", "render", str(run_dir)], capture_output=True, text=True,
                         cwd=ROOT / "scripts", timeout=60)
    assert run.returncode != 0 and str(path) in run.stderr
    assert not (run_dir / "results.csv").exists() or (RUNS / "default" / "expected-results.csv").read_bytes() \
        == (run_dir / "results.csv").read_bytes()


def test_the_words_and_the_report_series_refuse_a_row_of_another_format(tmp_path):
    run_dir = copy_run("default", tmp_path)
    row = sorted(run_dir.glob("cells/*/row.json"))[0]
    set_format(row, "2")
    with pytest.raises(formats.FormatError, match="format '2'"):
        words.run_words(run_dir)
    with pytest.raises(formats.FormatError, match=str(row)):
        reportseries._row(row.parent)


def test_stamp_puts_the_format_first_and_once():
    assert list(formats.stamp({"run_id": "r", "format": 9})) == ["format", "run_id"]
    assert formats.stamp({"run_id": "r"})["format"] == formats.RUN_FORMAT
