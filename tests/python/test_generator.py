"""The three sources of a user's connect time (ltsuite.generator): the generator's CPU over the
users' release, the round trip asked against the one users got, and the delayer's part."""
from __future__ import annotations

from pathlib import Path

import pytest

from ltsuite import generator

# A trace as the sampler writes it (epoch s, k6 ticks, busy ticks, all ticks): two cores, 100 ticks a
# second each; k6 idle, then both cores for 0.25 s (the release), then idle.
TRACE = [(100.00, 500, 1000, 4000, 1), (100.05, 501, 1002, 4010, 1), (100.10, 511, 1012, 4020, 1),
         (100.15, 521, 1022, 4030, 1), (100.20, 531, 1032, 4040, 1), (100.25, 541, 1042, 4050, 1),
         (100.30, 551, 1052, 4060, 1), (100.35, 551, 1053, 4070, 1)]


def test_the_release_is_read_between_the_trace_points_around_it() -> None:
    rel = generator.release(TRACE, 100.06, 100.30, 100)
    # 50 ticks in 0.25 s: 200 %; surely 48 (two ticks of the reading's resolution less), 192 %.
    assert rel == generator.Release(k6_cpu_pct=200.0, busy_pct=100.0, window_ms=250.0, k6_cpu_sure_pct=192.0)
    # Outside the trace: unmeasured, not 0.
    assert generator.release(TRACE, 99.0, 100.2, 100) is None
    assert generator.release(TRACE, 100.1, 101.0, 100) is None
    # A second k6 process found within the window: its ticks are no rate of the first's.
    joined = TRACE[:4] + [(100.20, 931, 1032, 4040, 2)] + [(t, k + 400, b, a, 2) for t, k, b, a, _ in TRACE[5:]]
    assert generator.release(joined, 100.06, 100.30, 100) is None
    assert generator.release(joined, 100.21, 100.30, 100) == generator.Release(200.0, 100.0, 100.0, 180.0)


def test_a_saturated_release_is_a_generator_finding_naming_the_timings_it_inflated() -> None:
    rel = generator.release(TRACE, 100.06, 100.30, 100)
    finding = generator.release_finding(rel, 2)
    assert finding is not None and finding.flag == "gen"
    assert "k6 used 200 % CPU of 2 cores (the machine 100 % busy) over the 250 ms" in finding.note
    assert "t_connect_*" in finding.note and "lat_*" in finding.note
    assert "the generator set their pace" in finding.note
    # k6 at 28 %, the machine full: not the generator's own pace (no design finding), a note of the
    # machine's (measured so: 300 users at once, run 20261129-004418-timings-burst).
    machine = generator.Release(k6_cpu_pct=28.0, busy_pct=100.0, window_ms=214.0)
    assert generator.release_finding(machine, 2) is None
    note = generator.busy_note(machine, 2)
    assert note is not None and "the rest of the CPU went to the target" in note
    assert generator.busy_note(rel, 2) is None  # k6's own: the finding says it
    assert generator.busy_note(generator.Release(28.0, 60.0, 214.0), 2) is None
    quiet = generator.release(TRACE, 100.30, 100.35, 100)
    assert quiet is not None and quiet.k6_cpu_pct == 0
    assert generator.release_finding(quiet, 2) is None
    assert generator.release_finding(None, 2) is None


def test_a_release_within_one_trace_step_is_saturated_only_beyond_the_ticks_resolution() -> None:
    # The trace of cell 01 of a tests/integration/own-app.bats run: k6 just started (9 ticks), its
    # 16 users' first requests 2 ms apart, read across one step of 46.4 ms: 9 ticks, 194 % of 2
    # cores, which 7 ticks (150.9 %) could also have given. Not surely the generator's pace.
    trace = [(1795951000.1486, 9, 5979842, 10228776, 0), (1795951000.1950, 18, 5979852, 10228787, 0)]
    rel = generator.release(trace, 1795951000.16, 1795951000.162, 100)
    assert rel == generator.Release(194.0, 90.9, 46.4, 150.9)
    assert not generator.k6_saturated(rel, 2) and generator.release_finding(rel, 2) is None
    assert "k6 itself at every core as read, but surely only at 150.9 %" in generator.busy_note(rel, 2)
    # Two k6 processes (K6_INSTANCES=2): two ticks each may be the resolution's.
    assert generator.release(TRACE, 100.06, 100.30, 100, processes=2).k6_cpu_sure_pct == 184.0
    # The same 194 % over 250 ms (48.5 ticks) is surely above 180 %.
    assert generator.k6_saturated(generator.Release(194.0, 95.0, 250.0, 186.0), 2)
    # A release known only by its rate (no ticks): the rate is judged.
    assert generator.k6_saturated(generator.Release(194.0, 95.0, 46.4), 2)


def test_a_busy_machine_saturates_the_release_even_with_k6_below_90_percent() -> None:
    rel = generator.Release(k6_cpu_pct=120.0, busy_pct=91.0, window_ms=250.0)
    assert generator.saturated(rel, 2) is True
    assert generator.saturated(generator.Release(120.0, 80.0, 250.0), 2) is False


QUIET = generator.Release(k6_cpu_pct=40.0, busy_pct=50.0, window_ms=100.0)


@pytest.mark.parametrize("asked,median,off", [("50", 52.0, False), ("50", 56.0, True), ("50", 44.0, True),
                                              ("10", 11.9, False), ("10", 12.5, True), ("200", 219.0, False),
                                              ("0", 2.7, False)])
def test_the_round_trip_users_got_is_judged_against_the_one_asked(asked: str, median: float, off: bool) -> None:
    row = {"t_connect_new_med_ms": median, "syn_retrans": 0, "net_rtt_applied_ms": 50.3}
    finding = generator.network_finding({"NET_RTT_MS": asked}, row, QUIET, 2)
    assert (finding is not None) == off
    if finding is not None:
        assert f"median new connect was {median:g} ms where NET_RTT_MS={asked} was asked" in finding.note
        assert f"the delayer applied 50.3 ms, so {round(median - 50.3, 3):g} ms came from elsewhere" in finding.note


def test_the_round_trip_is_not_judged_where_something_else_held_the_handshake() -> None:
    row = {"t_connect_new_med_ms": 130.0, "syn_retrans": 0}
    busy = generator.Release(k6_cpu_pct=190.0, busy_pct=99.0, window_ms=250.0)
    assert generator.network_finding({"NET_RTT_MS": "50"}, row, busy, 2) is None  # the generator's
    assert generator.network_finding({"NET_RTT_MS": "50"}, row, None, 2) is None  # unmeasured
    assert generator.network_finding({"NET_RTT_MS": "50"}, {**row, "syn_retrans": 3}, QUIET, 2) is None
    assert generator.network_finding({"NET_RTT_MS": "0"}, row, QUIET, 2) is None  # no round trip asked
    assert generator.network_finding({"NET_RTT_MS": "50"}, row, QUIET, 2) is not None


def test_the_connect_is_split_into_the_delayer_s_part_and_the_rest() -> None:
    row = {"t_connect_new_med_ms": 195.0, "net_rtt_applied_ms": 62.0}
    assert generator.split_columns({"NET_RTT_MS": "50"}, row) == {"connect_delayer_ms": 12.0,
                                                                 "connect_beyond_rtt_ms": 133.0}
    assert generator.split_columns({}, {"t_connect_new_med_ms": 130.0}) == {"connect_delayer_ms": None,
                                                                           "connect_beyond_rtt_ms": 130.0}
    assert generator.split_columns({"NET_RTT_MS": "50"}, {"t_connect_new_med_ms": 60.0}) == {
        "connect_delayer_ms": None, "connect_beyond_rtt_ms": None}


def test_a_trace_line_cut_short_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "k6-cpu.tsv").write_text("100.000\t5\t10\t40\t1\n100.010\t5\t10\t40\n100.050\t6\t1")
    assert generator.read_trace(tmp_path / "k6-cpu.tsv") == [(100.0, 5, 10, 40, 1), (100.01, 5, 10, 40, 0)]
    assert generator.read_trace(tmp_path / "none.tsv") == []
