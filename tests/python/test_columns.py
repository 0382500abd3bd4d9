"""The columns' schema (ltsuite.columns) and every table that shows a row's columns agree:
docs/columns.md, results.csv's header, results.md's subset, the report's labels, InfluxDB's
ltsuite_cells fields and make compare's figures. Each test fails naming what disagrees."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The package under test (tests/python/conftest.py does the same for the whole directory).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from ltsuite import columns, tables

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RUNS = FIXTURES / "runs"
RUN_NAMES = sorted(p.name for p in RUNS.iterdir())


def bash(script: str, *args: str, stdin: str | None = None) -> str:
    """Run SCRIPT with scripts/lib/common.sh and results.sh sourced (plus what it sources)."""
    prelude = 'set -euo pipefail; source "$LT_ROOT/scripts/lib/common.sh"; source "$LT_ROOT/scripts/lib/results.sh"; '
    done = subprocess.run(["bash", "-c", prelude + script, "bash", *args], input=stdin, capture_output=True,
                          text=True, env={"LT_ROOT": str(ROOT), "PATH": "/usr/local/bin:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def all_rows() -> list[tuple[Path, dict]]:
    """Every recorded row: the runs' and the cells' fixtures of the row builder's tests."""
    return [(p, json.loads(p.read_text())) for p in sorted(FIXTURES.rglob("row.json"))]


def test_docs_columns_md_is_generated_from_the_schema():
    doc = ROOT / "docs" / "columns.md"
    assert doc.read_text() == columns.markdown(), "docs/columns.md is stale: run make columns-doc"


def test_every_column_has_a_type_unit_meaning_and_a_unique_name():
    names = [c.name for c in columns.COLUMNS]
    assert len(names) == len(set(names))
    for c in columns.COLUMNS:
        assert c.type in (columns.TEXT, columns.INTEGER, columns.NUMBER, columns.FLAG), c.name
        assert c.meaning and len(c.meaning.splitlines()) == 1, c.name
        assert (c.unit == "") or c.numeric, f"{c.name}: a text column has no unit"
        assert c.influx in (None, columns.TAG, columns.FIELD), c.name


def test_the_scenarios_columns_stand_together_before_error():
    names = [c.name for c in columns.COLUMNS if c.csv]
    scenario = [i for i, n in enumerate(names) if columns.BY_NAME[n].scenario is not None]
    assert scenario == list(range(scenario[0], scenario[-1] + 1))
    assert names[scenario[0] - 1] == "k6_exit" and names[scenario[-1] + 1] == "error"


def test_every_key_of_every_recorded_row_is_a_column():
    for path, row in all_rows():
        for key, value in row.items():
            if key in ("axes", "extra"):
                continue
            assert key in columns.BY_NAME, f"{path}: {key} is not in scripts/ltsuite/columns.py"
            assert columns.BY_NAME[key].scenario is None, f"{path}: {key} is a scenario's column at the row's top"
        for key in row.get("extra") or {}:
            assert columns.BY_NAME.get(key) and columns.BY_NAME[key].scenario, \
                f"{path}: extra.{key} is not a scenario's column in scripts/ltsuite/columns.py"


def test_the_row_builder_makes_no_key_the_schema_lacks():
    """Rows built now (ltsuite.row) from the recorded cells, not only the rows they recorded."""
    from ltsuite.row import Cell, build_row

    cells = sorted(p.parent for p in FIXTURES.glob("*/row.json"))
    assert cells, "no recorded cell under tests/python/fixtures"
    for cell_dir in cells:
        rec = json.loads((cell_dir / "row.json").read_text())
        built = build_row(Cell.read(cell_dir), run_id=rec["run_id"], status=rec["status"],
                          error=rec.get("error") or "", axes=rec["axes"], cpus=2)
        for key in built:
            assert key in ("axes", "extra") or key in columns.BY_NAME, \
                f"ltsuite.row builds {key} ({cell_dir.name}): add it to scripts/ltsuite/columns.py"
        for key in built.get("extra") or {}:
            assert columns.BY_NAME.get(key) and columns.BY_NAME[key].scenario, \
                f"ltsuite.row builds extra.{key} ({cell_dir.name}): add it to scripts/ltsuite/columns.py"


def test_every_value_has_its_column_s_type():
    for path, row in all_rows():
        for key, value in list(row.items()) + list((row.get("extra") or {}).items()):
            if key in ("axes", "extra") or value is None:
                continue
            c = columns.BY_NAME[key]
            if c.type == columns.TEXT:
                assert isinstance(value, str), f"{path}: {key}={value!r} is not text"
            elif c.type == columns.INTEGER:
                assert isinstance(value, int) or float(value).is_integer(), f"{path}: {key}={value!r}"
            elif c.type == columns.FLAG:
                assert value in (0, 1), f"{path}: {key}={value!r} is not 1 or 0"
            else:
                assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{path}: {key}={value!r}"


@pytest.mark.parametrize("name", RUN_NAMES)
def test_a_rendered_run_s_csv_header_is_the_schema_s(name, tmp_path):
    run_dir = tmp_path / name
    shutil.copytree(RUNS / name, run_dir)
    bash('results_render "$1"', str(run_dir))
    header = (run_dir / "results.csv").read_text().split("\n")[0].split(",")
    run = tables.load_run(run_dir)
    assert header == columns.csv_head(run.axes, tables.extra_names(run.rows))
    # Every header is a column of the schema or one of the run's axes, in the schema's order
    # (the scenarios' own in the order the rows name them, in their place).
    order = {c.name: i for i, c in enumerate(columns.COLUMNS)}
    first_extra = min(i for i, c in enumerate(columns.COLUMNS) if c.scenario)
    positions = [first_extra if h in order and columns.BY_NAME[h].scenario else order.get(h, order["<axis>"])
                 for h in header]
    assert positions == sorted(positions), f"{name}: results.csv's columns are out of the schema's order"


@pytest.mark.parametrize("name", RUN_NAMES)
def test_results_md_shows_the_schema_s_subset(name, tmp_path):
    run_dir = tmp_path / name
    shutil.copytree(RUNS / name, run_dir)
    bash('results_render "$1"', str(run_dir))
    md = (run_dir / "results.md").read_text().split("\n")
    run = tables.load_run(run_dir)
    extra = tables.extra_names(run.rows)
    last_head = [line for line in md if line.startswith("| cell | status |")][-1]
    assert last_head.strip("| ").split(" | ") == columns.md_head(run.axes, extra)
    if any(r.get("repeat", 1) > 1 for r in run.rows):
        groups_head = [line for line in md if line.startswith("| cell | repetitions |")][0]
        assert groups_head.strip("| ").split(" | ") == \
            ["cell", "repetitions", "ok", "as_designed"] + run.axes + columns.md_figures() + extra


def report_figures() -> list[dict[str, str]]:
    """The FIGURES of scripts/report/report.js, each as its keys' string values."""
    source = (ROOT / "scripts" / "report" / "report.js").read_text()
    block = re.search(r"const FIGURES = \[(.*?)\n  \];", source, re.S)
    assert block, "report.js has no FIGURES list"
    return [dict(re.findall(r"(key|titleOf|reference|predicted): '([a-z0-9_]+)'", entry))
            for entry in re.findall(r"\{ key: .*?\}(?=,)", block.group(1), re.S)]


def test_the_report_s_charts_take_their_titles_and_series_names_from_the_schema():
    figures = report_figures()
    assert len(figures) == 9
    named = set()
    for figure in figures:
        title_of = figure.get("titleOf", figure["key"])
        for role in ("titleOf", "reference", "predicted"):
            if role in figure or (role == "titleOf"):
                name = figure.get(role, title_of) if role == "titleOf" else figure[role]
                assert columns.BY_NAME.get(name) and columns.BY_NAME[name].label, \
                    f"report.js charts {name} ({role}) but it has no label in scripts/ltsuite/columns.py"
                named.add(name)
    assert named == set(columns.labels()), "a label in the schema that no chart uses, or the other way round"
    source = (ROOT / "scripts" / "report" / "report.js").read_text()
    assert "title: '" not in source, "report.js writes a chart title of its own"


def test_report_data_carries_the_schema_s_labels(tmp_path):
    run_dir = tmp_path / "tiny"
    shutil.copytree(RUNS / "tiny", run_dir)
    data = json.loads(bash('source "$LT_ROOT/scripts/lib/report.sh"; report_data "$1"', str(run_dir)))
    assert data["labels"] == columns.labels()
    assert data["labels"]["lat_p95_ms"] == "p95 latency of answered requests (ms)"


def line_protocol(line: str) -> tuple[dict[str, str], dict[str, str]]:
    """(tags, fields) of one line of InfluxDB's line protocol (no escaped separators)."""
    series, fields, _ns = re.match(r'^(\S+) (.*) (\d+)$', line).groups()
    tags = dict(t.split("=", 1) for t in series.split(",")[1:])
    return tags, dict(re.findall(r'([a-z0-9_]+)=("(?:[^"\\]|\\.)*"|[^,]+)', fields))


@pytest.mark.parametrize("name", RUN_NAMES)
def test_influxdb_gets_the_schema_s_fields_and_tags(name):
    for path in sorted((RUNS / name).glob("cells/*/row.json")):
        row = json.loads(path.read_text())
        out = bash('source "$LT_ROOT/scripts/lib/monitoring.sh"; monitoring_row_lines 1795317490000000000',
                   stdin=path.read_text())
        tags, fields = line_protocol(out.strip())
        assert set(tags) == set(columns.influx_tags()) | set(row["axes"]), path
        numbers = {k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        # Every number of the row is sent (as before the schema), and only the schema's fields.
        assert set(fields) - {"error"} == numbers, path
        assert set(fields) <= set(columns.influx_fields()), path


def test_make_compare_looks_at_the_schema_s_numeric_columns(tmp_path):
    out = bash('LT_RESULTS_DIR="$2" "$LT_ROOT/scripts/compare.sh" "$1" "$1" >/dev/null; cat "$2"/compare-*/compare.md',
               str(RUNS / "scenarios"), str(tmp_path))
    compared = set(re.findall(r"^\| ([a-z0-9_]+) \| ", out, re.M)) - {"cell", "figure"}
    assert compared, "compare.md lists no figure"
    assert compared <= set(columns.compare_columns())
    assert {"tps", "wr_visitors", "arrival_rate_per_s"} <= compared
    assert "repeat" not in compared


def test_every_failure_cause_has_its_column():
    # A cause added to scripts/ltsuite/causes.tsv needs its fail_<cause> column (and its words) here.
    from ltsuite.causes import failure_causes
    missing = [f"fail_{c}" for c in failure_causes() if f"fail_{c}" not in columns.BY_NAME]
    assert missing == [], f"causes.tsv has causes with no column in scripts/ltsuite/columns.py: {missing}"
