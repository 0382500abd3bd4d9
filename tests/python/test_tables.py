"""results.csv and results.md from rows (ltsuite.tables): the same bytes the run wrote.

The runs under fixtures/runs/ are real runs of tests/fixtures/{tiny,scenarios,websocket,
repeat}.matrix, trimmed to their manifest's axes and their cells' row.json; expected-results.*
are the tables those runs wrote before the tables were rendered here (jq's results_render).
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The package under test (tests/python/conftest.py does the same for the whole directory).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from ltsuite import across, columns, tables, words

RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"
RUN_NAMES = sorted(p.name for p in RUNS.iterdir())


def copy_run(name: str, tmp_path: Path) -> Path:
    run_dir = tmp_path / name
    shutil.copytree(RUNS / name, run_dir)
    return run_dir


def test_the_recorded_runs_are_all_here():
    assert RUN_NAMES == ["default", "repeat", "scenarios", "tiny", "websocket"]


def by_column(header: list[str], lines: list[list[str]]) -> list[dict[str, str]]:
    return [dict(zip(header, line)) for line in lines]


def same_but_added_columns(got: list[list[str]], want: list[list[str]], what: str) -> None:
    """got is want with columns added (a column added to the schema since the run): the
    recorded columns keep their order and values, the added ones are empty for these rows."""
    assert [h for h in got[0] if h in want[0]] == want[0], f"{what}: a recorded column is gone or moved"
    added = [h for h in got[0] if h not in want[0]]
    for g, w in zip(by_column(got[0], got[1:]), by_column(want[0], want[1:]), strict=True):
        assert {k: g[k] for k in want[0]} == w, what
        assert all(g[k] == "" for k in added), f"{what}: an added column has a value in a recorded row"


def md_tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of results.md, each as rows of cells (separator lines left out)."""
    found, current = [], None
    for line in text.split("\n"):
        if line.startswith("|"):
            if not line.startswith("|---"):
                current = current if current is not None else []
                current.append(line[2:-2].split(" | "))
        elif current is not None:
            found.append(current)
            current = None
    return found + ([current] if current else [])


@pytest.mark.parametrize("name", RUN_NAMES)
def test_results_csv_and_md_are_the_run_s_own_byte_for_byte_or_with_columns_added(name, tmp_path):
    run_dir = copy_run(name, tmp_path)
    tables.render(run_dir)
    for table in ("results.csv", "results.md"):
        got = (run_dir / table).read_text()
        want = (RUNS / name / f"expected-{table}").read_text()
        if table == "results.md":
            # It says first, in words, what changed across the cells and what each found; the
            # tables follow.
            run = tables.load_run(run_dir)
            said = tables.findings_md(words.run_words(run_dir), across.run_across(run_dir, run.axes, run.rows))
            assert said.startswith("Across cells:\n\n- "), f"{name}: results.md does not begin across the cells"
            assert got.startswith(said), f"{name}: results.md does not begin with its findings"
            got = got[len(said):]
        if got.split("\n")[0] == want.split("\n")[0] and table == "results.csv" or \
                table == "results.md" and [t[0] for t in md_tables(got)] == [t[0] for t in md_tables(want)]:
            assert got.encode() == want.encode(), f"{name}: {table} differs from the run's own"
        elif table == "results.csv":
            same_but_added_columns(list(csv.reader(io.StringIO(got))), list(csv.reader(io.StringIO(want))),
                                   f"{name}: {table}")
        else:
            for g, w in zip(md_tables(got), md_tables(want), strict=True):
                same_but_added_columns(g, w, f"{name}: {table}")


def test_the_scenarios_columns_follow_k6_exit_in_the_order_the_rows_name_them(tmp_path):
    run = tables.load_run(RUNS / "scenarios")
    head = tables.csv_head(run)
    after = head[head.index("k6_exit") + 1:head.index("error")]
    assert after[:3] == ["arrival_rate_per_s", "iteration_rate_per_s", "wr_visitors"]
    assert len(after) == 2 + 15


def test_numbers_are_written_as_jq_writes_them():
    values = [0, 1, -1, 2.5, 3.0, 18.798, 0.1 + 0.2, 1e-3, 1e-4, 1.5e-5, 123456789, 1e15, 1e16, 1e17,
              1.5e17, 2 ** 53 + 1, 1e21, 1.7976931348623157e308, 5e-324, 104.84, 8200, 0.009, 1 / 3]
    text = "\n".join(json.dumps(v) for v in values)
    out = subprocess.run(["jq", "-r", "tostring"], input=text, capture_output=True, text=True, check=True)
    assert [tables.jq_number(v) for v in values] == out.stdout.split("\n")[:len(values)]
    assert tables.jq_number(1e17) == "1e+17"
    assert tables.jq_number(1e-5) == "1e-05"
    assert tables.jq_number(3.0) == "3"


def test_a_csv_field_is_quoted_only_when_it_needs_it():
    assert tables.csv_field(None) == ""
    assert tables.csv_field(12.5) == "12.5"
    assert tables.csv_field("plain text") == "plain text"
    assert tables.csv_field('say "hi", twice') == '"say ""hi"", twice"'
    assert tables.csv_field("two\nlines") == '"two\nlines"'
    assert tables.csv_field(True) == "true"


def test_a_markdown_cell_escapes_bars_and_joins_lines():
    assert tables.md_text("a|b\nc") == "a\\|b c"
    assert tables.md_text(None) == ""
    assert tables.md_text(0) == "0"


def write_run(run_dir: Path, axes: list[str], rows: list[dict]) -> None:
    (run_dir / "cells").mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps({"axes": axes}))
    for row in rows:
        cell = run_dir / "cells" / row["cell"]
        cell.mkdir()
        (cell / "row.json").write_text(json.dumps(row))


def row(cell: str, repeat_of: str, k: int, **values) -> dict:
    return {"run_id": "r", "cell": cell, "repeat_of": repeat_of, "repeat": k, "scenario": "spike",
            "status": "ok", "axes": {"VUS": "2"}, **values}


def test_repetitions_get_a_table_of_medians_with_their_range(tmp_path):
    run_dir = tmp_path / "run"
    write_run(run_dir, ["VUS"], [
        row("01_vus-2_rep-1", "01_vus-2", 1, tps=10, prediction_check="match", as_designed=1),
        row("01_vus-2_rep-2", "01_vus-2", 2, tps=13, prediction_check="mismatch", as_designed=0),
        row("01_vus-2_rep-3", "01_vus-2", 3, tps=11, prediction_check="match", as_designed=1, status="failed"),
        row("01_vus-2_rep-4", "01_vus-2", 4, tps=12, prediction_check="match", as_designed=1),
    ])
    md = tables.render_md(tables.load_run(run_dir)).split("\n")
    assert md[0] == ("Each matrix cell's figures: the median (min..max) of its repetitions that ran (ok); "
                     "failed repetitions and empty figures are left out.")
    head = md[2].strip("| ").split(" | ")
    line = md[4].strip("| ").split(" | ")
    cells = dict(zip(head, line))
    assert [cells["cell"], cells["repetitions"], cells["ok"], cells["as_designed"], cells["VUS"]] == \
        ["01_vus-2", "4", "3", "3", "2"]
    # The failed repetition's 11 is left out.
    assert cells["tps"] == "12 (10..13)"
    assert cells["prediction_check"] == "match/mismatch"
    assert "Every repetition, in the order of the cells:" in md


def test_a_column_not_in_the_schema_is_shown_and_named_on_stderr(tmp_path, capsys):
    run_dir = tmp_path / "run"
    write_run(run_dir, [], [row("01_x", "01_x", 1, extra={"wr_visitors": 3, "zz_new": 7})])
    tables.render(run_dir)
    head, line = (run_dir / "results.csv").read_text().splitlines()
    assert head.endswith(",k6_exit,wr_visitors,zz_new,error,notes")
    assert line.endswith(",3,7,,")
    assert "zz_new" in capsys.readouterr().err


def test_a_row_key_not_in_the_schema_is_named_on_stderr_and_left_to_row_json(tmp_path, capsys):
    run_dir = tmp_path / "run"
    write_run(run_dir, [], [row("01_x", "01_x", 1, tps=5, app_new_figure=9)])
    tables.render(run_dir)
    assert "app_new_figure" not in (run_dir / "results.csv").read_text()
    assert "row key(s) not in scripts/ltsuite/columns.py (in row.json only): app_new_figure" in capsys.readouterr().err


def test_a_run_without_rows_says_so(tmp_path):
    run_dir = tmp_path / "run"
    write_run(run_dir, ["VUS"], [])
    tables.render(run_dir)
    assert (run_dir / "results.csv").read_text() == "run_id,cell,scenario,status\n"
    assert (run_dir / "results.md").read_text() == "No cell finished.\n"


def test_a_row_that_is_not_json_fails_naming_its_file_and_keeps_the_tables(tmp_path, capsys):
    run_dir = copy_run("tiny", tmp_path)
    tables.render(run_dir)
    before = (run_dir / "results.csv").read_bytes()
    broken = sorted(run_dir.glob("cells/*/row.json"))[1]
    broken.write_text('{"run_id": ')
    assert tables.main(["render", str(run_dir)]) == 1
    assert f"ltsuite.tables: {broken}: not JSON" in capsys.readouterr().err
    assert (run_dir / "results.csv").read_bytes() == before


def test_head_prints_the_csv_header_as_json(tmp_path, capsys):
    assert tables.main(["head", str(RUNS / "tiny")]) == 0
    head = json.loads(capsys.readouterr().out)
    assert head == columns.csv_head(["TOMCAT_ACCEPT_COUNT"], [])
    assert head[:7] == ["run_id", "cell", "scenario", "status", "TOMCAT_ACCEPT_COUNT", "repeat_of", "repeat"]


@pytest.mark.parametrize("name", RUN_NAMES)
def test_render_writes_what_each_cell_found_in_words_one_line_a_cell(name, tmp_path):
    run_dir = copy_run(name, tmp_path)
    tables.render(run_dir)
    want = words.run_words(run_dir)
    if not want:
        assert not (run_dir / "findings.txt").exists()
        return
    lines = (run_dir / "findings.txt").read_text().splitlines()
    cells = {json.loads((p / "row.json").read_text()).get("cell") for p in (run_dir / "cells").glob("*")
             if (p / "row.json").is_file()}
    assert lines == want and len(lines) <= len(cells)
    assert all(line.split(": ", 1)[0] in cells and line.endswith(".") for line in lines)


def test_results_md_says_first_in_words_what_each_cell_found(tmp_path):
    """The findings (ltsuite.words) open results.md, which the terminal prints at a run's end,
    one bullet a cell, before any table."""
    said = []
    for name in RUN_NAMES:
        run_dir = copy_run(name, tmp_path)
        tables.render(run_dir)
        findings = words.run_words(run_dir)
        text = (run_dir / "results.md").read_text()
        # What changed across the cells comes first (ltsuite.across), then the cells' own.
        if text.startswith("Across cells:"):
            text = text.split("\n\n", 2)[2]
        if findings:
            said.append(name)
            head, _, rest = text.partition("\n\n- ")
            assert head == "What happened:"
            bullets = ("- " + rest).split("\n\n", 1)[0].split("\n")
            assert bullets == [f"- {f}" for f in findings]
            assert "|" not in text.split("\n\n", 2)[1], "a table came before the findings"
        else:
            assert not text.startswith("What happened")
    assert said, "no recorded run gave a finding"


def test_the_proxy_s_view_is_in_results_md_beside_the_users_failures_only_with_a_proxy(tmp_path):
    plain = tmp_path / "plain"
    write_run(plain, [], [row("01", "01", 1, fail_timeout=0, listen_overflows=3)])
    head = tables.render_md(tables.load_run(plain)).split("\n")[0].strip("| ").split(" | ")
    assert not any(h.startswith("proxy_") for h in head)
    proxied = tmp_path / "proxied"
    write_run(proxied, [], [row("01", "01", 1, fail_timeout=0, listen_overflows=8, proxy_reqs=13, proxy_504=8,
                                proxy_502=0, proxy_upstream_connect_timeouts=8),
                            row("02", "02", 1, listen_overflows=0)])
    md = tables.render_md(tables.load_run(proxied)).split("\n")
    head = md[0].strip("| ").split(" | ")
    at = head.index("fail_timeout")
    assert head[at + 1:at + 7] == ["proxy_reqs", "proxy_502", "proxy_504", "proxy_upstream_connect_timeouts",
                                   "proxy_upstream_connect_p99_ms", "listen_overflows"]
    cells = dict(zip(head, md[2].strip("| ").split(" | ")))
    assert (cells["proxy_504"], cells["proxy_upstream_connect_timeouts"], cells["listen_overflows"]) == ("8", "8", "8")
