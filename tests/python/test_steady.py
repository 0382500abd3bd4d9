"""make advise on steady loads (scripts/ltsuite/steady.py): Little's law against a fixed endpoint,
kept-alive connections that exhaust max-connections, cells that did not run every request they
were asked for, loads the model cannot handle, a service whose time is measured and grows under
load, and a real run replayed (tests/python/fixtures/steady-open: make advise of
env/advise/steady-open.env)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ltsuite import steady
from ltsuite.advicebase import TUNABLE, Goal, read_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
START = {"TOMCAT_MAX_THREADS": 2, "TOMCAT_MAX_CONNECTIONS": 8192, "TOMCAT_ACCEPT_COUNT": 100,
         "SOMAXCONN": 4096, "TCP_MAX_SYN_BACKLOG": 0}
TUNE3 = ["TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS", "TOMCAT_ACCEPT_COUNT"]


def open_load(**changes: Any) -> steady.SteadyLoad:
    """env/advise/steady-open.env: 35 requests a second for 10 s, a 100 ms endpoint, 10 VUs up
    front and 200 at most, 2 threads."""
    fields: dict[str, Any] = dict(scenario="spike-open", service_ms=100, timeout_ms=10000, duration_ms=10000,
                                  settings=dict(START), rate_per_s=35, pool=10, max_vus=200,
                                  service_source="DELAY_MS 100")
    fields.update(changes)
    return steady.SteadyLoad(**fields)


def keepalive_load(**changes: Any) -> steady.SteadyLoad:
    """20 users, 50 requests each over a kept-alive connection, a 100 ms endpoint, 2 s timeout."""
    fields: dict[str, Any] = dict(scenario="keepalive", service_ms=100, timeout_ms=2000, duration_ms=30000,
                                  settings={**START, "TOMCAT_MAX_THREADS": 200, "TOMCAT_MAX_CONNECTIONS": 10},
                                  users=20, requests_per_user=50)
    fields.update(changes)
    return steady.SteadyLoad(**fields)


# ---- The model ------------------------------------------------------------------------------


def test_threads_come_from_littles_law_with_the_headroom_and_one_less_must_fail():
    p = steady.plan(open_load(), Goal(p99_ms=500), TUNE3)
    # 35/s x 0.1 s = 3.5 in service; x 1.1 = 3.85 -> 4 threads.
    assert p.settings["TOMCAT_MAX_THREADS"] == 4
    assert p.changed == ["TOMCAT_MAX_THREADS"]
    assert p.cheaper == {"TOMCAT_MAX_THREADS": 3} and p.sure == {"TOMCAT_MAX_THREADS": True}
    assert "35.0/s x 100.0 ms (DELAY_MS 100) = 3.50 in service" in p.reasons["TOMCAT_MAX_THREADS"]
    # At 3 threads the server completes 30/s: the request at 9.9 s waits (3.5/3 - 1) x 9.9 s.
    boundary = steady.predict(open_load(), Goal(p99_ms=500), {**p.settings, "TOMCAT_MAX_THREADS": 3})
    assert boundary.p99_ms == pytest.approx(100 + 9900 / 6)
    assert boundary.fails and "grow the queue all run" in boundary.why


def test_a_queue_that_grows_all_run_fails_however_long_the_timeout():
    load = open_load(timeout_ms=600000, duration_ms=60000)
    pred = steady.predict(load, Goal(p99_ms=500), {**START, "TOMCAT_MAX_THREADS": 3})
    assert pred.fails and pred.p99_ms > 500
    # Without a latency goal the same setting still fails once a request waits past the timeout.
    assert steady.predict(open_load(timeout_ms=1000), Goal(), {**START, "TOMCAT_MAX_THREADS": 3}).fails


def test_a_rate_of_exactly_the_threads_is_only_a_may_fail_boundary():
    # 40/s x 0.1 s = 4 in service: 4.4 with the headroom -> 5; at 4 the queue does not grow in
    # the model, so the boundary may fail but need not.
    p = steady.plan(open_load(rate_per_s=40), Goal(p99_ms=500), TUNE3)
    assert p.settings["TOMCAT_MAX_THREADS"] == 5
    assert p.cheaper == {"TOMCAT_MAX_THREADS": 4} and p.sure == {"TOMCAT_MAX_THREADS": False}


def test_a_closed_load_needs_a_thread_per_user_in_service():
    # 20 users, no think time: all 20 in service; with 400 ms think: 20 x 100 / 500 = 4, x 1.1 -> 5.
    assert steady.threads_needed(keepalive_load()) == 20
    assert steady.threads_needed(keepalive_load(think_ms=400)) == 5


def test_idle_keepalive_connections_exhaust_max_connections():
    load = keepalive_load()
    assert steady.connections(load) == 20
    # The 10 past max-connections wait for a slot: 50 requests x 100 ms, then 60 s idle.
    assert steady.held_for_ms(load) == 50 * 100 + 60000
    pred = steady.predict(load, Goal(), load.settings)
    assert pred.fails and "20 kept-alive connections for 10 slots: 10 wait in the accept queue" in pred.why
    p = steady.plan(load, Goal(), ["TOMCAT_MAX_CONNECTIONS"])
    assert p.settings["TOMCAT_MAX_CONNECTIONS"] == 20
    assert p.cheaper == {"TOMCAT_MAX_CONNECTIONS": 19} and p.sure["TOMCAT_MAX_CONNECTIONS"]
    # Without max-connections in TUNE no setting holds them.
    assert "TOMCAT_MAX_CONNECTIONS 10 is not in TUNE" in steady.plan(load, Goal(), ["TOMCAT_MAX_THREADS"]).cannot


def test_an_arrival_rate_pool_keeps_a_connection_a_vu():
    # 50 VUs up front, 5 in service: 50 connections; with 20 slots the other 30 wait until a held
    # connection ends after 100 requests, one every 50 / 50 s: 100 s, past the 10 s timeout.
    load = open_load(rate_per_s=50, pool=50)
    assert steady.connections(load) == 50
    pred = steady.predict(load, Goal(), {**START, "TOMCAT_MAX_THREADS": 10, "TOMCAT_MAX_CONNECTIONS": 20})
    assert pred.fails and "wait in the accept queue about 100 s" in pred.why
    # Without keep-alive only the requests in service hold a connection.
    assert steady.connections(open_load(rate_per_s=50, pool=50, keepalive=False)) == 5


@pytest.mark.parametrize("changes, goal, tune, reason", [
    ({"service_ms": 1000}, Goal(p99_ms=500), TUNE3, "more than GOAL_P99_MS 500: the endpoint, not a queue"),
    ({"service_ms": 3000, "timeout_ms": 2000}, Goal(), TUNE3, "beyond REQUEST_TIMEOUT 2000 ms"),
    ({"rate_per_s": 100, "service_ms": 1000, "max_vus": 50}, Goal(), TUNE3,
     "the generator is the limit: 100.0 requests in service"),
    ({"pool": 3}, Goal(), TUNE3, "need 4 k6 VUs with the headroom and PRE_ALLOCATED_VUS is 3"),
    ({}, Goal(p99_ms=500), ["TOMCAT_ACCEPT_COUNT"], "4 threads with the headroom, and TOMCAT_MAX_THREADS 2 is not in TUNE"),
])
def test_loads_the_model_cannot_handle_get_cannot_with_the_reason(changes, goal, tune, reason):
    p = steady.plan(open_load(**changes), goal, tune)
    assert p.settings is None and reason in p.cannot


# ---- Cells that did not run what they were asked ---------------------------------------------

DONE = {"status": "ok", "as_designed": 1, "http_reqs": 350, "failed_reqs": 0, "dropped_iterations": 0,
        "iterations_interrupted": 0, "lat_p99_ms": 120.0}


@pytest.mark.parametrize("changes, word", [
    ({}, True),
    ({"http_reqs": 351}, True),  # k6 may start one at DURATION's end too
    ({"http_reqs": 349}, None),
    ({"http_reqs": 352}, None),
    ({"dropped_iterations": 3, "as_designed": 0, "design_notes": "k6 dropped 3 iterations"}, None),
    ({"iterations_interrupted": 2, "as_designed": 0, "design_notes": "2 iterations were interrupted"}, None),
    ({"iterations_interrupted": 2}, None),
    ({"iterations_interrupted": None}, None),
    ({"dropped_iterations": 42, "as_designed": 0, "lat_p99_ms": 1731.4}, False),
    ({"lat_p99_ms": 501}, False),
    ({"failed_reqs": 1}, False),
])
def test_only_a_cell_that_sent_every_request_asked_for_can_pass(changes, word):
    assert steady.steady_passes({**DONE, **changes}, Goal(p99_ms=500), 350) is word


def test_a_cell_cut_off_by_duration_and_graceful_stop_never_verifies():
    # The recorded cell whose 11 iterations GRACEFUL_STOP cut off: no request failed, none answered.
    row = json.loads((FIXTURES / "cut-off" / "row.json").read_text())
    assert row["failed_reqs"] == 0 and row["iterations_interrupted"] == 11
    for expected in (11, None):
        assert steady.steady_passes(row, Goal(), expected) is not True
        assert "cut off by GRACEFUL_STOP" in steady.steady_not_as_asked({**row, "as_designed": 1}, expected)


def test_the_recorded_spike_open_cell_counts_one_more_than_rate_times_duration():
    row = json.loads((FIXTURES / "spike-open" / "row.json").read_text())
    # RATE=20 for 5 s: 100 asked, 101 sent, none dropped or cut off.
    load = open_load(rate_per_s=20, duration_ms=5000)
    assert steady.expected_requests(load) == 100 and row["http_reqs"] == 101
    assert steady.steady_passes(row, Goal(), 100) is True


# ---- The whole advice over recorded and constructed cells --------------------------------------


class Replay:
    """A runner whose cells are given rows (by threads) and, optionally, an access log of %D
    times: what scripts/run-matrix.sh would have left under OUT/runs/."""

    def __init__(self, out: Path, rows: dict[int, dict[str, Any]], app_ms: dict[int, list[float]]):
        self.out, self.rows, self.app_ms = out, rows, app_ms
        self.base, self.knobs, self.cells, self.runs, self.root = ["SCENARIO=spike-open"], [], [], [], ROOT

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        self.runs.append((name, list(self.base), dict(axes)))
        found = []
        for threads in axes.get("TOMCAT_MAX_THREADS", [settings["TOMCAT_MAX_THREADS"]]):
            cell_settings = {**settings, "TOMCAT_MAX_THREADS": threads}
            key = 0 if name == "calibrate" else threads
            cell_dir = self.out / "runs" / name / "cells" / f"threads-{threads}"
            cell_dir.mkdir(parents=True)
            if key in self.app_ms:
                (cell_dir / "tomcat-access.log").write_text("".join(
                    f"{1000 + i} {int(ms * 1000)} 200 5000{i % 10} r{i} GET /hello\n"
                    for i, ms in enumerate(self.app_ms[key])))
            found.append({"run": name, "cell": f"threads-{threads}",
                          "row": str((cell_dir / "row.json").relative_to(self.out)),
                          "report": f"runs/{name}/report.html", "settings": cell_settings,
                          "row_data": dict(self.rows.get(key, DONE))})
        self.cells.extend(found)
        return found


def steady_env(**changes: str) -> dict[str, str]:
    env = read_env(ROOT / "env" / "defaults.env")
    env.update(read_env(ROOT / "env" / "advise" / "steady-open.env"))
    env.update(changes)
    return env


def test_the_recorded_run_verifies_four_threads_and_three_miss_the_goal(tmp_path):
    recorded = json.loads((FIXTURES / "steady-open" / "rows.json").read_text())
    rows = {int(c["axes"]["TOMCAT_MAX_THREADS"]): c for c in recorded["cells"]}
    runner = Replay(tmp_path, rows, {})
    advice = steady.advise(steady_env(), runner)  # type: ignore[arg-type]
    assert advice["verified"] and advice["recommended"]["TOMCAT_MAX_THREADS"] == 4
    assert runner.runs == [("verify", ["SCENARIO=spike-open"], {"TOMCAT_MAX_THREADS": [3, 4]})]
    (b,) = advice["boundary"]
    assert (b["value"], b["predicted"], b["passed"]) == (3, "fail", False)
    # The model's p99 at 3 threads against the run's: 1750 ms and 1731 ms.
    assert b["predicted_p99_ms"] == 1750.0 and b["lat_p99_ms"] == 1731.438
    assert "42 iterations dropped" in b["not_as_asked"] or "dropped 42" in b["not_as_asked"]
    text = steady.markdown(advice, "env/advise/steady-open.env")
    assert "- `TOMCAT_MAX_THREADS` = 4 (was 2)" in text
    assert "missed the goal" in text and "server.tomcat.threads.max=4" in text


def test_a_cut_off_verifying_cell_recommends_nothing(tmp_path):
    cut = {**DONE, "as_designed": 0, "iterations_interrupted": 5, "http_reqs": 345,
           "design_notes": "5 of 350 iterations were interrupted by GRACEFUL_STOP=5s"}
    advice = steady.advise(steady_env(), Replay(tmp_path, {3: DONE, 4: cut}, {}))  # type: ignore[arg-type]
    assert advice["verified"] is False and advice["recommended"] == {}
    assert "was not judged: not as designed" in advice["model_wrong"][0]


def test_a_service_of_ones_own_is_calibrated_from_its_access_log(tmp_path):
    # Calibration: 20 requests of 120..139 ms: p90 137.1 ms; 35/s x 0.1371 s = 4.8, x 1.1 -> 6.
    calib = [120.0 + i for i in range(20)]
    runner = Replay(tmp_path, {}, {0: calib, 6: calib, 5: calib})
    advice = steady.advise(steady_env(TARGET_JAR="tests/fixtures/ownapp/target/greeting-service.jar"),
                           runner)  # type: ignore[arg-type]
    assert runner.runs[0][0] == "calibrate" and "SCENARIO=keepalive" in runner.runs[0][1]
    assert "VUS=2" in runner.runs[0][1] and "SCENARIO=spike-open" not in runner.runs[0][1]
    # The calibration's users end when their requests are sent: the load's DURATION does not cut them.
    assert f"DURATION={steady.CALIBRATION_MIN_DURATION_S}s" in runner.runs[0][1]
    assert advice["model"]["service_ms"] == pytest.approx(137.1)
    assert advice["model"]["service_source"].startswith("p90 of the application's time (%D) over 20 requests")
    assert advice["recommended"]["TOMCAT_MAX_THREADS"] == 6 and advice["verified"]
    assert runner.runs[1][2] == {"TOMCAT_MAX_THREADS": [5, 6]}


def test_a_time_that_grows_under_load_is_measured_and_the_plan_made_again(tmp_path):
    # Calibrated at 100 ms; under load the recommended 4 threads see 150 ms and miss the goal:
    # planned again with 150 ms, 35/s x 0.15 s = 5.25, x 1.1 -> 6 threads, which hold.
    slow = {**DONE, "lat_p99_ms": 900.0}
    runner = Replay(tmp_path, {4: slow, 3: slow}, {0: [100.0] * 20, 4: [150.0] * 20, 6: [150.0] * 20})
    advice = steady.advise(steady_env(TARGET_JAR="x.jar"), runner)  # type: ignore[arg-type]
    assert [r[0] for r in runner.runs] == ["calibrate", "verify", "verify-2"]
    assert advice["verified"] and advice["recommended"]["TOMCAT_MAX_THREADS"] == 6
    assert "the endpoint's time grows with load: p90 150.0 ms" in advice["notes"][0]
    assert "planned again" in advice["notes"][0]
    assert "under load" in advice["model"]["service_source"]


def test_no_setting_is_recommended_when_the_time_did_not_grow_and_the_run_still_missed(tmp_path):
    slow = {**DONE, "lat_p99_ms": 900.0}
    advice = steady.advise(steady_env(), Replay(tmp_path, {4: slow, 3: slow}, {}))  # type: ignore[arg-type]
    assert advice["verified"] is False and "yet the run did not hold" in advice["cannot"]


def test_every_tunable_knob_is_in_the_plans_settings():
    assert set(steady.plan(open_load(), Goal(), TUNE3).settings) == set(TUNABLE)


@pytest.mark.parametrize("changes, measured", [
    ({}, False),
    ({"TARGET_JAR": "app.jar"}, True),
    ({"TARGET_PATH": "/owners?lastName="}, True),  # the suite's target at a path: no delayMs is sent
])
def test_the_time_is_measured_for_a_jar_of_ones_own_or_a_path(tmp_path, changes, measured):
    assert steady.time_measured(steady_env(**changes)) is measured
    runner = Replay(tmp_path, {}, {0: [100.0] * 20, 4: [100.0] * 20, 3: [100.0] * 20})
    steady.advise(steady_env(**changes), runner)  # type: ignore[arg-type]
    assert (runner.runs[0][0] == "calibrate") is measured


class RecordedCalibration(Replay):
    """Replay whose calibration cell is the recorded one of tests/python/fixtures/calibration-greeting
    (the greeting service at 100 ms, 2 users, 20 requests in its access log), copied where
    scripts/run-matrix.sh leaves it."""

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        import shutil
        found = super().run(name, settings, axes)
        if name == "calibrate":
            shutil.copytree(FIXTURES / "calibration-greeting", (self.out / found[0]["row"]).parent, dirs_exist_ok=True)
        return found


def test_where_nothing_queues_the_model_predicts_the_calibrations_measured_p99_not_its_p90(tmp_path):
    # The recorded cell's %D: p90 107.966 ms, the time Little's law takes (35/s x 0.108 s = 3.78 in
    # service, x 1.1 -> 5 threads), and p99 111.523 ms, the p99 where no request waits for a thread.
    runner = RecordedCalibration(tmp_path, {}, {})
    advice = steady.advise(steady_env(TARGET_PATH="/hello?name=capacity"), runner)  # type: ignore[arg-type]
    assert runner.runs[0][0] == "calibrate" and advice["verified"]
    assert advice["model"]["service_ms"] == pytest.approx(107.966)
    assert advice["model"]["workers"] == 5 and advice["model"]["in_service"] < 5
    assert advice["model"]["p99_ms"] == 111.5


def test_threads_that_already_suffice_still_get_a_boundary_one_below():
    # 60/s x 5 ms = 0.3 in service: one thread would do, and the file's 2 are kept; the boundary
    # is 1 thread all the same (the model: it holds), so a verified setting comes with one.
    load = open_load(rate_per_s=60, service_ms=5, service_source="calibration")
    p = steady.plan(load, Goal(p99_ms=300), TUNE3)
    assert p.settings["TOMCAT_MAX_THREADS"] == 2 and p.changed == []
    assert p.cheaper == {"TOMCAT_MAX_THREADS": 1} and p.kept_boundary == ["TOMCAT_MAX_THREADS"]
    assert p.sure == {"TOMCAT_MAX_THREADS": False}
    assert steady.verification_axes(p, 8) == {"TOMCAT_MAX_THREADS": [1, 2]}
    # Not on virtual threads (no pool to trim), and not below one thread.
    assert steady.plan(open_load(rate_per_s=60, service_ms=5, settings={**START, "TOMCAT_MAX_THREADS": 1}),
                       Goal(p99_ms=300), TUNE3).cheaper == {}


class RecordedPetclinic(Replay):
    """The cells of a real make advise of Spring PetClinic (tests/python/fixtures/advise-petclinic:
    Spring Boot 4, GET /owners?lastName= at 60 requests a second for 20 s, 2 threads, p99 within
    300 ms, WARMUP=30s; run advise-20261129-003933-petclinic30), each copied where
    scripts/run-matrix.sh left it, its row as recorded: the calibration cell and the verification
    cells at 1 and 2 threads."""

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        import shutil
        found = super().run(name, settings, axes)
        for cell in found:
            recorded = FIXTURES / "advise-petclinic" / (
                "calibrate" if name == "calibrate" else cell["cell"])
            shutil.copytree(recorded, (self.out / cell["row"]).parent, dirs_exist_ok=True)
            cell["row_data"] = json.loads((recorded / "row.json").read_text())
        return found


def test_spring_petclinic_warmed_gives_verified_threads_with_a_boundary(tmp_path):
    env = read_env(ROOT / "env" / "defaults.env")
    env.update(read_env(FIXTURES / "advise-petclinic" / "load.env"))
    env.update({"GOAL_P99_MS": "300", "TUNE": " ".join(TUNE3)})
    runner = RecordedPetclinic(tmp_path, {}, {})
    advice = steady.advise(env, runner)  # type: ignore[arg-type]
    # The calibration ran after the warm-up and sent 198 requests: p90 8.08 ms, where the cold
    # calibration of 20 requests had measured 17 to 99 ms.
    assert advice["model"]["service_ms"] == pytest.approx(8.08)
    assert "over 198 requests of calibration cell" in advice["model"]["service_source"]
    # 60/s x 8.08 ms = 0.48 in service: the file's 2 threads already suffice; 1 thread is the boundary.
    assert [r[0] for r in runner.runs] == ["calibrate", "verify"]
    assert runner.runs[1][2] == {"TOMCAT_MAX_THREADS": [1, 2]}
    assert advice["verified"] and advice["recommended"]["TOMCAT_MAX_THREADS"] == 2
    (b,) = advice["boundary"]
    assert (b["knob"], b["value"], b["predicted"], b["passed"], b["kept"]) == ("TOMCAT_MAX_THREADS", 1, "hold", True, True)
    assert b["lat_p99_ms"] == 15.623 and advice["model_wrong"] == []
    # Every cell warmed the same 30 s and ran as designed (no cold JVM in its first second).
    rows = [json.loads((tmp_path / c["row"]).read_text()) for c in runner.cells]
    assert len(rows) == 3 and all(r["as_designed"] == 1 and r["warmup_s"] >= 30 for r in rows)
    text = steady.markdown(advice, "petclinic.env")
    assert "- `TOMCAT_MAX_THREADS` = 1 (the model: hold): cell verify/threads-1, 0 failed, p99 15.623 ms" in text
