"""The warm-up before a cell's load (WARMUP): its columns beside the row (ltsuite.warmup), over two
cells of Spring PetClinic (Spring Boot 4.0.7, Tomcat 11.0.22, GET /owners?lastName= at 60
requests a second for 20 s) recorded from one run of a matrix with WARMUP=0s 5s: petclinic-cold
without a warm-up, petclinic-warm after 5 s of it (their knobs, phase marks and the warm-up's own
files: warmup-summary.json, warmup.tsv)."""
import json
import shutil
from pathlib import Path

import pytest

from ltsuite import warmup
from ltsuite.cellfiles import read_cell_env, read_phases
from ltsuite.row import k6_prep_s

FIXTURES = Path(__file__).parent / "fixtures"
COLD = FIXTURES / "petclinic-cold"
WARM = FIXTURES / "petclinic-warm"


def test_the_warm_up_s_columns_come_from_its_own_summary_and_marks():
    figures = warmup.row_columns(WARM, read_phases(WARM / "phases.tsv"))
    assert figures == {"warmup_s": 5.13, "warmup_path": "/owners?lastName=", "warmup_reqs": 396,
                       "warmup_failed_reqs": 0, "warmup_first_ms": 31.808, "warmup_last_ms": 22.34,
                       "warmup_ended_by": "time", "warmup_settled_ms": None}
    # 4 VUs, each at most 99 requests on its connection (Tomcat's max-keep-alive-requests 100).
    assert json.loads((WARM / "warmup-summary.json").read_text())["warmup"]["vus"] * 99 == 396


def test_without_a_warm_up_every_warm_up_column_is_empty_never_0():
    assert warmup.row_columns(COLD, read_phases(COLD / "phases.tsv")) == dict.fromkeys(warmup.COLUMNS)
    assert warmup.notes(COLD, read_cell_env(COLD / "cell.env")) == []


def test_k6s_preparation_leaves_the_warm_up_out():
    phases = read_phases(WARM / "phases.tsv")
    marks = phases.last()
    cell = type("Cell", (), {"phases": phases})()
    expected = ((marks["k6_start"] - marks["target_ready"]) - (marks["warmup_end"] - marks["warmup_start"])) / 1000
    assert k6_prep_s(cell) == pytest.approx(expected)
    assert expected < 0.1 < (marks["k6_start"] - marks["target_ready"]) / 1000


def test_notes_name_sockets_the_kernel_would_not_remove_and_failed_warm_up_requests(tmp_path):
    cell = tmp_path / "cell"
    shutil.copytree(WARM, cell)
    env = read_cell_env(cell / "cell.env")
    assert warmup.notes(cell, env) == []
    (cell / "warmup.tsv").write_text("side\ttime_wait_removed\ttime_wait_left\nclient\t0\t4\nserver\t0\t0\n"
                                     "upstream\t3\t2\n")
    summary = json.loads((cell / "warmup-summary.json").read_text())
    summary["metrics"]["http_req_failed"]["values"]["passes"] = 7
    (cell / "warmup-summary.json").write_text(json.dumps(summary))
    assert warmup.notes(cell, env) == [
        "the warm-up left TIME-WAIT sockets the kernel would not remove (4 in the client namespace, 2 between "
        "nginx and the target; warmup.tsv): "
        "the TIME-WAIT peaks and the client's free ports count them",
        "7 of the warm-up's 396 requests to /owners?lastName= failed (warmup.log)"]


def test_the_path_is_named_where_it_is_not_the_load_s_own(tmp_path):
    cell = tmp_path / "cell"
    shutil.copytree(WARM, cell)
    summary = json.loads((cell / "warmup-summary.json").read_text())
    summary["warmup"]["path"] = "/readyz"
    (cell / "warmup-summary.json").write_text(json.dumps(summary))
    env = {**read_cell_env(cell / "cell.env"), "SCENARIO": "tests/fixtures/own-script/spike-test.js", "TARGET_PATH": ""}
    assert warmup.notes(cell, env) == ["the warm-up asked /readyz: a script of one's own does not say its path "
                                       "(TARGET_PATH names it)"]
