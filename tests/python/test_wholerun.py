"""ltsuite.wholerun: a whole run's wall split into make, before the first cell, each cell and
after the last, with the Python starts the kernel saw in each."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ltsuite import wholerun


def cell(run: Path, name: str, marks: list[tuple[str, int]], duration_s: float) -> None:
    d = run / "cells" / name
    d.mkdir(parents=True)
    (d / "phases.tsv").write_text("".join(f"{m}\t{t}\n" for m, t in marks), encoding="utf-8")
    (d / "row.json").write_text(json.dumps({"cell": name, "duration_s": duration_s}), encoding="utf-8")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """Two cells: 10.0 to 14.0 s (3 s of k6, 0.5 s warm-up), 14.0 to 17.5 s (3 s of k6), stopped
    at 17.2; the command ran from 9.0 to 18.0 s."""
    cell(tmp_path, "01", [("cell_start", 10_000), ("warmup_start", 11_000), ("warmup_end", 11_500),
                          ("stopped", 13_800), ("finished", 14_300)], 3.0)
    cell(tmp_path, "02", [("cell_start", 14_000), ("stopped", 17_200), ("finished", 17_400)], 3.0)
    return tmp_path


EXECS = [
    (9_000, 1, "/usr/bin/make", "make -s run-matrix MATRIX=m"),
    (9_100, 2, "/usr/bin/env", "/usr/bin/env bash scripts/run-matrix.sh m"),
    (9_200, 3, "/usr/bin/python3.11", "python3 -S -m ltsuite.cell refusals {}"),
    (9_300, 4, "/usr/bin/flock", "flock -w 1800 9"),
    (9_350, 11, "?", "?"),
    (9_360, 12, "/usr/bin/cat", "cat /proc/1/stat"),
    (9_700, 5, "/usr/bin/mktemp", "mktemp /run/lock/ltsuite/run-matrix.lock.pid.XXXXXX"),
    (9_800, 6, "/usr/bin/python3.11", "python3 -S -m ltsuite.cell plan d 2 {}"),
    (11_000, 7, "/usr/bin/python3.11", "python3 sampler.py run"),
    (12_000, 8, "/usr/bin/python3.11", "python3 -S -m ltsuite.live x"),
    (12_000, 8, "/usr/bin/python3.11", "python3 -S -m ltsuite.live x"),
    (17_500, 9, "/usr/bin/python3.11", "python3 -m ltsuite.tables render r --report-inputs f 4000 2000"),
    (17_600, 10, "/usr/bin/jq", "jq -c .head f"),
]


def write_execs(path: Path, rows: list[tuple[int, int, str, str]]) -> Path:
    path.write_text("".join(f"{ms}\t{pid}\t{exe}\t{args}\n" for ms, pid, exe, args in rows), encoding="utf-8")
    return path


def test_the_wall_splits_into_make_before_cells_after_and_adds_up(run: Path, tmp_path: Path) -> None:
    execs = wholerun.read_execs(write_execs(tmp_path / "execs", EXECS))
    cells = wholerun.read_cells(run)
    out = wholerun.breakdown(execs, cells, 9_000, 18_000)
    assert [c.name for c in cells] == ["01", "02"]
    assert out.wall_s == 9.0 and out.k6_s == 6.0 and out.warmup_s == 0.5
    # The lock: from flock -w to the lock's state written, 0.4 s, no cost of this run.
    assert out.lock_wait_s == 0.4
    assert out.outside_k6_s == pytest.approx(9.0 - 6.0 - 0.5 - 0.4)
    assert out.make_s == 0.1
    assert out.before_first_cell_s == pytest.approx(0.5)  # 9.1 to 10.0, less the 0.4 s wait
    # Cell 1: 4.0 s to the next start, less 3 s of k6 and the 0.5 s warm-up; cell 2 to its stop.
    assert out.cells_s == [pytest.approx(0.5), pytest.approx(0.2)]
    assert out.after_last_cell_s == pytest.approx(0.8)
    parts = out.make_s + out.lock_wait_s + out.before_first_cell_s + sum(out.cells_s) + out.after_last_cell_s
    assert parts == pytest.approx(out.wall_s - out.k6_s - out.warmup_s)
    assert wholerun.last_finish_s(run, cells[-1]) == pytest.approx(0.2)


def test_python_starts_are_placed_before_in_and_after_the_cells_once_a_process(run: Path, tmp_path: Path) -> None:
    out = wholerun.breakdown(wholerun.read_execs(write_execs(tmp_path / "execs", EXECS)),
                             wholerun.read_cells(run), 9_000, 18_000)
    assert (out.python_before, out.python_cells, out.python_live, out.python_after) == (2, 1, 1, 1)
    assert out.python_before_what == ["ltsuite.cell", "ltsuite.cell"]
    assert out.python_after_what == ["ltsuite.tables"]
    assert out.execs == len(EXECS)
    assert out.python_make == 0


def test_arguments_over_several_lines_are_skipped_not_misread(tmp_path: Path) -> None:
    path = write_execs(tmp_path / "execs", EXECS[:2])
    with path.open("a", encoding="utf-8") as log:
        log.write("9400\t12\t/usr/bin/jq\tjq -n {\n  \"a\": 1\t2\n}\n")
    assert [e.pid for e in wholerun.read_execs(path)] == [1, 2, 12]


def test_a_log_that_lost_events_is_refused(tmp_path: Path) -> None:
    path = write_execs(tmp_path / "execs", EXECS[:2])
    with path.open("a", encoding="utf-8") as log:
        log.write("9500\t0\tLOST\tevents the kernel could not queue\n")
    with pytest.raises(ValueError, match="lost events"):
        wholerun.read_execs(path)


def test_a_run_without_the_lock_wait_has_none(run: Path, tmp_path: Path) -> None:
    rows = [e for e in EXECS if not e[3].startswith("flock")]
    out = wholerun.breakdown(wholerun.read_execs(write_execs(tmp_path / "execs", rows)),
                             wholerun.read_cells(run), 9_000, 18_000)
    assert out.lock_wait_s == 0 and out.before_first_cell_s == pytest.approx(0.9)
