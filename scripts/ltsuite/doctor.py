"""The doctor's findings: a live host's readings (scripts/doctor.sh records them) read with the
suite's rules, and the lab matrix that reproduces the host.

  python3 -m ltsuite.doctor report READINGS_DIR OUT_DIR   writes doctor.json, doctor.md and
                                                          reproduce.matrix, prints the summary
  python3 -m ltsuite.doctor configprops BASE_URL         prints the server properties the doctor
                                                          reads (kept_configprops), nothing else
  python3 -m ltsuite.doctor get URL                      prints the JSON an actuator answers
  python3 -m ltsuite.doctor metrics BASE_URL SECONDS      samples Tomcat's metrics every second

Only the standard library: scripts/doctor.sh and scripts/ltsuite/ are all a host needs beside
bash, iproute2 and python3. Nothing here writes outside OUT_DIR (doctor.sh runs Python with -B,
so no bytecode lands beside the scripts either).

The readings directory (one file per source, as the tools print it):
  meta.tsv           key<TAB>value: port, window_s, kernel, host, started, elapsed_ms (between the
                     two nstat snapshots)
  sysctls.tsv        sysctl<TAB>value
  ss-listen.txt      `ss -ltnH` samples over the window, each after a line "# sample N"
  nstat-before.txt   `nstat -asz` as the window starts, nstat-after.txt as it ends
  sockets.txt        `ss -tanH state time-wait state syn-recv` as the window ends
  process.tsv        key<TAB>value of the listening process: pid, comm, nofile, open_files
                     (empty when /proc/PID/fd could not be listed: unmeasured, not 0)
  configprops.json   the server properties the doctor reads (kept_configprops: accept-count,
                     max-connections, threads.max) of the actuator's /configprops/server, or of
                     its whole /configprops, read in memory; absent when neither answered them
  metrics.tsv        sample<TAB>metric<TAB>value from the actuator's /metrics over the window
"""
from __future__ import annotations

import copy
import json
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .cellfiles import read_json, read_nstat, read_text
from .counters import deltas
from .rules import listen_backlog, server_capacity
from .sysctl_names import CLIENT, SERVER

#: "Near" a limit: at or past this share of it.
NEAR = 0.8
#: The sysctls the doctor reads, in its reports' order: every one a matrix may set, on either side
#: (env/sysctls.tsv, through sysctl_names), once.
SYSCTLS = tuple(dict.fromkeys(name for _, name in SERVER + CLIENT))
#: The counters a finding reads (nstat's names).
COUNTERS = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPReqQFullDrop",
            "TcpExtSyncookiesSent", "TcpExtTCPReqQFullDoCookies", "TcpExtSyncookiesRecv",
            "TcpExtSyncookiesFailed")
#: The lab's knob for each sysctl of the host the server side reproduces (env/sysctls.tsv).
MATRIX_SYSCTLS = SERVER


@dataclass
class Listener:
    """One listening socket of the port: `ss -ltn` shows its backlog as Send-Q and its accept
    queue as Recv-Q (Linux net/ipv4/tcp_diag.c, tcp_diag_get_info())."""
    addr: str
    port: int
    backlog: int
    queue_now: int
    queue_peak: int
    #: The n-th listener of this address and port in ss's order (1: the first): several sockets
    #: listen on one address and port with SO_REUSEPORT, each with its own backlog and queue.
    nth: int = 1


@dataclass
class Tomcat:
    """Tomcat's settings (/actuator/configprops, the "server" properties) and the peaks of its
    metrics over the window (/actuator/metrics); None where the actuator did not say."""
    accept_count: int | None = None
    max_connections: int | None = None
    max_threads: int | None = None
    threads_busy_peak: float | None = None
    threads_max: float | None = None
    connections_peak: float | None = None
    #: http.server.requests over the window: requests served and their mean time (ms).
    requests: int | None = None
    service_ms: float | None = None
    #: "sample N: NAME" of every metric a sample left unread at its deadline (sample_metrics).
    skipped: list[str] = field(default_factory=list)

    @property
    def virtual_threads(self) -> bool | None:
        """Whether Tomcat serves on virtual threads: tomcat.threads.config.max is Tomcat's
        maxThreads, -1 when its executor is not a thread pool (AbstractEndpoint.getMaxThreads();
        Spring Boot's virtual-thread executor), the pool's size otherwise; None unmeasured."""
        return None if self.threads_max is None else self.threads_max < 0


@dataclass
class Readings:
    """Everything the doctor read on the host."""
    port: int
    window_s: float
    elapsed_s: float
    kernel: str
    host: str
    started: str
    sysctls: dict[str, str]
    listeners: list[Listener]
    counters: dict[str, int]
    since_boot: dict[str, int]
    time_wait: int
    syn_recv: int
    time_wait_by_peer: dict[str, int]
    on_port: dict[str, int]
    process: dict[str, str]
    tomcat: Tomcat | None
    #: The rise of each counter of nstat-samples.txt from one sample to the next (one a second).
    steps: dict[str, list[int]] = field(default_factory=dict)
    #: The rise of ListenOverflows from one sample of overflows.tsv to the next (one every
    #: FINE_S); None for a reading without the file (written before it existed).
    fine_overflows: list[int] | None = None


@dataclass
class Finding:
    """One thing the doctor found: an id, a severity (critical, warning, info), one sentence and
    the numbers it rests on."""
    id: str
    severity: str
    text: str
    evidence: dict[str, Any] = field(default_factory=dict)


def _tsv(path: Path) -> dict[str, str]:
    """A key<TAB>value file as a dict (missing file: empty)."""
    out = {}
    for line in (read_text(path) or "").splitlines():
        key, sep, value = line.partition("\t")
        if sep and key:
            out[key] = value.strip()
    return out


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).split()[0])
    except (TypeError, ValueError, IndexError):
        return None


def _port_of(endpoint: str) -> int | None:
    return _int(endpoint.rsplit(":", 1)[-1]) if ":" in endpoint else None


def parse_listeners(text: str, port: int) -> list[Listener]:
    """The port's listeners from `ss -ltnH` samples (each after a line "# sample N"): the backlog
    of the last sample, the queue now (last sample) and its peak (every sample). A listener is
    its address as ss prints it (127.0.0.1, [::1], [::ffff:198.18.0.1] of a dual-stack socket
    that took an IPv4 address, *) and, where several sockets listen on one address and port
    (SO_REUSEPORT), its place among them in the sample (ss lists them in the kernel's listening
    hash's order, the same from one sample to the next while none starts or ends)."""
    found: dict[tuple[str, int], Listener] = {}
    seen: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("# sample"):
            seen = {}
            continue
        fields = line.split()
        if len(fields) < 5 or fields[0] != "LISTEN" or _port_of(fields[3]) != port:
            continue
        recv_q, send_q = int(fields[1]), int(fields[2])
        addr = fields[3].rsplit(":", 1)[0]
        seen[addr] = seen.get(addr, 0) + 1
        old = found.get((addr, seen[addr]))
        peak = max(recv_q, old.queue_peak) if old else recv_q
        found[(addr, seen[addr])] = Listener(addr, port, send_q, recv_q, peak, seen[addr])
    return list(found.values())


def listener_name(lst: Listener) -> str:
    """address:port, with "#N" for the N-th of several sockets on one address and port."""
    return f"{lst.addr}:{lst.port}" + (f"#{lst.nth}" if lst.nth > 1 else "")


def parse_sockets(text: str, port_range: tuple[int, int] | None) -> tuple[int, int, dict[str, int]]:
    """TIME-WAIT and SYN-RECV sockets (`ss -tanH state time-wait state syn-recv`), and the
    TIME-WAIT sockets from an ephemeral local port per peer (address:port): each holds one of
    the port range's ports towards that peer (Linux __inet_hash_connect())."""
    time_wait = syn_recv = 0
    by_peer: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        state, local, peer = fields[0], fields[3], fields[4]
        if state == "SYN-RECV":
            syn_recv += 1
        elif state == "TIME-WAIT":
            time_wait += 1
            local_port = _port_of(local)
            if port_range and local_port is not None and port_range[0] <= local_port <= port_range[1]:
                by_peer[peer] = by_peer.get(peer, 0) + 1
    return time_wait, syn_recv, by_peer


def count_on_port(text: str, port: int) -> dict[str, int]:
    """TIME-WAIT and SYN-RECV sockets whose local port is the listener's."""
    out = {"TIME-WAIT": 0, "SYN-RECV": 0}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] in out and _port_of(fields[3]) == port:
            out[fields[0]] += 1
    return {"time_wait": out["TIME-WAIT"], "syn_recv": out["SYN-RECV"]}


def _prop(props: dict[str, Any], *path: str) -> int | None:
    value: Any = props
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _camel(word: str) -> str:
    """A prefix's word as its properties' JSON names it: "max-connections" -> "maxConnections"."""
    head, *rest = word.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Nested dicts merged into `into` (a value of `more` wins over one that is not a dict)."""
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _server_props(configprops: Any) -> dict[str, Any] | None:
    """The "server" properties anywhere in /actuator/configprops, as one tree: every bean whose
    prefix is "server" or starts with "server." (Spring Boot 2.7 and 3 keep Tomcat's under
    "server", ServerProperties.Tomcat; Spring Boot 4 in a bean of its own, "server.tomcat",
    TomcatServerProperties: its properties go under "tomcat"), as scripts/lib/connector.jq
    reads them. None when there is no such bean."""
    stack, beans = [configprops], []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            prefix = item.get("prefix")
            if (isinstance(prefix, str) and isinstance(item.get("properties"), dict)
                    and (prefix == "server" or prefix.startswith("server."))):
                beans.append((prefix, item["properties"]))
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    if not beans:
        return None
    out: dict[str, Any] = {}
    for prefix, properties in sorted(beans, key=lambda bean: bean[0].count(".")):
        tree: dict[str, Any] = copy.deepcopy(properties)
        for word in reversed(prefix.split(".")[1:]):
            tree = {_camel(word): tree}
        _merge(out, tree)
    return out


#: The server properties the doctor reads (their path under "server"), the only ones it writes.
USED_PROPERTIES = (("tomcat", "acceptCount"), ("tomcat", "maxConnections"), ("tomcat", "threads", "max"))
#: How Spring Boot shows a value it does not show (management.endpoint.configprops.show-values).
MASKED = "******"


def kept_configprops(configprops: Any) -> dict[str, Any] | None:
    """What readings/configprops.json holds of the actuator's answer: the USED_PROPERTIES of the
    server properties (_server_props) and nothing else, as {"prefix": "server", "properties":
    {...}}; a value Spring Boot masked stays masked (unknown, not a number). Every other
    property, a key-store password under "server.ssl" or a datasource's password shown by
    show-values=always, stays in memory. None without server properties."""
    props = _server_props(configprops)
    if props is None:
        return None
    kept: dict[str, Any] = {}
    for path in USED_PROPERTIES:
        value: Any = props
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if (isinstance(value, int) and not isinstance(value, bool)) or value == MASKED:
            node = kept
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
    return {"prefix": "server", "properties": kept}


def read_configprops(base: str) -> dict[str, Any] | None:
    """kept_configprops of the actuator at `base`: /configprops/server first (the beans whose
    prefix starts with "server", Spring Boot 2.6 and later), else the whole /configprops, read
    in memory only. None when neither answers server properties."""
    for url in (f"{base.rstrip('/')}/configprops/server", f"{base.rstrip('/')}/configprops"):
        try:
            kept = kept_configprops(json.loads(get(url)))
        except (OSError, ValueError):
            continue
        if kept is not None:
            return kept
    return None


def parse_tomcat(configprops: Any, metrics_text: str | None) -> Tomcat | None:
    """Tomcat from the actuator's answers; None when it gave neither."""
    props = _server_props(configprops)
    peaks: dict[str, float] = {}
    totals: dict[str, list[float]] = {}
    skipped: list[str] = []
    for line in (metrics_text or "").splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        if fields[1] == "skipped":
            skipped.append(f"sample {fields[0]}: {fields[2]}")
            continue
        try:
            value = float(fields[2])
        except ValueError:
            continue
        if fields[1].startswith(REQUESTS + ":"):
            totals.setdefault(fields[1].split(":", 1)[1], []).append(value)
        else:
            peaks[fields[1]] = max(value, peaks.get(fields[1], value))
    if props is None and not peaks and not totals:
        return None
    props = props or {}
    count, total = totals.get("COUNT", []), totals.get("TOTAL_TIME", [])
    requests = int(count[-1] - count[0]) if len(count) >= 2 else None
    service_ms = (round(1000 * (total[-1] - total[0]) / requests, 1)
                  if requests and len(total) >= 2 else None)
    return Tomcat(
        accept_count=_prop(props, "tomcat", "acceptCount"),
        max_connections=_prop(props, "tomcat", "maxConnections"),
        max_threads=_prop(props, "tomcat", "threads", "max"),
        threads_busy_peak=peaks.get("tomcat.threads.busy"),
        threads_max=peaks.get("tomcat.threads.config.max"),
        connections_peak=peaks.get("tomcat.connections.current"),
        requests=requests, service_ms=service_ms, skipped=skipped,
    )


def parse_steps(text: str) -> dict[str, list[int]]:
    """The rise of each counter from one `nstat -asz NAME...` sample to the next, the samples
    each after a line "# sample N" (nstat-samples.txt): one list a counter, a rise a second."""
    samples: list[dict[str, int]] = []
    for line in text.splitlines():
        if line.startswith("# sample"):
            samples.append({})
            continue
        fields = line.split()
        if samples and len(fields) >= 2 and fields[1].isdigit():
            samples[-1][fields[0]] = int(fields[1])
    names = sorted({name for sample in samples for name in sample})
    return {name: [b[name] - a[name] for a, b in zip(samples, samples[1:]) if name in a and name in b]
            for name in names}


def parse_fine(text: str | None) -> list[int] | None:
    """The rise of ListenOverflows from one line "N<TAB>VALUE" of overflows.tsv to the next
    (sample_overflows: one every FINE_S); None without the file."""
    if text is None:
        return None
    values = [int(fields[1]) for fields in (line.split("\t") for line in text.splitlines())
              if len(fields) == 2 and fields[1].isdigit()]
    return [b - a for a, b in zip(values, values[1:])]


def read_readings(directory: Path) -> Readings:
    """The readings scripts/doctor.sh recorded in `directory`."""
    meta = _tsv(directory / "meta.tsv")
    sysctls = _tsv(directory / "sysctls.tsv")
    port = _int(meta.get("port"))
    if port is None:
        raise ValueError(f"{directory / 'meta.tsv'}: no port")
    before = read_nstat(directory / "nstat-before.txt") or {}
    after = read_nstat(directory / "nstat-after.txt") or {}
    low_high = (sysctls.get("net.ipv4.ip_local_port_range") or "").split()
    port_range = (int(low_high[0]), int(low_high[1])) if len(low_high) == 2 else None
    sockets = read_text(directory / "sockets.txt") or ""
    time_wait, syn_recv, by_peer = parse_sockets(sockets, port_range)
    return Readings(
        port=port, window_s=float(meta.get("window_s") or 0),
        elapsed_s=round(float(meta.get("elapsed_ms") or 0) / 1000, 1) or float(meta.get("window_s") or 0),
        kernel=meta.get("kernel", ""),
        host=meta.get("host", ""), started=meta.get("started", ""), sysctls=sysctls,
        listeners=parse_listeners(read_text(directory / "ss-listen.txt") or "", port),
        counters=dict(deltas(before, after)) if before and after else {},
        since_boot={name: after[name] for name in COUNTERS if name in after},
        time_wait=time_wait, syn_recv=syn_recv, time_wait_by_peer=by_peer,
        on_port=count_on_port(sockets, port),
        process=_tsv(directory / "process.tsv"),
        tomcat=parse_tomcat(read_json(directory / "configprops.json"), read_text(directory / "metrics.tsv")),
        steps=parse_steps(read_text(directory / "nstat-samples.txt") or ""),
        fine_overflows=parse_fine(read_text(directory / "overflows.tsv")),
    )


def _rate(count: int, window_s: float) -> float:
    return round(count / window_s, 1) if window_s > 0 else float(count)


def _observed_backlog(r: Readings) -> int | None:
    """The backlog the port's listeners hold now, as ss shows it (Send-Q of the LISTEN socket:
    sk_max_ack_backlog, set by listen() when the listener started); the largest when there are
    several; None without a listener."""
    return max((lst.backlog for lst in r.listeners), default=None)


def _held(max_connections: int, backlog: int) -> int:
    """rules.server_capacity with the listener's own backlog in place of min(accept-count,
    somaxconn): Tomcat accepts max-connections and the accept queue holds backlog + 1
    (sk_acceptq_is_full(), include/net/sock.h). The backlog is the one listen() gave when the
    listener started; a somaxconn changed since then does not change it."""
    return max_connections + backlog + 1


def backlog_findings(r: Readings) -> list[Finding]:
    """backlog-capped-by-somaxconn: the listener's backlog is min(accept-count, somaxconn)
    (rules.listen_backlog), so a backlog equal to somaxconn was capped, or asked for exactly it;
    with the actuator, an accept-count above somaxconn says which.
    backlog-capped-at-start: with the actuator, a backlog below min(accept-count, somaxconn
    now): listen() set it when the listener started (Linux net/socket.c, __sys_listen(), reads
    somaxconn then and only then), so somaxconn was lower when Tomcat started, or listen() was
    asked for less than accept-count; raising somaxconn since changes nothing until Tomcat
    restarts and listens again."""
    somaxconn = _int(r.sysctls.get("net.core.somaxconn"))
    accept_count = r.tomcat.accept_count if r.tomcat else None
    max_connections = r.tomcat.max_connections if r.tomcat else None
    out = []
    for lst in r.listeners:
        if somaxconn is not None and accept_count is not None and lst.backlog < listen_backlog(accept_count, somaxconn):
            rule = listen_backlog(accept_count, somaxconn)
            evidence: dict[str, Any] = {"listener": listener_name(lst), "backlog": lst.backlog,
                                        "accept_count": accept_count, "somaxconn": somaxconn, "backlog_rule": rule}
            text = (f"your listener on :{lst.port} has a backlog of {lst.backlog}, below the {rule} = "
                    f"min(accept-count {accept_count}, net.core.somaxconn {somaxconn}) a listen() gets now: it "
                    f"keeps the backlog it got when it started (somaxconn was lower then, or listen() asked "
                    f"for less)")
            if max_connections is not None:
                evidence["server_capacity"] = _held(max_connections, lst.backlog)
                evidence["server_capacity_after_restart"] = server_capacity(max_connections, accept_count, somaxconn)
                text += (f", so the server holds {max_connections} + {lst.backlog} + 1 = "
                         f"{evidence['server_capacity']} connections, not {max_connections} + {rule} + 1 = "
                         f"{evidence['server_capacity_after_restart']}")
            text += f"; restart Tomcat to listen again with {rule}"
            out.append(Finding("backlog-capped-at-start", "warning", text, evidence))
            continue
        if somaxconn is None or lst.backlog != somaxconn:
            continue
        evidence = {"listener": listener_name(lst), "backlog": lst.backlog, "somaxconn": somaxconn}
        if accept_count is not None:
            if accept_count <= somaxconn:
                continue
            evidence["accept_count"] = accept_count
            evidence["backlog_rule"] = listen_backlog(accept_count, somaxconn)
            text = (f"your listener on :{lst.port} has a backlog of {lst.backlog} because "
                    f"net.core.somaxconn={somaxconn} caps the {accept_count} Tomcat's accept-count asks for")
        else:
            text = (f"your listener on :{lst.port} has a backlog of {lst.backlog}, equal to "
                    f"net.core.somaxconn: listen() asked for at least that and was capped to it")
        out.append(Finding("backlog-capped-by-somaxconn", "warning", text, evidence))
    return out


def _queue_capacity(r: Readings) -> dict[str, Any]:
    """The accept queue's capacity, backlog + 1, and with the actuator the connections the server
    holds at saturation, max-connections + backlog + 1 (_held): the listener's own backlog, as
    ss shows it, not min(accept-count, somaxconn), which a listener started under other
    settings does not have."""
    backlog = _observed_backlog(r)
    if backlog is None:
        return {}
    out: dict[str, Any] = {"accept_queue_capacity": backlog + 1}
    t = r.tomcat
    if t and t.max_connections is not None:
        out["server_capacity"] = _held(t.max_connections, backlog)
    return out


def _queue_came_near_full(r: Readings) -> bool:
    """Whether a listener of the port had, in one of its samples (one a second), NEAR of its
    capacity, backlog + 1, or more in its accept queue: the listeners that could have
    overflowed. ListenOverflows is the namespace's (net/ipv4/proc.c: one counter for all
    listeners), so a port whose queue never came near full is not shown to be the one."""
    return any(lst.queue_peak >= NEAR * (lst.backlog + 1) for lst in r.listeners)


def queue_findings(r: Readings) -> list[Finding]:
    """accept-queue-overflows: TcpExtListenOverflows rose in the window, each one a SYN or a
    final ACK dropped because the accept queue held backlog + 1 (include/net/sock.h,
    sk_acceptq_is_full()), and the port's own queue came near that in its samples
    (_queue_came_near_full); listen-overflows-not-seen-on-port: it rose, but the port's queue
    never came near full: another listener's, or between two samples; syn-queue-drops:
    TcpExtTCPReqQFullDrop rose, SYNs dropped because the SYN queue was full and no cookie was
    sent (net/ipv4/tcp_input.c, tcp_conn_request()); syn-cookies: TcpExtSyncookiesSent rose, so
    the SYN queue overflowed into cookies. The counters are the namespace's, all its listeners
    together, and the sentences say so."""
    c, out = r.counters, []
    peak = max((lst.queue_peak for lst in r.listeners), default=None)
    overflows = c.get("TcpExtListenOverflows", 0)
    if overflows > 0:
        ev = {"ListenOverflows": overflows, "ListenDrops": c.get("TcpExtListenDrops", 0),
              "elapsed_s": r.elapsed_s, "per_s": _rate(overflows, r.elapsed_s), "queue_peak": peak,
              **_queue_capacity(r)}
        counted = (f"ListenOverflows, the count of all listeners of this namespace, rose by {overflows} in "
                   f"the last {r.elapsed_s:g} s ({ev['per_s']:g}/s)")
        capacity = ev.get("accept_queue_capacity")
        of_capacity = f" of its {capacity} (backlog {capacity - 1} + 1)" if capacity is not None else ""
        if _queue_came_near_full(r):
            out.append(Finding("accept-queue-overflows", "critical",
                               f"{counted}, and the accept queue of :{r.port} reached {peak}{of_capacity}: "
                               f"SYNs and final ACKs were dropped and clients wait for their retransmissions",
                               ev))
        else:
            seen = (f"the accept queue of :{r.port} peaked at {peak}{of_capacity} in its samples (one a second)"
                    if peak is not None else f"no listener of :{r.port} was in the samples")
            out.append(Finding("listen-overflows-not-seen-on-port", "warning",
                               f"{counted}, but {seen}: another listener overflowed, or this one between two "
                               f"samples; run it again while the load comes, or read the other listeners "
                               f"(ss -ltn)", ev))
    elif r.since_boot.get("TcpExtListenOverflows", 0) > 0:
        total = r.since_boot["TcpExtListenOverflows"]
        out.append(Finding("accept-queue-overflowed-since-boot", "info",
                           f"no overflow in the window, but {total} since boot (any listener): "
                           f"run again while the load comes", {"ListenOverflows_since_boot": total}))
    full = c.get("TcpExtTCPReqQFullDrop", 0)
    if full > 0:
        out.append(Finding("syn-queue-drops", "critical",
                           f"{full} SYNs were dropped in the window because the SYN queue was full "
                           f"(net.ipv4.tcp_max_syn_backlog={r.sysctls.get('net.ipv4.tcp_max_syn_backlog')}, "
                           f"tcp_syncookies={r.sysctls.get('net.ipv4.tcp_syncookies')})",
                           {"TCPReqQFullDrop": full, "elapsed_s": r.elapsed_s,
                            "syn_recv": r.syn_recv}))
    cookies = c.get("TcpExtSyncookiesSent", 0)
    if cookies > 0:
        out.append(Finding("syn-cookies", "warning",
                           f"{cookies} SYN cookies were sent in the window: the SYN queue was full, so "
                           f"half-open connections no longer wait in it and only the accept queue "
                           f"(backlog + 1) holds the burst",
                           {"SyncookiesSent": cookies, "SyncookiesRecv": c.get("TcpExtSyncookiesRecv", 0),
                            "SyncookiesFailed": c.get("TcpExtSyncookiesFailed", 0),
                            **_queue_capacity(r)}))
    return out


def limit_findings(r: Readings) -> list[Finding]:
    """time-wait-near-port-range: TIME-WAIT sockets towards one peer hold that many of the port
    range's ports, and connect() fails with EADDRNOTAVAIL once they are all taken;
    open-files-near-limit: every socket is a file, and accept(2) fails with EMFILE at the
    process's open-file limit (rules.server_file_capacity); open files unmeasured (empty) are
    unknown, so no finding either way; threads-busy-at-max: every Tomcat
    thread busy, so accepted connections wait; virtual-threads instead where Tomcat has no pool
    (Tomcat.virtual_threads): a virtual thread per request, max-connections bounds the requests
    served at once (rules.workers)."""
    out = []
    low_high = (r.sysctls.get("net.ipv4.ip_local_port_range") or "").split()
    if len(low_high) == 2 and r.time_wait_by_peer:
        ports = int(low_high[1]) - int(low_high[0]) + 1
        peer, count = max(r.time_wait_by_peer.items(), key=lambda kv: kv[1])
        if count >= NEAR * ports:
            out.append(Finding("time-wait-near-port-range", "warning",
                               f"{count} TIME-WAIT sockets towards {peer} hold {count} of the {ports} ephemeral "
                               f"ports ({' '.join(low_high)}): new connections to it fail with "
                               f"'cannot assign requested address' when none is left",
                               {"peer": peer, "time_wait": count, "ports": ports,
                                "tcp_tw_reuse": r.sysctls.get("net.ipv4.tcp_tw_reuse")}))
    nofile, files = _int(r.process.get("nofile")), _int(r.process.get("open_files"))
    if nofile and files is not None and files >= NEAR * nofile:
        out.append(Finding("open-files-near-limit", "warning",
                           f"the listening process {r.process.get('comm', '')} (pid {r.process.get('pid')}) has "
                           f"{files} files open of its limit of {nofile}: at the limit accept() fails "
                           f"and connections stay in the accept queue",
                           {"pid": r.process.get("pid"), "open_files": files, "nofile": nofile}))
    t = r.tomcat
    if t and t.virtual_threads:
        bound = f"max-connections ({t.max_connections})" if t.max_connections is not None else "max-connections"
        out.append(Finding("virtual-threads", "info",
                           f"Tomcat serves on virtual threads (tomcat.threads.config.max is {t.threads_max:g}): a "
                           f"virtual thread per request and no pool to run out of, so {bound} bounds the requests "
                           f"served at once, not a thread count",
                           {"threads_max": t.threads_max, "max_connections": t.max_connections,
                            "connections_peak": t.connections_peak}))
    elif t and t.threads_busy_peak is not None:
        most = t.threads_max if t.threads_max is not None else t.max_threads
        if most and t.threads_busy_peak >= most:
            out.append(Finding("threads-busy-at-max", "warning",
                               f"Tomcat had all {most:g} threads busy in the window: accepted connections "
                               f"wait for a thread while the application looks calm",
                               {"threads_busy_peak": t.threads_busy_peak, "threads_max": most,
                                "connections_peak": t.connections_peak}))
    return out


def findings(r: Readings) -> list[Finding]:
    """Every finding, the most severe first; one "nothing-found" when there is none."""
    found = backlog_findings(r) + queue_findings(r) + limit_findings(r)
    order = {"critical": 0, "warning": 1, "info": 2}
    found.sort(key=lambda f: order[f.severity])
    return found or [Finding("nothing-found", "info",
                             f"nothing found on :{r.port} in {r.window_s:g} s: no overflow, drop or "
                             f"cookie, no limit near", {})]


@dataclass
class LabBacklog:
    """The accept-count and somaxconn a lab run sets so that its listener's backlog,
    min(accept-count, somaxconn) (rules.listen_backlog), is the host's listener's own; `note`
    says which of the two differs from the host's settings, and why (None: neither)."""
    accept_count: int | None
    somaxconn: int | None
    note: str | None = None


def lab_backlog(backlog: int | None, accept_count: int | None, somaxconn: int | None) -> LabBacklog:
    """The lab's settings for a listener whose backlog is `backlog` (ss's Send-Q) on a host now at
    accept-count and somaxconn. listen() set the backlog when the listener started (Linux
    __sys_listen()), so where min(accept-count, somaxconn) now differs, the lab keeps the
    host's accept-count and sets SOMAXCONN to the backlog (min(accept-count, backlog) = backlog:
    the listener started under that somaxconn); where accept-count is below the backlog (listen()
    was asked for more than accept-count), TOMCAT_ACCEPT_COUNT is the backlog and SOMAXCONN at
    least that. Without the accept-count (no actuator) it is the backlog."""
    if backlog is None:
        return LabBacklog(accept_count, somaxconn)
    if accept_count is None:
        accept_count = backlog
    if somaxconn is None or listen_backlog(accept_count, somaxconn) == backlog:
        return LabBacklog(accept_count, somaxconn)
    if accept_count >= backlog:
        return LabBacklog(accept_count, backlog,
                          f"SOMAXCONN is the listener's backlog, {backlog}, not the host's {somaxconn} now: "
                          f"listen() set {backlog} when the listener started and it keeps it until Tomcat "
                          f"restarts, so the lab starts Tomcat under somaxconn {backlog} "
                          f"(min({accept_count}, {backlog}) = {backlog})")
    lab_somaxconn = max(somaxconn, backlog)
    return LabBacklog(backlog, lab_somaxconn,
                      f"TOMCAT_ACCEPT_COUNT is the listener's backlog, {backlog}, not the host's accept-count "
                      f"{accept_count}: listen() was asked for more than accept-count when the listener started "
                      f"(min({backlog}, {lab_somaxconn}) = {backlog})")


@dataclass
class Figure:
    """One figure of the load's estimate: its value (None: unknown), where it came from, and how
    sure it is: "measured" (read as it is), "estimate" (measured figures through a stated
    model), "upper bound" or "lower bound"."""
    value: float | None
    source: str
    sureness: str


@dataclass
class LoadEstimate:
    """The load the host saw in the window, each figure with its source (estimate_load)."""
    new_connections_per_s: Figure
    held: Figure
    waiting: Figure
    users: Figure
    busy_threads: Figure
    service_ms: Figure
    requests_per_s: Figure


#: What a user the server has no room for adds to ListenOverflows a second while it waits: its
#: connection's handshake ends in a dropped final ACK (the queue is full) and its client keeps
#: retransmitting. Measured on this kernel (6.18): 40 kept-alive users against a server holding
#: 17 (8 connections + backlog 8 + 1) rose ListenOverflows by a median 23 a second in the seconds
#: it rose, one a waiting user (reading results/doctor-20261129-004827 of docs/doctor.md; the
#: recorded reading tests/python/fixtures/doctor/stale-somaxconn-load: 24, 40 users). The model
#: of the readings without overflows.tsv, and of loads whose overflows come in no waves.
OVERFLOWS_PER_WAITING_USER_S = 1.0

#: overflows.tsv's sampling: ListenOverflows every FINE_S seconds (sample_overflows).
FINE_S = 0.1

#: The longest a wave of retransmissions lasts: users who arrived together retransmit together
#: (their SYNs on the 1, 3, 7 s of the SYN backoff; their final ACKs and first data, once a SYN
#: cookie let the handshake end on their side, on the 0.2, 0.6, 1.4, 3 s of the 200 ms RTO's),
#: each of them adding one to ListenOverflows in the wave. Rises that last longer are a stream of
#: arrivals, not waves, and the per-second model (OVERFLOWS_PER_WAITING_USER_S) stands.
WAVE_MAX_S = 1.0


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def overflow_waves(rises: list[int]) -> list[tuple[int, int]]:
    """The waves of ListenOverflows in overflows.tsv's rises: each a run of samples in which it
    rose, between samples in which it did not, as (overflows, samples)."""
    waves: list[tuple[int, int]] = []
    run = (0, 0)
    for rise in rises + [0]:
        if rise > 0:
            run = (run[0] + rise, run[1] + 1)
        elif run[1]:
            waves.append(run)
            run = (0, 0)
    return waves


def _waiting_from_waves(r: Readings) -> Figure | None:
    """The waiting users from overflows.tsv: the median size of its waves, one overflow a waiting
    user a wave (WAVE_MAX_S), where there are two waves or more and none lasted longer; None
    otherwise (no file, a stream of overflows, a single wave)."""
    waves = overflow_waves(r.fine_overflows or [])
    if len(waves) < 2 or max(samples for _, samples in waves) * FINE_S > WAVE_MAX_S:
        return None
    sizes = [size for size, _ in waves]
    return Figure(round(_median(sizes)),
                  f"ListenOverflows every {FINE_S * 1000:g} ms: the median size of its {len(waves)} waves of "
                  f"retransmissions ({_median(sizes):g}; {', '.join(str(n) for n in sizes)}), one a waiting user a wave",
                  "estimate (a model measured on this kernel)")


def estimate_load(r: Readings) -> LoadEstimate:
    """The load of the window from what the doctor read. New connections a second: TcpPassiveOpens
    (handshakes that reached the accept queue) plus TcpExtListenDrops (those dropped), over the
    window; the namespace's, and a drop counts again at each retransmission, so an upper bound.
    Held: the connections Tomcat held at its peak (tomcat.connections.current) plus the port's
    accept queue at its peak. Waiting: the users the server had no room for (only where the
    port's queue came near full: _queue_came_near_full): the median size of the waves of
    ListenOverflows every FINE_S (_waiting_from_waves), else the median of the seconds in which
    it rose, divided by OVERFLOWS_PER_WAITING_USER_S. Users: held + waiting. Service time:
    http.server.requests' TOTAL_TIME over its COUNT in the window, the application's time
    once a thread has the request (queueing before it not included)."""
    t = r.tomcat or Tomcat()
    c, el = r.counters, r.elapsed_s
    opens = c.get("TcpPassiveOpens")
    new = Figure(_rate(opens + c.get("TcpExtListenDrops", 0), el) if opens is not None else None,
                 "nstat: (TcpPassiveOpens + TcpExtListenDrops) / elapsed_s, all listeners of the namespace",
                 "upper bound (a drop counts again at each retransmission)")
    peak = max((lst.queue_peak for lst in r.listeners), default=None)
    held_value = t.connections_peak + peak if t.connections_peak is not None and peak is not None else None
    held = Figure(held_value, "actuator: tomcat.connections.current's peak + ss: the accept queue's peak",
                  "measured (samples one a second)")
    rises = [n for n in r.steps.get("TcpExtListenOverflows", []) if n > 0]
    overflowed = c.get("TcpExtListenOverflows", 0) > 0 and _queue_came_near_full(r)
    from_waves = _waiting_from_waves(r) if overflowed else None
    if from_waves is not None:
        waiting = from_waves
    elif overflowed and rises:
        waiting = Figure(round(_median(rises) / OVERFLOWS_PER_WAITING_USER_S),
                         f"nstat every second: the median rise of ListenOverflows in the {len(rises)} seconds it rose "
                         f"({_median(rises):g}), at {OVERFLOWS_PER_WAITING_USER_S:g} a second a waiting user",
                         "estimate (a model measured on this kernel)")
    elif c.get("TcpExtListenOverflows", 0) == 0:
        waiting = Figure(0, "nstat: ListenOverflows did not rise", "measured")
    else:
        waiting = Figure(None, "ListenOverflows rose, but not seen a second at a time on this port's full queue",
                         "unknown")
    users = Figure(held.value + waiting.value if held.value is not None and waiting.value is not None else None,
                   "held + waiting", "estimate" if waiting.sureness.startswith("estimate") else held.sureness)
    busy = Figure(t.threads_busy_peak, "actuator: tomcat.threads.busy's peak", "measured (samples one a second)")
    service = Figure(t.service_ms, f"actuator: http.server.requests, TOTAL_TIME / COUNT over the window "
                     f"({t.requests} requests)" if t.requests else "actuator: no http.server.requests in the window",
                     "measured" if t.service_ms is not None else "unknown")
    rps = Figure(_rate(t.requests, el) if t.requests is not None else None,
                 "actuator: http.server.requests' COUNT over the window / elapsed_s",
                 "measured" if t.requests is not None else "unknown")
    return LoadEstimate(new, held, waiting, users, busy, service, rps)


def load_knobs(load: LoadEstimate, elapsed_s: float) -> list[str]:
    """The estimate as the knobs of the suite's keepalive scenario: the users (VUS) on kept-alive
    connections (CONNECTION_REUSE=1) for as long as the window (DURATION), each asking for
    the endpoint's time (DELAY_MS) as many times as take half of DURATION one after the other
    (REQUESTS_PER_VU: a run whose users are all let in ends them with time to spare, and make
    advise judges it; users the server leaves waiting cannot, as on the host);
    comment lines say where each came from. Nothing for a figure left unknown."""
    out = ["# The load, estimated from the window (doctor.json's load: each figure's source and sureness):",
           "SCENARIO=keepalive", "CONNECTION_REUSE=1"]
    duration = max(1, round(elapsed_s))
    out.append(f"DURATION={duration}s")
    delay = 1000
    if load.service_ms.value is not None:
        delay = max(1, round(load.service_ms.value))
        out.append(f"# DELAY_MS: the endpoint's time, {load.service_ms.source}")
        out.append(f"DELAY_MS={delay}")
    else:
        out.append("# DELAY_MS: the suite's default; no http.server.requests told the endpoint's time")
    out.append("# REQUESTS_PER_VU: a user served at once needs half of DURATION for them (the endpoint's time grows "
               "under load), so a setting that lets every user in can finish them all")
    out.append(f"REQUESTS_PER_VU={max(1, duration * 1000 // (2 * delay))}")
    if load.users.value is not None:
        out.append(f"# VUS: {load.held.value:g} held by the server + {load.waiting.value:g} waiting "
                   f"({load.waiting.source}; {load.waiting.sureness})")
        out.append(f"VUS={int(load.users.value)}")
    else:
        out.append("# VUS: the suite's default; set it to the incident's users (the users the server held "
                   "or those waiting were not known)")
    return out


def reproduce_matrix(r: Readings, path: str) -> str:
    """The host's Tomcat and kernel settings as a matrix the lab runs as is. A setting the host
    did not show stays at the suite's default (env/defaults.env); without the actuator the
    accept-count is the listener's backlog (rules.listen_backlog cannot undo the cap). The lab's
    min(accept-count, somaxconn) is the listener's backlog as ss shows it (lab_backlog), so the
    lab's server holds what the host's does. On virtual threads (Tomcat.virtual_threads) so is
    the lab (TOMCAT_VIRTUAL_THREADS=1). With max-connections known, VUS is an axis: the users
    the server holds (max-connections + backlog + 1, _held) and twice that."""
    lines = [f"# The settings doctor read on {r.host or 'the host'} ({r.kernel}), port {r.port}, {r.started}.",
             "# Run it in the lab, as is:",
             f"#   make run-matrix MATRIX={path}",
             "# then, for settings that a real run verifies against its goal (no user failed; docs/advise.md),",
             "# as it is too:",
             f"#   make advise MATRIX={path}"]
    t = r.tomcat or Tomcat()
    backlog = _observed_backlog(r)
    lab = lab_backlog(backlog, t.accept_count, _int(r.sysctls.get("net.core.somaxconn")))
    if t.accept_count is None and backlog is not None:
        lines.append("# TOMCAT_ACCEPT_COUNT is the listener's backlog: no actuator told the accept-count")
    if lab.note:
        lines.append(f"# {lab.note}")
    for key, value in (("TOMCAT_MAX_THREADS", t.max_threads), ("TOMCAT_MAX_CONNECTIONS", t.max_connections),
                       ("TOMCAT_ACCEPT_COUNT", lab.accept_count)):
        if value is not None:
            lines.append(f"{key}={value}")
    if t.virtual_threads:
        lines.append(f"# Tomcat served on virtual threads (tomcat.threads.config.max {t.threads_max:g}): so does the lab "
                     "(a JDK 21 or later)")
        lines.append("TOMCAT_VIRTUAL_THREADS=1")
    for key, name in MATRIX_SYSCTLS:
        value = lab.somaxconn if key == "SOMAXCONN" else _int(r.sysctls.get(name))
        if value is not None:
            lines.append(f"{key}={value}")
    retries = _int(r.sysctls.get("net.ipv4.tcp_syn_retries"))
    if retries is not None:
        lines.append("# the host's own SYN retries, as its clients' (set the real clients' if you know them)")
        lines.append(f"CLIENT_TCP_SYN_RETRIES={retries}")
    if lab.accept_count is not None and lab.somaxconn is not None and t.max_connections is not None:
        capacity = server_capacity(t.max_connections, lab.accept_count, lab.somaxconn)
        lines.append(f"# the server holds {capacity} users at once (max-connections + backlog + 1)")
    lines += load_knobs(estimate_load(r), r.elapsed_s)
    lines.append("# make advise's goal (no user fails) and the knobs it may change; the others keep these values")
    lines.append("GOAL_FAILED_RATE=0")
    tune = ["TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS", "TOMCAT_ACCEPT_COUNT", "SOMAXCONN", "TCP_MAX_SYN_BACKLOG"]
    lines.append("TUNE=" + " ".join(tune))
    return "\n".join(lines) + "\n"


def to_json(r: Readings, found: list[Finding]) -> dict[str, Any]:
    """doctor.json's value."""
    return {"read_only": True, "port": r.port, "window_s": r.window_s, "elapsed_s": r.elapsed_s,
            "kernel": r.kernel,
            "host": r.host, "started": r.started,
            "listeners": [asdict(lst) for lst in r.listeners],
            "sysctls": {name: r.sysctls.get(name) for name in SYSCTLS},
            "counters": r.counters, "counters_since_boot": r.since_boot,
            "sockets": {"time_wait": r.time_wait, "syn_recv": r.syn_recv, "on_port": r.on_port},
            "process": r.process,
            "tomcat": {**asdict(r.tomcat), "virtual_threads": r.tomcat.virtual_threads} if r.tomcat else None,
            "load": asdict(estimate_load(r)),
            "findings": [asdict(f) for f in found]}


def summary(r: Readings, found: list[Finding]) -> str:
    """The terminal summary: one line per listener, one per finding."""
    lines = [f"doctor: port {r.port}, window {r.window_s:g} s, kernel {r.kernel} (read-only: no sysctl "
             f"changed, no listener opened, no load sent)"]
    for lst in r.listeners:
        lines.append(f"  listener {listener_name(lst)} backlog={lst.backlog} queue now={lst.queue_now} "
                     f"peak={lst.queue_peak}")
    if r.tomcat and r.tomcat.skipped:
        lines.append(f"  the actuator was slow: {len(r.tomcat.skipped)} reads skipped at their sample's deadline, "
                     f"not read late ({', '.join(r.tomcat.skipped[:6])}{', ...' if len(r.tomcat.skipped) > 6 else ''})")
    for f in found:
        lines.append(f"  [{f.severity}] {f.id}: {f.text}")
    return "\n".join(lines) + "\n"


def to_markdown(r: Readings, found: list[Finding]) -> str:
    """doctor.md: the findings with their evidence, then what was read."""
    out = [f"# Doctor: port {r.port}", "",
           f"{r.host} ({r.kernel}), {r.started}, window {r.window_s:g} s. Read-only: the doctor changed "
           "no sysctl, opened no listener and sent no load.", "", "## Findings", ""]
    for f in found:
        out.append(f"- **{f.id}** ({f.severity}): {f.text}.")
        if f.evidence:
            out.append("  Evidence: " + ", ".join(f"{k}={v}" for k, v in f.evidence.items()))
    out += ["", "## Listeners", "", "| address | port | backlog | queue now | queue peak |",
            "|---|---|---|---|---|"]
    out += [f"| {lst.addr}{f' #{lst.nth}' if lst.nth > 1 else ''} | {lst.port} | {lst.backlog} | {lst.queue_now} | {lst.queue_peak} |"
            for lst in r.listeners]
    out += ["", "## Sysctls", "", "| sysctl | value |", "|---|---|"]
    out += [f"| {name} | {r.sysctls.get(name, '')} |" for name in SYSCTLS]
    out += ["", f"## Counters over the window (nstat deltas)", ""]
    out += [f"- {name}: {value}" for name, value in r.counters.items() if name in COUNTERS] or ["- none of "
                                                                                               "the listen counters changed"]
    return "\n".join(out) + "\n"


def write_report(readings_dir: Path, out_dir: Path) -> str:
    """Write doctor.json, doctor.md and reproduce.matrix into out_dir; return the summary."""
    r = read_readings(readings_dir)
    found = findings(r)
    (out_dir / "doctor.json").write_text(json.dumps(to_json(r, found), indent=2) + "\n", encoding="utf-8")
    (out_dir / "doctor.md").write_text(to_markdown(r, found), encoding="utf-8")
    (out_dir / "reproduce.matrix").write_text(reproduce_matrix(r, str(out_dir / "reproduce.matrix")), encoding="utf-8")
    return summary(r, found)


def get(url: str, timeout: float = 3) -> str:
    """One actuator GET (the only request the doctor sends), `timeout` seconds at most (3),
    straight to the actuator: never through a proxy of the environment (http_proxy,
    https_proxy), which is for the host's outbound traffic, not its own actuator (an empty
    ProxyHandler)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as answer:  # the user's own actuator URL
        return answer.read().decode("utf-8", "replace")


#: The actuator metrics sampled over the window (Micrometer's Tomcat binder).
METRICS = ("tomcat.threads.busy", "tomcat.threads.config.max", "tomcat.connections.current")


def metric_value(url: str, timeout: float = 3) -> float | None:
    """The first measurement of one /actuator/metrics/NAME, None when it does not answer."""
    try:
        measurements = json.loads(get(url, timeout)).get("measurements") or []
        return float(measurements[0]["value"])
    except (OSError, ValueError, AttributeError, LookupError, TypeError):
        return None


#: Tomcat's request timer (Spring Boot's http.server.requests): its COUNT and TOTAL_TIME
#: (seconds) as the window starts and as it ends give the requests served and their mean time.
REQUESTS = "http.server.requests"


def _statistics(answer: Any) -> dict[str, float]:
    return {m["statistic"]: float(m["value"]) for m in answer.get("measurements") or []
            if isinstance(m, dict) and "statistic" in m and "value" in m}


def request_totals(base: str, timeout: float = 3) -> dict[str, float] | None:
    """COUNT and TOTAL_TIME of http.server.requests, of the application's URIs only: where the
    actuator answers on the application's port its own requests are in the timer too (uri tag
    /actuator/...), and then each other uri is read on its own (?tag=uri:X) and summed. None
    when the actuator has no such metric (no request served since it started, or no web MVC)."""
    url = f"{base.rstrip('/')}/metrics/{REQUESTS}"
    try:
        answer = json.loads(get(url, timeout))
        uris = next((t.get("values") or [] for t in answer.get("availableTags") or [] if t.get("tag") == "uri"), [])
        if not any(str(u).startswith("/actuator") for u in uris):
            stats = _statistics(answer)
        else:
            stats = {"COUNT": 0.0, "TOTAL_TIME": 0.0}
            for uri in (u for u in uris if not str(u).startswith("/actuator")):
                one = _statistics(json.loads(get(f"{url}?tag=uri:{urllib.parse.quote(str(uri), safe='')}", timeout)))
                stats = {k: stats[k] + one.get(k, 0.0) for k in stats}
    except (OSError, ValueError, AttributeError, LookupError, TypeError):
        return None
    return {k: stats[k] for k in ("COUNT", "TOTAL_TIME") if k in stats} or None


#: The share of a second the actuator's reads of one sample may take: a sample still being read
#: then is cut short, so a slow actuator never stretches the window.
SAMPLE_BUDGET = 0.9


def sample_metrics(base: str, seconds: int) -> list[str]:
    """metrics.tsv's lines: METRICS every second from now, seconds + 1 samples, and
    http.server.requests' totals (request_totals) in the first sample and the last. Each
    sample's reads end within SAMPLE_BUDGET of its second (each GET's timeout is what is left
    of it): what a sample could not read by then, or whose GET the deadline cut, is named in a
    line "N<TAB>skipped<TAB>NAME" rather than read late, so the window ends on time however slow the actuator is."""
    start, lines = time.monotonic(), []
    for i in range(seconds + 1):
        deadline = start + i + SAMPLE_BUDGET
        names = METRICS + ((REQUESTS,) if i in (0, seconds) else ())
        for name in names:
            left = deadline - time.monotonic()
            if left <= 0.05:
                lines.append(f"{i}\tskipped\t{name}")
                continue
            if name == REQUESTS:
                totals = request_totals(base, left)
                for stat, value in (totals or {}).items():
                    lines.append(f"{i}\t{REQUESTS}:{stat}\t{value}")
                continue
            value = metric_value(f"{base.rstrip('/')}/metrics/{name}", left)
            if value is not None:
                lines.append(f"{i}\t{name}\t{value}")
            elif time.monotonic() >= deadline - 0.05:
                lines.append(f"{i}\tskipped\t{name}")  # its GET ran into the deadline
        if i < seconds:
            time.sleep(max(0.0, start + i + 1 - time.monotonic()))
    return lines


def listen_overflows(netstat: str) -> int | None:
    """TcpExt's ListenOverflows in the text of /proc/net/netstat (a line of names, then a line of
    values, for each prefix); None when the kernel has none."""
    lines = netstat.splitlines()
    for names, values in zip(lines, lines[1:]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            pairs = dict(zip(names.split()[1:], values.split()[1:]))
            value = pairs.get("ListenOverflows")
            return int(value) if value is not None and value.isdigit() else None
    return None


def sample_overflows(seconds: int, netstat: Path = Path("/proc/net/netstat")):
    """overflows.tsv's lines "N<TAB>VALUE": ListenOverflows (this network namespace's, as
    /proc/net/netstat is) every FINE_S from now, seconds / FINE_S + 1 samples, on time however
    long a read takes; a line as it is read, so the file is whole up to a kill."""
    start, count = time.monotonic(), round(seconds / FINE_S)
    for i in range(count + 1):
        value = listen_overflows(netstat.read_text())
        yield f"{i}\t{'' if value is None else value}"
        if i < count:
            time.sleep(max(0.0, start + (i + 1) * FINE_S - time.monotonic()))


def sysctl_lines(proc_sys: Path) -> str:
    """readings/sysctls.tsv: "name<TAB>value" of every sysctl of SYSCTLS from PROC_SYS (/proc/sys),
    its whitespace made single spaces (ip_local_port_range's tab), empty when this kernel has none
    (tcp_syn_linear_timeouts before 6.x)."""
    out = []
    for name in SYSCTLS:
        try:
            value = " ".join((proc_sys / name.replace(".", "/")).read_text().split())
        except OSError:
            value = ""
        out.append(f"{name}\t{value}\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 3 and args[0] == "report":
        sys.stdout.write(write_report(Path(args[1]), Path(args[2])))
        return 0
    if len(args) == 3 and args[0] == "metrics":
        for line in sample_metrics(args[1], int(args[2])):
            print(line, flush=True)
        return 0
    if len(args) == 2 and args[0] == "overflows" and args[1].isdigit():
        for line in sample_overflows(int(args[1])):
            print(line, flush=True)
        return 0
    if len(args) == 2 and args[0] == "configprops":
        kept = read_configprops(args[1])
        if kept is None:
            return 1
        sys.stdout.write(json.dumps(kept, indent=1) + "\n")
        return 0
    if args == ["sysctls"]:
        sys.stdout.write(sysctl_lines(Path("/proc/sys")))
        return 0
    if len(args) == 2 and args[0] == "get":
        try:
            sys.stdout.write(get(args[1]))
        except (OSError, ValueError):
            return 1
        return 0
    sys.stderr.write("usage: python3 -m ltsuite.doctor report READINGS_DIR OUT_DIR | configprops BASE_URL | get URL | "
                     "metrics BASE_URL SECONDS | overflows SECONDS | sysctls\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
