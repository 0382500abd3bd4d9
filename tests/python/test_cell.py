"""A cell's finish in one process (ltsuite.cell finish) over a cell recorded by a real run
(tests/python/fixtures/tiny-spike): the counter deltas, the row and the run's tables it writes are
those ltsuite.counters, ltsuite.row and ltsuite.tables write, with the phase marks between them."""
import io
import json
import shutil

from ltsuite import cell, counters, design, tables, words
from ltsuite.row import Cell, build_row

from test_row import FIXTURES, recorded


def run_with(tmp_path, name="tiny-spike"):
    """A run directory holding one writable copy of a recorded cell, its manifest naming the axes."""
    run_dir = tmp_path / "run"
    cell_dir = run_dir / "cells" / "01_vus-4"
    shutil.copytree(FIXTURES / name, cell_dir)
    (cell_dir / "netstat-delta.tsv").unlink()
    (run_dir / "manifest.json").write_text(json.dumps({"axes": ["VUS"]}))
    return run_dir, cell_dir


def finish_args(run_dir, cell_dir, rec, **changes):
    args = {"--run-dir": str(run_dir), "--run-id": rec["run_id"], "--status": rec["status"],
            "--error": rec.get("error") or "", "--axes": json.dumps(rec["axes"]),
            "--wall-s": str(rec["cell_wall_s"]), "--repeat": json.dumps({"of": "01_vus-4", "k": 1}),
            "--k6-exit": "" if rec.get("k6_exit") is None else str(rec["k6_exit"])}
    args.update(changes)
    return ["finish", str(cell_dir)] + [part for pair in args.items() for part in pair]


def marks(cell_dir):
    return [line.split("\t")[0] for line in (cell_dir / "phases.tsv").read_text().splitlines()]


def test_finish_writes_the_deltas_the_row_and_the_tables_each_module_writes(tmp_path):
    run_dir, cell_dir = run_with(tmp_path)
    rec = recorded(FIXTURES / "tiny-spike")
    before = marks(cell_dir)
    assert cell.main(finish_args(run_dir, cell_dir, rec)) == 0
    assert (cell_dir / "netstat-delta.tsv").read_text() == counters.cell_deltas(cell_dir)
    row = json.loads((cell_dir / "row.json").read_text())
    expected = build_row(Cell.read(cell_dir), run_id=rec["run_id"], status=rec["status"],
                         error=rec.get("error") or "", axes=rec["axes"], wall_s=str(rec["cell_wall_s"]),
                         repeat={"of": "01_vus-4", "k": 1},
                         k6_exit="" if rec.get("k6_exit") is None else str(rec["k6_exit"]))
    # Phase timings read the marks, and the row's own marks come after the row is built.
    assert {k: v for k, v in row.items()} == json.loads(json.dumps(expected))
    assert row["status"] == rec["status"] and row["cell"] == "01_vus-4"
    run = tables.load_run(run_dir)
    assert (run_dir / "results.csv").read_text() == tables.render_csv(run)
    # The words that open results.md are the run's end's (tables.render), not each cell's.
    assert (run_dir / "results.md").read_text() == tables.render_md(run)
    assert marks(cell_dir) == before + ["files", "row", "tables"]


def test_finish_takes_every_option_of_the_row_from_the_rows_own_list(tmp_path):
    # --out and --cpus are ltsuite.row's: finish reads them from the same list of arguments.
    run_dir, cell_dir = run_with(tmp_path)
    rec = recorded(FIXTURES / "tiny-spike")
    out = tmp_path / "elsewhere.json"
    assert cell.main(finish_args(run_dir, cell_dir, rec, **{"--out": str(out), "--cpus": "3"})) == 0
    assert json.loads(out.read_text())["cell"] == "01_vus-4"


def test_finish_leaves_the_words_to_the_runs_end(tmp_path):
    # findings.txt is written once, when the run ends (tables.render), not after every cell.
    run_dir, cell_dir = run_with(tmp_path)
    rec = recorded(FIXTURES / "tiny-spike")
    assert cell.main(finish_args(run_dir, cell_dir, rec)) == 0
    assert (run_dir / "results.csv").is_file() and not (run_dir / "findings.txt").exists()
    tables.render(run_dir)
    assert (run_dir / "findings.txt").read_text().splitlines() == words.run_words(run_dir) != []
    assert (run_dir / "results.md").read_text().startswith("What happened:\n")


def test_deltas_that_cannot_be_computed_fail_the_cell_with_the_reason(tmp_path):
    run_dir, cell_dir = run_with(tmp_path)
    # netstat-delta.tsv cannot replace a directory of that name.
    (cell_dir / "netstat-delta.tsv" / "in-the-way").mkdir(parents=True)
    rec = recorded(FIXTURES / "tiny-spike")
    cell.main(finish_args(run_dir, cell_dir, rec, **{"--error": "k6 ended early"}))
    row = json.loads((cell_dir / "row.json").read_text())
    assert row["status"] == "failed"
    assert row["error"].startswith("k6 ended early; cannot compute the counter deltas")
    assert (run_dir / "results.csv").is_file()


def test_tables_that_cannot_be_written_leave_the_row_and_say_why(tmp_path, capsys):
    run_dir, cell_dir = run_with(tmp_path)
    (run_dir / "manifest.json").unlink()
    rec = recorded(FIXTURES / "tiny-spike")
    assert cell.main(finish_args(run_dir, cell_dir, rec)) == 0
    assert json.loads((cell_dir / "row.json").read_text())["status"] == rec["status"]
    assert "cannot render the results tables" in capsys.readouterr().err
    assert not (run_dir / "results.csv").exists()


def test_a_row_that_cannot_be_written_fails_the_finish_in_one_line_and_the_marks_are_made(tmp_path, capsys):
    run_dir, cell_dir = run_with(tmp_path)
    (cell_dir / "row.json").unlink()
    (cell_dir / "row.json" / "in-the-way").mkdir(parents=True)
    rec = recorded(FIXTURES / "tiny-spike")
    assert cell.main(finish_args(run_dir, cell_dir, rec)) == 1
    err = capsys.readouterr().err
    assert "row.json: cannot write the row" in err and "Traceback" not in err
    assert marks(cell_dir)[-3:] == ["files", "row", "tables"]


def test_plan_is_every_cells_design_warnings_each_with_its_index(tmp_path, capsys):
    env = (FIXTURES / "tiny-spike" / "cell.env").read_text()
    short = "".join(line + "\n" for line in env.splitlines() if not line.startswith("GRACEFUL_STOP="))
    (tmp_path / "0.env").write_text(env)
    (tmp_path / "1.env").write_text(short + "GRACEFUL_STOP=0s\n")
    machine = json.dumps({"cpus": 2, "nofile": 20000, "mem_available_mb": 8000})
    expected = []
    for index in (0, 1):
        design.main(["warnings", str(tmp_path / f"{index}.env"), machine, ""])
        expected += [f"{index}\t{line}" for line in capsys.readouterr().out.splitlines()]
    assert any(line.startswith("1\t") for line in expected)
    assert cell.main(["plan", str(tmp_path), "2", machine]) == 0
    assert capsys.readouterr().out.splitlines() == expected


def test_plan_writes_each_cells_settings_with_its_auto_knobs_resolved_as_design_resolves_them(tmp_path, capsys):
    cells, resolved = tmp_path / "cells", tmp_path / "resolved"
    cells.mkdir()
    machine = json.dumps({"cpus": 2, "nofile": 20000, "mem_available_mb": 8000})
    recorded_env = (FIXTURES / "tiny-spike" / "cell.env").read_text()

    def changed(**values):
        keys = [line.split("=", 1)[0] for line in recorded_env.splitlines()]
        return "".join(f"{key}={values[key]}\n" if (key := line.split("=", 1)[0]) in values else f"{line}\n"
                       for line in recorded_env.splitlines()) + "".join(
            f"{key}={value}\n" for key, value in values.items() if key not in keys)

    settings = {0: changed(VUS="400", K6_INSTANCES="auto", K6_NOFILE="300", BURST_LEAD_MS="auto"),
                1: changed(VUS="40", K6_NOFILE="300")}
    assert "K6_NOFILE=300" in settings[0]
    for index, text in settings.items():
        (cells / f"{index}.env").write_text(text)
    assert cell.main(["plan", str(cells), "2", machine, "--resolved-dir", str(resolved)]) == 0
    capsys.readouterr()
    design.main(["resolve", str(cells / "0.env"), machine, ""])
    chosen = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert set(chosen) == {"K6_INSTANCES", "BURST_LEAD_MS"} and chosen["K6_INSTANCES"] == "2"
    assert (resolved / "0.env").read_text() == changed(VUS="400", K6_NOFILE="300", **chosen)
    # Nothing left at auto: the settings as they were.
    assert (resolved / "1.env").read_text() == settings[1]


def test_refusals_are_every_cells_from_one_stream_each_with_its_index(monkeypatch, capsys):
    machine = json.dumps({"cpus": 2, "nofile": 20000, "mem_available_mb": 8000})
    stream = "".join(f"{index}\t{line}\n" for index, vus in ((0, 100000), (1, 10), (2, 200000))
                     for line in ("SCENARIO=burst", f"VUS={vus}", "K6_INSTANCES=auto"))
    monkeypatch.setattr("sys.stdin", io.StringIO(stream))
    assert cell.main(["refusals", machine]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["0", "2"]
    assert lines[0] == ("0\t100000 VUs need at least 23438 MB in k6 (240-420 KB each, measured), "
                        "more than the 8000 MB available")


def test_resolve_replaces_the_auto_knobs_of_one_cell_and_keeps_every_other_line():
    machine = {"cpus": 2, "nofile": 300}
    text, warnings = cell.resolve_text("SCENARIO=burst\nVUS=400\nK6_INSTANCES=auto\nK6_NOFILE=300\nDELAY_MS=10\n", machine)
    assert text == "SCENARIO=burst\nVUS=400\nK6_INSTANCES=2\nK6_NOFILE=300\nDELAY_MS=10\n"
    assert warnings == []
    assert "K6_INSTANCES=3\n" in cell.resolve_text("SCENARIO=burst\nVUS=401\nK6_INSTANCES=auto\n", machine)[0]
    # A number stays as it is.
    kept = "SCENARIO=burst\nVUS=40000\nK6_INSTANCES=1\nK6_NOFILE=300\n"
    assert cell.resolve_text(kept, machine) == (kept, [])
    # The lead: for the VUs of the processes chosen, on the machine's cores.
    text, _ = cell.resolve_text("SCENARIO=burst\nVUS=400\nK6_INSTANCES=auto\nBURST_LEAD_MS=auto\n", machine)
    lead = dict(line.split("=", 1) for line in text.splitlines())["BURST_LEAD_MS"]
    assert lead == str(design.rules.burst_lead_ms(400, 2, 2))


def test_resolve_takes_k6s_open_file_limit_from_K6_NOFILE_capped_at_the_hard_limit():
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert cell.machine_here({"K6_NOFILE": "300"})["nofile"] == 300
    if hard != resource.RLIM_INFINITY:
        assert cell.machine_here({"K6_NOFILE": str(hard + 1)})["nofile"] == hard
        assert cell.machine_here({})["nofile"] == hard


def test_refusals_with_a_plan_dir_plan_the_run_in_the_same_start_as_plan_and_space_would(tmp_path, monkeypatch, capsys):
    machine = json.dumps({"cpus": 2, "nofile": 20000, "mem_available_mb": 8000})
    recorded_env = (FIXTURES / "tiny-spike" / "cell.env").read_text()
    lines = [line for line in recorded_env.splitlines() if "=" in line and not line.startswith("GRACEFUL_STOP=")]
    texts = {0: "".join(f"{line}\n" for line in lines) + "GRACEFUL_STOP=0s\n",
             1: "".join(f"{line}\n" for line in lines).replace("K6_INSTANCES=1\n", "K6_INSTANCES=auto\n")
             + "GRACEFUL_STOP=5s\n"}
    cells = tmp_path / "cells"
    cells.mkdir()
    for index, text in texts.items():
        (cells / f"{index}.env").write_text(text)
    assert cell.main(["plan", str(cells), "2", machine, "--resolved-dir", str(tmp_path / "resolved")]) == 0
    warnings = capsys.readouterr().out
    assert warnings.startswith("0\t")
    from ltsuite import space
    expected_space = space.estimate([(space.read_cell_env(cells / f"{i}.env"), 3) for i in (0, 1)])
    stream = "".join(f"{index}\t{line}\n" for index, text in texts.items() for line in text.splitlines())
    monkeypatch.setattr("sys.stdin", io.StringIO(stream))
    plan_dir = tmp_path / "ahead"
    assert cell.main(["refusals", machine, "--plan-dir", str(plan_dir), "--repeat", "3"]) == 0
    assert capsys.readouterr().out == ""
    assert (plan_dir / "warnings.tsv").read_text() == warnings
    for index in (0, 1):
        assert (plan_dir / "resolved" / f"{index}.env").read_text() == (tmp_path / "resolved" / f"{index}.env").read_text()
    assert (plan_dir / "space").read_text() == f"{expected_space}\n" and expected_space > 0
    # A refused run is not planned.
    monkeypatch.setattr("sys.stdin", io.StringIO("0\tSCENARIO=burst\n0\tVUS=100000\n0\tK6_INSTANCES=auto\n"))
    assert cell.main(["refusals", machine, "--plan-dir", str(tmp_path / "refused"), "--repeat", "1"]) == 0
    assert capsys.readouterr().out.startswith("0\t100000 VUs")
    assert not (tmp_path / "refused").exists()
