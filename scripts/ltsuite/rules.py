"""The rules that predict a cell's kernel and Tomcat figures from its knobs and the sysctls the
cell recorded. Every rule names its source: a Linux function or a measurement of this suite
(../shared/DESIGN.md, the seed experiments).

Measured on kernel 6.18 (one client, a listener whose queue stays full), the SYN schedules the
functions below reproduce:
  retries 2, linear 0: SYNs 0 1 3, gives up at 7 s (2 retransmits)
  retries 2, linear 4: SYNs 0 1 2 3 4 5, gives up at 7 s (5)
  retries 3, linear 2: SYNs 0 1 2 3 5 9, gives up at 17 s (5)
  retries 3, linear 4: SYNs 0 1 2 3 4 5 7 11, gives up at 19 s (7)
  retries 4, linear 4: SYNs 0 1 2 3 4 5 7 11 19, gives up at 35 s (8)
"""
from __future__ import annotations

import re

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000}


def duration_ms(text: str, *, strict: bool = False) -> float | None:
    """A k6 duration ("1m30s", "500ms") in milliseconds; None when it has no part k6 reads.

    The one parser of duration strings on the Python side (k6's own syntax: a sequence of
    number-unit pairs, units ms, s, m, h). strict: the whole text must be such pairs (the
    suite's envfile type, which nginx's settings are written from), else ValueError."""
    pairs = _DURATION.findall(text or "")
    if strict and (not pairs or "".join(n + u for n, u in pairs) != text):
        raise ValueError(f"'{text}' is not a duration such as 500ms, 10s, 1m30s")
    parts = [float(number) * _UNIT_MS[unit] for number, unit in pairs]
    if not parts:
        return None
    total = sum(parts)
    return int(total) if total == int(total) else total


def syn_model_timeout_s(retries: int) -> int:
    """When connect() gives up: Linux net/ipv4/tcp_timer.c, tcp_model_timeout(): the classic
    model of tcp_syn_retries backoffs from TCP_TIMEOUT_INIT (1 s), (2^(retries+1) - 1) s up to
    6 retries, then TCP_RTO_MAX (120 s) more per retry."""
    if retries <= 6:
        return 2 ** (retries + 1) - 1
    return 127 + (retries - 6) * 120


def syn_timer_times(linear: int, until_s: float) -> list[int]:
    """The times (s) the SYN timer fires, from 0 (the first SYN) up to the first one at or past
    until_s. Linux net/ipv4/tcp_timer.c, tcp_retransmit_timer(): the RTO starts at
    TCP_TIMEOUT_INIT (1 s) and stays there while retransmission k <= tcp_syn_linear_timeouts,
    then doubles per retransmission, capped at TCP_RTO_MAX (120 s)."""
    times = [0]
    t, k = 0, 0
    rto = 1
    while t < until_s:
        t, k = t + rto, k + 1
        rto = 1 if k <= linear else min(2 ** (k - linear), 120)
        times.append(t)
    return times


def syn_send_times(retries: int, linear: int) -> list[int]:
    """When a client that never gets an answer sends its SYN and each retransmission: the timer
    times before tcp_model_timeout()'s threshold (syn_model_timeout_s)."""
    limit = syn_model_timeout_s(retries)
    return [t for t in syn_timer_times(linear, limit) if t < limit]


def syn_give_up_s(retries: int, linear: int) -> int:
    """When connect() fails with ETIMEDOUT: the first timer at or past tcp_model_timeout()'s
    threshold, so linear timeouts add SYNs within about the same time."""
    return syn_timer_times(linear, syn_model_timeout_s(retries))[-1]


def syns_within(retries: int, linear: int, window_s: float) -> int:
    """SYNs a client sends before it gives up or its request times out at window_s, whichever
    comes first."""
    stop = min(syn_give_up_s(retries, linear), window_s)
    return len([t for t in syn_send_times(retries, linear) if t < stop])


def listen_backlog(accept_count: int, somaxconn: int) -> int:
    """listen() caps the backlog Tomcat asks for (acceptCount) at net.core.somaxconn: Linux
    net/socket.c, __sys_listen()."""
    return min(accept_count, somaxconn)


def server_capacity(max_connections: int, accept_count: int, somaxconn: int) -> int:
    """Established connections a server holds at saturation: Tomcat accepts max-connections, and
    the accept queue holds backlog + 1, because sk_acceptq_is_full() (include/net/sock.h) tests
    "queue length > backlog", not ">="."""
    return max_connections + listen_backlog(accept_count, somaxconn) + 1


def capacity_slack(cpus: int) -> int:
    """How many more than server_capacity a saturated server may hold: the queue-full check runs
    without a lock, so handshakes completing at the same instant on different CPUs can each pass
    it (measured here: 9 of 400 bursts on 2 CPUs left backlog + 2 in the queue)."""
    return max(cpus - 1, 0)


def waves_ms(users: float, workers: float, delay_ms: float) -> float | None:
    """The latest answer when `users` requests that each take delay_ms arrive at once and
    `workers` threads serve them in order: ceil(users / workers) waves (seed 003: 3000 users,
    200 threads, 5 s -> 15 waves, 75 s)."""
    if users <= 0 or workers <= 0:
        return None
    return ((users + workers - 1) // workers) * delay_ms


def workers(threads: float | None, max_connections: float | None, virtual_threads: bool = False) -> float | None:
    """The requests a Tomcat serves at once with a blocking endpoint: a thread each, and a
    connection each, so min(threads, max-connections) (NioEndpoint's LimitLatch holds
    max-connections, the executor's pool maxThreads). With virtual threads
    (spring.threads.virtual.enabled, TOMCAT_VIRTUAL_THREADS=1) Tomcat's executor starts a
    virtual thread per request and has no pool (maxThreads -1), so max-connections alone bounds
    them: the waves of rules.waves_ms are max-connections wide. None when the bound is unknown."""
    if virtual_threads:
        return max_connections
    if threads is None or max_connections is None:
        return None
    return min(threads, max_connections)


def closed_tps(users: float, workers: float, delay_ms: float, think_ms: float) -> float | None:
    """Throughput of users that each wait for their answer, then think: the thread pool is the
    limit once users exceed it (Little's law: workers / delay), else users / (delay + think)."""
    if delay_ms <= 0:
        return None
    if users > workers:
        return workers * 1000 / delay_ms
    return users * 1000 / (delay_ms + think_ms)


#: Files a k6 process holds besides its VUs' sockets: measured with k6 v1.8.1 in a cell of the
#: suite (tests/integration/fd-wall.bats: K6_NOFILE=300, 400 VUs at once) 300 - 292 sockets = 8
#: (stdin, the log twice, epoll, eventfd, a pipe, the samples output, the script); a bare
#: `k6 run` of a 1-VU script that sleeps held 9 (the cgroup's CPU quota files).
K6_OWN_FILES = 8
#: The files a k6 process is planned with below its open-file limit when K6_INSTANCES=auto
#: chooses the processes (k6's own, and outputs the suite cannot count in advance).
K6_FILE_HEADROOM = 100
#: k6 v1.8.1's memory per VU on this machine (../shared/DESIGN.md sections 3 and 6): 10,000
#: VUs used 2.3 GB (about 240 KB each), 30,000 VUs at once 12.7 GB (about 420 KB each).
K6_KB_PER_VU_LOW = 240
K6_KB_PER_VU_HIGH = 420
#: k6's memory per burst user when a VU carries many (USERS_PER_VU 1,000): 12,000 users took
#: 620-682 MB (53-58 KB each), 30,000 users in two processes 1,516 MB (52 KB), 2,000 users 131 MB
#: (67 KB) (docs/performance.md).
K6_KB_PER_CARRIED_USER_LOW = 50
K6_KB_PER_CARRIED_USER_HIGH = 70


def k6_kb_per_user(users_per_vu: int) -> tuple[int, int]:
    """k6's memory per user, lowest and highest measured: K6_KB_PER_VU_LOW..HIGH with a VU per
    user, K6_KB_PER_CARRIED_USER_LOW..HIGH when a VU carries several (its runtime is shared)."""
    if users_per_vu > 1:
        return K6_KB_PER_CARRIED_USER_LOW, K6_KB_PER_CARRIED_USER_HIGH
    return K6_KB_PER_VU_LOW, K6_KB_PER_VU_HIGH


#: k6 v1.8.1 creating the burst scenario's VUs (each one runs the script's init code before the
#: test starts), per second and per core, every k6 process of the machine together: 10,000 VUs
#: of scenarios/burst.js in 5.9 s on 2 cores (a k6 run whose setup() fails at once, so its time
#: is the VUs' creation).
K6_VU_INIT_PER_CORE_S = 850
#: The per-vu-iterations executor releasing created VUs into the test, per second and per core:
#: 10,000 VUs all running their first iteration 0.45 s after setup() on 2 cores.
K6_VU_ACTIVATE_PER_CORE_S = 10000


def burst_lead_ms(vus: int, instances: int, cpus: int) -> int:
    """BURST_LEAD_MS=auto: how far ahead the burst's one start instant must lie for every VU to
    wait at it when it comes. One k6 process fixes the instant in setup(), when every VU is
    already created (k6 runs the init code of all VUs before setup), so the lead covers their
    release by the executor: vus / (K6_VU_ACTIVATE_PER_CORE_S x cpus). Several processes share
    an instant fixed as they start (k6_start's BURST_START_AT), so it also covers creating the
    VUs of all of them on the machine's cores: vus / (K6_VU_INIT_PER_CORE_S x cpus). Twice that,
    plus half a second, rounded up to a whole second, at least 1 s: a busy machine starts VUs
    slower, and a VU that arrives late sends at once (first_request_spread_ms shows it)."""
    cores = max(cpus, 1)
    need_ms = vus * 1000 / (K6_VU_ACTIVATE_PER_CORE_S * cores)
    if instances > 1:
        need_ms += vus * 1000 / (K6_VU_INIT_PER_CORE_S * cores)
    return max(1000, -(-int(2 * need_ms + 500) // 1000) * 1000)


#: USERS_PER_VU=auto: users a burst VU carries once the burst has BATCH_FROM_USERS users or more.
#: A VU is a whole JavaScript runtime (K6_KB_PER_VU_LOW..HIGH, and K6_VU_INIT_PER_CORE_S to
#: create), a user one connection and a promise. Measured on 2 cores shared with other runs (load
#: average 2-3), one request each held 10 s, k6's RSS peak and the first requests' spread:
#:   2,000 users:  a VU a user 840 MB (430 KB a user), 671 ms; 50 a VU 150 MB, 619 ms;
#:                 250 a VU 137 MB, 231 ms; 1,000 a VU 131 MB (67 KB), 329 ms
#:   12,000 users: 50 a VU 743 MB (63 KB), 1,832 ms; 1,000 a VU 682 MB (58 KB), 1,591 ms;
#:                 6,000 a VU 634 MB (54 KB), 1,745 ms
#:   12,000 users, load average 7-19 (make bench's start section, bench-20261127-014239):
#:                 1,000 a VU 632 MB (54 KB), 6,419 ms; a VU a user 4,827 MB (412 KB), 10,791 ms
#: A VU's users leave within about 10 us of each other while the VU runs; the spread is the time
#: the VUs wait for the cores behind the connections already released (k6's dials, the kernel's
#: handshakes and Tomcat's accepts share the 2 cores: connecting took 514 ms at the median of
#: 12,000), which more VUs do not shorten. Fewer, larger VUs spread no more, and take a sixth to
#: a seventh of the memory. Where the server's queue overflows, a VU's SYNs arrive closer
#: together: seed 000's 4,000 users failed as often, but with fewer connect failures and more
#: timeouts (docs/performance.md); USERS_PER_VU=1 keeps a VU per user. Releasing 10,000 users
#: cost k6 158 us of CPU a user at 200 a VU and 162-173 us at 1,000 (188 at 50), on k6 v1.8.1 as
#: on v2.2.0, so the size is chosen for memory: at 10,000 x 160 us over 2 cores no size releases
#: 10,000 users in less than 0.8 s here (docs/performance.md, where a burst's spread goes).
USERS_PER_BURST_VU = 1000
#: Below 2,000 users a VU per user is kept: the bursts the measurements cover start there.
BATCH_FROM_USERS = 2000


def users_per_vu(scenario: str | None, users: int, requests_per_user: int) -> int:
    """USERS_PER_VU=auto: the users one k6 VU carries. The burst only (its users make a fixed
    number of requests, scenarios/burst.js), with one request each (it says Connection: close,
    so no user's connection is left for another user of the VU to take), from BATCH_FROM_USERS
    users on: USERS_PER_BURST_VU; else 1, a VU per user."""
    if scenario != "burst" or requests_per_user != 1 or users < BATCH_FROM_USERS:
        return 1
    return USERS_PER_BURST_VU


def k6_instances(vus: int, nofile: int) -> int:
    """The k6 processes K6_INSTANCES=auto runs for `vus` VUs: one socket per VU (HTTP/1.1, one
    connection each), and a process may hold at most its open-file limit `nofile` less
    K6_FILE_HEADROOM of them, so ceil(vus / (nofile - headroom)), at least 1. The client's
    ephemeral ports do not change the count: they belong to the client's address and the
    server's address and port (Linux __inet_hash_connect()), shared by every process of the
    namespace, so only more CLIENT_ADDRESSES add ports."""
    per_process = max(nofile - K6_FILE_HEADROOM, 1)
    return max(1, -(-max(vus, 0) // per_process))


def client_file_room(instances: int, nofile: int) -> int:
    """Connections `instances` k6 processes can open with an open-file limit of `nofile` each:
    every socket is a file (socket(2) fails with EMFILE at the limit), less K6_OWN_FILES each."""
    return instances * max(nofile - K6_OWN_FILES, 0)


def server_file_capacity(max_connections: int, files: int, own_files: int, accept_count: int,
                         somaxconn: int) -> int:
    """Established connections a server whose process may open `files` files, `own_files` of them
    already open, holds at saturation: Tomcat accepts at most min(max-connections, files -
    own_files) (accept(2) fails with EMFILE past the limit and Tomcat's acceptor backs off,
    NioEndpoint's Acceptor), and the kernel still completes handshakes into the accept queue,
    backlog + 1 (server_capacity)."""
    accepted = max(min(max_connections, files - own_files), 0)
    return accepted + listen_backlog(accept_count, somaxconn) + 1
