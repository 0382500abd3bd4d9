"""The network knobs' rules, the delayer's netlink messages, and its row columns and flag."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ltsuite import design, netdelay


def test_defaults_are_no_delayer() -> None:
    settings = netdelay.validate({})
    assert settings == netdelay.NetSettings(0.0, 0.0, 0.0)
    assert not settings.active


def test_rtt_is_held_half_each_way() -> None:
    settings = netdelay.validate({"NET_RTT_MS": "40", "NET_LOSS": "0.01"})
    assert settings.active
    assert settings.one_way_s == pytest.approx(0.020)
    assert settings.loss == pytest.approx(0.01)


@pytest.mark.parametrize("env, key", [
    ({"NET_RTT_MS": "-1"}, "NET_RTT_MS"),
    ({"NET_RTT_MS": "20001"}, "NET_RTT_MS"),
    ({"NET_RTT_MS": "abc"}, "NET_RTT_MS"),
    ({"NET_LOSS": "1"}, "NET_LOSS"),
    ({"NET_LOSS": "-0.1"}, "NET_LOSS"),
    ({"NET_LOSS": "nan"}, "NET_LOSS"),
    ({"NET_RTT_MS": "10", "NET_JITTER_MS": "6"}, "NET_JITTER_MS"),
])
def test_bad_knobs_are_refused_naming_the_key(env: dict[str, str], key: str) -> None:
    with pytest.raises(netdelay.NetDelayError, match=key):
        netdelay.validate(env)


def test_design_refuses_a_bad_knob_before_the_run() -> None:
    reasons = design.refusals({"NET_LOSS": "1.5", "SCENARIO": "spike"}, {})
    assert len(reasons) == 1 and "NET_LOSS=1.5" in reasons[0]
    assert design.refusals({"NET_RTT_MS": "20", "SCENARIO": "spike"}, {}) == []


def test_verdict_batch_message_layout() -> None:
    msg = netdelay.verdict_message(31, 1234, netdelay.NF_ACCEPT, batch=True)
    length, kind, flags, _seq, _pid = netdelay.NLMSG_HDR.unpack_from(msg)
    assert length == len(msg) == 16 + 4 + 4 + 8
    assert kind == (3 << 8) | 3 and flags == 1
    assert netdelay.NFGEN_HDR.unpack_from(msg, 16) == (0, 0, 31)
    alen, atype = netdelay.NLA_HDR.unpack_from(msg, 20)
    assert (alen, atype) == (12, netdelay.NFQA_VERDICT_HDR)
    assert struct.unpack_from("!II", msg, 24) == (1, 1234)


def _packet(packet_id: int) -> bytes:
    attrs = netdelay.nla(netdelay.NFQA_PACKET_HDR, struct.pack("!IHB", packet_id, 0x0800, 3))
    body = netdelay.NFGEN_HDR.pack(2, 0, 31) + attrs
    return netdelay.NLMSG_HDR.pack(16 + len(body), 3 << 8, 0, 0, 0) + body


def test_packet_ids_of_several_messages_and_errors() -> None:
    error = netdelay.NLMSG_HDR.pack(36, netdelay.NLMSG_ERROR, 0, 0, 0) + struct.pack("=i", -1) + b"\0" * 16
    ids, errors = netdelay.packet_ids(_packet(7) + _packet(8) + error)
    assert ids == [7, 8]
    assert errors == [1]


def test_kernel_drops_of_the_queue_line() -> None:
    text = "    5  123     0 1     0     0     0      10  1\n   31  456     2 1     0     3     4   99  1\n"
    assert netdelay.kernel_drops(31, text) == (3, 4)
    assert netdelay.kernel_drops(9, text) is None


def test_summary_doubles_the_median_hold() -> None:
    stats = netdelay.HoldStats()
    for hold in (20.1, 20.2, 20.3, 24.0):
        stats.record(hold, 20.0)
    out = stats.summary(netdelay.NetSettings(40.0), (0, 0))
    assert out["held"] == 4
    # Twice k6's median of the four (20.25, between the two middle ones), within the histogram's 0.5 %.
    assert out["rtt_applied_ms"] == pytest.approx(40.5, rel=0.005)
    assert out["late_max_ms"] == pytest.approx(4.0)


def test_a_restart_counts_from_then_on_the_warm_up_s_packets_left_out() -> None:
    """SIGUSR1 once the cell's warm-up has passed (netdelay_restart): the packets held and the
    kernel's drops before it are not the load's."""
    delayer = object.__new__(netdelay.Delayer)  # no NFQUEUE socket: only its counts
    delayer.stats = netdelay.HoldStats()
    delayer.kernel_base = (0, 0)
    drops = iter([(5, 2), (7, 2)])
    delayer.kernel = lambda: next(drops)
    for hold in (20.1, 20.2, 35.0):
        delayer.stats.record(hold, 20.0)
    delayer.restart()
    delayer.stats.record(20.4, 20.0)
    out = delayer.stats.summary(netdelay.NetSettings(40.0), delayer.kernel_since())
    assert (out["held"], out["late_max_ms"]) == (1, pytest.approx(0.4))
    assert (out["kernel_queue_dropped"], out["kernel_user_dropped"]) == (2, 0)
    assert netdelay.kernel_since_base(None, (5, 2)) is None


def _cell(tmp_path: Path, stats: dict[str, object] | None) -> Path:
    if stats is not None:
        (tmp_path / "netdelay.json").write_text(json.dumps(stats))
    return tmp_path


def test_columns_empty_without_a_delayer(tmp_path: Path) -> None:
    cols = netdelay.row_columns(_cell(tmp_path, None))
    assert cols == {"net_rtt_applied_ms": None, "net_hold_p99_ms": None, "net_packets_lost": None,
                    "net_delayer_drops": None, "net_unread_p99_ms": None, "net_unread_peak": None,
                    "net_held_peak_per_s": None}
    assert netdelay.behind(None) is None


def test_a_delayer_that_kept_up_is_not_flagged(tmp_path: Path) -> None:
    stats = {"rtt_ms": 40, "rtt_applied_ms": 40.4, "hold_p99_ms": 22.0, "lost": 0,
             "kernel_queue_dropped": 0, "kernel_user_dropped": 0}
    cols = netdelay.row_columns(_cell(tmp_path, stats))
    assert cols["net_rtt_applied_ms"] == 40.4 and cols["net_delayer_drops"] == 0
    assert netdelay.behind(stats) is None


@pytest.mark.parametrize("stats, words", [
    ({"rtt_ms": 40, "hold_p99_ms": 21.0, "kernel_queue_dropped": 2, "kernel_user_dropped": 1}, "dropped 3"),
    ({"rtt_ms": 40, "hold_p99_ms": 30.5, "kernel_queue_dropped": 0, "kernel_user_dropped": 0}, "30.5 ms"),
    ({"rtt_ms": 200, "hold_p99_ms": 126.0, "kernel_queue_dropped": 0, "kernel_user_dropped": 0}, "126 ms"),
])
def test_a_delayer_that_fell_behind_is_flagged(stats: dict[str, object], words: str) -> None:
    note = netdelay.behind(stats)
    assert note is not None and words in note


def test_late_within_the_margin_is_not_flagged() -> None:
    # 200 ms round trip: 100 ms each way, a margin of 25 ms; 40 ms: 20 each way, a margin of 10.
    assert netdelay.behind({"rtt_ms": 200, "hold_p99_ms": 124.0}) is None
    assert netdelay.behind({"rtt_ms": 40, "hold_p99_ms": 29.9}) is None


def test_acks_are_read_by_the_sequence_number_of_the_request_they_answer() -> None:
    """An NLMSG_ERROR carries the errno (negative, 0 for an acknowledgement) and a copy of the
    request's header, whose sequence number says which request it answers (netlink(7))."""
    def error(seq: int, errno: int) -> bytes:
        request = netdelay.NLMSG_HDR.pack(netdelay.NLMSG_HDR.size, 0x0302, 5, seq, 0)
        body = struct.pack("=i", -errno) + request
        return netdelay.NLMSG_HDR.pack(netdelay.NLMSG_HDR.size + len(body), netdelay.NLMSG_ERROR, 0, 0, 0) + body
    assert netdelay.acks(error(1, 0) + error(2, 1)) == {1: 0, 2: 1}
    assert netdelay.acks(b"") == {}


def test_the_late_threshold_is_widened_by_the_jitter_asked() -> None:
    """100 +/- 50 ms asked: a hold is drawn up to 25 ms above the 50 ms one-way delay, so a p99
    of 85 ms is within what was asked (75 ms + 12.5 ms), where without jitter it is late."""
    stats = {"rtt_ms": 100, "jitter_ms": 50, "hold_p99_ms": 85.0, "kernel_queue_dropped": 0,
             "kernel_user_dropped": 0}
    assert netdelay.behind(stats) is None
    assert netdelay.behind({**stats, "hold_p99_ms": 90.0}) == (
        "the delayer fell behind: its packets' 99th-percentile hold was 90 ms where 50 ms +/- 25 ms "
        "was asked (the cell saw more delay than NET_RTT_MS)")
    assert netdelay.behind({**stats, "jitter_ms": 0}) is not None


def test_queued_last_reads_the_id_sequence_column() -> None:
    text = "    5  123     0 1     0     0     0      10  1\n   31  456     2 1     0     3     4   99  1\n"
    assert netdelay.queued_last(31, text) == 99
    assert netdelay.queued_last(9, text) is None


def _bare_delayer(rtt_ms: float, lines: list[str], jitter_ms: float = 0.0) -> netdelay.Delayer:
    """A Delayer without its NFQUEUE socket: what it counts from ids and looks at the kernel's queue."""
    delayer = object.__new__(netdelay.Delayer)
    delayer.queue = 31
    delayer.settings = netdelay.NetSettings(rtt_ms, jitter_ms)
    delayer.rng = netdelay.random.Random(1)
    delayer.stats = netdelay.HoldStats()
    delayer.waiting = []
    delayer.last_due = 0.0
    delayer.flow_due = {}
    delayer.marks = netdelay.deque()
    delayer.last_read = 0
    delayer.next_look = 0.0
    proc = iter(lines)

    class Proc:
        def __enter__(self) -> "Proc":
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def read(self) -> str:
            return next(proc)

    netdelay.open = lambda *_a, **_k: Proc()  # type: ignore[attr-defined]
    return delayer


def test_time_a_packet_waited_unread_is_part_of_its_hold_and_the_backlog_is_counted() -> None:
    """A delayer that fell behind: 500 packets queued while it read none for 80 ms. Their hold
    counts from the kernel's look, not from the read, and the backlog of 500 is the peak."""
    delayer = _bare_delayer(40.0, ["   31  456     0 1     0     0     0   500  1\n"])
    try:
        delayer.look(100.000)
        delayer._take([(i, b"") for i in range(1, 501)], 100.080)
        delayer._take([(501, b"")], 100.081)  # queued after the look: its unread wait is not known, 0
    finally:
        del netdelay.open  # type: ignore[attr-defined]
    held = {packet_id: unread for _due, packet_id, _queued, unread in delayer.waiting}
    assert held[1] == pytest.approx(80.0) and held[500] == pytest.approx(80.0)
    assert held[501] == 0.0
    assert list(delayer.due_now(100.101)) == list(range(1, 502))
    out = delayer.stats.summary(delayer.settings, (0, 0))
    assert out["unread_peak"] == 500
    assert out["hold_p50_ms"] == pytest.approx(100.0, rel=0.01)  # 80 unread + 20 held, not 20
    assert out["unread_p99_ms"] == pytest.approx(80.0, rel=0.01)
    note = netdelay.behind(out)
    assert note is not None and "unread in the kernel's queue, at most 500 packets waiting unread" in note


def test_every_packet_counts_past_the_first_200000() -> None:
    """The holds are a histogram of every packet: the 300,000 late ones after 200,000 on time move the median."""
    stats = netdelay.HoldStats()
    for _ in range(200000):
        stats.record(20.0, 20.0)
    for _ in range(300000):
        stats.record(60.0, 20.0)
    out = stats.summary(netdelay.NetSettings(40.0), (0, 0))
    assert out["held"] == 500000
    assert out["hold_p50_ms"] == pytest.approx(60.0, rel=0.01)
    merged = netdelay.histogram.Histogram.from_json(out["hold_histogram"])
    assert merged.count == 500000


def _ipv4(src: str, dst: str, sport: int, dport: int, proto: int = 6) -> bytes:
    """An IPv4 header of 20 bytes and the ports after it, as the kernel copies it (FLOW_COPY)."""
    header = bytes([0x45, 0]) + bytes(7) + bytes([proto]) + bytes(2)
    return header + netdelay.socket.inet_aton(src) + netdelay.socket.inet_aton(dst) + netdelay.struct.pack("!HH", sport, dport)


def test_a_packet_s_flow_is_its_protocol_addresses_and_ports_one_way() -> None:
    out = _ipv4("198.18.0.2", "198.18.0.1", 40000, 8080)
    back = _ipv4("198.18.0.1", "198.18.0.2", 8080, 40000)
    assert netdelay.flow_of(out) != netdelay.flow_of(back)
    assert netdelay.flow_of(out) == netdelay.flow_of(out + b"payload")
    assert netdelay.flow_of(b"short") == b""
    message = netdelay.nfq_message(netdelay.NFQNL_MSG_PACKET, 31,
                                   netdelay.nla(netdelay.NFQA_PACKET_HDR, netdelay.struct.pack("!IHB", 7, 0x0800, 3))
                                   + netdelay.nla(netdelay.NFQA_PAYLOAD, out))
    assert netdelay.packets(message) == ([(7, netdelay.flow_of(out))], [])
    assert netdelay.packet_ids(message) == ([7], [])


def _holds(delayer: netdelay.Delayer, flows: int, rate: int, seconds: float) -> list[float]:
    """One-way holds (ms) the delayer gives packets read RATE a second over FLOWS connections."""
    holds = []
    for k in range(int(rate * seconds)):
        now = 100.0 + k / rate
        flow = netdelay.flow_of(_ipv4("198.18.0.2", "198.18.0.1", 40000 + k % flows, 8080))
        holds.append((delayer._due(now, flow) - now) * 1000.0)
    return sorted(holds)


def test_jitter_keeps_its_spread_at_20000_packets_a_second_over_many_connections() -> None:
    """40 +/- 20 ms over 2,000 connections at 20,000 packets a second: each way's hold is drawn
    within 20 +/- 10 ms and only a packet of its own connection can hold it back, so the median stays
    at 20 and the spread stays. All in one line (one flow: what every packet shared before), each
    packet inherits the largest draw ahead of it: the median goes near the top, the spread away."""
    delayer = _bare_delayer(40.0, [], jitter_ms=20.0)
    holds = _holds(delayer, 2000, 20000, 1.0)
    median, p1, p99 = holds[len(holds) // 2], holds[len(holds) // 100], holds[len(holds) * 99 // 100]
    assert median == pytest.approx(20.0, abs=0.5)
    assert p1 < 11.0 and p99 > 29.0 and holds[-1] <= 30.0 + 1e-9
    one_line = _holds(_bare_delayer(40.0, [], jitter_ms=20.0), 1, 20000, 1.0)
    assert one_line[len(one_line) // 2] > 28.0 and one_line[len(one_line) // 100] > 27.0


def test_one_connection_keeps_its_order_and_packets_of_one_way_never_pass_each_other() -> None:
    delayer = _bare_delayer(40.0, [], jitter_ms=20.0)
    flow = netdelay.flow_of(_ipv4("198.18.0.2", "198.18.0.1", 40000, 8080))
    dues = [delayer._due(100.0 + k / 20000, flow) for k in range(2000)]
    assert dues == sorted(dues)
    # Without jitter, one line for all, as before (and one batch verdict releases it).
    steady = _bare_delayer(40.0, [])
    assert [steady._due(100.0 + k / 1000) for k in range(3)] == pytest.approx([100.02, 100.021, 100.022])


def test_flows_with_nothing_held_are_forgotten_past_flows_kept() -> None:
    delayer = _bare_delayer(40.0, [], jitter_ms=10.0)
    for k in range(netdelay.FLOWS_KEPT + 10):
        delayer._due(100.0 + k, netdelay.flow_of(_ipv4("198.18.0.2", "198.18.0.1", k % 65536, 8080)))
    assert len(delayer.flow_due) < netdelay.FLOWS_KEPT


def test_the_peak_rate_is_the_most_packets_released_in_a_step() -> None:
    stats = netdelay.HoldStats()
    for k in range(30):  # 30 in the step from 100.0 s
        stats.record(20.0, 20.0, 0.0, 100.0 + k * 0.001)
    for k in range(12):  # 12 in the next
        stats.record(20.0, 20.0, 0.0, 100.1 + 0.005 + k * 0.001)
    assert stats.summary(netdelay.NetSettings(40.0), (0, 0))["held_peak_per_s"] == 300
    assert netdelay.HoldStats().summary(netdelay.NetSettings(40.0))["held_peak_per_s"] is None
