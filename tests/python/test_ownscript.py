"""make advise on a k6 script of one's own (scripts/ltsuite/ownscript.py): each executor read from a
recorded `k6 inspect --execution-requirements` (tests/python/fixtures/k6-inspect, k6 v2.2.0, of the
scripts in tests/fixtures/own-script/advise) and mapped onto the steady model; loads the model
cannot take get "cannot" naming the scenario and its executor; the whole advice replayed over
constructed cells."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ltsuite import ownscript, steady
from ltsuite.advise import Goal, read_env

ROOT = Path(__file__).resolve().parents[2]
INSPECT = Path(__file__).parent / "fixtures" / "k6-inspect"
SETTINGS = {"TOMCAT_MAX_THREADS": 1, "TOMCAT_MAX_CONNECTIONS": 8192, "TOMCAT_ACCEPT_COUNT": 100,
            "SOMAXCONN": 4096, "TCP_MAX_SYN_BACKLOG": 0}


def inspected(name: str) -> dict[str, Any]:
    return json.loads((INSPECT / f"{name}.json").read_text())


def load_of(name: str) -> ownscript.ScriptLoad:
    read = ownscript.script_load(inspected(name), f"{name}.js")
    assert not isinstance(read, str), read
    return read


def test_a_constant_arrival_rate_is_the_open_model_with_its_count():
    s = load_of("constant-arrival-rate")
    assert (s.open, s.rate_per_s, s.pool, s.max_vus, s.duration_ms) == (True, 15, 5, 100, 5000)
    assert s.requests == 75 and s.keepalive
    assert "'steady' (constant-arrival-rate): 15 per 1000 ms = 15/s for 5 s" in s.described


def test_a_ramping_arrival_rate_is_the_open_model_at_its_peak_without_a_count():
    # Stages to 10 per 500 ms: 20 a second at the peak, 10 s of stages, the count the run's own.
    s = load_of("ramping-arrival-rate")
    assert (s.open, s.rate_per_s, s.pool, s.max_vus, s.duration_ms, s.requests) == (True, 20, 8, 40, 10000, None)


@pytest.mark.parametrize("name, users, requests, per_user", [
    ("per-vu-iterations", 6, 120, 20),
    ("shared-iterations", 3, 90, None),
    ("ramping-vus", 12, None, None),   # options.stages: k6's shorthand, a ramping-vus scenario
    ("no-options", 1, 1, 1),           # k6's default: one user, one iteration
])
def test_the_closed_executors_are_users(name, users, requests, per_user):
    s = load_of(name)
    assert (s.open, s.users, s.requests, s.requests_per_user) == (False, users, requests, per_user)


def test_the_shipped_constant_vus_script_is_its_users():
    # tests/fixtures/own-script/spike-test.js: options.vus 16, duration 5s (recorded below).
    s = ownscript.script_load(json.loads((Path(__file__).parent / "fixtures" / "k6-inspect" /
                                          "constant-vus.json").read_text()), "spike-test.js")
    assert not isinstance(s, str)
    assert (s.executor, s.open, s.users, s.duration_ms, s.requests) == ("constant-vus", False, 16, 5000, None)


def test_more_than_one_scenario_is_cannot_naming_each_and_its_executor():
    why = ownscript.script_load(inspected("two-scenarios"), "two.js")
    assert why == ("two.js has 2 k6 scenarios ('browse' (constant-vus), 'buy' (constant-arrival-rate)): the model "
                   "takes one load of one endpoint; advise each as a script of its own")


@pytest.mark.parametrize("change, reason", [
    ({"executor": "externally-controlled"}, "scenario 'steady' uses the executor 'externally-controlled', which the "
                                            "model does not read"),
    ({"startTime": "10s"}, "scenario 'steady' (constant-arrival-rate) starts at 10 s (startTime)"),
])
def test_a_scenario_the_model_cannot_read_is_cannot_with_the_reason(change, reason):
    data = inspected("constant-arrival-rate")
    data["scenarios"]["steady"].update(change)
    assert reason in ownscript.script_load(data, "x.js")


def test_no_connection_reuse_is_read():
    data = {**inspected("per-vu-iterations"), "noConnectionReuse": True}
    s = ownscript.script_load(data, "x.js")
    assert not isinstance(s, str) and s.keepalive is False


def test_the_steady_model_on_the_scripts_load():
    env = {**read_env(ROOT / "env" / "defaults.env"), "SCENARIO": "own.js", "DELAY_MS": "100",
           "THINK_TIME_MS": "500"}
    load = steady.load_from_env(env, dict(SETTINGS), script=load_of("constant-arrival-rate"))
    # 15/s x 0.1 s = 1.5 in service, x 1.1 -> 2 threads; the script's 75 asked (THINK_TIME_MS unread).
    assert load.open and load.think_ms == 0 and steady.expected_requests(load) == 75
    p = steady.plan(load, Goal(p99_ms=500), ["TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS"])
    assert p.settings["TOMCAT_MAX_THREADS"] == 2 and p.cheaper == {"TOMCAT_MAX_THREADS": 1}
    assert p.sure == {"TOMCAT_MAX_THREADS": True}
    closed = steady.load_from_env(env, {**SETTINGS, "TOMCAT_MAX_CONNECTIONS": 4}, script=load_of("per-vu-iterations"))
    assert not closed.open and steady.expected_requests(closed) == 120 and steady.connections(closed) == 6
    # 6 kept-alive users for 4 slots: max-connections 6, and 6 threads (no think time).
    p = steady.plan(closed, Goal(), ["TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS"])
    assert p.settings["TOMCAT_MAX_CONNECTIONS"] == 6 and p.settings["TOMCAT_MAX_THREADS"] == 6


class Replay:
    """A runner that wrote the inspection scripts/advise.sh writes, and gives each cell a row by its
    threads."""

    def __init__(self, out: Path, name: str, rows: dict[int, dict[str, Any]]):
        self.out, self.rows, self.cells, self.runs, self.root, self.knobs = out, rows, [], [], ROOT, []
        self.base = [f"SCENARIO={name}.js"]
        (out / ownscript.INSPECTED).write_text((INSPECT / f"{name}.json").read_text())

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        self.runs.append((name, dict(axes)))
        found = []
        for threads in axes.get("TOMCAT_MAX_THREADS", [settings["TOMCAT_MAX_THREADS"]]):
            cell = f"threads-{threads}"
            (self.out / "runs" / name / "cells" / cell).mkdir(parents=True)
            found.append({"run": name, "cell": cell, "row": f"runs/{name}/cells/{cell}/row.json",
                          "report": f"runs/{name}/report.html",
                          "settings": {**settings, "TOMCAT_MAX_THREADS": threads}, "row_data": dict(self.rows[threads])})
        self.cells.extend(found)
        return found


def own_env(name: str) -> dict[str, str]:
    env = read_env(ROOT / "env" / "defaults.env")
    env.update(read_env(ROOT / "tests" / "fixtures" / "advise-own-script.env"))
    env["SCENARIO"] = f"tests/fixtures/own-script/advise/{name}.js"
    return env


DONE = {"status": "ok", "as_designed": 1, "failed_reqs": 0, "dropped_iterations": 0, "iterations_interrupted": 0}


def test_the_advice_for_a_script_verifies_two_threads_and_one_misses(tmp_path):
    rows = {2: {**DONE, "http_reqs": 76, "lat_p99_ms": 110.0},
            1: {**DONE, "http_reqs": 75, "lat_p99_ms": 2400.0}}
    runner = Replay(tmp_path, "constant-arrival-rate", rows)
    advice = steady.advise(own_env("constant-arrival-rate"), runner)  # type: ignore[arg-type]
    assert runner.runs == [("verify", {"TOMCAT_MAX_THREADS": [1, 2]})]
    assert advice["verified"] and advice["recommended"]["TOMCAT_MAX_THREADS"] == 2
    assert advice["goal"]["requests"] == 75 and advice["goal"]["rate_per_s"] == 15
    (b,) = advice["boundary"]
    assert (b["value"], b["predicted"], b["passed"]) == (1, "fail", False)
    text = steady.markdown(advice, "advise-own-script.env")
    assert "The script's load (k6 inspect): 'steady' (constant-arrival-rate): 15 per 1000 ms = 15/s" in text


def test_a_script_cell_that_sent_more_requests_than_iterations_asked_verifies_nothing(tmp_path):
    # Two requests an iteration: 150 sent of the 75 asked: not as asked, never verified.
    rows = {2: {**DONE, "http_reqs": 150, "lat_p99_ms": 110.0}, 1: {**DONE, "http_reqs": 150, "lat_p99_ms": 110.0}}
    advice = steady.advise(own_env("constant-arrival-rate"),
                           Replay(tmp_path, "constant-arrival-rate", rows))  # type: ignore[arg-type]
    assert advice["verified"] is False and advice["recommended"] == {}
    assert "150 requests sent of the 75 asked for" in advice["model_wrong"][0]


def test_a_script_the_model_cannot_read_runs_no_cell(tmp_path):
    runner = Replay(tmp_path, "two-scenarios", {})
    advice = steady.advise(own_env("two-scenarios"), runner)  # type: ignore[arg-type]
    assert runner.runs == [] and advice["verified"] is False
    assert "has 2 k6 scenarios ('browse' (constant-vus), 'buy' (constant-arrival-rate))" in advice["cannot"]
    assert "Cannot recommend a setting" in steady.markdown(advice, "two.env")
