"""Findings across cells (ltsuite.across) over recorded runs: the default matrix's four cells
(tests/python/fixtures/runs/default, run 20261129-004859-default: accept-count 1 5 x somaxconn
2 4096, 16 users on max-connections 2) and the runs of tests/python/fixtures/runs."""
import shutil
from pathlib import Path

from ltsuite import across, tables

RUNS = Path(__file__).parent / "fixtures" / "runs"


def lines_of(name):
    run = tables.load_run(RUNS / name)
    return across.run_across(RUNS / name, run.axes, run.rows)


def test_somaxconn_capping_accept_count_is_said_with_the_connections_it_cost():
    """The default matrix: somaxconn 2 capped accept-count 5 to a backlog of 2, so cell 03 held 5
    connections where cell 04 held 8; the failed requests changed with neither knob."""
    lines = lines_of("default")
    somaxconn = next(line for line in lines if line.startswith("Somaxconn 2 / 4096"))
    assert "connections held 5 -> 8 (03_accept_count-5_somaxconn-2 -> 04_accept_count-5_somaxconn-4096" in somaxconn
    assert "somaxconn 2 capped accept-count 5 to 2, so 03_accept_count-5_somaxconn-2 held 5 connections " \
           "instead of 8" in somaxconn
    assert "it did not change failed requests" in somaxconn
    accept = next(line for line in lines if line.startswith("Accept-count 1 / 5"))
    assert "4 -> 8 (02_accept_count-1_somaxconn-4096 -> 04_accept_count-5_somaxconn-4096" in accept
    assert "the backlog min(accept-count, somaxconn) 1 -> 5" in accept


def test_a_knob_that_moved_nothing_is_said_to_have_made_no_difference():
    """websocket: SO_LINGER off and 0 gave the same connections, failures and rate."""
    lines = lines_of("websocket")
    assert lines and lines[0].startswith("TOMCAT_SO_LINGER off / 0 made no difference:")
    tiny = lines_of("tiny")
    assert "did not change connections held, failed requests" in tiny[0]


def test_repetitions_are_one_cell_their_median_compared():
    lines = lines_of("repeat")
    assert "connections held 2 -> 4 (01_vus-2 -> 02_vus-4)" in lines[0]
    assert "_rep-" not in lines[0]


def test_the_first_cell_to_meet_the_goal_is_named_and_a_goal_none_met_is_said(tmp_path):
    run_dir = tmp_path / "default"
    shutil.copytree(RUNS / "default", run_dir)
    run = tables.load_run(run_dir)
    for row in run.rows:
        (run_dir / "cells" / row["cell"] / "cell.env").write_text("GOAL_P99_MS=1035\nGOAL_FAILED_RATE=0.7\n")
    lines = across.run_across(run_dir, run.axes, run.rows)
    assert lines[-1].startswith("01_accept_count-1_somaxconn-2 met the goal (p99 at most 1,035 ms, failed share "
                                "at most 0.7) first: p99 1,033 ms, 28 of 44 requests failed")
    for row in run.rows:
        (run_dir / "cells" / row["cell"] / "cell.env").write_text("GOAL_P99_MS=1000\n")
    assert across.run_across(run_dir, run.axes, run.rows)[-1].startswith("No cell met the goal")
