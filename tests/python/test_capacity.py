"""How much can it take (ltsuite.capacity): the model's limit of a fixed setting, computed by hand,
and the search that starts there, over rows a hand-made server gives and over the rows of a real
run (tests/python/fixtures/capacity-seed003.json)."""
import json
import math
from dataclasses import replace
from pathlib import Path

from ltsuite import capacity
from ltsuite.advicebase import Goal

FIXTURE = Path(__file__).parent / "fixtures" / "capacity-seed003.json"
#: Seed 003's example: 10 threads, /hello of 5 s, users that send again once answered.
SEED003 = capacity.Setting("spike", delay_ms=5000, timeout_ms=30000, threads=10, max_connections=40,
                           accept_count=100)
#: The same users pausing 1 s between requests: they take turns.
TURNS = capacity.Setting("spike", delay_ms=5000, timeout_ms=30000, threads=10, max_connections=40,
                         accept_count=100, think_ms=1000)


def closed_loop_row(users: int, threads: int = 10, delay_ms: int = 5000) -> dict:
    """What a closed loop of `users` gives on `threads` threads of delay_ms, by hand: the last
    user waits ceil(users / threads) turns (p99 is that turn, 30 ms late), threads / delay
    requests per second."""
    return {"status": "ok", "as_designed": 1, "iterations_interrupted": 0, "http_reqs": 4 * users,
            "failed_reqs": 0, "lat_p99_ms": math.ceil(users / threads) * delay_ms + 30,
            "tps": min(users, threads) * 1000 / delay_ms, "dropped_iterations": 0}


def judge_by(row_of, scenario="spike", goal=Goal(0, 11000), asked=None):
    def judge(load):
        if asked is not None:
            asked.append(load)
        passed, why = capacity.judge_row(row_of(load), scenario, load, goal)
        return capacity.Probe(load, passed, why, row_of(load))
    return judge


def test_kept_alive_users_without_think_time_keep_their_threads_so_the_limit_is_the_workers():
    assert capacity.model_limit(SEED003, Goal(0, 11000)).load == 10
    assert capacity.model_limit(SEED003, Goal(0, 60000)).load == 10
    # Virtual threads: max-connections (40) is the worker bound.
    virtual = capacity.Setting("spike", 5000, 30000, 10, 40, 100, virtual_threads=True)
    assert capacity.model_limit(virtual, Goal(0, 11000)).load == 40
    assert capacity.model_limit(SEED003, Goal(0, 4000)).load is None


def test_users_that_take_turns_the_limit_is_workers_times_the_turns_within_the_goal():
    # 10 threads x floor(11000 / 5000) = 2 turns, and each user away for its 1 s of think time:
    # 10 x (2 x 5000 + 1000) / 5000 = 22 users; 40 + 100 + 1 connections hold them.
    assert capacity.model_limit(TURNS, Goal(0, 11000)).load == 22
    assert capacity.model_limit(TURNS, Goal(0, 16000)).load == 32
    # Without think time the users come back at once: workers x turns.
    assert capacity.model_limit(replace(TURNS, think_ms=0, kept_alive=False), Goal(0, 11000)).load == 20
    # Virtual threads: 40 workers x 2 turns = 80 users, but the server holds only 40 + 20 + 1.
    assert capacity.model_limit(capacity.Setting("spike", 5000, 30000, 10, 40, 20, virtual_threads=True,
                                                 think_ms=1000), Goal(0, 11000)).load == 61


def test_the_model_limit_of_a_burst_and_of_an_arrival_rate():
    # 200 threads of 5 s, p99 within 10 s: the p99 user's rank ceil(0.99 (n - 1)) + 1 <= 400.
    burst = capacity.Setting("burst", 5000, 60000, 200, 8192, 100)
    assert capacity.model_limit(burst, Goal(0, 10000)).load == 404
    # Without a latency goal the last wave within the 60 s timeout: 12 waves, but the server
    # holds 8192 + 100 + 1 of the 2400 users, all of them.
    assert capacity.model_limit(burst, Goal(0, None)).load == 2400
    # Little's law: 4 threads of 200 ms serve 20 arrivals a second; 40 per 2 s. Over a 10 s load
    # the queue of 21.6 a second grows to 16 requests, 0.8 s for the last: 20 x (1 + 800 / 10000).
    open_model = capacity.Setting("spike-open", 200, 10000, 4, 8192, 100)
    assert capacity.model_limit(open_model, Goal(0, 1000)).load == 20
    assert capacity.model_limit(capacity.Setting("spike-open", 200, 10000, 4, 8192, 100, time_unit_ms=2000),
                                Goal(0, 1000)).load == 40
    assert capacity.model_limit(capacity.Setting("spike-open", 200, 10000, 4, 8192, 100, duration_ms=10000),
                                Goal(0, 1000)).load == 21
    assert capacity.model_limit(capacity.Setting("spike-open", 200, 10000, 4, 8192, 100, duration_ms=100000),
                                Goal(0, 1000)).load == 20


def test_a_model_that_is_right_needs_two_cells_the_maximum_and_the_load_above_it():
    asked = []
    result = capacity.search(20, 8, judge_by(closed_loop_row, asked=asked))
    assert [result.maximum, result.first_failing, result.exact, asked] == [20, 21, True, [20, 21]]


def test_a_model_too_low_brackets_up_by_doubling_steps_then_bisects():
    # From 5: 5 6 8 12 20 held, 36 failed; then 28 24 22 21 failed: 20 and 21, 10 cells.
    asked = []
    result = capacity.search(5, 12, judge_by(closed_loop_row, asked=asked))
    assert asked == [5, 6, 8, 12, 20, 36, 28, 24, 22, 21]
    assert [result.maximum, result.first_failing, result.exact] == [20, 21, True]
    # With 8 cells the bracket stays open: 20 held, 24 failed, and the answer says so.
    result = capacity.search(5, 8, judge_by(closed_loop_row))
    assert [result.maximum, result.first_failing, result.exact] == [20, 24, False]
    assert result.stopped == "the budget of 8 cells ran out"


def test_a_model_too_high_brackets_down():
    asked = []
    result = capacity.search(33, 8, judge_by(closed_loop_row, asked=asked))
    assert asked == [33, 32, 30, 26, 18, 22, 20, 21]
    assert [result.maximum, result.first_failing] == [20, 21]


def test_a_cell_cut_off_or_not_as_designed_is_never_a_verified_load():
    row = closed_loop_row(20)
    assert capacity.judge_row({**row, "iterations_interrupted": 3}, "spike", 20, Goal(0, 11000)) == (
        None, "3 iterations cut off by GRACEFUL_STOP")
    assert capacity.judge_row({**row, "as_designed": 0, "design_notes": "k6 was saturated"}, "spike", 20,
                              Goal(0, 11000))[0] is None
    # The search stops at such a cell: nothing above the last held load is claimed.
    result = capacity.search(20, 8, judge_by(lambda n: closed_loop_row(n) if n <= 20 else
                                             {**closed_loop_row(n), "iterations_interrupted": 1}))
    assert [result.maximum, result.first_failing] == [20, None]
    assert result.stopped.startswith("the cell of 21 could not be judged")


def test_an_arrival_rate_whose_arrivals_were_dropped_was_not_held():
    row = {"status": "ok", "as_designed": 1, "iterations_interrupted": 0, "http_reqs": 200, "failed_reqs": 0,
           "lat_p99_ms": 210, "dropped_iterations": 12}
    assert capacity.judge_row(row, "spike-open", 25, Goal(0, 1000)) == (
        False, "12 arrivals dropped (every VU was waiting: the rate was not held, p99 210 ms)")
    assert capacity.judge_row({**row, "dropped_iterations": 0}, "spike-open", 25, Goal(0, 1000))[0] is True
    # A burst must send every user's request; a failed rate counts users there.
    burst = {**row, "http_reqs": 99, "dropped_iterations": None}
    assert capacity.judge_row(burst, "burst", 100, Goal(0.01, None))[0] is None
    assert capacity.judge_row({**burst, "http_reqs": 100, "failed_reqs": 1}, "burst", 100, Goal(0.01, None))[0] is True
    assert capacity.judge_row({**burst, "http_reqs": 100, "failed_reqs": 2}, "burst", 100, Goal(0.01, None))[0] is False


def test_the_answer_marks_the_knee_in_its_picture_and_its_text():
    # Users in waves (closed_loop_row's model: no think time, a new connection each).
    answer = capacity.capacity(replace(TURNS, think_ms=0, kept_alive=False), Goal(0, 11000), 6,
                               lambda n: {"row_data": closed_loop_row(n), "run": f"run-{n}", "cell": "01"})
    assert [answer["maximum"], answer["first_failing"], answer["knee"], answer["model"]["limit"]] == [20, 21, 20, 20]
    picture = capacity.svg(answer)
    assert picture.count("<circle") == 4 and "knee at 20" in picture and "goal 11000 ms" in picture
    text = capacity.markdown(answer)
    assert "**Verified maximum: VUS=20 users**; the first load above it that fails: VUS=21" in text
    assert "(the model was exact)" in text
    # The words the page's heading and capacity.md share; none verified says so.
    assert capacity.verdict(answer) == "Verified maximum: VUS=20 users; the first load above it that fails: VUS=21"
    assert capacity.verdict({**answer, "first_failing": None}).endswith("VUS=20 users; no load above it failed")
    assert capacity.verdict({**answer, "maximum": None}) == "No load verified"


def test_over_the_recorded_rows_of_seed_003_the_search_closes_in_on_11_users_in_4_cells():
    # The real run (fixture): 10 users held (p99 5,041 ms), 11 held (10,016 ms: the one user past
    # the threads answered once, after a turn), 13 and 12 failed (15,019 and 12,968 ms). The
    # model says 10; the search steps up 1 then 2, then bisects. A load not recorded fails here.
    recorded = json.loads(FIXTURE.read_text())["rows"]
    env = {line.split("=", 1)[0]: line.split("=", 1)[1] for line in
           (Path(__file__).parents[2] / "env/advise/seed003-capacity.env").read_text().splitlines()
           if line and not line.startswith("#")}
    setting = capacity.setting_from_env({"TOMCAT_ACCEPT_COUNT": "100", **env})
    asked = []

    def run_cell(load):
        asked.append(load)
        row = recorded[str(load)]
        return {"row_data": row, "run": row["run"], "cell": "01"}

    answer = capacity.capacity(setting, Goal(0, int(env["GOAL_P99_MS"])), int(env["ADVISE_MAX_CELLS"]), run_cell)
    assert asked == [10, 11, 13, 12]
    assert [answer["model"]["limit"], answer["maximum"], answer["first_failing"], answer["exact"]] == [10, 11, 12, True]
    assert [c["passed"] for c in answer["cells"]] == [True, True, False, False]
    # 20 users on 10 threads: most requests answered at once, a few after 20 s and more.
    assert capacity.judge_row(recorded["20"], "spike", 20, Goal(0, 11000)) == (False, "p99 22585.5 ms > 11000 ms")


def test_an_arrival_rate_that_ran_out_of_vus_because_the_server_fell_behind_failed_it():
    # Recorded (run 20261127-020533-load-03-23): 23/s on 4 threads of 200 ms, a 10 s load, 20 to
    # 60 VUs: 10 arrivals dropped, the design check says so. 23 x 0.2 s = 4.6 VUs would do for a
    # server that keeps up: the server fell behind. With MAX_VUS 4 the generator was short.
    row = {"status": "ok", "as_designed": 0, "iterations_interrupted": 0, "http_reqs": 221, "failed_reqs": 0,
           "dropped_iterations": 10, "lat_p99_ms": 1465.832, "design_notes": "k6 dropped 10 iterations it was "
           "asked to start (no free VU: raise MAX_VUS, or the generator is short of CPU)"}
    setting = capacity.Setting("spike-open", 200, 10000, 4, 8192, 100, max_vus=60, duration_ms=10000)
    assert capacity.judge_row(row, "spike-open", 23, Goal(0, 1000), setting) == (
        False, "10 arrivals dropped (every VU was waiting: the rate was not held, p99 1465.83 ms)")
    short = capacity.Setting("spike-open", 200, 10000, 4, 8192, 100, max_vus=4, duration_ms=10000)
    assert capacity.judge_row(row, "spike-open", 23, Goal(0, 1000), short)[0] is None
    late = {**row, "design_notes": row["design_notes"] + "; k6 was saturated for 3 s"}
    assert capacity.judge_row(late, "spike-open", 23, Goal(0, 1000), setting)[0] is None


# ---- A service of one's own: the time from make advise's calibration cell ------------------------

ROOT = Path(__file__).resolve().parents[2]
#: The calibration cell of a real make capacity of env/advise/own-path-capacity.env (run
#: capacity-20261127-080333-own-path-capacity, 20261127-080809-calibrate/01: the greeting service at
#: 100 ms, 2 users, 20 requests in its access log, %D), replayed below.
RECORDED_CELL = Path(__file__).parent / "fixtures" / "calibration-greeting"


class CalibrationReplay:
    """A runner whose one cell is the recorded cell, copied where scripts/run-matrix.sh leaves it."""

    def __init__(self, out: Path, base: list[str]):
        self.out, self.base, self.cells, self.matrices = out, base, [], []

    def run(self, name, settings, axes):
        import shutil
        self.matrices.append(list(self.base) + [f"{k}={v}" for k, v in settings.items()])
        cell_dir = self.out / "runs" / name / "cells" / "01"
        shutil.copytree(RECORDED_CELL, cell_dir)
        cell = {"run": name, "cell": "01", "row": str((cell_dir / "row.json").relative_to(self.out)),
                "report": f"runs/{name}/report.html", "settings": settings,
                "row_data": json.loads((cell_dir / "row.json").read_text())}
        self.cells.append(cell)
        return [cell]


def own_path_env(**changes):
    from ltsuite.advicebase import read_env
    env = read_env(ROOT / "env" / "defaults.env")
    env.update(read_env(ROOT / "env" / "advise" / "own-path-capacity.env"))
    env.update(changes)
    return env


def test_a_service_of_ones_own_is_searched_with_the_time_its_calibration_cell_measured(tmp_path):
    from ltsuite import steady
    from ltsuite.advise import load_from_env
    env = own_path_env()
    runner = CalibrationReplay(tmp_path, ["SCENARIO=spike-open", "TOMCAT_MAX_THREADS=2", "DURATION=5s"])
    setting, service = capacity.service_time(
        env, capacity.setting_from_env(env), lambda: steady.calibrate(env, runner, load_from_env(env)[0].settings))
    # The one calibration cell make advise runs: 2 users of keepalive, the file's threads given once.
    (matrix,) = runner.matrices
    assert "SCENARIO=keepalive" in matrix and "VUS=2" in matrix and "SCENARIO=spike-open" not in matrix
    assert [line for line in matrix if line.startswith("TOMCAT_MAX_THREADS=")] == ["TOMCAT_MAX_THREADS=2"]
    # The recorded cell's %D: p50 104.004, p90 107.966, p99 111.523 ms over 20 requests; the model uses the p90.
    assert (service["source"], service["p50_ms"], service["p90_ms"], service["p99_ms"], service["requests"]) == (
        "calibration", 104.004, 107.966, 111.523, 20)
    assert setting.delay_ms == 107.966
    assert service["text"].startswith("service time p50 104.004 ms / p99 111.523 ms measured in calibration cell "
                                      "calibrate/01")
    # 2 threads of 107.966 ms serve 18.52/s; a 5 s load within 500 ms: floor(18.52 x (1 + 392.034 / 5000))
    # = floor(19.98) = 19, where the file's DELAY_MS 100 said floor(20 x (1 + 400 / 5000)) = 21.
    assert capacity.model_limit(setting, Goal(0, 500)).load == 19
    assert capacity.model_limit(capacity.setting_from_env(env), Goal(0, 500)).load == 21
    answer = capacity.capacity(setting, Goal(0, 500), 2, lambda load: None, service)
    assert answer["service_time"]["cell"] == "calibrate/01"
    assert "Settings: spike-open, service time p50 104.004 ms / p99 111.523 ms measured in calibration cell" \
        in capacity.markdown(answer)


def test_the_suites_own_endpoint_keeps_delay_ms_and_says_so():
    env = own_path_env(TARGET_JAR="", TARGET_PATH="")
    asked = []
    setting, service = capacity.service_time(env, capacity.setting_from_env(env), lambda: asked.append(1))
    assert asked == [] and service == {"source": "DELAY_MS", "used_ms": 100.0, "text": "DELAY_MS 100"}
    assert setting.delay_ms == 100


def test_a_calibration_cell_without_a_logged_request_searches_nothing():
    from ltsuite import steady
    env = own_path_env()
    empty = steady.Calibration(None, None, None, 0, {"run": "calibrate", "cell": "01", "row": "r"})
    setting, service = capacity.service_time(env, capacity.setting_from_env(env), lambda: empty)
    answer = capacity.capacity(setting, Goal(0, 500), 4, lambda load: (_ for _ in ()).throw(AssertionError(load)),
                               service)
    assert answer["maximum"] is None and answer["cells"] == []
    assert answer["stopped"] == "cannot: the endpoint's time is unmeasured: calibration cell calibrate/01 logged no load request"


def test_a_calibrated_time_past_the_goal_is_named_as_measured(tmp_path):
    from ltsuite import steady
    from ltsuite.advise import load_from_env
    env = own_path_env()
    runner = CalibrationReplay(tmp_path, ["SCENARIO=spike-open"])
    setting, _ = capacity.service_time(
        env, capacity.setting_from_env(env), lambda: steady.calibrate(env, runner, load_from_env(env)[0].settings))
    assert capacity.model_limit(setting, Goal(0, 100)).why == (
        "one request takes the p90 of calibration cell calibrate/01, 107.966 ms, more than 100 ms (the goal or "
        "REQUEST_TIMEOUT): no load holds")


def test_think_time_counts_in_the_closed_loop_limit_by_littles_law():
    """10 threads of 100 ms, users who think 1 s, a 500 ms goal: 10 x (5 x 100 + 1000) / 100 =
    150 users, not the 50 of workers x turns that leave the think time out."""
    setting = capacity.Setting("spike", delay_ms=100, timeout_ms=10000, threads=10, max_connections=200,
                               accept_count=100, think_ms=1000)
    limit = capacity.model_limit(setting, Goal(0, 500))
    assert limit.load == 150
    assert "1000 ms of think time" in limit.why
    # Kept alive, each user holds a connection: 100 + 10 + 1 bound them.
    assert capacity.model_limit(replace(setting, max_connections=100, accept_count=10), Goal(0, 500)).load == 111
    # A new connection a request: held only 500 of every 1500 ms, so 111 connections carry 333.
    assert capacity.model_limit(replace(setting, max_connections=100, accept_count=10, kept_alive=False),
                                Goal(0, 500)).load == 150
