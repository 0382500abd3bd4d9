"""make advise with virtual threads (scripts/ltsuite/virtualthreads.py): on loads whose answer is
computed by hand, virtual threads remove the waves of a blocking endpoint (max-connections, not
threads, bounds them); the advice proposes them where platform threads need a pool or cannot
meet the goal, keeps platform threads where the pool already suffices, says "cannot" where the
suite cannot run them, and verifies a proposal against platform threads."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ltsuite import advicebase as base
from ltsuite import advise as adv
from ltsuite import rules, steady, virtualthreads

VT = "TOMCAT_VIRTUAL_THREADS"
START = {"TOMCAT_MAX_THREADS": 4, "TOMCAT_MAX_CONNECTIONS": 8192, "TOMCAT_ACCEPT_COUNT": 100,
         "SOMAXCONN": 4096, "TCP_MAX_SYN_BACKLOG": 0, VT: 0}
BIG_BOX = {"memory_mb": 20000, "nofile": 20000}
GOAL = base.Goal(p99_ms=3000)


def burst(**changes: Any) -> adv.Load:
    """tests/integration/virtual-threads.bats's burst: 12 users at once against a 2 s endpoint,
    4 threads, max-connections 8192."""
    fields: dict[str, Any] = dict(users=12, delay_ms=2000, timeout_ms=15000, settings=dict(START), cpus=2)
    fields.update(changes)
    return adv.Load(**fields)


def test_virtual_threads_remove_the_waves_of_a_blocking_endpoint():
    # 4 threads: ceil(12 / 4) = 3 waves of 2 s; virtual threads: 8192 at once, one wave.
    platform = adv.predict(burst(), GOAL, START)
    virtual = adv.predict(burst(), GOAL, {**START, VT: 1})
    assert (platform.workers, platform.last_ms, platform.fails) == (4, 6000, True)
    assert (virtual.workers, virtual.last_ms, virtual.p99_ms, virtual.meets) == (8192, 2000, 2000, True)
    # max-connections still bounds them: 5 give ceil(12 / 5) = 3 waves again.
    assert adv.predict(burst(), GOAL, {**START, VT: 1, "TOMCAT_MAX_CONNECTIONS": 5}).last_ms == 6000


def test_virtual_threads_are_proposed_where_platform_threads_need_a_pool():
    # p99 within 3 s: one wave of 2 s (2.3 s with the margin), so 12 workers. Platform threads:
    # a pool of 12; virtual threads: max-connections 8192 already serves 12 at once.
    p = adv.plan(burst(), GOAL, [VT, "TOMCAT_MAX_THREADS"], **BIG_BOX)
    assert p.settings[VT] == 1 and p.settings["TOMCAT_MAX_THREADS"] == 4
    assert p.changed == [VT]
    assert p.reasons[VT].startswith("proposed, for the same goal with fewer resources: platform threads need a pool "
                                    "of 12 threads (TOMCAT_MAX_THREADS 4 -> 12, a stack each)")
    assert p.reasons["TOMCAT_MAX_THREADS"].startswith("kept at 4: on virtual threads Tomcat keeps no pool")
    # The boundary: platform threads at the same settings, 3 waves, p99 6 s: a sure failure.
    assert p.cheaper == {VT: 0} and p.sure == {VT: True}
    assert base.verification_axes(p, 2) == {VT: [0, 1]}


def test_virtual_threads_are_proposed_where_platform_threads_cannot_meet_the_goal():
    # Threads not in TUNE: platform threads cannot give 12 workers.
    p = adv.plan(burst(), GOAL, [VT], **BIG_BOX)
    assert p.settings[VT] == 1
    assert p.reasons[VT].startswith("proposed, because platform threads cannot: the waves need 12 workers (min of "
                                    "threads and max-connections: rules.waves_ms), threads is 4 and "
                                    "TOMCAT_MAX_THREADS is not in TUNE")
    # 5000 users within one wave of 1 s: the p99 user, the 4951st, needs 4951 threads, 4951 MB of
    # stacks, and 3000 MB are available; max-connections 8192 serves them on virtual threads.
    big = burst(users=5000, delay_ms=1000, timeout_ms=60000)
    p = adv.plan(big, base.Goal(p99_ms=1300), [VT, "TOMCAT_MAX_THREADS"], memory_mb=3000, nofile=20000)
    assert p.settings[VT] == 1
    assert "platform threads cannot: the goal needs 4951 threads, 4951 MB of stacks" in p.reasons[VT]


def test_platform_threads_stay_where_the_pool_already_suffices():
    p = adv.plan(burst(settings={**START, "TOMCAT_MAX_THREADS": 12}), GOAL, [VT, "TOMCAT_MAX_THREADS"], **BIG_BOX)
    assert p.settings[VT] == 0 and p.changed == []
    assert p.reasons[VT] == ("not proposed: the file's 12 platform threads already meet the goal, so virtual "
                             "threads would save nothing")


def test_a_file_already_on_virtual_threads_keeps_them_where_they_meet_the_goal():
    p = adv.plan(burst(settings={**START, "TOMCAT_MAX_THREADS": 12, VT: 1}), GOAL, [VT, "TOMCAT_MAX_THREADS"],
                 **BIG_BOX)
    assert p.settings[VT] == 1 and p.changed == [] and p.cheaper == {}
    assert p.reasons[VT].startswith("kept at 1: the file's virtual threads meet the goal")


def test_a_proposal_raises_max_connections_alone_with_its_own_boundary():
    # max-connections 8: platform threads need 12 threads and 12 connections, virtual threads only
    # the 12 connections; at 11 the 12th user is in a second wave (4 s > 3 s): must fail.
    load = burst(settings={**START, "TOMCAT_MAX_CONNECTIONS": 8})
    p = adv.plan(load, GOAL, [VT, "TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS"], **BIG_BOX)
    assert p.settings[VT] == 1 and p.settings["TOMCAT_MAX_CONNECTIONS"] == 12 and p.settings["TOMCAT_MAX_THREADS"] == 4
    assert p.changed == [VT, "TOMCAT_MAX_CONNECTIONS"]
    assert p.cheaper == {VT: 0, "TOMCAT_MAX_CONNECTIONS": 11}
    assert "waves of 12 workers (max-connections, on virtual threads)" in p.reasons["TOMCAT_MAX_CONNECTIONS"]
    assert base.verification_axes(p, 4) == {VT: [0, 1], "TOMCAT_MAX_CONNECTIONS": [11, 12]}
    # A budget of 3 keeps the platform-threads boundary.
    assert base.verification_axes(p, 3) == {VT: [0, 1]}


def test_where_virtual_threads_cannot_run_the_advice_says_why_and_plans_platform_threads():
    no_jdk = virtualthreads.cannot({}, java="")
    assert no_jdk.startswith("virtual threads need JDK 21 or later (JEP 444) and this host has none")
    p = adv.plan(burst(virtual_cannot=no_jdk), GOAL, [VT, "TOMCAT_MAX_THREADS"], **BIG_BOX)
    assert p.settings[VT] == 0 and p.settings["TOMCAT_MAX_THREADS"] == 12
    assert p.reasons[VT] == f"cannot: {no_jdk}"
    # Threads not in TUNE either: nothing can meet the goal, and the advice says both reasons.
    p = adv.plan(burst(virtual_cannot=no_jdk), GOAL, [VT], **BIG_BOX)
    assert p.settings is None and p.cannot.endswith(f"TOMCAT_MAX_THREADS is not in TUNE; and virtual threads cannot: {no_jdk}")
    java = "/usr/lib/jvm/jdk-25/bin/java"
    assert virtualthreads.cannot({"TARGET_URL": "http://198.18.0.2:8080"}, java).startswith(
        "TARGET_URL names a running target the suite does not start")
    assert virtualthreads.cannot({"BACKEND": "compose"}, java).startswith("BACKEND=compose runs the target on its image's JDK")
    assert virtualthreads.cannot({"TARGET_CMD": "./server"}, java).startswith("TARGET_CMD starts a command of one's own")
    assert virtualthreads.cannot({}, java) is None


def test_a_fixed_setting_of_virtual_threads_is_advised_on_or_refused_with_the_reason():
    # TOMCAT_VIRTUAL_THREADS=1 in the file, not in TUNE: the threads need not rise.
    p = adv.plan(burst(settings={**START, VT: 1}), GOAL, ["TOMCAT_MAX_THREADS"], **BIG_BOX)
    assert p.settings[VT] == 1 and p.changed == [] and p.prediction.workers == 8192
    p = adv.plan(burst(settings={**START, VT: 1}, virtual_cannot="no JDK"), GOAL, ["TOMCAT_MAX_THREADS"], **BIG_BOX)
    assert p.settings is None and p.cannot == "TOMCAT_VIRTUAL_THREADS=1 cannot run here: no JDK"


def test_the_jdk_is_looked_for_as_the_targets_start_does(tmp_path, monkeypatch):
    # target_start.sh's target_newest_java: JAVA_HOME, PATH and LT_JDK_DIRS/*, the newest of JDK 21
    # or later, by its release file. A JDK 99 in the directory given is the newest there is.
    monkeypatch.delenv("JAVA_HOME", raising=False)
    empty = tmp_path / "none"
    empty.mkdir()
    assert not virtualthreads.newest_java(str(empty)).startswith(str(tmp_path))
    home = tmp_path / "jdks" / "jdk-99"
    (home / "bin").mkdir(parents=True)
    (home / "release").write_text('JAVA_VERSION="99.0.1"\n')
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "bin" / "java").chmod(0o755)
    assert virtualthreads.newest_java(str(tmp_path / "jdks")) == str(home / "bin" / "java")


def test_a_steady_rate_on_virtual_threads_needs_no_pool():
    # 100 requests a second of 1 s: 100 in service (Little's law), 110 threads with the headroom;
    # k6 keeps 120 connections. Virtual threads: max-connections 8192 holds them, no pool.
    load = steady.SteadyLoad(scenario="spike-open", service_ms=1000, timeout_ms=10000, duration_ms=10000,
                             settings={**START, "TOMCAT_MAX_THREADS": 20}, rate_per_s=100, pool=120, max_vus=300)
    tune = [VT, "TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS"]
    p = steady.plan(load, base.Goal(p99_ms=1500), tune)
    assert p.settings[VT] == 1 and p.settings["TOMCAT_MAX_THREADS"] == 20 and p.changed == [VT]
    assert "a pool of 110 threads (TOMCAT_MAX_THREADS 20 -> 110" in p.reasons[VT]
    assert p.prediction.workers == 8192 and p.prediction.p99_ms == 1000
    # Platform threads at 20: the queue grows all run, the request at 9.9 s waits (100/20 - 1) x 9.9 s.
    platform = steady.predict(load, base.Goal(p99_ms=1500), {**p.settings, VT: 0})
    assert platform.p99_ms == 1000 + 4 * 9900 and p.sure == {VT: True}
    # max-connections 100 in the file: both plans need the 120 connections k6 keeps.
    capped = steady.plan(steady.SteadyLoad(**{**load.__dict__, "settings": {**load.settings,
                                                                            "TOMCAT_MAX_CONNECTIONS": 100}}),
                         base.Goal(p99_ms=1500), tune)
    assert capped.changed == [VT, "TOMCAT_MAX_CONNECTIONS"] and capped.settings["TOMCAT_MAX_CONNECTIONS"] == 120


def test_a_closed_load_on_virtual_threads_sizes_max_connections_by_the_requests_in_service():
    # 20 users with 400 ms think: 20 x 100 / 500 = 4 in service, 5 at once with the headroom; 4
    # max-connections would leave a user's connection waiting, so 20 (one a user).
    load = steady.SteadyLoad(scenario="keepalive", service_ms=100, timeout_ms=2000, duration_ms=30000,
                             settings={**START, "TOMCAT_MAX_THREADS": 1, "TOMCAT_MAX_CONNECTIONS": 4, VT: 1},
                             users=20, requests_per_user=50, think_ms=400)
    p = steady.plan(load, base.Goal(), ["TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS"])
    assert p.settings["TOMCAT_MAX_THREADS"] == 1 and p.settings["TOMCAT_MAX_CONNECTIONS"] == 20
    assert p.changed == ["TOMCAT_MAX_CONNECTIONS"]


def test_the_property_to_paste():
    props, _ = base.paste_lines({VT: 1, "TOMCAT_MAX_THREADS": 4})
    assert props == ["spring.threads.virtual.enabled=true", "server.tomcat.threads.max=4"]


class WavesRunner(base.Runner):
    """Cells whose p99 is the waves of 12 users of 2 s on rules.workers (platform or virtual)."""

    def __init__(self) -> None:
        super().__init__(Path("."), Path("."), [], [])
        self.matrices: list[dict[str, list[int]]] = []

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        self.matrices.append(dict(axes))
        combos = [dict(settings)]
        for knob, values in axes.items():
            combos = [{**c, knob: v} for c in combos for v in values]
        found = []
        for i, s in enumerate(combos):
            workers = rules.workers(s["TOMCAT_MAX_THREADS"], s["TOMCAT_MAX_CONNECTIONS"], s[VT] == 1)
            row = {"status": "ok", "as_designed": 1, "http_reqs": 12, "iterations_interrupted": 0,
                   "dropped_iterations": 0, "failed_reqs": 0, "lat_p99_ms": math.ceil(12 / workers) * 2000 + 20,
                   "cell": f"{i + 1:02d}"}
            found.append({"run": name, "cell": row["cell"], "row": f"{name}/row.json",
                          "report": f"{name}/report.html", "settings": s, "row_data": row})
        self.cells.extend(found)
        return found


def test_a_proposal_is_verified_by_a_cell_and_platform_threads_shown_missing_the_goal():
    runner = WavesRunner()
    advice = adv.advise(burst(), GOAL, [VT, "TOMCAT_MAX_THREADS"], 4, runner, **BIG_BOX)
    assert runner.matrices == [{VT: [0, 1]}]
    assert advice["verified"] and advice["recommended"] == {VT: 1, "TOMCAT_MAX_THREADS": 4}
    (b,) = advice["boundary"]
    assert (b["knob"], b["value"], b["predicted"], b["passed"], b["lat_p99_ms"]) == (VT, 0, "fail", False, 6020)
    text = adv.markdown({**advice, "source": "vt.env"})
    assert "spring.threads.virtual.enabled=true" in text
    assert "8192 workers (virtual threads: max-connections is the bound)" in text
    assert "- `TOMCAT_VIRTUAL_THREADS` = 1 (was 0)" in text
