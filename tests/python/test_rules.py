"""The prediction rules of ltsuite.rules: SYN retransmission times, the accept queue's capacity,
thread-pool waves (the cases tests/unit/rules.bats checked on rules.jq)."""
from pathlib import Path

import pytest

from ltsuite import rules


def test_classic_backoff_syns_at_0_1_3_7_and_give_up_at_2_pow_retries_plus_1_minus_1():
    got = [[r, rules.syn_send_times(r, 0), rules.syn_give_up_s(r, 0)] for r in range(2, 7)]
    assert got == [[2, [0, 1, 3], 7], [3, [0, 1, 3, 7], 15], [4, [0, 1, 3, 7, 15], 31],
                   [5, [0, 1, 3, 7, 15, 31], 63], [6, [0, 1, 3, 7, 15, 31, 63], 127]]


def test_linear_timeouts_4_one_second_steps_then_doubling():
    got = [[r, rules.syn_send_times(r, 4), rules.syn_give_up_s(r, 4)] for r in range(2, 7)]
    assert got == [[2, [0, 1, 2, 3, 4, 5], 7], [3, [0, 1, 2, 3, 4, 5, 7, 11], 19],
                   [4, [0, 1, 2, 3, 4, 5, 7, 11, 19], 35], [5, [0, 1, 2, 3, 4, 5, 7, 11, 19, 35], 67],
                   [6, [0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67], 131]]


def test_the_schedule_measured_on_this_kernel_retries_3_linear_2():
    assert [rules.syn_send_times(3, 2), rules.syn_give_up_s(3, 2)] == [[0, 1, 2, 3, 5, 9], 17]


def test_past_6_retries_120_s_per_retry_and_the_rto_stops_at_120_s():
    assert [rules.syn_send_times(8, 0), rules.syn_give_up_s(8, 0)] == [[0, 1, 3, 7, 15, 31, 63, 127, 247], 367]


def test_syns_before_the_request_timeout():
    got = [[rules.syns_within(4, 0, w), rules.syns_within(4, 4, w), rules.syns_within(6, 4, w),
            rules.syns_within(2, 0, w)] for w in (5, 10, 60)]
    assert got == [[3, 5, 5, 3], [4, 7, 7, 3], [5, 9, 10, 3]]


def test_the_listen_backlog_is_accept_count_capped_at_somaxconn():
    assert [rules.listen_backlog(100, 4096), rules.listen_backlog(10000, 128), rules.listen_backlog(5, 5)] == [100, 128, 5]


def test_capacity_is_max_connections_plus_backlog_plus_1():
    assert [rules.server_capacity(8192, 100, 4096), rules.server_capacity(2, 1, 4096),
            rules.server_capacity(3000, 10000, 128), rules.server_capacity(2, 5, 2)] == [8293, 4, 3129, 5]


def test_the_queue_race_allows_cpus_minus_1_more():
    assert [rules.capacity_slack(1), rules.capacity_slack(2), rules.capacity_slack(8)] == [0, 1, 7]


def test_latency_comes_in_waves_seed_003():
    assert [rules.waves_ms(3000, 200, 5000), rules.waves_ms(201, 200, 1000), rules.waves_ms(200, 200, 1000),
            rules.waves_ms(0, 200, 1000)] == [75000, 2000, 1000, None]


def test_closed_model_throughput():
    assert [rules.closed_tps(1000, 200, 5000, 0), rules.closed_tps(10, 200, 100, 0), rules.closed_tps(10, 200, 100, 400),
            rules.closed_tps(10, 200, 0, 0)] == [40, 100, 20, None]


def test_k6_durations_in_milliseconds():
    assert [rules.duration_ms(d) for d in ("500ms", "10s", "1m30s", "1h", "1.5s", "")] == [500, 10000, 90000, 3600000, 1500, None]


def test_durations_agree_with_the_shared_table():
    # tests/fixtures/durations.tsv: scenarios/lib/env.js and scripts/lib/k6.sh are held to it too.
    table = Path(__file__).parents[1] / "fixtures" / "durations.tsv"
    cases = [line.split("\t") for line in table.read_text().splitlines() if line and not line.startswith("#")]
    assert len(cases) > 5
    for text, ms in cases:
        assert rules.duration_ms(text) == int(ms), text


def test_requests_served_at_once_threads_or_max_connections_and_max_connections_alone_with_virtual_threads():
    assert [rules.workers(4, 8192), rules.workers(200, 10), rules.workers(4, 8192, virtual_threads=True),
            rules.workers(4, None), rules.workers(None, 16, virtual_threads=True)] == [4, 10, 8192, None, 16]


def test_one_duration_parser_lenient_and_strict() -> None:
    """k6's durations read leniently; the envfile type (nginx's settings) strictly, by the same parser."""
    from ltsuite import proxy
    assert rules.duration_ms("1m30s") == 90000
    assert rules.duration_ms("500ms") == 500
    assert rules.duration_ms("") is None
    assert proxy.duration_ms("1.5s") == 1500
    for bad in ("10", "10 s", "1.2.3s", "s"):
        with pytest.raises(ValueError):
            proxy.duration_ms(bad)
