#!/usr/bin/env python3
"""Samples of queues, connection states and Tomcat threads, at fixed times.

Usage:
  sampler.py run --out FILE --port P --mgmt-port M --interval S --max N [--client-port P]
                 [--proxy-port X] [--server-ns NS] [--client-ns NS | --client-host] [--k6-mark ARG] [--cost FILE]
                 [--k6-trace FILE] [--target-mark ARG]
  sampler.py probe --port P [--mgmt-port M] [--proxy-port X]

run: append one row to FILE (and print it on stdout) at start + k x interval,
k = 0, 1, ..., N - 1, until N rows or SIGTERM. The times never drift: a tick
that comes late is taken late, the next one is due on the grid again, and a
tick missed entirely is skipped (counted in the cost file). Each namespace
is read by the sampler itself: it enters the namespace for the moment of a
tick (setns(2) on /run/netns/NS, then back to its own), opens its sockets
there (sock_diag's, the actuator's kept-alive connection: a socket stays in
the namespace it was made in), and starts no process for it; the k6 process
(the one whose arguments include --k6-mark) is read from /proc. On exit, the
cost file gets the sampler's own CPU time as JSON.

With --k6-trace, a thread of its own appends every TRACE_S (50 ms) "epoch_s
k6_ticks busy_ticks all_ticks set": k6's CPU ticks (utime + stime of its
processes, /proc/PID/stat, CLK_TCK a second), the machine's busy and total
ticks (/proc/stat's cpu line) and which set of k6 processes was read (a
count that goes up when they change: looked for every second, for
instances that start late), so the CPU k6 and the machine used while a burst
was released (a quarter of a second) can be read back (ltsuite.generator);
once-a-second rows cannot see it. With --target-mark, each line has a sixth
column: the CPU ticks of the target's JVM (the java process whose arguments
include ARG, the run's -Dltsuite.run_id=), empty while none is found, so a
burst's CPU splits into k6's, the target's and the rest of the machine's
(ltsuite.tlsburst). At most --max x --interval / TRACE_S lines.
The thread reads /proc only: the namespace a tick enters is the main
thread's alone (setns(2) changes the calling thread's).

probe: the same reading in this process's own namespace, by hand: print
"ready", then for each line read from stdin answer one tab-separated line, until EOF:
  listen_recvq listen_sendq estab syn_recv time_wait threads_busy connections
  proxy_upstream_time_wait proxy_client_time_wait
for sockets whose local or peer port is P (the listener's queues: accept
queue length and effective backlog; empty without a listener), with the
Tomcat metrics from the actuator on 127.0.0.1:M (empty without M or answer).
With --proxy-port X (nginx in this namespace, listening on X) TIME-WAIT is
counted per end: time_wait the ends on P (the target's), proxy_upstream_time_wait
the ends towards P (nginx's), proxy_client_time_wait the ends on X (nginx's
towards the users); without it the last two are empty.
Sockets are read with sock_diag netlink, as ss does, without a process per tick.
"""
import argparse
import contextlib
import ctypes
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

COLUMNS = ("ts", "listen_recvq", "listen_sendq", "server_estab", "server_syn_recv", "server_time_wait",
           "client_estab", "client_time_wait", "tomcat_threads_busy", "tomcat_connections",
           "k6_cpu_pct", "k6_rss_mb", "proxy_upstream_time_wait", "proxy_client_time_wait")

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_ESTABLISHED, TCP_SYN_RECV, TCP_TIME_WAIT, TCP_LISTEN, TCP_NEW_SYN_RECV = 1, 3, 6, 10, 12
CLONE_NEWNET = 0x40000000


class Stop(Exception):
    """SIGTERM: end at once, mid-pause or mid-tick."""


def on_term(_signum, _frame):
    raise Stop()


# --- probe: inside one namespace ---------------------------------------------------------------

def tcp_sockets(family):
    """(state, local port, peer port, recv-q, send-q) of every TCP socket of a family."""
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + bytes(48)
    header = struct.pack("=LHHLL", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as sock:
        sock.sendall(header + request)
        while True:
            data = sock.recv(1 << 17)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=LH", data, offset)
                if kind == NLMSG_DONE:
                    return
                if kind == NLMSG_ERROR or length < 16:
                    raise OSError("sock_diag answered with an error")
                body = offset + 16
                state = data[body + 1]
                local_port, peer_port = struct.unpack_from("!HH", data, body + 4)
                recv_q, send_q = struct.unpack_from("=LL", data, body + 56)
                yield state, local_port, peer_port, recv_q, send_q
                offset += (length + 3) & ~3


def socket_counts(port, proxy_port=None):
    """socket_count_fields of this namespace's TCP sockets (sock_diag)."""
    def dump():
        for family in (socket.AF_INET, socket.AF_INET6):
            yield from tcp_sockets(family)
    return socket_count_fields(dump(), port, proxy_port)


def socket_count_fields(sockets, port, proxy_port=None):
    """[recv-q, send-q, estab, syn-recv, time-wait, proxy upstream time-wait, proxy client
    time-wait] of SOCKETS ((state, local port, peer port, recv-q, send-q) each) on PORT ("" queues
    without a listener, "" proxy figures without PROXY_PORT).

    With a listener on PORT in this namespace, established and half-open connections are its own
    (local port PORT): a proxy beside it (nginx in the server's namespace) connects to PORT too, and
    its ends (peer port PORT) would count each connection twice. Without a listener (an external
    target seen from the users' side) they are the connections towards PORT.

    TIME-WAIT lands on the end that sent its FIN first (RFC 793's active close), so it is counted
    by end. With PROXY_PORT (nginx beside the listener, listening on PROXY_PORT): time-wait is the
    ends whose local port is PORT (the target's), the proxy's upstream figure the ends whose peer
    port is PORT (nginx's, towards the target), its client figure the ends whose local port is
    PROXY_PORT (nginx's, towards the users). Without it time-wait counts both ends on PORT: in
    the server's namespace only the target's exist, on the users' side only theirs."""
    recv_q = send_q = ""
    local = [0, 0]
    peer = [0, 0]
    time_wait = {"local": 0, "peer": 0, "proxy": 0}
    for state, local_port, peer_port, rq, wq in sockets:
        if state == TCP_LISTEN:
            if local_port == port:
                recv_q, send_q = rq, wq
            continue
        if proxy_port is not None and local_port == proxy_port and state == TCP_TIME_WAIT:
            time_wait["proxy"] += 1
            continue
        if local_port != port and peer_port != port:
            continue
        side = local if local_port == port else peer
        if state == TCP_ESTABLISHED:
            side[0] += 1
        elif state in (TCP_SYN_RECV, TCP_NEW_SYN_RECV):
            side[1] += 1
        elif state == TCP_TIME_WAIT:
            time_wait["local" if local_port == port else "peer"] += 1
    estab, syn_recv = local if recv_q != "" else [local[0] + peer[0], local[1] + peer[1]]
    if proxy_port is None:
        return [recv_q, send_q, estab, syn_recv, time_wait["local"] + time_wait["peer"], "", ""]
    return [recv_q, send_q, estab, syn_recv, time_wait["local"], time_wait["peer"], time_wait["proxy"]]


class Actuator:
    """Tomcat metrics over one kept-alive connection to the management port."""

    NAMES = ("tomcat.threads.busy", "tomcat.connections.current")

    def __init__(self, port):
        self.port = port
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def values(self):
        if not self.port:
            return ["", ""]
        out = []
        for name in self.NAMES:
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                self.conn.request("GET", "/actuator/metrics/" + name)
                answer = self.conn.getresponse()
                body = answer.read()
                value = json.loads(body)["measurements"][0]["value"] if answer.status == 200 else ""
                # Tomcat answers -1 for a figure its executor does not keep (virtual
                # threads: no pool, AbstractEndpoint.getCurrentThreadsBusy()): unmeasured.
                if isinstance(value, (int, float)) and value < 0:
                    value = ""
            except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                value = ""
            out.append(number(value))
        return out


def number(value):
    """A metric as the table writes it: 3.0 as 3, no value as empty."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    return str(int(value)) if float(value).is_integer() else repr(value)


def probe(args):
    reader = Probe("", args.port, args.mgmt_port, args.proxy_port)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for _ in sys.stdin:
        sys.stdout.write("\t".join(str(field) for field in reader.ask()) + "\n")
        sys.stdout.flush()
    reader.close()
    return 0


# --- run: on the host ------------------------------------------------------------------------------

_LIBC = []


def _setns(fd):
    """setns(2) into the network namespace FD (this thread; the sampler has one). libc is
    opened once, at the first call, not at each of a tick's two calls a namespace."""
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    if _LIBC[0].setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Namespace:
    """A named network namespace (ip netns: /run/netns/NAME) this process enters for a moment;
    "" is its own, never left."""

    def __init__(self, name):
        self.fd = self.home = None
        if name:
            self.fd = os.open("/run/netns/" + name, os.O_RDONLY | os.O_CLOEXEC)
            self.home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)

    @contextlib.contextmanager
    def entered(self):
        """Inside the namespace, back in this process's own after (an error included)."""
        if self.fd is None:
            yield
            return
        _setns(self.fd)
        try:
            yield
        finally:
            _setns(self.home)

    def close(self):
        for fd in (self.fd, self.home):
            if fd is not None:
                os.close(fd)
        self.fd = self.home = None


class Probe:
    """One namespace's figures (or this process's own, namespace ""), read in this process at
    each tick: socket_counts and the actuator's, the nine fields of a probe line."""

    def __init__(self, namespace, port, mgmt_port, proxy_port=None):
        self.namespace = Namespace(namespace)
        self.port, self.proxy_port = port, proxy_port
        self.actuator = Actuator(mgmt_port)

    def ask(self):
        with self.namespace.entered():
            try:
                counts = socket_counts(self.port, self.proxy_port)
            except OSError:
                counts = [""] * 7
            values = self.actuator.values()
        return counts[:5] + values + counts[5:]

    def close(self):
        self.actuator.close()
        self.namespace.close()


class K6Usage:
    """CPU percent (over the last tick) and resident MB of the k6 processes marked by an argument,
    added up (K6_INSTANCES runs several); with comm, the processes of that name instead (the
    target's java)."""

    RESCAN_TICKS = 5

    def __init__(self, mark, comm="k6"):
        self.mark = mark.encode()
        self.comm = comm
        self.pids = ()
        self.previous = None
        self.ticks = 0
        self.ticks_per_s = os.sysconf("SC_CLK_TCK")

    def find(self):
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/comm" % entry) as comm:
                    if comm.read().strip() != self.comm:
                        continue
                with open("/proc/%s/cmdline" % entry, "rb") as cmdline:
                    if self.mark in cmdline.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
        return tuple(sorted(found))

    @staticmethod
    def usage(pid):
        """(cpu ticks, resident kB) of one process; OSError once it is gone."""
        with open("/proc/%d/stat" % pid) as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        rss_kb = 0
        with open("/proc/%d/status" % pid) as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
        return int(fields[11]) + int(fields[12]), rss_kb

    def read(self, now):
        if not self.mark:
            return ["", ""]
        # Look again when nothing is known, and every few ticks for instances that started late.
        if not self.pids or self.ticks % self.RESCAN_TICKS == 0:
            pids = self.find()
            if pids != self.pids:
                self.pids, self.previous = pids, None
        self.ticks += 1
        if not self.pids:
            return ["", ""]
        try:
            totals = [self.usage(pid) for pid in self.pids]
        except (OSError, IndexError, ValueError):
            self.pids, self.previous = (), None  # one ended: the next tick looks again
            return ["", ""]
        ticks = sum(t for t, _ in totals)
        rss = "%.0f" % (sum(kb for _, kb in totals) / 1024)
        cpu = ""
        if self.previous and now > self.previous[1]:
            cpu = "%.1f" % ((ticks - self.previous[0]) / self.ticks_per_s / (now - self.previous[1]) * 100)
        self.previous = (ticks, now)
        return [cpu, rss]


#: The k6 trace's step (s): a burst's release of 250 ms spans five steps.
TRACE_S = 0.05


def machine_ticks():
    """(busy, all) CPU ticks of the machine (/proc/stat's first line: all but idle and iowait busy)."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


def target_ticks(target, k):
    """The target JVM's CPU ticks for a trace line ("" while it is not found or once it ended): looked
    for every 5 steps until found."""
    if target is None:
        return None
    if not target.pids and k % 5 == 0:
        target.pids = target.find()
    try:
        return str(sum(target.usage(pid)[0] for pid in target.pids)) if target.pids else ""
    except (OSError, IndexError, ValueError):
        target.pids = ()
        return ""


def k6_trace(path, mark, lines, stop, target_mark=None):
    """Append one line every TRACE_S until stop is set or LINES lines (see the module's docstring):
    the k6 processes are looked for every 5 steps until found, and again when one ends; with
    target_mark, the target's JVM too (target_ticks)."""
    usage = K6Usage(mark)
    target = K6Usage(target_mark, "java") if target_mark else None
    start = time.monotonic()
    generation = 0
    with open(path, "a") as out:
        for k in range(lines):
            late = time.monotonic() - (start + k * TRACE_S)
            if late >= TRACE_S:
                continue  # a step taken too late is skipped, as the sampler's ticks are
            if stop.wait(max(0.0, -late)):
                return
            if (not usage.pids and k % 5 == 0) or k % 20 == 0:
                found = usage.find()
                if found != usage.pids:
                    usage.pids, generation = found, generation + 1
            if not usage.pids:
                continue
            try:
                ticks = sum(usage.usage(pid)[0] for pid in usage.pids)
                busy, total = machine_ticks()
            except (OSError, IndexError, ValueError):
                usage.pids = ()
                continue
            jvm = target_ticks(target, k)
            out.write("%.4f\t%d\t%d\t%d\t%d%s\n" % (time.time(), ticks, busy, total, generation,
                                                  "" if jvm is None else "\t" + jvm))
            out.flush()


def row(ts, server, client, k6):
    """One samples line (see COLUMNS) from the probes' answers (None: that side is absent)."""
    server = server or ["", "", 0, 0, 0, "", "", "", ""]
    client = client or ["", "", 0, 0, 0, "", "", "", ""]
    fields = ["%.3f" % ts, server[0], server[1], server[2], server[3], server[4],
              client[2], client[4], server[5], server[6]] + k6 + [server[7], server[8]]
    return "\t".join(str(field) for field in fields)


def run(args):
    start = time.monotonic()
    cpu_start = os.times()
    probes = {}
    taken = missed = 0
    trace_stop = threading.Event()
    tracer = None
    try:
        # The trace first: the probe processes' start took 1.3 s on a busy machine, past a burst's
        # release (they are gone, and the trace still starts before anything else).
        if args.k6_trace and args.k6_mark:
            tracer = threading.Thread(target=k6_trace, daemon=True, args=(
                args.k6_trace, args.k6_mark, int(args.max * args.interval / TRACE_S) + 100, trace_stop,
                args.target_mark or None))
            tracer.start()
        if args.server_ns:
            probes["server"] = Probe(args.server_ns, args.port, args.mgmt_port, args.proxy_port)
        if args.client_ns or args.client_host:
            probes["client"] = Probe(args.client_ns, args.client_port or args.port, None)
        start = time.monotonic()
        k6 = K6Usage(args.k6_mark)
        with open(args.out, "a") as out:
            for k in range(args.max):
                due = start + k * args.interval
                late = time.monotonic() - due
                if late >= args.interval:
                    missed += 1  # this tick's time has passed already: the next is on the grid
                    continue
                if late < 0:
                    time.sleep(-late)
                ts = time.time()
                answers = {side: p.ask() for side, p in probes.items()}
                line = row(ts, answers.get("server"), answers.get("client"), k6.read(time.monotonic()))
                out.write(line + "\n")
                out.flush()
                taken += 1
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
    except (Stop, BrokenPipeError):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        trace_stop.set()
        if tracer is not None:
            tracer.join(2)
        for p in probes.values():
            p.close()
        if args.cost:
            used = os.times()
            cpu = sum(used[:4]) - sum(cpu_start[:4])
            wall = time.monotonic() - start
            with open(args.cost, "w") as cost:
                json.dump({"samples": taken, "missed_ticks": missed, "interval_s": args.interval,
                           "ticks": taken + missed,
                           "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
                           "cpu_pct": round(cpu / wall * 100, 2) if wall > 0 else None,
                           "probes": sorted(probes)}, cost)
                cost.write("\n")
    return 0


def port_or_none(value):
    """A port number; empty means none."""
    return int(value) if value else None


def main(argv):
    parser = argparse.ArgumentParser(prog="sampler.py")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("--out", required=True)
    p_run.add_argument("--port", type=int, required=True)
    # The port the users load when it is not the server's (nginx in front: PROXY_PORT).
    p_run.add_argument("--client-port", type=int)
    # nginx's port in the server namespace (PROXY=nginx): TIME-WAIT counted per end there.
    p_run.add_argument("--proxy-port", type=port_or_none)
    p_run.add_argument("--mgmt-port", type=port_or_none)
    p_run.add_argument("--interval", type=float, required=True)
    p_run.add_argument("--max", type=int, required=True)
    p_run.add_argument("--server-ns", default="")
    p_run.add_argument("--client-ns", default="")
    p_run.add_argument("--client-host", action="store_true")
    p_run.add_argument("--k6-mark", default="")
    p_run.add_argument("--cost")
    p_run.add_argument("--k6-trace")
    p_run.add_argument("--target-mark", default="")
    p_probe = sub.add_parser("probe")
    p_probe.add_argument("--port", type=int, required=True)
    p_probe.add_argument("--mgmt-port", type=port_or_none)
    p_probe.add_argument("--proxy-port", type=port_or_none)
    args = parser.parse_args(argv[1:])
    if args.command == "probe":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return probe(args)
    if args.interval <= 0 or args.max < 0:
        parser.error("--interval must be > 0 and --max >= 0")
    signal.signal(signal.SIGTERM, on_term)
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
