"""Every column of a results row: its name, type, unit, meaning and the tables that show it.

This list is the one place a column is defined. The tables read it:
  results.csv       every column, in this order (the matrix's axes where AXES stands, the
                    scenarios' own columns a run's rows carry where they stand, in the order
                    the rows first name them); report.html's results table has the same columns
  results.md        the columns with an ``md`` place, in the order of those places
                    (report.html's repetitions table shows the same figures)
  report.html       a column with a ``label`` is charted across cells, under that title
                    (scripts/report/report.js reads the labels from the JSON export)
  InfluxDB          ``ltsuite_cells`` points (scripts/lib/monitoring.sh): the identity
                    columns and the axes as tags, the other columns of a row as fields
  make compare      the numeric columns (scripts/report/compare.jq)
and docs/columns.md is generated from it (``make columns-doc``). Adding a column to the row
is one entry here (tests/python/test_columns.py fails while a table disagrees).

Run ``PYTHONPATH=scripts python3 -m ltsuite.columns --json`` for the export the shell and
the report read, ``--markdown`` for docs/columns.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any, Iterable

# Column types: what a value of the column is in row.json (null is always allowed: unmeasured
# is empty, never 0).
TEXT = "text"
INTEGER = "integer"
NUMBER = "number"
FLAG = "flag"  # 1 or 0
NUMERIC = (INTEGER, NUMBER, FLAG)

# InfluxDB roles of a column in ltsuite_cells.
TAG = "tag"
FIELD = "field"

# results.md's places: the lead columns, then the axes, the figures, the scenarios' own
# columns (all of a run's, in the order its rows name them) and the trailing text.
MD_AXES = 5
MD_FIGURES = range(100, 800)
MD_EXTRA = 800
# The proxy's view (PROXY=nginx), between the users' failures and the server's counters: in
# results.md only when some row of the run has a proxy (proxy_reqs not empty).
MD_PROXY = range(222, 230)

# The table names the JSON export and docs/columns.md use.
TABLES = ("csv", "md", "report", "influx", "compare")
TABLE_TITLES = {
    "csv": "results.csv",
    "md": "results.md",
    "report": "report chart",
    "influx": "InfluxDB",
    "compare": "make compare",
}


@dataclass(frozen=True)
class Column:
    """One column of a results row.

    name      the key in row.json (in its "extra" object for a scenario's own column) and the
              header in results.csv
    type      text, integer, number or flag (1/0)
    unit      what a number counts or measures ("" for text)
    meaning   one line: what it is and where it comes from
    md        its place in results.md (lower first; None: results.csv only)
    label     a title for people: set, the report charts the column across cells under it
    scenario  the scenario that adds the column (row.json's "extra"); None: every row has it
    csv       False for a key some rows carry that results.csv does not show
    influx    "tag", "field" or None (not sent); by default a row-level column is a field
    axis      the stand-in for the matrix's axes (one column per knob the matrix varies)
    fanout    how a fan-out's row (ltsuite.fanout: SSM instances, k6-operator pods) makes the column
              from its instances' rows, each a row of k6's summary on that instance: "sum" (counts
              and rates of parts running at once), "min", "max", "mean" (weighted by the answered
              requests, lat_count), "merged" (a percentile of the merged histograms: the latency's,
              or those of the column's trend),
              "derived" (computed from the other columns of the fan-out's row), "same" (a setting:
              the instances' common value); None: not in a fan-out's row (only a local run measures
              it: the server's counters, the sampler, the access log)
    trend     for a column that is one statistic of a k6 trend metric of k6's summary: the metric and
              the statistic, named as TREND_STATS of scenarios/lib/summary.js names it ("p(95)");
              when several k6 processes ran a cell, their summaries merge without percentiles
              (scripts/lib/merge-summaries.jq), and the row takes them from the merge of every
              process's histogram of the metric (ltsuite.histogram reduces the metrics named here)
    """

    name: str
    type: str
    unit: str
    meaning: str
    md: int | None = None
    label: str | None = None
    scenario: str | None = None
    csv: bool = True
    influx: str | None = FIELD
    axis: bool = False
    fanout: str | None = None
    trend: tuple[str, str] | None = None

    @property
    def numeric(self) -> bool:
        """A column whose values are numbers."""
        return self.type in NUMERIC

    @property
    def influx_role(self) -> str | None:
        """How ltsuite_cells carries the column: a scenario's own columns are not sent (the
        point holds the row's own keys), nor are text columns other than tags and error."""
        if self.scenario is not None:
            return None
        if self.influx == FIELD and self.type == TEXT and self.name != "error":
            return None
        return self.influx

    @property
    def compared(self) -> bool:
        """make compare shows the change of every numeric figure of a cell, not its identity."""
        return self.numeric and self.csv and self.name != "repeat" and not self.axis

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables that show the column, in TABLES order."""
        shown = {
            "csv": self.csv,
            "md": self.md is not None,
            "report": self.label is not None,
            "influx": self.influx_role is not None,
            "compare": self.compared,
        }
        return tuple(t for t in TABLES if shown[t])


def _extra(scenario: str, name: str, type_: str, unit: str, meaning: str, fanout: str | None = None,
           trend: tuple[str, str] | None = None) -> Column:
    """A column a scenario adds (row.json's "extra"): in results.csv and results.md."""
    return Column(name, type_, unit, meaning, md=MD_EXTRA, scenario=scenario, fanout=fanout, trend=trend)


AXES = Column("<axis>", TEXT, "", "one column per knob the matrix varies, named by the knob: the cell's value",
              md=MD_AXES, influx=TAG, axis=True)

# In results.csv order.
COLUMNS: tuple[Column, ...] = (
    Column("run_id", TEXT, "", "the run's id (its directory under results/)", influx=TAG),
    Column("cell", TEXT, "", "the cell's directory under cells/: its index and axis values (_rep-K for a repetition)",
           md=1, influx=TAG),
    Column("scenario", TEXT, "", "the k6 scenario (SCENARIO), or the path of a k6 script of one's own", influx=TAG),
    Column("status", TEXT, "", "ok, or failed (error says why)", md=2, influx=TAG),
    AXES,
    Column("repeat_of", TEXT, "", "the matrix cell this row repeats (its own cell without REPEAT)", influx=None),
    Column("repeat", INTEGER, "", "which repetition of the matrix cell (1..REPEAT)"),
    Column("as_designed", FLAG, "", "1 when the load ran as the cell designed it, 0 when not (design_notes says why), "
           "empty when it could not be judged", md=3),
    Column("design_notes", TEXT, "", "why the load differed from the design (late starts, a saturated k6, cut "
           "iterations, a connector that differs from the knobs)", md=910),
    Column("vus_max", INTEGER, "VUs", "the most VUs k6 had (vus_max); users when a VU carries several (USERS_PER_VU)", md=100,
           fanout="sum"),
    Column("vus_started", INTEGER, "VUs", "VUs (users, when a VU carries several) that sent at least one request", md=110,
           fanout="sum"),
    Column("duration_s", NUMBER, "s", "k6's test run duration, setup and graceful stop included", fanout="max"),
    Column("load_window_s", NUMBER, "s", "from the first request's start to the last one's end"),
    Column("first_request_after_s", NUMBER, "s", "from k6's start to the first request"),
    Column("first_request_spread_ms", INTEGER, "ms", "between the first and the last VU's first request", md=120),
    Column("http_reqs", INTEGER, "requests", "load requests sent (k6's http_reqs with traffic:load, plus "
           "fail_interrupted: requests cut off while they waited, which k6 does not count)", md=130, fanout="sum"),
    Column("tps", NUMBER, "req/s", "load requests per second over load_window_s, failed ones included", md=140,
           label="requests per second (every request sent, failed ones included)", fanout="derived"),
    Column("answered_tps", NUMBER, "req/s", "answered load requests (http_reqs - failed_reqs) per second over "
           "load_window_s: what predicted_tps predicts", label="answered requests per second"),
    Column("lat_min_ms", NUMBER, "ms", "fastest answered (2xx/3xx) request", fanout="min"),
    Column("lat_avg_ms", NUMBER, "ms", "mean latency of answered requests", fanout="mean"),
    Column("lat_med_ms", NUMBER, "ms", "median latency of answered requests", md=150, fanout="merged"),
    Column("lat_p90_ms", NUMBER, "ms", "90th percentile latency of answered requests", fanout="merged"),
    Column("lat_p95_ms", NUMBER, "ms", "95th percentile latency of answered requests", md=160,
           label="p95 latency of answered requests (ms)", fanout="merged"),
    Column("lat_p99_ms", NUMBER, "ms", "99th percentile latency of answered requests", md=170, fanout="merged"),
    Column("lat_max_ms", NUMBER, "ms", "slowest answered request", md=180, label="slowest answered request (ms)",
           fanout="max"),
    # The failed requests' own time (scripts/ltsuite/timeparts.py, from k6's samples).
    Column("failed_wait_med_ms", NUMBER, "ms", "median wait of the failed requests k6 gave a result for, from being "
           "sent (lt_requests_sent) to their failure: a timeout's whole timeout, a failed connect's SYNs"),
    Column("failed_wait_p99_ms", NUMBER, "ms", "99th percentile wait of the failed requests (failed_wait_med_ms): "
           "their own time beside the answered ones' lat_p99_ms"),
    # The application's own account (Tomcat's access log, scripts/ltsuite/accesslog.py).
    Column("app_reqs", INTEGER, "requests", "load requests the application logged (Tomcat's access log)"),
    Column("app_lat_med_ms", NUMBER, "ms", "median processing time the application logged (%D) of its requests"),
    Column("app_lat_p99_ms", NUMBER, "ms", "99th percentile processing time the application logged: its own view "
           "beside lat_p99_ms", md=175),
    Column("app_lat_max_ms", NUMBER, "ms", "slowest request by the application's own account"),
    Column("cold_start_ratio", NUMBER, "times", "the application's median time (%D) in the load's first second "
           "over the median of the rest (empty with fewer than 5 requests in either): above 3, 5 ms apart "
           "and above the rest's p99, the load met a cold JVM (design_notes; WARMUP)", md=177),
    Column("failed_reqs", INTEGER, "requests", "requests with no answer or a status outside 200-399 "
           "(http_req_failed), plus fail_interrupted; the fail_* columns add up to it", md=190,
           label="failed requests", fanout="sum"),
    Column("failed_rate", NUMBER, "fraction", "failed_reqs / http_reqs", label="failed rate", fanout="derived"),
    Column("fail_connect", INTEGER, "requests", "failed to connect: k6 error_code 1210-1219 (dial timeout, refused, "
           "no free port), other than fail_no_fd", md=200, fanout="sum"),
    Column("fail_no_fd", INTEGER, "requests", "no file descriptor for the connection: k6's dial failed with \"too many "
           "open files\" (the k6 process's open-file limit; K6_INSTANCES spreads the VUs)", md=205, fanout="sum"),
    Column("fail_reset", INTEGER, "requests", "connection reset by the peer (error_code 1220)", md=210, fanout="sum"),
    Column("fail_tls", INTEGER, "requests", "connected but the TLS handshake failed (error_code 1300-1399: "
           "a certificate not trusted, a handshake cut off)", fanout="sum"),
    Column("fail_timeout", INTEGER, "requests", "request timeout after connecting (error_code 1050)", md=220,
           fanout="sum"),
    Column("fail_http_4xx", INTEGER, "requests", "answered with a 4xx status", fanout="sum"),
    Column("fail_http_5xx", INTEGER, "requests", "answered with a 5xx status", fanout="sum"),
    Column("fail_other", INTEGER, "requests", "failed for any other reason", fanout="sum"),
    Column("fail_interrupted", INTEGER, "requests", "still waiting (to connect, or for the answer) when the "
           "scenario's graceful stop or ramp-down cut its iteration: sent (lt_requests_sent) and never given back "
           "by k6/http (lt_requests_returned); k6 records nothing for them", fanout="sum"),
    Column("fail_no_local_port", INTEGER, "requests", "dial errors \"cannot assign requested address\" in k6's log: "
           "the client ran out of ephemeral ports"),
    # Each request split (scripts/ltsuite/timeparts.py: k6's samples joined with the access log by
    # the request id).
    Column("reqs_never_seen_by_app_connect_failed", INTEGER, "requests", "requests k6 sent that the application "
           "never logged because they failed to connect"),
    Column("reqs_never_seen_by_app_never_read", INTEGER, "requests", "requests k6 sent on a connection that the "
           "application never logged (never read: queued when k6 gave up, reset)"),
    Column("reqs_never_seen_by_app_interrupted", INTEGER, "requests", "of fail_interrupted, the requests the "
           "application never logged (by the id of their lt_requests_sent sample): still connecting, queued unread, or "
           "unfinished when the target stopped"),
    Column("decomposed_reqs", INTEGER, "requests", "answered requests joined with the application's log by their "
           "request id: the t_* columns are theirs"),
    Column("t_connect_med_ms", NUMBER, "ms", "median time to connect (k6's connecting: SYN retransmits included)"),
    Column("t_connect_new_med_ms", NUMBER, "ms", "median time to connect of the requests that opened a connection "
           "(k6's connecting above 0): the round trip users got where nothing else held the handshake"),
    Column("connect_delayer_ms", NUMBER, "ms", "the round trip the delayer applied less NET_RTT_MS asked (its "
           "unread wait included; empty without a delayer)"),
    Column("connect_beyond_rtt_ms", NUMBER, "ms", "t_connect_new_med_ms less the round trip applied (less 0 "
           "without a delayer): the generator's and the kernels' own part of the users' connect"),
    Column("t_connect_p99_ms", NUMBER, "ms", "99th percentile time to connect"),
    Column("t_handshake_med_ms", NUMBER, "ms", "median TLS handshake time of the joined requests (k6's "
           "http_req_tls_handshaking, 0 on a reused connection); empty on plain HTTP (TARGET_TLS=0)"),
    Column("t_handshake_p99_ms", NUMBER, "ms", "99th percentile TLS handshake time"),
    Column("new_conns", INTEGER, "connections", "connections k6 dialed for the load's requests (their connecting "
           "time above 0)"),
    Column("new_conns_per_s", NUMBER, "per second", "new_conns over the load's window (load_window_s, as tps)"),
    Column("tls_handshakes", INTEGER, "handshakes", "TLS handshakes k6 made for the load's requests (their "
           "http_req_tls_handshaking above 0); empty on plain HTTP"),
    Column("tls_handshakes_per_s", NUMBER, "per second", "tls_handshakes over the load's window (load_window_s)"),
    Column("tls_handshakes_end_ms", NUMBER, "ms", "the last TLS handshake's end after the load's first request "
           "started (k6's start + blocked of the last handshaking request); empty on plain HTTP"),
    Column("tls_handshake_cpu_ms", NUMBER, "ms", "the server's CPU per full handshake of the cell's TLS_KEY (the "
           "target's with TARGET_TLS=1, nginx's with PROXY_TLS=1), from the newest make tls-calibrate (copied into "
           "the cell as tls-calibration.tsv)"),
    Column("tls_client_cpu_ms", NUMBER, "ms", "k6's CPU per new TLS connection of the cell's TLS_KEY (its dial, "
           "handshake, request and answer), from the same calibration; only when k6 shares the target's cores "
           "(the local runner)"),
    Column("tls_k6_cpu_ms_per_handshake", NUMBER, "ms", "k6's CPU over the handshakes (the first request's start "
           "to tls_handshakes_end_ms, the sampler's 50 ms trace) per handshake, when every dialed connection's handshake "
           "ended"),
    Column("tls_target_cpu_ms_per_handshake", NUMBER, "ms", "the target JVM's CPU over the same window per "
           "handshake (the trace's target column); empty when the sampler did not find the JVM"),
    Column("tls_machine_cpu_ms_per_handshake", NUMBER, "ms", "the machine's busy CPU (every core, every process) "
           "over the same window, per handshake"),
    Column("t_queued_med_ms", NUMBER, "ms", "median time from the request leaving k6 to Tomcat starting it (accept "
           "queue, max-connections, thread pool)"),
    Column("t_queued_p99_ms", NUMBER, "ms", "99th percentile queued time", md=176),
    Column("t_service_med_ms", NUMBER, "ms", "median processing time of the joined requests (Tomcat's %D)"),
    Column("t_service_p99_ms", NUMBER, "ms", "99th percentile processing time of the joined requests"),
    Column("parts_out_of_order", INTEGER, "requests", "joined requests whose Tomcat start or end falls outside k6's "
           "own window of the request by more than 10 ms (the parts then do not add up)"),
    Column("iterations", INTEGER, "iterations", "iterations k6 completed (a user's requests, when a VU carries several users)",
           fanout="sum"),
    Column("iterations_started", INTEGER, "iterations", "iterations that started", fanout="sum"),
    Column("iterations_interrupted", INTEGER, "iterations", "started but not completed (cut by the graceful stop "
           "or ramp-down: GRACEFUL_STOP, or a script's own options)", fanout="sum"),
    Column("dropped_iterations", INTEGER, "iterations", "iterations an arrival-rate executor could not start",
           fanout="sum"),
    Column("client_connects", INTEGER, "connections", "TcpActiveOpens delta in the client namespace"),
    Column("server_accepts", INTEGER, "connections", "TcpPassiveOpens delta in the server namespace"),
    Column("listen_overflows", INTEGER, "SYNs", "TcpExtListenOverflows delta on the server: the accept queue was full",
           md=230, label="ListenOverflows"),
    Column("listen_drops", INTEGER, "SYNs", "TcpExtListenDrops delta on the server: SYNs to the listener dropped",
           md=240),
    Column("syn_retrans", INTEGER, "SYNs", "TcpExtTCPSynRetrans delta on the client: SYNs sent again", md=250),
    Column("syn_cookies_sent", INTEGER, "SYNs", "TcpExtSyncookiesSent delta on the server: SYNs answered with a cookie"),
    Column("syn_recv_peak", INTEGER, "sockets", "most SYN-RECV sockets on the server (sampled)"),
    Column("server_conns_peak", INTEGER, "connections", "most established connections to the target port on the "
           "server (Tomcat's and those waiting in the accept queue; sampled)", md=260,
           label="server_conns_peak"),
    Column("accept_queue_peak", INTEGER, "connections", "the listener's longest accept queue (Recv-Q of ss -ltn)",
           md=290),
    Column("listen_backlog", INTEGER, "connections", "the listener's effective backlog, min(acceptCount, somaxconn) "
           "(Send-Q of ss -ltn)", md=300),
    Column("queue_capacity", INTEGER, "connections", "what the server can hold: maxConnections + listen_backlog + 1",
           md=280, label="queue_capacity"),
    Column("time_wait_peak", INTEGER, "sockets", "most TIME-WAIT sockets of every end together (sampled)", md=330),
    Column("server_time_wait_peak", INTEGER, "sockets", "most TIME-WAIT sockets on the server (sampled; its own "
           "ends on SERVER_PORT, towards the users or nginx)"),
    Column("client_time_wait_peak", INTEGER, "sockets", "most TIME-WAIT sockets on the client (sampled)"),
    Column("proxy_upstream_time_wait_peak", INTEGER, "sockets", "most TIME-WAIT sockets of nginx's towards the "
           "target (sampled; PROXY=nginx, empty without)"),
    Column("proxy_client_time_wait_peak", INTEGER, "sockets", "most TIME-WAIT sockets of nginx's towards the "
           "users, on PROXY_PORT (sampled; PROXY=nginx, empty without)"),
    Column("net_rtt_applied_ms", NUMBER, "ms", "the round-trip time the delayer really applied: twice its packets' "
           "median hold (NET_RTT_MS; empty without a delayer)"),
    Column("net_hold_p99_ms", NUMBER, "ms", "the delayer's 99th-percentile hold of a packet, one way (half "
           "NET_RTT_MS asked)"),
    Column("net_unread_p99_ms", NUMBER, "ms", "the 99th-percentile time a packet waited in the kernel's queue "
           "before the delayer read it (part of net_hold_p99_ms; resolution 10 ms)"),
    Column("net_unread_peak", INTEGER, "packets", "the most packets seen queued by the kernel and not yet read "
           "by the delayer (looked at every 10 ms)"),
    Column("net_held_peak_per_s", INTEGER, "packets/s", "the most packets the delayer released in 100 ms, a second "
           "(both ways)"),
    Column("net_packets_lost", INTEGER, "packets", "packets the delayer dropped at random for NET_LOSS"),
    Column("net_delayer_drops", INTEGER, "packets", "packets the kernel dropped because the delayer fell behind "
           "(its queue or socket full); above 0 the cell is not as designed"),
    # The proxy's view (PROXY=nginx: its access and error logs, scripts/ltsuite/proxy.py); empty without.
    Column("proxy_reqs", INTEGER, "requests", "requests nginx logged (PROXY=nginx; empty without a proxy)", md=222),
    Column("proxy_502", INTEGER, "requests", "nginx's 502 answers (it could not connect to the target, or lost it)",
           md=223),
    Column("proxy_504", INTEGER, "requests", "nginx's 504 answers (PROXY_CONNECT_TIMEOUT or its read timeout passed)",
           md=224),
    Column("proxy_upstream_connect_errors", INTEGER, "connections", "nginx's connections to the target that "
           "failed (refused, reset; its error log)"),
    Column("proxy_upstream_connect_timeouts", INTEGER, "connections", "nginx's connections to the target not "
           "accepted within PROXY_CONNECT_TIMEOUT (its error log)", md=225),
    Column("proxy_request_p99_ms", NUMBER, "ms", "99th percentile of nginx's $request_time"),
    Column("proxy_upstream_connect_p99_ms", NUMBER, "ms", "99th percentile of nginx's $upstream_connect_time "
           "(the requests that connected)", md=226),
    Column("proxy_tls_handshakes", INTEGER, "connections", "the users' TLS connections nginx answered a request "
           "on (PROXY_TLS=1: each connection's first request in its log); empty on plain HTTP"),
    Column("proxy_tls_resumed", INTEGER, "connections", "of those, the handshakes that resumed a session "
           "(nginx's $ssl_session_reused r; TLS_SESSION_RESUMPTION)"),
    Column("tomcat_threads_busy_peak", INTEGER, "threads", "most busy Tomcat threads (actuator tomcat.threads.busy)"),
    Column("k6_cpu_avg_pct", NUMBER, "%", "k6's mean CPU (100 = one core)"),
    Column("k6_cpu_peak_pct", NUMBER, "%", "k6's highest CPU sample (100 = one core)"),
    Column("k6_cpu_saturated_s", INTEGER, "s", "seconds in which k6 used at least 90 % of every core, from the first request on"),
    Column("k6_rss_peak_mb", NUMBER, "MB", "k6's largest resident memory"),
    Column("k6_release_cpu_pct", NUMBER, "%", "k6's CPU while it released the users (first to last VU's first "
           "request, widened to the 50 ms trace around it; 100 = one core)"),
    Column("machine_release_busy_pct", NUMBER, "%", "the machine's busy CPU share over the same window (100 = every "
           "core)"),
    Column("release_window_ms", NUMBER, "ms", "the window k6_release_cpu_pct was measured over"),
    Column("generator_bound", FLAG, "", "1 when k6 set the pace (saturated cores, or VUs started late), else 0"),
    Column("predicted_server_conns_peak", INTEGER, "connections", "the kernel rules' server_conns_peak: "
           "min(users, queue_capacity, client ports)", md=270, label="predicted_server_conns_peak"),
    Column("predicted_failed_users", INTEGER, "users", "users the rules say cannot get in (beyond the queues)",
           label="predicted_failed_users"),
    Column("predicted_failed_users_from", TEXT, "", "the measured column the check compares predicted_failed_users "
           "with (fail_connect, fail_no_fd or failed_reqs; proxy_504 behind nginx)",
           label="users who could not get in (predicted_failed_users_from)"),
    Column("predicted_listen_overflows", INTEGER, "SYNs", "the rules' listen_overflows: overflowing users x SYNs "
           "within the timeout", md=310, label="predicted_listen_overflows"),
    Column("predicted_syn_retrans", INTEGER, "SYNs", "the rules' syn_retrans: overflowing users x SYN retries"),
    Column("predicted_tps", NUMBER, "req/s", "the rules' answered requests per second for the workers and the "
           "request time (answered_tps beside it)",
           label="predicted_tps"),
    Column("predicted_lat_max_ms", NUMBER, "ms", "the rules' slowest answer: the waves of users per worker",
           label="predicted_lat_max_ms"),
    Column("predicted_t_queued_p99_ms", NUMBER, "ms", "the rules' t_queued_p99_ms: the waves of users per thread, "
           "the k-th waiting (k - 1) x DELAY_MS"),
    Column("predicted_t_connect_p99_ms", NUMBER, "ms", "the rules' t_connect_p99_ms: users past the queues connect "
           "at the SYN schedule's next retransmit once room frees"),
    Column("predicted_tls_handshakes_end_ms", NUMBER, "ms", "the rule's tls_handshakes_end_ms: the larger of users x "
           "tls_handshake_cpu_ms / min(cores, workers) and users x (tls_handshake_cpu_ms + tls_client_cpu_ms) / "
           "cores, for a one-request burst the server holds (docs/tls.md)"),
    Column("predicted_tls_accept_queue_peak", INTEGER, "connections", "the accept queue that burst implies: 0 "
           "while max-connections holds every user (Tomcat accepts them; the handshakes wait inside it), else "
           "the users past max-connections, at most backlog + 1"),
    Column("predicted_tls_failed", INTEGER, "requests", "the users whose handshake cannot end within "
           "REQUEST_TIMEOUT: handshakes in waves of min(users, workers) sharing the cores, the users of the waves "
           "past the timeout (docs/tls.md); checked against fail_timeout + fail_tls"),
    Column("predicted_tls_failure_wait_ms", NUMBER, "ms", "how long each of them waits before it fails "
           "(REQUEST_TIMEOUT; the first T after the burst's start), checked against failed_wait_med_ms; empty "
           "when none is predicted"),
    Column("prediction_check", TEXT, "", "match or mismatch of the kernel figures against the predictions; empty "
           "when no rule applies", md=320),
    Column("prediction_notes", TEXT, "", "what a mismatch differs in, and the counters that explain it", md=920),
    Column("setup_s", NUMBER, "s", "from the cell's start to the target's start (k6's script, namespaces, "
           "sysctls), a training start left out"),
    Column("target_train_s", NUMBER, "s", "the one training start that made the start archive of a jar of one's "
           "own, in its first cell (empty in every other cell)"),
    Column("target_start_s", NUMBER, "s", "from the target's start to its first healthy answer"),
    Column("target_start_mode", TEXT, "", "how the JVM started: aot (JDK 25+ AOT cache), cds (class-data-sharing "
           "archive) or jar (neither), from target-start.txt"),
    Column("target_start_cpu_s", NUMBER, "s", "the target JVM's CPU-seconds up to its first healthy answer"),
    Column("target_java", TEXT, "", "the java version the target ran on (25.0.1), from target-start.txt: a JDK 21 "
           "or later with TOMCAT_VIRTUAL_THREADS=1"),
    # The warm-up before the load (WARMUP: scripts/ltsuite/warmup.py); empty without one.
    Column("warmup_s", NUMBER, "s", "the warm-up's wall time: its k6 run of WARMUP, its connections closed and "
           "their TIME-WAIT sockets removed (empty without a warm-up)"),
    Column("warmup_path", TEXT, "", "the path and query the warm-up asked at the users' URL"),
    Column("warmup_reqs", INTEGER, "requests", "requests the warm-up sent (its own summary, warmup-summary.json; "
           "never in http_reqs)"),
    Column("warmup_failed_reqs", INTEGER, "requests", "the warm-up's requests that failed"),
    Column("warmup_first_ms", NUMBER, "ms", "median time of the warm-up's requests answered in its first second"),
    Column("warmup_last_ms", NUMBER, "ms", "median time of the warm-up's requests answered in the last second of "
           "WARMUP (empty when it ended as settled before: warmup_settled_ms)"),
    Column("warmup_ended_by", TEXT, "", "what ended the warm-up: time (WARMUP passed), settled (WARMUP_UNTIL="
           "settled: the application's own time at the path stopped falling, ltsuite.warmsettle; warmup-settle.json) "
           "or count (WARMUP_UNTIL=count: Tomcat logged WARMUP_REQUESTS of its requests)"),
    Column("warmup_settled_ms", NUMBER, "ms", "the application's median time (%D) at the path over the warm-up's last "
           "3 s when it settled (empty when it ended by time)"),
    Column("k6_prep_s", NUMBER, "s", "from the target healthy to k6's start (client counters, sampler), the warm-up "
           "left out"),
    Column("k6_s", NUMBER, "s", "k6's wall time"),
    Column("teardown_s", NUMBER, "s", "from k6's end to the target stopped"),
    Column("files_s", NUMBER, "s", "writing the cell's files and its row"),
    Column("cell_wall_s", NUMBER, "s", "the cell's wall time"),
    Column("k6_exit", INTEGER, "", "k6's exit status (99: a threshold crossed)"),
    # The waiting room (scenarios/waiting-room.js; the server's counts from
    # GET /api/waiting-room/stats after the cell).
    _extra("waiting-room", "wr_visitors", INTEGER, "visitors", "visitors who registered (POST /api/wait)", fanout="sum"),
    _extra("waiting-room", "wr_admitted", INTEGER, "visitors", "visitors k6 saw admitted (canEnter)", fanout="sum"),
    _extra("waiting-room", "wr_gave_up", INTEGER, "visitors", "visitors who stopped after MAX_POLLS polls",
           fanout="sum"),
    _extra("waiting-room", "wr_forgotten", INTEGER, "visitors", "polls answered 404 (the room forgot the visitor, "
           "who registers again)", fanout="sum"),
    _extra("waiting-room", "wr_wait_requests", INTEGER, "requests", "POST /api/wait requests", fanout="sum"),
    _extra("waiting-room", "wr_entry_requests", INTEGER, "requests", "POST /api/entry polls", fanout="sum"),
    _extra("waiting-room", "wr_can_enter_true", INTEGER, "answers", "answers with canEnter true", fanout="sum"),
    _extra("waiting-room", "wr_can_enter_false", INTEGER, "answers", "answers with canEnter false", fanout="sum"),
    _extra("waiting-room", "wr_admission_med_ms", NUMBER, "ms", "median time from registering to admission",
           fanout="merged", trend=("wr_time_to_admission", "med")),
    _extra("waiting-room", "wr_admission_p95_ms", NUMBER, "ms", "95th percentile time to admission",
           fanout="merged", trend=("wr_time_to_admission", "p(95)")),
    _extra("waiting-room", "wr_admission_max_ms", NUMBER, "ms", "longest time to admission", fanout="max",
           trend=("wr_time_to_admission", "max")),
    _extra("waiting-room", "wr_admit_per_second", NUMBER, "visitors/s", "the room's admission rate "
           "(WAITING_ROOM_ADMIT_PER_SECOND)", fanout="same"),
    _extra("waiting-room", "wr_server_admitted", INTEGER, "visitors", "visitors the room admitted, by its own count"),
    _extra("waiting-room", "wr_server_max_admitted_in_one_second", INTEGER, "visitors", "most admissions in any "
           "1000 ms window, by the room's count"),
    _extra("waiting-room", "wr_server_max_inside_observed", INTEGER, "visitors", "most admitted visitors inside at "
           "once, by the room's count"),
    # The open model (scenarios/spike-open.js).
    _extra("spike-open", "arrival_rate_per_s", NUMBER, "iterations/s", "the arrival rate asked for (RATE per "
           "TIME_UNIT)", fanout="same"),
    _extra("spike-open", "iteration_rate_per_s", NUMBER, "iterations/s", "the rate of iterations k6 completed",
           fanout="sum"),
    # WebSocket sessions (scenarios/websocket.js; the endpoint's counts from GET /ws/stats).
    _extra("websocket", "ws_sessions", INTEGER, "sessions", "sessions k6 started", fanout="sum"),
    _extra("websocket", "ws_sessions_ok", INTEGER, "sessions", "sessions that ended cleanly", fanout="sum"),
    _extra("websocket", "ws_sessions_failed", INTEGER, "sessions", "the others: the four ws_fail_* added up",
           fanout="sum"),
    _extra("websocket", "ws_fail_refused", INTEGER, "sessions", "the handshake failed (refused, reset, or not 101)",
           fanout="sum"),
    _extra("websocket", "ws_fail_handshake_timeout", INTEGER, "sessions", "the handshake timed out", fanout="sum"),
    _extra("websocket", "ws_fail_abnormal_close", INTEGER, "sessions", "the server closed first with a code other "
           "than 1000/1001, or the connection broke", fanout="sum"),
    _extra("websocket", "ws_fail_timeout", INTEGER, "sessions", "no reply or Close frame within REQUEST_TIMEOUT",
           fanout="sum"),
    _extra("websocket", "ws_connect_p95_ms", NUMBER, "ms", "95th percentile time to open a session",
           fanout="merged", trend=("ws_connect", "p(95)")),
    _extra("websocket", "ws_message_p95_ms", NUMBER, "ms", "95th percentile time from a job to its reply",
           fanout="merged", trend=("ws_message", "p(95)")),
    _extra("websocket", "ws_message_max_ms", NUMBER, "ms", "slowest reply", fanout="max",
           trend=("ws_message", "max")),
    _extra("websocket", "ws_close_p95_ms", NUMBER, "ms", "95th percentile time of close() to the closed session",
           fanout="merged", trend=("ws_close", "p(95)")),
    _extra("websocket", "ws_close_p99_ms", NUMBER, "ms", "99th percentile close time",
           fanout="merged", trend=("ws_close", "p(99)")),
    _extra("websocket", "ws_close_max_ms", NUMBER, "ms", "slowest close", fanout="max",
           trend=("ws_close", "max")),
    _extra("websocket", "ws_server_sessions", INTEGER, "sessions", "sessions the endpoint opened, by its own count"),
    _extra("websocket", "ws_server_replies", INTEGER, "replies", "replies the endpoint sent"),
    _extra("websocket", "ws_server_replies_lost", INTEGER, "replies", "replies the endpoint could not send"),
    _extra("websocket", "delayed_acks", INTEGER, "segments", "TcpExtDelayedACKs delta on the server"),
    _extra("websocket", "delayed_ack_lost", INTEGER, "segments", "TcpExtDelayedACKLost delta on the server"),
    _extra("websocket", "abort_on_close", INTEGER, "connections", "TcpExtTCPAbortOnClose delta on the server: "
           "closed with unread data (a reset)"),
    _extra("websocket", "abort_on_data", INTEGER, "connections", "TcpExtTCPAbortOnData delta on the server: reset "
           "on data after close (SO_LINGER 0 too)"),
    _extra("websocket", "abort_on_linger", INTEGER, "connections", "TcpExtTCPAbortOnLinger delta on the server"),
    _extra("websocket", "abort_on_timeout", INTEGER, "connections", "TcpExtTCPAbortOnTimeout delta on the server"),
    _extra("websocket", "tcp_timeouts", INTEGER, "events", "TcpExtTCPTimeouts delta on the server"),
    Column("error", TEXT, "", "why the cell failed; empty when ok", md=900),
    Column("notes", TEXT, "", "why some columns are empty or measured differently for this cell", influx=None),
    # Keys of a fan-out's row (scripts/ssm-fanout.sh) that results.csv does not show.
    Column("backend", TEXT, "", "where the load came from (ssm for a fan-out's row)", csv=False, influx=None),
    Column("instances", INTEGER, "k6 processes", "the fan-out's instances whose rows this row adds up", csv=False),
    # Every row's: the layout it was written in (ltsuite.formats).
    Column("format", INTEGER, "", "the layout of row.json and manifest.json (RUN_FORMAT of scripts/formats.env): "
           "a reader refuses a file in a format it does not read; a row without it is format 1",
           csv=False, influx=None),
)

BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}


def trend_metrics() -> tuple[str, ...]:
    """The k6 trend metrics some column is a statistic of (Column.trend), sorted: the metrics
    each k6 process's samples are reduced to histograms of (ltsuite.histogram reduce)."""
    return tuple(sorted({c.trend[0] for c in COLUMNS if c.trend is not None}))


def scenario_columns() -> list[Column]:
    """The columns scenarios add, in COLUMNS order."""
    return [c for c in COLUMNS if c.scenario is not None]


def extra_names(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The scenarios' own columns the rows carry (row.json's "extra"), in the order the rows
    first name them."""
    names: list[str] = []
    for row in rows:
        for key in row.get("extra") or {}:
            if key not in names:
                names.append(key)
    return names


def csv_head(axes: Iterable[str], extra: Iterable[str]) -> list[str]:
    """results.csv's header: the columns in COLUMNS order, the matrix's AXES in the axes' place
    and EXTRA (the scenarios' columns a run's rows carry, in the order they first name them)
    where the scenarios' columns stand."""
    head: list[str] = []
    extra_done = False
    for column in COLUMNS:
        if not column.csv:
            continue
        if column.axis:
            head.extend(axes)
        elif column.scenario is not None:
            if not extra_done:
                head.extend(extra)
                extra_done = True
        else:
            head.append(column.name)
    return head


def md_columns(proxy: bool = False) -> list[Column]:
    """The columns results.md shows, in their md order (the axes' stand-in included); the
    proxy's (MD_PROXY) only with PROXY set (a run with a proxy in some cell)."""
    return sorted((c for c in COLUMNS if c.md is not None and c.scenario is None
                   and (proxy or c.md not in MD_PROXY)), key=lambda c: c.md)


def md_figures(proxy: bool = False) -> list[str]:
    """The figures results.md (and report.html's repetitions table) shows for every row and
    matrix cell, before the scenarios' own: a subset that fits a screen (the proxy's with
    PROXY)."""
    return [c.name for c in md_columns(proxy) if c.md in MD_FIGURES]


def md_head(axes: Iterable[str], extra: Iterable[str], proxy: bool = False) -> list[str]:
    """results.md's header: lead columns, AXES, the figures (the proxy's with PROXY), EXTRA,
    then the trailing text."""
    head: list[str] = []
    extra_placed = False
    for column in md_columns(proxy):
        if column.md >= MD_EXTRA and not extra_placed:
            head.extend(extra)
            extra_placed = True
        if column.axis:
            head.extend(axes)
        else:
            head.append(column.name)
    if not extra_placed:
        head.extend(extra)
    return head


def influx_fields() -> list[str]:
    """The keys of a row that ltsuite_cells carries as fields (numbers; error as text)."""
    return [c.name for c in COLUMNS if c.influx_role == FIELD]


def influx_tags() -> list[str]:
    """The keys of a row that ltsuite_cells carries as tags (besides the axes)."""
    return [c.name for c in COLUMNS if c.influx_role == TAG and not c.axis]


def compare_columns() -> list[str]:
    """The figures make compare looks at, in results.csv order; the scenarios' columns after
    the others, by name (scripts/report/compare.jq drops the ones neither run has)."""
    common = [c.name for c in COLUMNS if c.compared and c.scenario is None]
    return common + sorted(c.name for c in COLUMNS if c.compared and c.scenario is not None)


def labels() -> dict[str, str]:
    """The titles the report gives the columns it charts, by name."""
    return {c.name: c.label for c in COLUMNS if c.label is not None}


def export() -> dict:
    """The schema as JSON for the shell, jq and the report: every column, and each table's list."""
    return {
        "columns": [
            {
                "name": c.name,
                "type": c.type,
                "unit": c.unit,
                "meaning": c.meaning,
                "tables": list(c.tables),
                "md": c.md,
                "label": c.label,
                "scenario": c.scenario,
                "influx": c.influx_role,
            }
            for c in COLUMNS
        ],
        "md_figures": md_figures(),
        "influx_fields": influx_fields(),
        "influx_tags": influx_tags(),
        "compare": compare_columns(),
        "labels": labels(),
    }


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """docs/columns.md: every column as a table, the scenarios' own under their scenario."""
    lines = [
        "<!-- Generated by `make columns-doc` from scripts/ltsuite/columns.py: edit that file, not this one. -->",
        "# The columns of a results row",
        "",
        "Every cell of a run ends in one row (`cells/<cell>/row.json`); `results.csv` has every column,",
        "in the order below. The tables that show a column:",
        "",
        "- **results.csv**: every column, in this order; `report.html`'s results table has the same.",
        "- **results.md**: a subset that fits a screen (the report's repetitions table shows the same figures).",
        "- **report chart**: charted across cells in `report.html`, under the title given.",
        "- **InfluxDB**: the `ltsuite_cells` measurement: a tag, or a field.",
        "- **make compare**: the figures two runs are compared on.",
        "",
        "An empty value is unmeasured, never 0. Latency columns are over answered requests (2xx/3xx).",
        "",
    ]

    def table(columns: Iterable[Column]) -> list[str]:
        out = ["| column | type | unit | meaning | tables |", "|---|---|---|---|---|"]
        for c in columns:
            shown = []
            for t in c.tables:
                title = TABLE_TITLES[t]
                if t == "report":
                    title += f" ({c.label})"
                elif t == "influx":
                    title += f" {c.influx_role}"
                shown.append(title)
            name = "*one per axis*" if c.axis else f"`{c.name}`"
            out.append(f"| {name} | {c.type} | {_md_cell(c.unit)} | {_md_cell(c.meaning)} | {', '.join(shown)} |")
        return out

    lines += ["## Every row", ""]
    lines += table(c for c in COLUMNS if c.scenario is None and c.csv)
    scenarios: list[str] = []
    for c in scenario_columns():
        if c.scenario not in scenarios:
            scenarios.append(c.scenario)
    for scenario in scenarios:
        lines += ["", f"## Added by the `{scenario}` scenario", "",
                  "After `k6_exit` in results.csv, where a run's rows carry them (row.json's `extra`).", ""]
        lines += table(c for c in scenario_columns() if c.scenario == scenario)
    rest = [c for c in COLUMNS if not c.csv]
    if rest:
        lines += ["", "## In row.json only", ""]
        lines += table(rest)
    lines += [
        "",
        "## Adding a column",
        "",
        "A column is one entry of `COLUMNS` in `scripts/ltsuite/columns.py`, where the row builder's key",
        "goes: name, type, unit and a one-line meaning. Its place in that list is its place in",
        "`results.csv`. A number is an InfluxDB field and a figure of `make compare` by itself;",
        f"`md=` gives it a place in `results.md` (below {MD_FIGURES.start}: the lead columns; "
        f"{MD_FIGURES.start}-{MD_FIGURES.stop - 1}: the figures;",
        f"{MD_EXTRA}: the scenarios' own; from {MD_EXTRA + 100}: the trailing text), `label=` a chart across cells in",
        "`report.html` (its title; `scripts/report/report.js` names the charts), `scenario=` makes it a scenario's",
        "own (row.json's `extra`). Then `make columns-doc` writes this page again; `make test-python` fails",
        "while a table or this page disagrees with the list.",
        "",
        "A scenario's column that is a statistic of one of its k6 trends needs no code: `trend=(metric,",
        "stat)` (the stat one of `TREND_STATS` in `scenarios/lib/summary.js`, which the shell reads too)",
        "fills it from the summary, and with several k6 processes or fan-out instances from their merged",
        "histograms (`fanout=\"merged\"`); `tests/python/test_trends.py` adds one that way.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """--json: the export (one line); --markdown: docs/columns.md."""
    parser = argparse.ArgumentParser(prog="ltsuite.columns", description="The columns of a results row.")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--json", action="store_true", help="the schema as JSON (columns and each table's list)")
    group.add_argument("--markdown", action="store_true", help="docs/columns.md")
    args = parser.parse_args(argv)
    if args.json:
        sys.stdout.write(json.dumps(export(), separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
