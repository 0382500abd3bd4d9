"""A load that met a cold JVM (ltsuite.accesslog.cold_start, ltsuite.design.cold_jvm): the
application's own median time (Tomcat's %D) in the load's first second against the rest of it,
over two cells of Spring PetClinic (Spring Boot 4.0.7, Tomcat 11.0.22, GET /owners?lastName= at 60
requests a second for 20 s) recorded from one run of a matrix with WARMUP=0s 5s (their access
logs and the rows the run wrote), and over access logs made here for the rule's bounds."""
import json
from pathlib import Path

import pytest

from ltsuite import accesslog, design, warmup
from ltsuite.accesslog import AppRequest
from ltsuite.cellfiles import read_cell_env, read_phases

FIXTURES = Path(__file__).parent / "fixtures"
COLD = FIXTURES / "petclinic-cold"
WARM = FIXTURES / "petclinic-warm"


def recorded(cell_dir):
    return json.loads((cell_dir / "row.json").read_text())


def test_without_a_warm_up_the_load_met_a_cold_jvm_and_the_row_says_so_with_the_figures():
    cold = accesslog.cold_start(accesslog.cell_load_requests(COLD))
    assert (cold.first_reqs, cold.rest_reqs) == (35, 1140)
    assert (round(cold.first_med_ms, 1), round(cold.rest_med_ms, 1)) == (683.2, 5.1)
    finding = design.cold_jvm(read_cell_env(COLD / "cell.env"), cold)
    assert finding.flag == "cold"
    assert finding.note == ("the load met a cold JVM without a warm-up (WARMUP=0s): the application's median time "
                            "in the load's first second was 683.2 ms (35 requests), 133.2 times the 5.1 ms of the "
                            "rest (1140 requests); a longer WARMUP lets it load its classes and compile its code first")
    row = recorded(COLD)
    assert row["as_designed"] == 0
    assert finding.note in row["design_notes"]
    assert row["cold_start_ratio"] == 133.15


def test_after_a_warm_up_the_load_met_a_warm_jvm_and_the_warm_up_s_requests_are_not_the_load_s():
    requests = accesslog.cell_load_requests(WARM)
    cold = accesslog.cold_start(requests)
    assert cold.ratio < design.COLD_RATIO
    assert design.cold_jvm(read_cell_env(WARM / "cell.env"), cold) is None
    row = recorded(WARM)
    assert row["as_designed"] == 1 and row["design_notes"] is None
    assert row["cold_start_ratio"] == round(cold.ratio, 2) == 1.76
    # The access log holds the warm-up's requests too, before the load's start: not the load's.
    k6_start = read_phases(WARM / "phases.tsv").last()["k6_start"]
    logged = accesslog.read_access_log(WARM / "tomcat-access.log").requests
    before = [r for r in logged if r.begin_ms < k6_start and r.path == "/owners"]
    assert len(before) == row["warmup_reqs"] == 396
    assert len(requests) == row["app_reqs"] == row["http_reqs"] == 1201
    # The row the run wrote has the warm-up's columns as ltsuite.warmup makes them.
    # (warmup_ended_by and warmup_settled_ms came after the cell was recorded.)
    figures = warmup.row_columns(WARM, read_phases(WARM / "phases.tsv"))
    recorded_keys = set(figures) - {"warmup_ended_by", "warmup_settled_ms"}
    assert {key: row[key] for key in recorded_keys} == {key: figures[key] for key in recorded_keys}
    assert {key: recorded(COLD)[key] for key in recorded_keys} == dict.fromkeys(recorded_keys)


def requests_at(first_ms, rest_ms, first=20, rest=40):
    """Access-log requests: `first` in the load's first second taking first_ms each, then `rest`
    over the next seconds taking rest_ms."""
    out = [AppRequest(1000 + i * (1000 // first), int(first_ms * 1000), 200, 40000 + i, f"r{i}", "GET", "/x")
           for i in range(first)]
    out += [AppRequest(2000 + i * 50, int(rest_ms * 1000), 200, 41000 + i, f"s{i}", "GET", "/x") for i in range(rest)]
    return out


@pytest.mark.parametrize("first_ms, rest_ms, cold", [
    (60, 2.9, True),     # Spring PetClinic's first second beside its 5th to 20th, at 60 requests a second
    (15.1, 5, True),     # just above 3 times, 10 ms apart
    (15, 5, False),      # 3 times exactly: not above
    (4.5, 0.45, False),  # 10 times, but 4 ms apart: a service that is fast either way
    (5.45, 0.45, True),  # 12 times, and 5 ms apart
])
def test_the_rule_wants_more_than_3_times_and_5_ms_apart(first_ms, rest_ms, cold):
    finding = design.cold_jvm({"WARMUP": "0s"}, accesslog.cold_start(requests_at(first_ms, rest_ms)))
    assert (finding is not None) == cold


def test_too_few_requests_in_either_part_compare_nothing():
    # A burst: every request in the first second, no rest to compare it with.
    assert accesslog.cold_start(requests_at(900, 3, first=50, rest=0)) is None
    assert accesslog.cold_start(requests_at(900, 3, first=4, rest=50)) is None
    assert accesslog.cold_start(requests_at(900, 3, first=5, rest=5)) is not None
    assert accesslog.cold_start([]) is None and accesslog.cold_start(None) is None


def test_a_warm_up_too_short_is_named():
    finding = design.cold_jvm({"WARMUP": "500ms"}, accesslog.cold_start(requests_at(60, 2.9)))
    assert finding.note.startswith("the load met a cold JVM after a warm-up of only WARMUP=500ms: the application's "
                                   "median time in the load's first second was 60 ms (20 requests), 20.7 times the "
                                   "2.9 ms of the rest (40 requests)")


def test_a_first_second_within_the_rests_p99_is_not_a_cold_jvm():
    # Seed 000's waiting room at max-connections 4 without a warm-up (run
    # 20261129-011933-seed000-waiting-room, cell 01): its first second's 8 requests took a median of
    # 9 ms against 2.8 ms after, 3.2 times and 6 ms apart, yet within the rest's p99 (44.8 ms), and
    # the cell failed the same 56 of 136 requests as its warmed twin: nothing it measured was the
    # cold start's. The run's row had it not as designed; the rule no longer does.
    cell = FIXTURES / "waiting-room-cold"
    cold = accesslog.cold_start(accesslog.cell_load_requests(cell))
    assert (cold.first_reqs, cold.rest_reqs) == (8, 128)
    assert cold.ratio > design.COLD_RATIO and cold.first_med_ms - cold.rest_med_ms >= design.COLD_GAP_MS
    assert cold.first_med_ms <= cold.rest_p99_ms == pytest.approx(44.777, abs=0.001)
    assert design.cold_jvm(read_cell_env(cell / "cell.env"), cold) is None
    row = recorded(cell)
    assert row["as_designed"] == 0 and "cold JVM" in row["design_notes"]
    # Spring PetClinic's cold first second is far past its rest's p99: still named.
    petclinic = accesslog.cold_start(accesslog.cell_load_requests(COLD))
    assert petclinic.first_med_ms > 10 * petclinic.rest_p99_ms
    assert design.cold_jvm(read_cell_env(COLD / "cell.env"), petclinic) is not None
