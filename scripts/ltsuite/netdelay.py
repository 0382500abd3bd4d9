"""The network between the users and the service: a packet delayer on the kernel's NFQUEUE.

This kernel has no ``netem`` qdisc (DESIGN.md section 7), but iptables' NFQUEUE target hands each
packet to a process over netlink, which answers with a verdict (accept or drop). The delayer holds
every packet it is given for half the configured round-trip time (the client namespace's OUTPUT
and INPUT hooks both queue to it, so each direction gets half) and then accepts it: the handshake
stays between the real kernels, unlike a TCP proxy that would accept the connection itself.

It speaks the netlink protocol itself (linux/netfilter/nfnetlink_queue.h), so nothing is compiled
or installed for it. Without jitter every packet gets the same delay and packets arrive in id
order, so one batch verdict (NFQNL_MSG_VERDICT_BATCH: every packet up to this id) releases all
packets that are due; a packet lost to NET_LOSS is dropped at once with its own verdict. Jitter
keeps the order per flow (a packet is never released before the one in front of it in its own
connection's direction, as on a link) and not across flows: each packet's first bytes name its
flow, and the due ones get a verdict each (Delayer._due, Delayer.release).

Each packet's hold counts from when the kernel queued it, not from when the delayer read it: the
delayer looks at its queue's last id every LOOK_S (Delayer.look), so a packet left unread while it
fell behind shows in its figures (HoldStats: every packet, in ltsuite.histogram's histogram).

The knobs' rules (``validate``) and the applied delay (``stats``: the hold times the delayer
measured itself) are here too; net_delay_main is run by scripts/lib/netdelay.sh in the client
namespace.
"""
from __future__ import annotations

import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from collections import deque
from typing import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import histogram

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQNL_MSG_VERDICT_BATCH = 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2
NFQNL_COPY_META = 1
NFQNL_COPY_PACKET = 2
NFQA_PAYLOAD = 10
#: The bytes of each packet copied to the delayer when it needs its flow (jitter): the IPv4
#: header (at most 60 bytes) and the ports after it.
FLOW_COPY = 64
NF_DROP = 0
NF_ACCEPT = 1
NLM_F_REQUEST = 1
NLM_F_ACK = 4
#: How long the delayer waits for the kernel's answer to a configuration message (s).
ACK_TIMEOUT_S = 5.0
NLMSG_ERROR = 2
NLMSG_HDR = struct.Struct("=IHHII")
NFGEN_HDR = struct.Struct("!BBH")
NLA_HDR = struct.Struct("=HH")
AF_INET = 2

# The kernel's queue: packets waiting for a verdict. At 50 ms one way and 20,000 packets a
# second, 1,000 are held at once; past this length the kernel drops (queue_dropped).
QUEUE_MAXLEN = 65536
RCVBUF = 64 << 20


#: The step over which the delayer counts the packets it releases, for its peak rate (s).
RATE_STEP_S = 0.1


class NetDelayError(ValueError):
    """A network knob the suite refuses, with the key and the reason."""


@dataclass(frozen=True)
class NetSettings:
    """The network knobs of a cell: NET_RTT_MS, NET_JITTER_MS (ms, >= 0) and NET_LOSS (0 <= p < 1)."""

    rtt_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0

    @property
    def per_flow(self) -> bool:
        """Jitter is drawn per packet and order kept per flow (Delayer._due), which needs each
        packet's addresses and ports."""
        return self.jitter_ms > 0

    @property
    def active(self) -> bool:
        """The delayer runs when any knob asks for a change to the packets."""
        return self.rtt_ms > 0 or self.jitter_ms > 0 or self.loss > 0

    @property
    def one_way_s(self) -> float:
        """Half the round-trip time, in seconds: the hold of each packet, either way."""
        return self.rtt_ms / 2000.0


def _number(env: dict[str, str], key: str) -> float:
    raw = (env.get(key) or "0").strip()
    try:
        value = float(raw)
    except ValueError:
        raise NetDelayError(f"{key}={raw}: not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise NetDelayError(f"{key}={raw}: not a finite number")
    return value


def validate(env: dict[str, str]) -> NetSettings:
    """The cell's network knobs, or NetDelayError naming the key.

    Rules: NET_RTT_MS >= 0 and at most 10,000 (a round trip longer than 10 s is a broken link, not
    a network); NET_JITTER_MS >= 0 and at most half NET_RTT_MS (each way varies by up to
    +-jitter/2 around half the RTT, so no packet is held less than 0); 0 <= NET_LOSS < 1 (a loss
    of 1 is no network at all).
    """
    rtt = _number(env, "NET_RTT_MS")
    jitter = _number(env, "NET_JITTER_MS")
    loss = _number(env, "NET_LOSS")
    if rtt < 0 or rtt > 10000:
        raise NetDelayError(f"NET_RTT_MS={env.get('NET_RTT_MS')}: must be between 0 and 10000 ms")
    if jitter < 0 or jitter > rtt / 2:
        raise NetDelayError(f"NET_JITTER_MS={env.get('NET_JITTER_MS')}: must be between 0 and half "
                            f"NET_RTT_MS ({rtt / 2:g})")
    if not 0 <= loss < 1:
        raise NetDelayError(f"NET_LOSS={env.get('NET_LOSS')}: must be at least 0 and below 1")
    return NetSettings(rtt, jitter, loss)


def nla(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = NLA_HDR.size + len(payload)
    return NLA_HDR.pack(length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def nfq_message(msg: int, queue: int, attrs: bytes, seq: int = 0, family: int = AF_INET,
                flags: int = NLM_F_REQUEST) -> bytes:
    """A netlink message to the queue subsystem: header, nfgenmsg (res_id = the queue), attributes."""
    body = NFGEN_HDR.pack(family, 0, queue) + attrs
    return NLMSG_HDR.pack(NLMSG_HDR.size + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg,
                          flags, seq, 0) + body


def acks(data: bytes) -> dict[int, int]:
    """The NLMSG_ERROR answers in one netlink datagram, by the sequence number of the request
    they answer (the one echoed in the error's copy of the request's header, netlink(7)):
    0 is an acknowledgement, else the errno."""
    found: dict[int, int] = {}
    offset = 0
    while offset + NLMSG_HDR.size <= len(data):
        length, kind, _flags, _seq, _pid = NLMSG_HDR.unpack_from(data, offset)
        if length < NLMSG_HDR.size:
            break
        if kind == NLMSG_ERROR and offset + NLMSG_HDR.size + 4 + NLMSG_HDR.size <= len(data):
            error = struct.unpack_from("=i", data, offset + NLMSG_HDR.size)[0]
            request_seq = NLMSG_HDR.unpack_from(data, offset + NLMSG_HDR.size + 4)[3]
            found[request_seq] = -error
        offset += (length + 3) & ~3
    return found


def verdict_message(queue: int, packet_id: int, verdict: int, batch: bool) -> bytes:
    """A verdict for one packet, or (batch) for every packet of the queue up to packet_id."""
    return nfq_message(NFQNL_MSG_VERDICT_BATCH if batch else NFQNL_MSG_VERDICT, queue,
                       nla(NFQA_VERDICT_HDR, struct.pack("!II", verdict, packet_id)), family=0)


def flow_of(payload: bytes) -> bytes:
    """A packet's flow, one way: protocol, source and destination address, and the 4 bytes after
    the IPv4 header (the ports of TCP and UDP); b"" when the copy is too short to say."""
    if len(payload) < 20:
        return b""
    ihl = (payload[0] & 0x0F) * 4
    return payload[9:10] + payload[12:20] + payload[ihl:ihl + 4]


def packet_ids(data: bytes) -> tuple[list[int], list[int]]:
    """The packet ids of the NFQNL_MSG_PACKET messages in one netlink datagram, and the errno of
    any NLMSG_ERROR in it (0 is an acknowledgement)."""
    found, errors = packets(data)
    return [packet_id for packet_id, _flow in found], errors


def packets(data: bytes) -> tuple[list[tuple[int, bytes]], list[int]]:
    """(packet id, flow_of its payload; b"" without a payload) of the NFQNL_MSG_PACKET messages in
    one netlink datagram, and the errno of any NLMSG_ERROR in it (0 is an acknowledgement)."""
    ids: list[tuple[int, bytes]] = []
    errors: list[int] = []
    offset = 0
    while offset + NLMSG_HDR.size <= len(data):
        length, kind, _flags, _seq, _pid = NLMSG_HDR.unpack_from(data, offset)
        if length < NLMSG_HDR.size:
            break
        if kind == NLMSG_ERROR:
            errors.append(-struct.unpack_from("=i", data, offset + NLMSG_HDR.size)[0])
        elif kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            pos = offset + NLMSG_HDR.size + NFGEN_HDR.size
            end = offset + length
            packet_id, flow = None, b""
            while pos + NLA_HDR.size <= end:
                alen, atype = NLA_HDR.unpack_from(data, pos)
                if alen < NLA_HDR.size:
                    break
                if atype & 0x7FFF == NFQA_PACKET_HDR:
                    packet_id = struct.unpack_from("!I", data, pos + NLA_HDR.size)[0]
                elif atype & 0x7FFF == NFQA_PAYLOAD:
                    flow = flow_of(data[pos + NLA_HDR.size:pos + alen])
                pos += (alen + 3) & ~3
            if packet_id is not None:
                ids.append((packet_id, flow))
        offset += (length + 3) & ~3
    return ids, errors


@dataclass
class HoldStats:
    """What the delayer did: packets held, dropped for NET_LOSS, and their hold times (ms), every
    packet's in a bounded, mergeable histogram (ltsuite.histogram: 0.5 % relative precision,
    a few hundred buckets whatever the count), from the moment the kernel queued it: the time
    it waited unread in the kernel's queue (Delayer._unread_ms) is part of its hold. unread_ms
    holds those waits alone, unread_peak the most packets seen queued and not yet read."""

    held: int = 0
    lost: int = 0
    late_max_ms: float = 0.0
    holds: histogram.Histogram = field(default_factory=histogram.Histogram)
    unread: histogram.Histogram = field(default_factory=histogram.Histogram)
    unread_peak: int | None = None
    # Packets released in the current RATE_STEP_S step (its index) and the most in any step.
    step: int = -1
    step_held: int = 0
    step_peak: int = 0

    def record(self, hold_ms: float, target_ms: float, unread_ms: float = 0.0, now: float = 0.0) -> None:
        """One released packet (at monotonic `now`): its hold (its unread wait included), how far
        past its due time it went, and its count in its RATE_STEP_S step."""
        self.held += 1
        step = int(now / RATE_STEP_S)
        if step != self.step:
            self.step, self.step_held = step, 0
        self.step_held += 1
        self.step_peak = max(self.step_peak, self.step_held)
        self.holds.add(hold_ms)
        self.unread.add(unread_ms)
        self.late_max_ms = max(self.late_max_ms, hold_ms - target_ms)

    def backlog(self, unread: int) -> None:
        """One look at the packets queued by the kernel and not yet read."""
        self.unread_peak = unread if self.unread_peak is None else max(self.unread_peak, unread)

    def summary(self, settings: NetSettings, kernel: tuple[int, int] | None = None) -> dict[str, object]:
        """The stats file: the one-way hold the packets really got (median, p99, over every
        packet, the unread wait included), doubled into the round-trip time applied; the unread
        wait alone (p99, max) and the peak unread backlog; the packets the kernel dropped
        because the delayer fell behind (its queue full, or the delayer's socket; None when not
        read); and the holds' histogram (ltsuite.histogram's JSON), to merge."""
        def pct(h: histogram.Histogram, p: float) -> float | None:
            value = h.percentile(p)
            return None if value is None else round(value, 3)

        p50 = pct(self.holds, 0.5)
        held = self.holds.count > 0
        return {"rtt_ms": settings.rtt_ms, "jitter_ms": settings.jitter_ms, "loss": settings.loss,
                "held": self.held, "lost": self.lost, "hold_p50_ms": p50, "hold_p99_ms": pct(self.holds, 0.99),
                "hold_max_ms": round(float(self.holds.high), 3) if held else None,
                "late_max_ms": round(self.late_max_ms, 3) if held else None,
                "rtt_applied_ms": round(2 * p50, 3) if p50 is not None else None,
                "unread_p99_ms": pct(self.unread, 0.99),
                "unread_max_ms": round(float(self.unread.high), 3) if held else None,
                "unread_peak": self.unread_peak,
                "held_peak_per_s": round(self.step_peak / RATE_STEP_S) if held else None,
                "kernel_queue_dropped": kernel[0] if kernel else None,
                "kernel_user_dropped": kernel[1] if kernel else None,
                "hold_histogram": self.holds.to_json()}


def queued_last(queue: int, text: str) -> int | None:
    """id_sequence of QUEUE in /proc/net/netfilter/nfnetlink_queue's text: the id of the last
    packet the kernel queued (ids count up from 1 per queue, nfqnl_build_packet_message), so
    this less the last id the delayer read is the packets waiting unread."""
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0] == str(queue):
            return int(cols[7])
    return None


def kernel_drops(queue: int, text: str) -> tuple[int, int] | None:
    """queue_dropped and user_dropped of QUEUE in /proc/net/netfilter/nfnetlink_queue's text
    (columns: queue, portid, waiting, copy mode, copy range, queue_dropped, user_dropped, ...)."""
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 7 and cols[0] == str(queue):
            return int(cols[5]), int(cols[6])
    return None


# A delayer fell behind when its 99th-percentile hold passed the one-way delay by more than
# this much (ms), or this share of it, whichever is larger; or the kernel dropped a packet it
# could not hand over. 10 ms: a few scheduler slices of a loaded machine (measured: on 2 cores at
# a load average of 7, one packet in a hundred held 35 ms where 20 ms was asked).
LATE_P99_MS = 10.0
LATE_P99_SHARE = 0.25
#: How often the delayer looks at the kernel's queue (s): the resolution of the unread wait and
#: of the peak backlog. One read of /proc/net/netfilter/nfnetlink_queue costs about 20 µs.
LOOK_S = 0.01
#: Flows remembered for their order before the delayer forgets those with nothing held.
FLOWS_KEPT = 4096
#: Verdicts sent in one datagram (28 bytes each: well within a netlink socket's buffer).
VERDICTS_A_SEND = 1024


def _f(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def read_stats(cell_dir: Path) -> dict[str, object] | None:
    """The delayer's stats of a cell (netdelay.json), or None when it did not run."""
    try:
        value = json.loads((cell_dir / "netdelay.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def row_columns(cell_dir: Path) -> dict[str, object]:
    """The row's network columns: the round-trip time really applied (twice the median hold), the
    99th-percentile one-way hold (the unread wait included), the 99th-percentile wait unread in
    the kernel's queue and the peak unread backlog, the packets dropped for NET_LOSS, and the
    packets the kernel dropped because the delayer fell behind. Empty (None) in a cell without a
    delayer."""
    stats = read_stats(cell_dir) or {}
    kernel = [stats.get("kernel_queue_dropped"), stats.get("kernel_user_dropped")]
    return {"net_rtt_applied_ms": stats.get("rtt_applied_ms"),
            "net_hold_p99_ms": stats.get("hold_p99_ms"),
            "net_unread_p99_ms": stats.get("unread_p99_ms"),
            "net_unread_peak": stats.get("unread_peak"),
            "net_held_peak_per_s": stats.get("held_peak_per_s"),
            "net_packets_lost": stats.get("lost"),
            "net_delayer_drops": None if None in kernel else int(sum(_f(k) for k in kernel))}


def behind(stats: dict[str, object] | None) -> str | None:
    """Why the delayer did not hold the packets as configured (None when it did or did not run):
    the kernel dropped packets it could not queue or hand over, or its 99th-percentile hold
    exceeded half the RTT plus half the jitter asked (the most a hold is drawn above the one-way
    delay: uniform within +/- half the jitter, Delayer._due) by more than max(LATE_P99_MS,
    LATE_P99_SHARE of the one-way delay)."""
    if not stats:
        return None
    drops = int(sum(_f(stats.get(k)) for k in ("kernel_queue_dropped", "kernel_user_dropped")))
    if drops > 0:
        return (f"the delayer fell behind: the kernel dropped {drops} packets it could not queue to it "
                "(the cell saw loss it did not ask for)")
    one_way = _f(stats.get("rtt_ms")) / 2
    spread = _f(stats.get("jitter_ms")) / 2
    p99 = stats.get("hold_p99_ms")
    if p99 is not None and _f(p99) > one_way + spread + max(LATE_P99_MS, LATE_P99_SHARE * one_way):
        asked = f"{one_way:g} ms" + (f" +/- {spread:g} ms" if spread else "")
        unread = ""
        if stats.get("unread_p99_ms") is not None:
            unread = (f"; {_f(stats.get('unread_p99_ms')):g} ms of it (p99) unread in the kernel's queue, "
                      f"at most {int(_f(stats.get('unread_peak')))} packets waiting unread")
        return (f"the delayer fell behind: its packets' 99th-percentile hold was {_f(p99):g} ms "
                f"where {asked} was asked (the cell saw more delay than NET_RTT_MS{unread})")
    return None


class Delayer:
    """One NFQUEUE queue, held and released (see the module's docstring)."""

    def __init__(self, queue: int, settings: NetSettings, seed: int | None = None) -> None:
        self.queue = queue
        self.settings = settings
        self.rng = random.Random(seed)
        self.stats = HoldStats()
        # The kernel's drops of the queue when the count began (restart).
        self.kernel_base: tuple[int, int] = (0, 0)
        # Held packets, a heap by due time: (due, id, queued, unread ms).
        self.waiting: list[tuple[float, int, float, float]] = []
        self.last_due = 0.0
        # Per flow (settings.per_flow), the due time of its last packet held.
        self.flow_due: dict[bytes, float] = {}
        # Looks at the kernel's queue (Delayer.look): (when, the last id queued then), oldest first.
        self.marks: deque[tuple[float, int]] = deque()
        self.last_read = 0
        self.next_look = 0.0
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE (root)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.sock.bind((0, 0))
        self.seq = 0
        self._config(nla(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, AF_INET)))
        copy = (FLOW_COPY, NFQNL_COPY_PACKET) if settings.per_flow else (0, NFQNL_COPY_META)
        self._config(nla(NFQA_CFG_PARAMS, struct.pack("!IB", *copy))
                     + nla(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN)))
        self.sock.setblocking(False)

    def _config(self, attrs: bytes) -> None:
        """One configuration message, acknowledged by the kernel before it returns (NLM_F_ACK):
        a refused bind (the queue is another process's: EBUSY) raises here, before the delayer
        says it is ready, instead of black-holing every packet of the cell. Packets that arrive
        meanwhile (the rules are in place) are put in line."""
        self.seq += 1
        self.sock.settimeout(ACK_TIMEOUT_S)
        self.sock.send(nfq_message(NFQNL_MSG_CONFIG, self.queue, attrs, seq=self.seq,
                                   flags=NLM_F_REQUEST | NLM_F_ACK))
        while True:
            try:
                data = self.sock.recv(65536)
            except socket.timeout as err:
                raise OSError(f"queue {self.queue}: the kernel did not answer a configuration "
                              f"message within {ACK_TIMEOUT_S:g} s") from err
            answer = acks(data).get(self.seq)
            self._take(packets(data)[0], time.monotonic())
            if answer is None:
                continue
            if answer:
                raise OSError(answer, f"queue {self.queue}: the kernel refused the delayer's "
                                      f"configuration: {os.strerror(answer)}")
            return

    def _due(self, now: float, flow: bytes = b"") -> float:
        """When a packet read at `now` is due: half the RTT later, plus a draw uniform within
        +/- half NET_JITTER_MS, and never before the packet of the same flow in front of it (one
        way of one connection keeps its order, as on a link; packets of other connections and of
        the other way do not wait for it). Without jitter every packet gets the same hold, so
        the order is kept across all (and one batch verdict releases them)."""
        delay = self.settings.one_way_s
        if not self.settings.per_flow:
            self.last_due = max(self.last_due, now + delay)
            return self.last_due
        delay += self.rng.uniform(-0.5, 0.5) * self.settings.jitter_ms / 1000.0
        due = max(self.flow_due.get(flow, 0.0), now + delay)
        if len(self.flow_due) >= FLOWS_KEPT:  # a flow whose last packet is due already orders nothing
            self.flow_due = {key: when for key, when in self.flow_due.items() if when > now}
        self.flow_due[flow] = due
        return due

    def look(self, now: float) -> None:
        """Every LOOK_S at most: the last packet id the kernel queued (queued_last), kept as a
        mark for _unread_ms, and the packets queued and not yet read counted into the peak
        backlog. Called between reads too, so a delayer that cannot drain its socket still looks."""
        if now < self.next_look:
            return
        self.next_look = now + LOOK_S
        try:
            with open("/proc/net/netfilter/nfnetlink_queue", encoding="ascii") as handle:
                last = queued_last(self.queue, handle.read())
        except OSError:
            return
        if last is None:
            return
        self.stats.backlog(max(0, last - self.last_read))
        if last > self.last_read and (not self.marks or self.marks[-1][1] < last):
            self.marks.append((now, last))

    def _unread_ms(self, packet_id: int, now: float) -> float:
        """How long the packet waited in the kernel's queue before it was read at `now`, at least:
        it was already queued at the first look whose last queued id was at or past it, so it
        waited from then on (0 when it came after the last look; LOOK_S is the resolution)."""
        while self.marks and self.marks[0][1] < packet_id:
            self.marks.popleft()
        return (now - self.marks[0][0]) * 1000.0 if self.marks else 0.0

    def receive(self) -> None:
        """Every packet the kernel has queued: dropped at once (NET_LOSS) or put in line."""
        while True:
            self.look(time.monotonic())
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError as err:  # ENOBUFS: the socket overflowed; the kernel counts them
                if err.errno == 105:
                    continue
                raise
            found, errors = packets(data)
            if any(errors):
                raise OSError(max(errors), os.strerror(max(errors)))
            self._take(found, time.monotonic())

    def _take(self, found: list[tuple[int, bytes]], now: float) -> None:
        """Packets (id, flow) read at `now`: dropped at once (NET_LOSS) or put in line."""
        for packet_id, flow in found:
            self.last_read = max(self.last_read, packet_id)
            if self.settings.loss > 0 and self.rng.random() < self.settings.loss:
                self.stats.lost += 1
                self.sock.send(verdict_message(self.queue, packet_id, NF_DROP, batch=False))
            else:
                unread_ms = self._unread_ms(packet_id, now)
                heapq.heappush(self.waiting, (self._due(now, flow), packet_id, now - unread_ms / 1000.0, unread_ms))

    def due_now(self, now: float) -> Iterator[int]:
        """The ids of the held packets due at `now`, taken off the heap and counted (their holds)."""
        target_ms = self.settings.one_way_s * 1000.0
        while self.waiting and self.waiting[0][0] <= now:
            _due, packet_id, queued, unread_ms = heapq.heappop(self.waiting)
            self.stats.record((now - queued) * 1000.0, target_ms, unread_ms, now)
            yield packet_id

    def release(self) -> float | None:
        """Accept every packet that is due; the seconds to the next due one. Without jitter they
        are due in id order, so one batch verdict (every packet up to the last id) releases them;
        with it, one verdict each, all in one datagram (netlink takes several messages in one)."""
        now = time.monotonic()
        due = list(self.due_now(now))
        if due and not self.settings.per_flow:
            self.sock.send(verdict_message(self.queue, due[-1], NF_ACCEPT, batch=True))
        elif due:
            for start in range(0, len(due), VERDICTS_A_SEND):
                self.sock.send(b"".join(verdict_message(self.queue, packet_id, NF_ACCEPT, batch=False)
                                        for packet_id in due[start:start + VERDICTS_A_SEND]))
        return max(0.0, self.waiting[0][0] - now) if self.waiting else None

    def run(self, stop: list[bool]) -> None:
        """Until stop[0]: wait for packets or the next due time, take, release."""
        while not stop[0]:
            self.look(time.monotonic())
            wait = self.release()
            readable, _, _ = select.select([self.sock], [], [], 0.2 if wait is None else wait)
            if readable:
                self.receive()
        while self.waiting:  # release what is held, so no packet is left queued
            time.sleep(max(0.0, self.waiting[0][0] - time.monotonic()))
            self.release()

    def kernel(self) -> tuple[int, int] | None:
        """This queue's drops as the namespace's kernel counts them (while still bound)."""
        try:
            with open("/proc/net/netfilter/nfnetlink_queue", encoding="ascii") as handle:
                return kernel_drops(self.queue, handle.read())
        except OSError:
            return None

    def restart(self) -> None:
        """Count from now on (the runner's SIGUSR1 once the cell's warm-up has passed): the
        packets held so far and the kernel's drops so far are not the load's."""
        self.stats = HoldStats()
        self.kernel_base = self.kernel() or (0, 0)

    def kernel_since(self) -> tuple[int, int] | None:
        """The queue's drops since the count began (kernel_since_base of kernel())."""
        return kernel_since_base(self.kernel(), self.kernel_base)


def kernel_since_base(now: tuple[int, int] | None, base: tuple[int, int]) -> tuple[int, int] | None:
    """The kernel's drop counters now less those when the count began; None when not read."""
    return None if now is None else (now[0] - base[0], now[1] - base[1])


def die_with_parent() -> None:
    """Ask the kernel for SIGTERM when the process that started this one dies (prctl
    PR_SET_PDEATHSIG): a runner killed with -9 leaves no delayer behind."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before the request
        os.kill(os.getpid(), signal.SIGTERM)


def net_delay_main(argv: list[str]) -> int:
    """netdelay QUEUE STATS_FILE: run until SIGTERM/SIGINT, then write the stats (JSON, with the
    delayer's own CPU seconds: held / cpu_s is the packets a second one core would hold); the
    knobs come from the environment (NET_RTT_MS, NET_JITTER_MS, NET_LOSS). SIGUSR1 starts the
    stats again (Delayer.restart) and says "restarted": the cell's warm-up is not its load."""
    queue, stats_file = int(argv[0]), argv[1]
    try:
        settings = validate(dict(os.environ))
    except NetDelayError as err:
        print(f"netdelay: {err}", file=sys.stderr)
        return 2
    die_with_parent()
    try:
        delayer = Delayer(queue, settings)
    except OSError as err:
        print(f"netdelay: {err.strerror if err.strerror else err}", file=sys.stderr)
        return 1
    stop = [False]

    def ask_stop(_sig: int, _frame: object) -> None:
        stop[0] = True

    def restart(_sig: int, _frame: object) -> None:
        delayer.restart()
        print("restarted", flush=True)

    signal.signal(signal.SIGTERM, ask_stop)
    signal.signal(signal.SIGINT, ask_stop)
    signal.signal(signal.SIGUSR1, restart)
    print("ready", flush=True)
    try:
        delayer.run(stop)
    finally:
        with open(stats_file + ".tmp", "w", encoding="utf-8") as out:
            json.dump({**delayer.stats.summary(settings, delayer.kernel_since()),
                       "cpu_s": round(time.process_time(), 3)}, out)
            out.write("\n")
        os.replace(stats_file + ".tmp", stats_file)
    return 0


def send_main(argv: list[str]) -> int:
    """send ADDR PORT RATE COUNT [FLOWS]: COUNT one-byte UDP datagrams to ADDR:PORT at RATE a
    second, in turn from FLOWS sockets (default 1: one flow; at most 1000) (bounded: at most COUNT,
    and at most COUNT/RATE + 5 s); prints the rate reached. For measuring the delayer's
    packets-a-second ceiling and its jitter over many flows (scripts/netdelay-bench.sh)."""
    addr, port, rate, count = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    flows = max(1, min(1000, int(argv[4]) if len(argv) > 4 else 1))
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(flows)]
    start = time.monotonic()
    deadline = start + count / rate + 5
    sent = 0
    for sent in range(1, count + 1):
        socks[sent % flows].sendto(b"x", (addr, port))
        if sent % 50 == 0:
            ahead = start + sent / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            elif time.monotonic() > deadline:
                break
    print(f"{sent}\t{sent / (time.monotonic() - start):.0f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "send":
        sys.exit(send_main(sys.argv[2:]))
    sys.exit(net_delay_main(sys.argv[1:]))
