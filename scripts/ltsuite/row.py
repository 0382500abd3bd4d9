"""One results row per cell (row.json): k6's summary, the sampler's peaks, the counter deltas, the
recorded sysctls and phase times, judged by the design checks and the kernel's predictions.

  python3 -m ltsuite.row CELL_DIR --run-id ID --status ok|failed [--error TEXT] [--axes JSON]
                         [--wall-s S] [--repeat JSON] [--k6-exit N] [--cpus N] [--out FILE]

writes CELL_DIR/row.json (or FILE) through a temporary file and a rename. A summary that is
missing or unreadable makes the cell failed with that reason; when the row itself cannot be built,
a failed row says why and the exit status is 1, so a cell never ends without a row.

Unmeasured is empty, never 0: a side whose counters were not read (an external TARGET_URL has no
server side; a cell that failed before its snapshots) gives None for its counters, and a sampler
that never sampled gives None peaks and a design note.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import accesslog, design, generator, histogram, netdelay, proxy, timeparts, tlsburst, trends, warmup
from .causes import INTERRUPTED, failure_causes
from .columns import scenario_columns, trend_metrics
from . import formats
from .cellfiles import (Phases, Samples, Summary, log_count, machine_cpus, read_cell_env, read_deltas,
                        read_nstat, read_object, read_phases, read_samples, read_summary, read_sysctls,
                        read_text, summary_problem)
from .numbers import num, or_default, r2, rounded, tidy, to_number
from .rules import duration_ms

#: The sampled TIME-WAIT columns, one per end (nginx's two only behind it): together every end's.
TIME_WAIT_ENDS = ("server_time_wait", "proxy_upstream_time_wait", "proxy_client_time_wait", "client_time_wait")
#: The sampler's columns of the server side (sampler.py's COLUMNS).
SERVER_SAMPLED = ("listen_recvq", "listen_sendq", "server_estab", "server_syn_recv", "server_time_wait",
                  "tomcat_threads_busy", "tomcat_connections")



def start_figures(cell: "Cell") -> dict[str, Any]:
    """How the target started and the phases around it, where the cell recorded them: the start
    mode and the JVM's CPU-seconds to healthy (target-start.txt, scripts/lib/target_start.sh), a
    training start (marks train_start/train_end) and k6's preparation (target_ready to k6_start).
    A cell without them (an older run, an external target) gets no key: unmeasured, not 0."""
    start = read_cell_env(cell.dir / "target-start.txt") or {}
    figures = {
        "target_train_s": cell.phases.seconds("train_start", "train_end"),
        "target_start_mode": start.get("target_start_mode") or None,
        "target_java": start.get("target_java") or None,
        "target_start_cpu_s": to_number(start.get("target_start_cpu_s") or ""),
        "k6_prep_s": k6_prep_s(cell),
    }
    return {key: num(value) if isinstance(value, float) else value
            for key, value in figures.items() if value is not None}


def k6_prep_s(cell: "Cell") -> float | None:
    """Seconds from the target's readiness to k6's start, the warm-up (marks warmup_start/
    warmup_end, scripts/lib/warmup.sh) left out: it is counted apart in warmup_s."""
    seconds = cell.phases.seconds("target_ready", "k6_start")
    if seconds is None:
        return None
    return seconds - (cell.phases.seconds("warmup_start", "warmup_end") or 0)


def setup_s(cell: "Cell") -> Any:
    """Seconds from the cell's start to the target's (last) start, without a training start of
    the target's start archive (marks train_start/train_end, scripts/lib/target_start.sh), which
    is counted apart in target_train_s."""
    seconds = cell.phases.seconds("cell_start", "target_start")
    if seconds is None:
        return None
    train = cell.phases.seconds("train_start", "train_end") or 0
    return num(seconds - train)


def k6_warnings(cell_dir: Path, _env: dict[str, Any]) -> list[str]:
    """k6-warnings.txt (scripts/lib/k6.sh, k6_outputs_check): each output a script's
    handleSummary asked for that k6 could not write, a line each."""
    body = read_text(cell_dir / "k6-warnings.txt") or ""
    return [line for line in body.split("\n") if line != ""]


#: Notes some cells add (one function per source, each given the cell's directory and knobs and
#: giving sentences for the row's notes column): the place for files written beside k6's own.
NOTE_SOURCES: list[Callable[[Path, dict[str, Any]], list[str]]] = [k6_warnings, warmup.notes]


@dataclass
class Cell:
    """Everything the row is built from: a cell directory's files, read once."""

    dir: Path
    env: dict[str, str]
    inspected: Any
    summary: Summary
    samples: Samples | None
    deltas: dict[str, dict[str, int]]
    measured_sides: set[str]
    sysctls: dict[str, dict[str, str]]
    phases: Phases
    extra_in: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, cell_dir: Path) -> "Cell":
        """The cell directory's files (see ltsuite.cellfiles)."""
        extra_in: dict[str, Any] = {}
        # The server's own account of a scenario (run_cell_steps): waiting room, WebSocket.
        for stats in ("waiting-room", "websocket"):
            value = read_object(cell_dir / f"{stats}-stats.json")
            if value is not None:
                extra_in = {stats.replace("-", "_"): value}
        connector = read_object(cell_dir / "connector.json")
        if connector is not None:
            extra_in = {**extra_in, "connector": connector}
        measured = {side for side in ("server", "client")
                    if read_nstat(cell_dir / f"nstat-{side}-before.txt") is not None
                    and read_nstat(cell_dir / f"nstat-{side}-after.txt") is not None}
        return cls(
            dir=cell_dir,
            env=read_cell_env(cell_dir / "cell.env") or {},
            inspected=read_object(cell_dir / "k6-script.json"),
            summary=read_summary(cell_dir / "summary.json"),
            samples=read_samples(cell_dir / "samples.tsv"),
            deltas=read_deltas(cell_dir / "netstat-delta.tsv"),
            measured_sides=measured,
            sysctls=read_sysctls(cell_dir / "sysctls.tsv"),
            phases=read_phases(cell_dir / "phases.tsv"),
            extra_in=extra_in,
        )

    def external(self) -> bool:
        """The target is one the suite did not start (TARGET_URL): it has no server side here."""
        return (self.env.get("TARGET_URL") or "") != ""

    def delta(self, side: str, counter: str) -> int | None:
        """A counter's change over the cell: 0 when it did not change, None when that side's
        counters were not read."""
        if side not in self.measured_sides:
            return None
        return (self.deltas.get(side) or {}).get(counter, 0)


@dataclass
class Peaks:
    """What the sampler's rows say: each column's peak, the TIME-WAIT peak of every end together,
    k6's mean CPU and the seconds in which it used 90 % or more of every core; and whether the
    rows cover the load (a sampler that never sampled, or stopped early, leaves checks
    unmade)."""

    peak: dict[str, Any]
    time_wait_total: Any
    k6_cpu_avg: Any
    k6_cpu_saturated_s: Any
    problem: str | None


def sample_peaks(cell: Cell, cpus: int, load_from_s: float | None = None) -> Peaks:
    """The sampler's figures of a cell. k6 is saturated in a sample at >= 90 % of all cpus cores
    (the sampler's k6_cpu_pct counts 100 per core); each such sample stands for one
    SAMPLE_INTERVAL. Only samples from load_from_s on (epoch s: the first request) count: before
    it k6 creates its VUs and sends nothing (30,000 VUs kept 2 cores busy for 23 s before a burst),
    which sets no pace. A sample's CPU is over the interval before its ts, so it counts when most
    of that interval is past load_from_s (its middle at or after it): the first sample after the
    first request is mostly the VUs' creation (a ramp of 200 VUs: 170-182 % of 2 cores in that
    tick, 9 % over the release, runs 20261129-015519-eurekaserver and a configserver cell).
    Without a server side (external target) the server's columns are None."""
    interval = to_number(cell.env.get("SAMPLE_INTERVAL") or "1") or 1
    samples = cell.samples
    problem = sampling_problem(cell, interval)
    if samples is None or not samples.rows:
        return Peaks({}, None, None, None, problem)
    peak = {name: samples.peak(name) for name in samples.columns[1:]}
    if cell.external():
        for name in SERVER_SAMPLED:
            if name in peak and name not in ("tomcat_threads_busy", "tomcat_connections"):
                peak[name] = None
    time_wait = [sum(or_default(row.get(name), 0) for name in TIME_WAIT_ENDS) for row in samples.rows]
    time_wait_total = max(time_wait + [0])
    if cell.external():
        time_wait_total = peak.get("client_time_wait")
    cpu = samples.values("k6_cpu_pct")
    avg = tidy(float("%.1f" % (sum(cpu) / len(cpu)))) if cpu else None
    during_load = [row.get("k6_cpu_pct") for row in samples.rows
                   if load_from_s is None or (row.get("ts") is not None and row["ts"] - interval / 2 >= load_from_s)]
    saturated = (tidy(sum(1 for c in during_load if c is not None and c >= 90 * cpus) * interval)
                 if cpu else None)
    return Peaks(peak, time_wait_total, avg, saturated, problem)


def sampling_problem(cell: Cell, interval: float) -> str | None:
    """Why the sampler's rows do not cover the load (k6_start to k6_end, within two sample
    intervals), or None. LT_SAMPLER=off, python3 missing or a crash leave samples.tsv with no
    row."""
    marks = cell.phases.last()
    if "k6_start" not in marks or "k6_end" not in marks:
        return None  # no load ran: nothing was there to sample
    if cell.samples is None:
        return "the sampler wrote no samples.tsv"
    if not cell.samples.rows:
        return "the sampler took no sample (samples.tsv has no row)"
    stamps = [row.get("ts") for row in cell.samples.rows if row.get("ts") is not None]
    slack = 2 * interval + 1
    if stamps and max(stamps) < marks["k6_end"] / 1000 - slack:
        return "the sampler stopped %.1f s before k6 ended (samples.tsv)" % (marks["k6_end"] / 1000 - max(stamps))
    return None


def _values(summary: Summary, name: str) -> dict[str, Any] | None:
    return summary.values(name)


def failed_for_files(cell: Cell, summary: Summary) -> dict[str, Any]:
    """fail_no_fd and fail_connect: requests the client had no file descriptor for ("too many
    open files", scenarios/lib/causes.js) and the dial failures that were not that. The suite's
    scenarios count both; a script of one's own counts k6's error codes only, where both are
    1213, so its fail_no_fd is the "too many open files" lines of k6's log, taken out of
    fail_connect. Every fail_* still adds up to failed_reqs."""
    connect = summary.count("fail_connect")
    if connect is None:
        return {"fail_no_fd": None, "fail_connect": None}
    if summary.values("fail_no_fd") is not None:
        return {"fail_no_fd": summary.count("fail_no_fd"), "fail_connect": connect}
    no_fd = min(log_count(cell.dir, "too many open files"), connect)
    return {"fail_no_fd": no_fd, "fail_connect": connect - no_fd}


def interrupted_requests(summary: Summary) -> int | None:
    """fail_interrupted: load requests handed to k6/http (lt_requests_sent) that it never gave
    back (lt_requests_returned, scenarios/lib/delivered.js). Each was still waiting, to connect
    or for its answer, when its scenario's graceful stop or ramp-down cut its iteration; k6
    records nothing for such a request (causes.tsv), so it is not in k6's http_reqs or
    http_req_failed, and the row adds it to both. None (unmeasured) when the counters are
    missing: k6 never ran, or the cell was recorded before the scenarios counted them."""
    sent, returned = summary.values("lt_requests_sent"), summary.values("lt_requests_returned")
    if sent is None or returned is None:
        return None
    return max(int(or_default(sent.get("count"), 0)) - int(or_default(returned.get("count"), 0)), 0)


def request_counts(summary: Summary) -> dict[str, Any]:
    """http_reqs, failed_reqs and failed_rate: k6's load requests and its failed ones
    (http_reqs, http_req_failed with traffic:load), each with the requests cut off while they
    waited (interrupted_requests) added: those were sent and got no answer. failed_rate is k6's
    own when none was cut off."""
    reqs, failed = summary.values("http_reqs"), summary.values("http_req_failed")
    cut = interrupted_requests(summary) or 0
    sent = None if reqs is None else reqs.get("count")
    sent = None if sent is None else sent + cut
    failed_count = None if failed is None else failed.get("passes")
    failed_count = None if failed_count is None else failed_count + cut
    if failed is None:
        rate = None
    elif cut == 0 or not sent:
        rate = num(failed.get("rate"))
    else:
        rate = num(failed_count / sent)
    return {"http_reqs": sent, "failed_reqs": failed_count, "failed_rate": rate}


def _total(counts: list[int | float | None]) -> int | float | None:
    """The sum of counts, None when any is unmeasured."""
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def k6_instances(cell: Cell) -> int:
    """The k6 processes the cell ran (K6_INSTANCES as the run resolved it; 1 when not a number)."""
    return int(to_number(cell.env.get("K6_INSTANCES") or "1") or 1)


def latency_figures(cell: Cell) -> tuple[dict[str, Any], str | None]:
    """The latency of answered requests (2xx/3xx; failures are counted apart) from k6's summary;
    no answered request gives None, not k6's zeros. When k6's percentiles are missing (several
    k6 processes: a merged summary has none), they come from the merge of every process's
    histogram (ltsuite.histogram: within its 0.5 % of those of all raw samples), or are left
    None with a note saying which file is missing."""
    d = cell.summary.exact("http_req_duration{traffic:load,expected_response:true}")
    if d is None or or_default(d.get("count"), 1) == 0:
        d = {}
    note = None
    instances = k6_instances(cell)
    if d and instances > 1 and d.get("p(95)") is None:
        exact = histogram.cell_percentiles(cell.dir, instances)
        if exact.values is not None:
            d = {**d, **exact.values}
            note = exact.note
        else:
            note = exact.note
    return d, note


def trend_percentiles(cell: Cell) -> trends.Trends:
    """The percentiles of the trend metrics the columns name (ltsuite.columns.trend_metrics) that
    the cell's summary has samples of but no percentiles: a cell run by several k6 processes,
    whose summaries merge without them (scripts/lib/merge-summaries.jq). They come from the merge
    of every process's histogram of the metric (ltsuite.histogram), as the latency's do; a single
    process's summary has k6's own."""
    instances = k6_instances(cell)
    if instances <= 1:
        return trends.Trends({}, None)
    metrics = [name for name in trend_metrics()
               if or_default((cell.summary.exact(name) or {}).get("count"), 0) > 0
               and (cell.summary.exact(name) or {}).get("p(95)") is None]
    return trends.cell_trends(cell.dir, int(instances), metrics)


def extra(cell: Cell, env: dict[str, Any], restored: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Figures only some scenarios have; results.csv adds their columns when a row carries them:
    the waiting room's admissions (beside the server's own account, /api/waiting-room/stats),
    the open model's arrival rate, the WebSocket sessions and the server's close path. A trend's
    percentiles the summary lacks are RESTORED's (trend_percentiles), by metric. A column that is
    a statistic of a k6 trend (Column.trend: the metric and the stat, as summary.js keeps it) is
    filled from it here for every scenario's columns, so a new one is two edits: the stat in
    summary.js's TREND_STATS, the column in ltsuite.columns."""
    scenario = env.get("SCENARIO")
    return {**_scenario_figures(cell, env, scenario), **_trend_figures(cell, scenario, restored)}


def _trend_figures(cell: Cell, scenario: str | None, restored: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """SCENARIO's trend columns (Column.trend), from the summary's values, its missing ones
    from RESTORED (the merged histograms of several k6 processes)."""
    columns = [c for c in scenario_columns() if c.scenario == scenario and c.trend is not None]
    out: dict[str, Any] = {}
    for column in columns:
        metric, stat = column.trend
        values = ((cell.summary.metrics.get(metric) or {}).get("values")) or {}
        value = values.get(stat)
        if value is None:
            value = ((restored or {}).get(metric) or {}).get(stat)
        out[column.name] = num(value)
    return out


def _scenario_figures(cell: Cell, env: dict[str, Any], scenario: str | None) -> dict[str, Any]:
    """The figures of extra() that are not a statistic of a k6 trend."""
    summary = cell.summary
    count_of = summary.count
    if scenario == "waiting-room":
        room = cell.extra_in.get("waiting_room") or {}
        return {
            "wr_visitors": count_of("wr_visitors"),
            "wr_admitted": count_of("wr_admitted"),
            "wr_gave_up": count_of("wr_gave_up"),
            "wr_forgotten": count_of("wr_forgotten"),
            "wr_wait_requests": count_of("wr_wait_requests"),
            "wr_entry_requests": count_of("wr_entry_requests"),
            "wr_can_enter_true": count_of("wr_can_enter_true"),
            "wr_can_enter_false": count_of("wr_can_enter_false"),
            "wr_admit_per_second": to_number(env.get("WAITING_ROOM_ADMIT_PER_SECOND")),
            "wr_server_admitted": room.get("admitted") if isinstance(room, dict) else None,
            "wr_server_max_admitted_in_one_second": room.get("maxAdmittedInOneSecond") if isinstance(room, dict) else None,
            "wr_server_max_inside_observed": room.get("maxInsideObserved") if isinstance(room, dict) else None,
        }
    if scenario == "spike-open":
        iterations = _values(summary, "iterations") or {}
        # TIME_UNIT is a duration > 0 (env/defaults.env): refused at validation when zero.
        unit_ms, rate = duration_ms(env.get("TIME_UNIT") or ""), to_number(env.get("RATE"))
        return {
            "arrival_rate_per_s": None if not unit_ms or rate is None else num(rate * 1000 / unit_ms),
            "iteration_rate_per_s": num(iterations.get("rate")),
        }
    if scenario == "websocket":
        ws = cell.extra_in.get("websocket") or {}
        ws = ws if isinstance(ws, dict) else {}
        return {
            "ws_sessions": count_of("ws_sessions"),
            "ws_sessions_ok": count_of("ws_sessions_ok"),
            "ws_sessions_failed": _total([count_of(n) for n in ("ws_fail_refused", "ws_fail_handshake_timeout",
                                                                "ws_fail_abnormal_close", "ws_fail_timeout")]),
            "ws_fail_refused": count_of("ws_fail_refused"),
            "ws_fail_handshake_timeout": count_of("ws_fail_handshake_timeout"),
            "ws_fail_abnormal_close": count_of("ws_fail_abnormal_close"),
            "ws_fail_timeout": count_of("ws_fail_timeout"),
            # The endpoint's own counts (GET /ws/stats after the cell): sessions it opened and
            # replies it sent or could not send.
            "ws_server_sessions": ws.get("sessionsOpened"),
            "ws_server_replies": ws.get("replies"),
            "ws_server_replies_lost": ws.get("repliesLost"),
            # The close path, server side (the client's are in netstat-delta.tsv).
            "delayed_acks": cell.delta("server", "TcpExtDelayedACKs"),
            "delayed_ack_lost": cell.delta("server", "TcpExtDelayedACKLost"),
            "abort_on_close": cell.delta("server", "TcpExtTCPAbortOnClose"),
            "abort_on_data": cell.delta("server", "TcpExtTCPAbortOnData"),
            "abort_on_linger": cell.delta("server", "TcpExtTCPAbortOnLinger"),
            "abort_on_timeout": cell.delta("server", "TcpExtTCPAbortOnTimeout"),
            "tcp_timeouts": cell.delta("server", "TcpExtTCPTimeouts"),
        }
    return {}


def connector_findings(cell: Cell) -> list[design.Finding]:
    """The connector the application reports differs from the cell's knobs
    (/actuator/configprops): the cell did not run with the settings its row names."""
    connector = cell.extra_in.get("connector") or {}
    return [design.Finding("settings", f"the target runs {m.get('property')}={or_default(m.get('effective'), 'unset')} "
                                       f"where the cell set {m.get('cell')} ({m.get('source') or '/actuator/configprops'})")
            for m in (connector.get("mismatches") or [] if isinstance(connector, dict) else [])]


def busy_threads_note(env: dict[str, Any], connector: Any) -> str:
    """Why tomcat_threads_busy_peak is empty for a Spring Boot target. The
    actuator that answered the connector check (connector.json's status) says
    what stands in the way: Spring Security's 401/403/302 or an application's
    own error handler's 500 is named as such; only with TARGET_ACTUATOR=as-is
    (the application's own exposure kept) is the fix an exposure to add, since
    otherwise the suite exposed metrics itself (scripts/lib/target.sh)."""
    where = f"the target's actuator gave no tomcat.threads.busy on 127.0.0.1:{env.get('MANAGEMENT_PORT')}"
    status = str(connector.get("status") or "") if isinstance(connector, dict) else ""
    if status in ("401", "403", "302"):
        why = (f"the actuator is guarded by Spring Security or another filter of the application's: it answered HTTP "
               f"{status}; permit the actuator on its own port (EndpointRequest.toAnyEndpoint())")
    elif status == "500":
        why = "the application maps the actuator's answers to HTTP 500 (an exception handler of its own)"
    elif str(env.get("TARGET_ACTUATOR") or "needed") == "as-is":
        why = ("TARGET_ACTUATOR=as-is keeps the application's own exposure: it needs "
               "management.endpoints.web.exposure.include=metrics")
    else:
        why = ("the suite exposed metrics there (TARGET_ACTUATOR=needed): the application has no Micrometer meters "
               "for Tomcat, or turned the endpoint off (management.endpoint.metrics.enabled or .access)")
    return f"{where} ({why}): tomcat_threads_busy_peak stays empty"


def row_notes(cell: Cell, env: dict[str, Any], row: dict[str, Any], latency_note: str | None) -> list[str]:
    """Why some columns are empty or measured differently, for this cell."""
    notes = []
    if env.get("script") is not None:
        notes.append("a k6 script of one's own: vus_started, first_request_* and load_window_s are taken at its "
                     "iterations' start and end (its requests are not wrapped); failures split by k6's error_code")
    cut = or_default(row.get("iterations_interrupted"), 0)
    if cut > 0 and design.own_stop_counted(env, row):
        notes.append(f"{cut} of {row.get('iterations_started')} iterations were cut by the script's own graceful stop "
                     f"({env.get('script_stops') or 'its options'}), {row.get('fail_interrupted')} of them while a "
                     "request waited: those requests are failed ones (fail_interrupted), and a stop the script's "
                     "options chose is its design, not a load that failed to happen (as_designed stays 1)")
    if (env.get("TARGET_CMD") or "") != "":
        notes.append("TARGET_CMD is not Tomcat: tomcat_threads_busy_peak, queue_capacity and the predictions stay empty")
    elif str(env.get("TOMCAT_VIRTUAL_THREADS") or "0") == "1" and row.get("tomcat_threads_busy_peak") is None:
        notes.append("virtual threads: Tomcat keeps no thread pool (tomcat.threads.busy is -1), so "
                     "tomcat_threads_busy_peak stays empty")
    elif (env.get("TARGET_URL") or "") == "" and row.get("tomcat_threads_busy_peak") is None:
        notes.append(busy_threads_note(env, cell.extra_in.get("connector")))
    connector = cell.extra_in.get("connector")
    if isinstance(connector, dict) and connector.get("checked") is False and (env.get("TARGET_CMD") or "") == "":
        notes.append(f"connector settings not checked: {connector.get('reason')}")
    for source in NOTE_SOURCES:
        notes.extend(source(cell.dir, env))
    if cell.external():
        notes.append("an external target (TARGET_URL): the server's counters, connections and queues are not "
                     "measured and stay empty")
    if latency_note:
        notes.append(latency_note)
    return notes


def build_row(cell: Cell, *, run_id: str, status: str, error: str, axes: Any, wall_s: str = "",
              repeat: dict[str, Any] | None = None, k6_exit: str = "", cpus: int | None = None) -> dict[str, Any]:
    """The row of one cell (row.json's keys, in results.csv's order of meaning)."""
    problem = summary_problem(cell.dir / "summary.json")
    if problem is not None and status == "ok":
        status, error = "failed", problem
    cpus = cpus or machine_cpus()
    machine = {"cpus": cpus, **design.file_limits(cell.dir)}
    env = design.with_script(cell.env, cell.inspected)
    summary = cell.summary
    metric = summary.values
    phases = cell.phases.last()
    first_request = metric("lt_vu_first_request")
    peaks = sample_peaks(cell, cpus, None if not first_request or first_request.get("min") is None
                         else first_request["min"] / 1000)
    p = peaks.peak
    d, latency_note = latency_figures(cell)
    restored = trend_percentiles(cell)
    if restored.note:
        latency_note = "; ".join(n for n in (latency_note, restored.note) if n)
    reqs = metric("http_reqs")
    failed = metric("http_req_failed")
    run_ms = summary.state.get("testRunDurationMs")
    first = metric("lt_vu_first_request")
    last_end = (summary.exact("lt_request_end") or {}).get("max")
    started = metric("lt_iterations_started")
    # A VU carrying several users (USERS_PER_VU) runs one iteration for all of them: the
    # scenario counts each user's own (lt_user_iterations), and vus_max counts users.
    batched = design.carried_per_vu(env) > 1
    iterations = metric("lt_user_iterations" if batched else "iterations")
    vus_max = metric("vus_max") or {}
    window_s = None if first is None or last_end is None else num((last_end - first.get("min")) / 1000)
    cell_name = cell.dir.name
    repeat = repeat or {}

    def phase_s(start: str, end: str) -> Any:
        seconds = cell.phases.seconds(start, end)
        return None if seconds is None else num(seconds)

    def server(value: Any) -> Any:
        return None if cell.external() else value

    counts = request_counts(summary)
    tps = answered_tps = None
    if reqs is not None:
        per_request = 1 / window_s if window_s is not None and window_s > 0 else None
        if per_request is None and reqs.get("rate") is not None and reqs["count"]:
            per_request = reqs["rate"] / reqs["count"]
        # Every request sent, those cut off while they waited included (request_counts).
        tps = num(counts["http_reqs"] * per_request) if per_request is not None else num(reqs.get("rate"))
        if per_request is not None and failed is not None and failed.get("passes") is not None:
            # What the rules' predicted_tps predicts: answers, over the same window as tps.
            answered_tps = num((reqs["count"] - failed["passes"]) * per_request)
    row: dict[str, Any] = {
        "format": formats.RUN_FORMAT,
        "run_id": run_id,
        "cell": cell_name,
        "repeat_of": or_default(repeat.get("of"), cell_name),
        "repeat": or_default(repeat.get("k"), 1),
        "scenario": env.get("SCENARIO"),
        "status": status,
        "axes": axes,
        "vus_max": design.users_of(env, or_default(vus_max.get("max"), vus_max.get("value"))),
        "vus_started": None if started is None else or_default((first or {}).get("count"), 0),
        "duration_s": None if run_ms is None else num(run_ms / 1000),
        "load_window_s": window_s,
        "first_request_after_s": (None if first is None or "k6_start" not in phases
                                  else num((first.get("min") - phases["k6_start"]) / 1000)),
        "first_request_spread_ms": None if first is None else rounded(first.get("max") - first.get("min"), 1),
        "http_reqs": counts["http_reqs"],
        # Requests per second of the load itself: from the first request's start to the last
        # one's end, not over setup and the graceful stop.
        "tps": tps,
        "answered_tps": answered_tps,
        "lat_min_ms": num(d.get("min")),
        "lat_avg_ms": num(d.get("avg")),
        "lat_med_ms": num(d.get("med")),
        "lat_p90_ms": num(d.get("p(90)")),
        "lat_p95_ms": num(d.get("p(95)")),
        "lat_p99_ms": num(d.get("p(99)")),
        "lat_max_ms": num(d.get("max")),
        "failed_reqs": counts["failed_reqs"],
        "failed_rate": counts["failed_rate"],
        # One fail_<cause> a cause of causes.tsv (k6's counters of scenarios/lib/failures.js;
        # interrupted the suite's own, interrupted_requests); no_fd and connect as
        # failed_for_files tells them apart.
        **{f"fail_{c}": interrupted_requests(summary) if c == INTERRUPTED else summary.count(f"fail_{c}")
           for c in failure_causes()},
        **failed_for_files(cell, summary),
        # Dial errors that were "cannot assign requested address" (k6.log): the client ran out
        # of ephemeral ports towards the server's address and port.
        "fail_no_local_port": log_count(cell.dir, "cannot assign requested address"),
        "iterations": None if iterations is None else iterations.get("count"),
        "iterations_started": None if started is None else started.get("count"),
        "iterations_interrupted": (None if started is None
                                   else max(started["count"] - or_default((iterations or {}).get("count"), 0), 0)),
        "dropped_iterations": summary.count("dropped_iterations"),
        "client_connects": cell.delta("client", "TcpActiveOpens"),
        "server_accepts": cell.delta("server", "TcpPassiveOpens"),
        "listen_overflows": cell.delta("server", "TcpExtListenOverflows"),
        "listen_drops": cell.delta("server", "TcpExtListenDrops"),
        "syn_retrans": cell.delta("client", "TcpExtTCPSynRetrans"),
        "syn_cookies_sent": cell.delta("server", "TcpExtSyncookiesSent"),
        "syn_recv_peak": server(p.get("server_syn_recv")),
        "server_conns_peak": server(p.get("server_estab")),
        "accept_queue_peak": server(p.get("listen_recvq")),
        "listen_backlog": server(p.get("listen_sendq")),
        "queue_capacity": (None if (env.get("TOMCAT_MAX_CONNECTIONS") or "") == "" or p.get("listen_sendq") is None
                           else to_number(env["TOMCAT_MAX_CONNECTIONS"]) + p["listen_sendq"] + 1),
        "time_wait_peak": peaks.time_wait_total,
        "server_time_wait_peak": server(p.get("server_time_wait")),
        "client_time_wait_peak": p.get("client_time_wait"),
        "proxy_upstream_time_wait_peak": p.get("proxy_upstream_time_wait"),
        "proxy_client_time_wait_peak": p.get("proxy_client_time_wait"),
        **netdelay.row_columns(cell.dir),
        **proxy.row_columns(cell.dir, cell.phases),
        "tomcat_threads_busy_peak": p.get("tomcat_threads_busy"),
        "k6_cpu_avg_pct": peaks.k6_cpu_avg,
        "k6_cpu_peak_pct": p.get("k6_cpu_pct"),
        # Seconds in which k6 used at least 90 % of all the machine's cores.
        "k6_cpu_saturated_s": peaks.k6_cpu_saturated_s,
        "k6_rss_peak_mb": p.get("k6_rss_mb"),
        "setup_s": setup_s(cell),
        "target_start_s": phase_s("target_start", "target_ready"),
        "k6_s": phase_s("k6_start", "k6_end"),
        "teardown_s": phase_s("k6_end", "stopped"),
        "files_s": phase_s("stopped", "files"),
        "cell_wall_s": None if wall_s == "" else to_number(wall_s),
        "k6_exit": None if k6_exit == "" else to_number(k6_exit),
        "error": error,
        "notes": None,
        "extra": extra(cell, env, restored.values),
    }
    findings = design.design_findings(env, row, machine) + connector_findings(cell)
    # The application's own account of the load (Tomcat's access log), read once for the cold
    # start's check and the app_* and t_* figures.
    app = accesslog.cell_load_requests(cell.dir)
    cold = accesslog.cold_start(app)
    cold_finding = design.cold_jvm(cell.env, cold)
    if cold_finding is not None:
        findings.append(cold_finding)
    late = netdelay.behind(netdelay.read_stats(cell.dir))
    if late is not None:
        findings.append(design.Finding("net", late))
    # k6 and the machine while the users were released (the sampler's 50 ms trace).
    released = generator.cell_release(cell.dir, first, k6_instances(cell))
    row.update(generator.release_columns(released))
    release_busy = generator.release_finding(released, machine.get("cpus"))
    if release_busy is not None:
        findings.append(release_busy)
    if peaks.problem is not None:
        findings.append(design.Finding(
            "unsampled", f"{peaks.problem}: k6's CPU, the connection peak and the queues were not measured, so "
                         "whether the generator kept up was not checked"))
    flags = [f.flag for f in findings]
    # The generator set the pace: k6 saturated the machine's cores, or VUs started later than
    # the scenario asked. Unknown when neither was measured.
    if "gen" in flags or "late" in flags:
        row["generator_bound"] = 1
    elif row["k6_cpu_saturated_s"] is None and (row["vus_started"] is None or "unsampled" in flags):
        row["generator_bound"] = None
    else:
        row["generator_bound"] = 0
    if row["vus_started"] is None and row["k6_cpu_saturated_s"] is None and "unsampled" not in flags:
        row["as_designed"] = None
    else:
        row["as_designed"] = 0 if findings else 1
    row["design_notes"] = "; ".join(f.note for f in findings) if findings else None
    notes = row_notes(cell, env, row, latency_note)
    machine_busy = generator.busy_note(released, machine.get("cpus"))
    if machine_busy is not None:
        notes.append(machine_busy)
    row["notes"] = "; ".join(notes) if notes else None
    predicted = design.predictions(env, cell.sysctls, machine)
    row.update(predicted)
    row.update(design.prediction_verdict(env, cell.sysctls, predicted, row, cell.deltas, machine, findings))
    # The application's own account beside k6's, and each request split (ltsuite.timeparts).
    row.update(timeparts.row_figures(cell.dir, env, cell.sysctls, row, app=app))
    # The users' connect split into the delayer's part and the rest; the round trip they got
    # judged against the one asked (ltsuite.generator), once the parts are known.
    row.update(generator.split_columns(env, row))
    off_rtt = generator.network_finding(env, row, released, machine.get("cpus"))
    if off_rtt is not None:
        findings.append(off_rtt)
        row["as_designed"] = 0
        row["design_notes"] = "; ".join(f.note for f in findings)
    if app is not None:
        row["cold_start_ratio"] = None if cold is None or cold.ratio is None else r2(cold.ratio)
    # A burst's TLS handshakes on the server's cores, predicted from the calibration and checked
    # (ltsuite.tlsburst).
    row.update(tlsburst.row_columns(cell.dir, env, cell.sysctls, row, machine.get("cpus"),
                                    first.get("min") if first else None))
    row.update(start_figures(cell))
    row.update(warmup.row_columns(cell.dir, cell.phases))
    if (cell.env.get("REQUIRE_AS_DESIGNED") or "0") == "1" and row["as_designed"] == 0 and row["status"] == "ok":
        row["status"] = "failed"
        row["error"] = "not as designed (REQUIRE_AS_DESIGNED=1): " + row["design_notes"]
    return {key: tidy(value) for key, value in row.items()}


def fallback_row(cell_dir: Path, *, run_id: str, error: str, reason: str, axes_text: str,
                 repeat: dict[str, Any] | None) -> dict[str, Any]:
    """A failed row that says why the row could not be built."""
    env = read_cell_env(cell_dir / "cell.env") or {}
    try:
        axes = json.loads(axes_text)
    except ValueError:
        axes = {}
    repeat = repeat or {}
    return {"format": formats.RUN_FORMAT, "run_id": run_id, "cell": cell_dir.name, "repeat_of": or_default(repeat.get("of"), cell_dir.name),
            "repeat": or_default(repeat.get("k"), 1), "scenario": env.get("SCENARIO", ""), "status": "failed",
            "axes": axes if isinstance(axes, dict) else {},
            "error": f"the row could not be built: {reason[:300]}" + (f"; {error}" if error else "")}


def write_json(path: Path, value: Any) -> None:
    """value as JSON in path (indented as jq writes it), through a temporary file and a rename."""
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The row's command-line arguments (CELL_DIR and its options), for this module's command and for
    any command that writes a row (ltsuite.cell finish): one list of them."""
    parser.add_argument("cell_dir", type=Path)
    parser.add_argument("--run-id", default=os.environ.get("LT_RUN_ID", ""))
    parser.add_argument("--status", default="ok")
    parser.add_argument("--error", default="")
    parser.add_argument("--axes", default="{}")
    parser.add_argument("--wall-s", default="")
    parser.add_argument("--repeat", default="null")
    parser.add_argument("--k6-exit", default="")
    parser.add_argument("--cpus", type=int)
    parser.add_argument("--out", type=Path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m ltsuite.row", description="Write a cell's row.json.")
    add_arguments(parser)
    return write(parser.parse_args(argv))


def write(args: argparse.Namespace) -> int:
    """row.json of the cell from the arguments of add_arguments; 1 when only a fallback row could be written."""
    out = args.out or args.cell_dir / "row.json"
    try:
        repeat = json.loads(args.repeat)
    except ValueError:
        repeat = None
    try:
        axes = json.loads(args.axes)
        row = build_row(Cell.read(args.cell_dir), run_id=args.run_id, status=args.status, error=args.error,
                        axes=axes, wall_s=args.wall_s, repeat=repeat if isinstance(repeat, dict) else None,
                        k6_exit=args.k6_exit, cpus=args.cpus)
    except Exception as problem:  # noqa: BLE001 - any failure still gives the cell a row
        reason = "".join(traceback.format_exception_only(type(problem), problem)).strip()
        write_json(out, fallback_row(args.cell_dir, run_id=args.run_id, error=args.error, reason=reason,
                                     axes_text=args.axes, repeat=repeat if isinstance(repeat, dict) else None))
        sys.stderr.write(f"{out}: the row could not be built: {reason}\n")
        return 1
    write_json(out, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
