"""The disk a run's cells need (ltsuite.space): the estimate's parts and its bounds."""
from ltsuite import space


def test_a_cell_is_its_fixed_part_its_seconds_and_its_requests() -> None:
    cell = space.cell_space({"SCENARIO": "spike", "VUS": "2", "DURATION": "4s", "GRACEFUL_STOP": "1s",
                             "DELAY_MS": "100"})
    assert cell.load_s == 5
    # Two users, one request each per 100 ms, for 5 s.
    assert cell.requests == 100
    assert cell.bytes == space.BYTES_PER_CELL + 5 * space.BYTES_PER_SECOND + 100 * space.BYTES_PER_REQUEST


def test_requests_are_bounded_by_the_cells_rate_and_at_least_each_users_own() -> None:
    fast = space.cell_space({"VUS": "10000", "DURATION": "10s", "DELAY_MS": "0"})
    assert fast.requests == space.MAX_RPS * 10
    burst = space.cell_space({"SCENARIO": "burst", "VUS": "500", "DURATION": "0s", "REQUESTS_PER_VU": "3"})
    assert burst.requests == 1500


def test_a_ramp_lasts_as_long_as_its_stages() -> None:
    cell = space.cell_space({"SCENARIO": "ramp", "STAGES": "10s:5,1m:50", "GRACEFUL_STOP": "2s", "VUS": "1"})
    assert cell.load_s == 72


def test_each_cell_counts_as_often_as_it_runs() -> None:
    env = {"VUS": "1", "DURATION": "1s"}
    assert space.estimate([(env, 3)]) == 3 * space.cell_space(env).bytes
