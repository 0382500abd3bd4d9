"""The advice's model (scripts/ltsuite/advise.py) on loads whose answer is computed by hand, and its
search where a run disagrees (a runner whose cells follow a capacity the model did not know)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ltsuite import advicebase as base
from ltsuite import advise as adv

SMALL = {"TOMCAT_MAX_THREADS": 12, "TOMCAT_MAX_CONNECTIONS": 12, "TOMCAT_ACCEPT_COUNT": 100,
         "SOMAXCONN": 4, "TCP_MAX_SYN_BACKLOG": 0}
ALL = ["TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS", "TOMCAT_ACCEPT_COUNT", "SOMAXCONN", "TCP_MAX_SYN_BACKLOG"]
BIG_BOX = {"memory_mb": 20000, "nofile": 20000}


def small_load(**changes: Any) -> adv.Load:
    """env/advise/small-burst.env: 24 users, 4 s, max-connections 12, somaxconn 4, cookies off,
    one SYN-ACK retry (3 s), one SYN retry (3 s), 2 CPUs."""
    fields = dict(users=24, delay_ms=4000, timeout_ms=15000, settings=dict(SMALL), syncookies=0, cpus=2,
                  syn_window_s=3, synack_expiry_s=3)
    fields.update(changes)
    return adv.Load(**fields)


def test_a_small_burst_needs_a_queue_of_users_less_max_connections_less_one():
    plan = adv.plan(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], **BIG_BOX)
    # 24 = 12 + min(100, q) + 1 -> q = 11; accept-count 100 already suffices and is kept.
    assert plan.settings["SOMAXCONN"] == 11
    assert plan.settings["TOMCAT_ACCEPT_COUNT"] == 100
    assert plan.changed == ["SOMAXCONN"]
    assert plan.prediction.capacity == 24
    assert "somaxconn caps accept-count: 100 asked, 4 granted" in plan.reasons["SOMAXCONN"]
    assert plan.reasons["TOMCAT_ACCEPT_COUNT"].startswith("kept at 100")


def test_the_boundary_is_the_largest_queue_that_must_fail_despite_the_kernels_slack():
    plan = adv.plan(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], **BIG_BOX)
    # somaxconn 10 gives 23 and a second CPU may let one more in (capacity_slack): 9 gives 22 + 1 < 24.
    assert plan.cheaper == {"SOMAXCONN": 9}
    assert base.verification_axes(plan, 4) == {"SOMAXCONN": [9, 11]}


def test_handshakes_that_can_still_get_in_move_the_boundary_down():
    # SYN-ACKs retried for 63 s outlast the 4 s hold: up to backlog + 1 clients past the capacity
    # may get in later, so a sure failure needs 12 + q + 1 + 1 + q + 1 < 24: q = 4.
    plan = adv.plan(small_load(synack_expiry_s=63), base.Goal(), ["SOMAXCONN"], **BIG_BOX)
    assert plan.settings["SOMAXCONN"] == 11
    assert plan.cheaper == {"SOMAXCONN": 4}


def test_a_failed_rate_lowers_the_users_to_hold():
    plan = adv.plan(small_load(), base.Goal(failed_rate=0.1), ["SOMAXCONN"], **BIG_BOX)
    # floor(0.1 x 24) = 2 may fail: 22 = 12 + 9 + 1.
    assert plan.settings["SOMAXCONN"] == 9


def test_seed_001s_accept_count_is_capped_by_somaxconn():
    load = adv.Load(users=3000, delay_ms=100, timeout_ms=10000, syncookies=1, cpus=2,
                    settings={"TOMCAT_MAX_THREADS": 3000, "TOMCAT_MAX_CONNECTIONS": 1000,
                              "TOMCAT_ACCEPT_COUNT": 10000, "SOMAXCONN": 128, "TCP_MAX_SYN_BACKLOG": 0})
    plan = adv.plan(load, base.Goal(), ALL, **BIG_BOX)
    # 3000 = 1000 + 1999 + 1; the kernel queue is raised, not max-connections.
    assert plan.settings["SOMAXCONN"] == 1999
    assert plan.settings["TOMCAT_MAX_CONNECTIONS"] == 1000
    assert "10000 asked, 128 granted" in plan.reasons["SOMAXCONN"]


def test_without_the_queue_in_tune_max_connections_carries_the_users():
    plan = adv.plan(small_load(), base.Goal(), ["TOMCAT_MAX_CONNECTIONS"], **BIG_BOX)
    # 24 = mc + min(100, 4) + 1 -> 19.
    assert plan.settings["TOMCAT_MAX_CONNECTIONS"] == 19
    assert plan.settings["SOMAXCONN"] == 4


def test_a_p99_goal_sets_the_threads_by_waves():
    load = adv.Load(users=100, delay_ms=1000, timeout_ms=10000, syncookies=1, cpus=2,
                    settings={"TOMCAT_MAX_THREADS": 10, "TOMCAT_MAX_CONNECTIONS": 200,
                              "TOMCAT_ACCEPT_COUNT": 100, "SOMAXCONN": 4096, "TCP_MAX_SYN_BACKLOG": 0})
    plan = adv.plan(load, base.Goal(p99_ms=2500), ALL, **BIG_BOX)
    # Waves of 1000 ms with the margin (x 1.1 + 100) within 2500 ms: 2; the p99 user is the 100th
    # (k6 interpolates at 0.99 x 99): 50 threads. 49 threads give that user a third wave (3000 ms).
    assert plan.settings["TOMCAT_MAX_THREADS"] == 50
    assert plan.cheaper == {"TOMCAT_MAX_THREADS": 49}
    assert plan.prediction.p99_ms == 2000


def test_p99_rank_follows_k6s_interpolation():
    assert adv.p99_rank(100) == 100
    assert adv.p99_rank(1000) == 991
    assert adv.p99_rank(1) == 1


def test_an_endpoint_slower_than_the_goal_cannot_be_advised():
    load = small_load(delay_ms=1000)
    plan = adv.plan(load, base.Goal(p99_ms=900), ALL, **BIG_BOX)
    assert plan.settings is None
    assert "more than GOAL_P99_MS 900: the endpoint, not a queue or a thread, is the limit" in plan.cannot


def test_capacity_without_a_knob_to_raise_it_cannot_be_advised():
    plan = adv.plan(small_load(), base.Goal(), ["TOMCAT_MAX_THREADS"], **BIG_BOX)
    assert plan.settings is None
    assert plan.cannot == "capacity 17 < 24 users (rules.server_capacity) and no knob of TUNE raises it"


def test_more_threads_than_memory_cannot_be_advised():
    load = small_load(delay_ms=1000, timeout_ms=60000, users=5000)
    plan = adv.plan(load, base.Goal(p99_ms=1300), ALL, memory_mb=3000, nofile=20000)
    assert plan.settings is None
    # One wave (1000 ms x 1.1 + 100) within 1300 ms: the p99 user, the 4951st (0.99 x 4999), needs
    # a thread of its own.
    assert plan.cannot.startswith("the goal needs 4951 threads, 4951 MB of stacks")


def test_more_users_than_the_generators_files_cannot_be_advised():
    plan = adv.plan(small_load(users=30000), base.Goal(), ALL, memory_mb=20000, nofile=20000)
    assert plan.settings is None
    assert "30050 open files in each of 1 k6 process(es), the limit is 20000" in plan.cannot


def test_a_budget_keeps_the_cartesian_cells_within_it():
    plan = adv.Plan({"SOMAXCONN": 11, "TOMCAT_ACCEPT_COUNT": 11, "TOMCAT_MAX_THREADS": 30},
                    cheaper={"SOMAXCONN": 9, "TOMCAT_ACCEPT_COUNT": 9, "TOMCAT_MAX_THREADS": 20},
                    changed=["SOMAXCONN", "TOMCAT_ACCEPT_COUNT", "TOMCAT_MAX_THREADS"])
    assert len(base.verification_axes(plan, 8)) == 3
    assert base.verification_axes(plan, 7) == {"SOMAXCONN": [9, 11], "TOMCAT_ACCEPT_COUNT": [9, 11]}
    assert base.verification_axes(plan, 2) == {"SOMAXCONN": [9, 11]}


def as_asked(users: int, **figures: Any) -> dict[str, Any]:
    """A row of a cell that ran the burst it was asked for: as designed, every user's request
    sent, none cut off or dropped."""
    return {"status": "ok", "as_designed": 1, "http_reqs": users, "iterations_interrupted": 0,
            "dropped_iterations": 0, **figures}


def test_a_cell_passes_on_its_failures_and_p99():
    goal = base.Goal(failed_rate=0.1, p99_ms=5000)
    assert adv.cell_passes(as_asked(24, failed_reqs=2, lat_p99_ms=4000), goal, 24) is True
    assert adv.cell_passes(as_asked(24, failed_reqs=3, lat_p99_ms=4000), goal, 24) is False
    assert adv.cell_passes(as_asked(24, failed_reqs=0, lat_p99_ms=5001), goal, 24) is False
    assert adv.cell_passes({"status": "failed", "failed_reqs": None}, goal, 24) is None


def test_a_cell_cut_off_by_the_graceful_stop_verifies_nothing():
    # A recorded run: 11 users, GRACEFUL_STOP=5s before REQUEST_TIMEOUT=10s: no request failed
    # because none finished.
    row = json.loads((Path(__file__).parent / "fixtures/cut-off/row.json").read_text())
    assert row["failed_reqs"] == 0 and row["status"] == "ok"
    assert adv.cell_passes(row, base.Goal(), 11) is None
    assert base.not_as_asked(row, 11).startswith("not as designed (no request completed (http_reqs is 0); 11 of 11")


@pytest.mark.parametrize("change, why", [
    ({"iterations_interrupted": 3, "http_reqs": 21}, "3 iterations cut off by GRACEFUL_STOP"),
    ({"dropped_iterations": 2}, "2 iterations dropped"),
    ({"http_reqs": 20}, "20 requests sent of the 24 asked for"),
    ({"as_designed": None}, "as_designed is empty (not judged)"),
    ({"iterations_interrupted": None}, "unmeasured iterations cut off by GRACEFUL_STOP"),
])
def test_a_cell_that_did_not_send_every_users_request_verifies_nothing(change, why):
    row = {**as_asked(24, failed_reqs=0, lat_p99_ms=100), **change}
    assert adv.cell_passes(row, base.Goal(p99_ms=5000), 24) is None
    assert base.not_as_asked(row, 24) == why


class CapacityRunner(base.Runner):
    """Cells whose failures follow a true capacity of max-connections + queue + 1 - `short`
    (a server that holds `short` fewer than the rule), as a real run that disagrees would."""

    def __init__(self, short: int, users: int):
        super().__init__(Path("."), Path("."), [], [])
        self.short, self.users, self.runs = short, users, 0

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        self.runs += 1
        combos = [dict(settings)]
        for knob, values in axes.items():
            combos = [{**c, knob: v} for c in combos for v in values]
        found = []
        for i, s in enumerate(combos):
            held = s["TOMCAT_MAX_CONNECTIONS"] + min(s["TOMCAT_ACCEPT_COUNT"], s["SOMAXCONN"]) + 1 - self.short
            row = as_asked(self.users, failed_reqs=max(self.users - held, 0), lat_p99_ms=8000, cell=f"{i + 1:02d}")
            found.append({"run": name, "cell": row["cell"], "row": f"{name}/row.json", "report": f"{name}/report.html",
                          "settings": s, "row_data": row})
        self.cells.extend(found)
        return found


def test_a_verified_advice_has_the_recommendation_and_a_failing_boundary():
    runner = CapacityRunner(short=0, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 4, runner, **BIG_BOX)
    assert advice["verified"] is True
    assert advice["recommended"] == {"TOMCAT_ACCEPT_COUNT": 100, "SOMAXCONN": 11}
    assert [(b["knob"], b["value"], b["failed_reqs"]) for b in advice["boundary"]] == [("SOMAXCONN", 9, 2)]
    assert len(advice["cells"]) == 2 and advice["model_wrong"] == []


def test_where_the_recommendation_fails_the_bisection_finds_what_holds_and_says_by_how_much():
    # The server holds 3 fewer than the rule: somaxconn 14 is the real need.
    runner = CapacityRunner(short=3, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 8, runner, **BIG_BOX)
    assert advice["verified"] is True
    assert len(advice["cells"]) <= 8
    held = advice["recommended"]["SOMAXCONN"]
    assert 14 <= held <= 16
    assert advice["model_wrong"] == [f"the model's setting failed; the cheapest that held: SOMAXCONN 11 -> {held} (+{held - 11})"]


def test_a_boundary_that_holds_is_bisected_down():
    # The server holds 2 more than the rule: somaxconn 9 holds, 8 is the real boundary.
    runner = CapacityRunner(short=-2, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 8, runner, **BIG_BOX)
    assert advice["verified"] is True and advice["recommended"]["SOMAXCONN"] == 11
    assert advice["model_wrong"] == ["SOMAXCONN: the model said 9 must fail, it held; the lowest that held was 9 "
                                     "and 8 failed: the model's boundary was 1 too high"]


def test_nothing_is_recommended_when_no_run_holds():
    runner = CapacityRunner(short=100, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["SOMAXCONN"], 4, runner, **BIG_BOX)
    assert advice["verified"] is False and advice["recommended"] == {}
    assert advice["cannot"].startswith("no setting of TUNE tried held")
    assert len(advice["cells"]) <= 4


def test_the_lines_to_paste():
    props, sysctls = base.paste_lines({"TOMCAT_ACCEPT_COUNT": 100, "SOMAXCONN": 11, "TOMCAT_MAX_THREADS": 50})
    assert props == ["server.tomcat.accept-count=100", "server.tomcat.threads.max=50"]
    assert sysctls == ["net.core.somaxconn = 11"]


def test_a_kernel_setting_the_advice_kept_is_not_pasted():
    """doctor's reproduce.matrix sets SOMAXCONN to a stale listener's backlog (8) on a host at
    4096: an advice that keeps 8 must not hand over a sysctl.d line that lowers the host's."""
    recommended = {"TOMCAT_MAX_THREADS": 40, "SOMAXCONN": 8, "TCP_MAX_SYN_BACKLOG": 4096}
    starting = {"TOMCAT_MAX_THREADS": 4, "SOMAXCONN": "8", "TCP_MAX_SYN_BACKLOG": 2048}
    _, sysctls = base.paste_lines(recommended, starting)
    assert sysctls == ["net.ipv4.tcp_max_syn_backlog = 4096"]
    knobs, paste = base.recommended_lines({"recommended": recommended, "starting_from": starting})
    assert "- `SOMAXCONN` = 8 (was 8)" in knobs
    assert "net.core.somaxconn = 8" not in paste and "net.ipv4.tcp_max_syn_backlog = 4096" in paste


def test_clients_that_retry_past_the_hold_leave_a_boundary_that_may_fail():
    # SYNs retried for 20 s outlast the 4 s hold: a user past the capacity may get in later, so
    # no queue surely fails; the next one below (10) is run to show what happens.
    plan = adv.plan(small_load(syn_window_s=20), base.Goal(), ["SOMAXCONN"], **BIG_BOX)
    assert plan.settings["SOMAXCONN"] == 11
    assert plan.cheaper == {"SOMAXCONN": 10} and plan.sure == {"SOMAXCONN": False}


def test_the_load_file_gives_the_client_window_and_the_servers_expiry():
    root = Path(__file__).resolve().parents[2]
    env = {line.split("=", 1)[0]: line.split("=", 1)[1]
           for line in (root / "env/advise/small-burst.env").read_text().splitlines()
           if line and not line.startswith("#")}
    env.update({"REQUEST_TIMEOUT": "15s", "K6_INSTANCES": "auto"})
    load, goal, tune, budget = adv.load_from_env(env)
    # One SYN retry with linear timeouts gives up at 3 s (rules.syn_give_up_s); one SYN-ACK retry
    # expires at 3 s (rules.syn_model_timeout_s).
    assert (load.syn_window_s, load.synack_expiry_s, load.syncookies) == (3, 3, 0)
    assert load.k6_instances == 1 and load.users == 24 and load.timeout_ms == 15000
    assert goal == base.Goal(0.0, None) and tune == ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"] and budget == 4


def test_the_sysctl_lines_are_least_values_a_host_with_higher_ones_keeps():
    runner = CapacityRunner(short=0, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 4, runner, **BIG_BOX)
    text = adv.markdown({**advice, "source": "load.env"})
    assert "net.core.somaxconn = 11" in text
    assert "These are the least values the verifying run needed" in text


class LosingRunner(CapacityRunner):
    """A run whose cell with the given settings left no row (it did not finish)."""

    def __init__(self, lose: dict[str, int], **kwargs: Any):
        super().__init__(**kwargs)
        self.lose = lose

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        found = super().run(name, settings, axes)
        kept = [c for c in found if any(c["settings"][k] != v for k, v in self.lose.items())]
        self.cells[:] = [c for c in self.cells if c in kept or c not in found]
        return kept


def test_a_missing_row_of_the_models_setting_is_named_not_a_crash():
    runner = LosingRunner({"SOMAXCONN": 11}, short=0, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 4, runner, **BIG_BOX)
    assert advice["verified"] is False and advice["recommended"] == {}
    assert advice["cannot"] == ("the verify run has no row for the cell with the model's setting (SOMAXCONN=11 "
                                "TOMCAT_ACCEPT_COUNT=100 TCP_MAX_SYN_BACKLOG=0 TOMCAT_MAX_THREADS=12 TOMCAT_MAX_CONNECTIONS=12): "
                                "it did not finish; see its run under runs/")
    assert [c["settings"]["SOMAXCONN"] for c in advice["cells"]] == [9]
    assert "**Cannot recommend a setting**: the verify run has no row" in adv.markdown({**advice, "source": "x"})


def test_a_missing_row_of_the_boundary_is_named_in_the_boundary():
    runner = LosingRunner({"SOMAXCONN": 9}, short=0, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 4, runner, **BIG_BOX)
    assert advice["verified"] is True
    (boundary,) = advice["boundary"]
    assert boundary["passed"] is None and boundary["not_as_asked"].startswith("the run has no row for the cell with ")
    assert "SOMAXCONN=9" in boundary["not_as_asked"]
    assert "- `SOMAXCONN` = 9 (the model: fail): not judged: the run has no row for the cell with " \
        in adv.markdown({**advice, "source": "x"})


class FastRunner(CapacityRunner):
    """Cells that all hold (a server faster than the model's waves), refused the way
    scripts/run-matrix.sh refuses a matrix whose count knob is below 1 (env/defaults.env: "count
    (whole number > 0)"): it makes no run, which the real Runner raises as RuntimeError."""

    def __init__(self, users: int):
        super().__init__(short=-1000, users=users)
        self.asked: list[dict[str, int]] = []

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        self.asked.append({**settings, **{k: min(v) for k, v in axes.items()}})
        for knob in ("TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS"):
            if min([settings[knob], *axes.get(knob, [])]) < 1:
                raise RuntimeError(f"run-matrix.sh {name}.matrix made no run (exit 2)")
        return super().run(name, settings, axes)


def test_a_boundary_at_the_knobs_least_value_that_holds_is_not_bisected_below_it():
    # 4 users of 1 s within 2.5 s: two waves fit, so 2 threads; at 1 thread (the file's own and the
    # least a count knob can be) the model says the 4 s of waves must fail. The run holds there:
    # nothing below 1 thread exists to probe, so the bisection stops at the starting value.
    load = adv.Load(users=4, delay_ms=1000, timeout_ms=2500, settings={**SMALL, "TOMCAT_MAX_THREADS": 1,
                                                                       "TOMCAT_MAX_CONNECTIONS": 100})
    runner = FastRunner(users=4)
    advice = adv.advise(load, base.Goal(), ["TOMCAT_MAX_THREADS"], 8, runner, **BIG_BOX)
    assert min(s["TOMCAT_MAX_THREADS"] for s in runner.asked) == 1
    assert advice["verified"] is True and advice["recommended"] == {"TOMCAT_MAX_THREADS": 2}
    assert advice["model_wrong"] == ["TOMCAT_MAX_THREADS: the model said 1 must fail, it held; the lowest that held "
                                     "was 1 (down to the starting value): the model's boundary was 1 too high"]


@pytest.mark.parametrize("knob, least", [("TOMCAT_MAX_THREADS", 1), ("TOMCAT_MAX_CONNECTIONS", 1),
                                         ("TOMCAT_ACCEPT_COUNT", 1), ("SOMAXCONN", 0), ("TCP_MAX_SYN_BACKLOG", 0),
                                         ("TOMCAT_VIRTUAL_THREADS", 0)])
def test_each_tunable_knobs_least_value_is_that_of_its_type_in_the_defaults(knob, least):
    assert adv.knob_minimum(knob) == least


class StoppingRunner(CapacityRunner):
    """Runs until its `runs`-th run, which does not happen (the host-wide lock held, a failure
    before its first cell), as Runner.run says."""

    def __init__(self, stop_at: int, short: int, users: int):
        super().__init__(short=short, users=users)
        self.stop_at = stop_at

    def run(self, name, settings, axes):
        if self.runs + 1 == self.stop_at:
            self.runs += 1
            raise RuntimeError(f"run-matrix.sh {name}.matrix made no run (exit 1)")
        return super().run(name, settings, axes)


def test_a_run_that_does_not_happen_after_the_verify_keeps_what_was_verified_and_names_the_run():
    # The server holds 2 more than the rule: the verify passes, the bisection down's run fails to start.
    runner = StoppingRunner(2, short=-2, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 8, runner, **BIG_BOX)
    assert advice["verified"] is True
    assert advice["recommended"] == {"TOMCAT_ACCEPT_COUNT": 100, "SOMAXCONN": 11}
    assert advice["stopped"].startswith("run-matrix.sh bisect-")
    assert "the advice ends with what the runs before it verified" in advice["stopped"]
    assert len(advice["cells"]) == 2
    text = adv.markdown({**advice, "source": "x.env"})
    assert "**Stopped early**: run-matrix.sh bisect-" in text and "**Recommended (verified by a real run)**" in text


def test_a_verify_run_that_does_not_happen_is_an_advice_that_names_it_not_a_crash():
    runner = StoppingRunner(1, short=0, users=24)
    advice = adv.advise(small_load(), base.Goal(), ["TOMCAT_ACCEPT_COUNT", "SOMAXCONN"], 4, runner, **BIG_BOX)
    assert advice["verified"] is False and advice["cells"] == []
    assert advice["cannot"] == "the verify run did not happen (run-matrix.sh verify.matrix made no run (exit 1))"
