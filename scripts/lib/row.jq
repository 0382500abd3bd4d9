# Builds one results row from a cell's k6 summary, sample peaks, counter
# deltas, recorded sysctls and phase times, and judges it: did the load that
# was designed happen (as_designed, design_notes), and do the kernel's
# predictions match what was measured (predicted_*, prediction_check).
# Inputs (--arg/--argjson): run_id cell status error axes env summary peaks
# deltas extra_in (files some cells collect: waiting_room stats, the
# connector check) sysctls machine phases require_as_designed no_port
# cell_env inspected (k6 inspect of a script of one's own, or null). Needs
# -L scripts/lib.
include "rules";
include "design";

# The knobs, with what a script of one's own asks for (design.jq).
def env_of: with_script($cell_env; $inspected);

def metric($name):
  ($summary.metrics // {}) as $m
  | ($m[$name + "{traffic:load}"] // $m[$name] // null) | if . == null then null else .values end;
def num: if . == null then null else (. * 1000 | round) / 1000 end;
def count_of($name): (metric($name).count // 0);
def delta($side; $counter): ($deltas[$side][$counter] // 0);
def gauge_max($name): (($summary.metrics // {})[$name].values.max // null);
# The connector the application reports differs from the cell's knobs: the
# cell did not run with the settings its row names.
def connector_findings:
  [($extra_in.connector.mismatches // [])[]
   | {flag: "settings", note: "the target runs \(.property)=\(.effective // "unset") where the cell set \(.cell) (/actuator/configprops)"}];
# Why some columns are empty or measured differently, for this cell.
def row_notes($env):
  [
    (if $env.script != null then
       "a k6 script of one's own: vus_started, first_request_* and load_window_s are taken at its iterations' start and end (its requests are not wrapped); failures split by k6's error_code"
     else empty end),
    (if ($env.TARGET_CMD // "") != "" then
       "TARGET_CMD is not Tomcat: tomcat_threads_busy_peak, queue_capacity and the predictions stay empty"
     elif ($env.TARGET_URL // "") == "" and .tomcat_threads_busy_peak == null then
       "the target's actuator gave no tomcat.threads.busy on 127.0.0.1:\($env.MANAGEMENT_PORT) (it needs the metrics endpoint exposed and server.tomcat.mbeanregistry.enabled=true): tomcat_threads_busy_peak stays empty"
     else empty end),
    (if $extra_in.connector != null and $extra_in.connector.checked == false and ($env.TARGET_CMD // "") == "" then
       "connector settings not checked: \($extra_in.connector.reason)"
     else empty end),
    # k6-warnings.txt: an output the script's handleSummary asked for that k6 could not write.
    ($extra_in.k6_warnings // [])[]
  ];
def phase_s($from; $to):
  if $phases[$from] == null or $phases[$to] == null then null
  else (($phases[$to] - $phases[$from]) / 1000 | num) end;
# Figures only some scenarios have; results.csv adds their columns when a
# row carries them.
def extra($env):
  if $env.SCENARIO == "waiting-room" then
    (($summary.metrics // {}).wr_time_to_admission.values // {}) as $t
    | {
        wr_visitors: count_of("wr_visitors"),
        wr_admitted: count_of("wr_admitted"),
        wr_gave_up: count_of("wr_gave_up"),
        wr_forgotten: count_of("wr_forgotten"),
        wr_wait_requests: count_of("wr_wait_requests"),
        wr_entry_requests: count_of("wr_entry_requests"),
        wr_can_enter_true: count_of("wr_can_enter_true"),
        wr_can_enter_false: count_of("wr_can_enter_false"),
        wr_admission_med_ms: ($t.med | num),
        wr_admission_p95_ms: ($t["p(95)"] | num),
        wr_admission_max_ms: ($t.max | num),
        wr_admit_per_second: ($env.WAITING_ROOM_ADMIT_PER_SECOND | tonumber),
        wr_server_admitted: ($extra_in.waiting_room.admitted // null),
        wr_server_max_admitted_in_one_second: ($extra_in.waiting_room.maxAdmittedInOneSecond // null),
        wr_server_max_inside_observed: ($extra_in.waiting_room.maxInsideObserved // null)
      }
  elif $env.SCENARIO == "spike-open" then
    {
      arrival_rate_per_s: (($env.RATE | tonumber) * 1000 / ($env.TIME_UNIT | duration_ms) | num),
      iteration_rate_per_s: (metric("iterations").rate | num)
    }
  elif $env.SCENARIO == "websocket" then
    def trend($name): (($summary.metrics // {})[$name].values // {});
    trend("ws_connect") as $connect | trend("ws_message") as $message | trend("ws_close") as $close
    | {
        ws_sessions: count_of("ws_sessions"),
        ws_sessions_ok: count_of("ws_sessions_ok"),
        ws_sessions_failed: ([count_of("ws_fail_refused", "ws_fail_handshake_timeout",
                               "ws_fail_abnormal_close", "ws_fail_timeout")] | add),
        ws_fail_refused: count_of("ws_fail_refused"),
        ws_fail_handshake_timeout: count_of("ws_fail_handshake_timeout"),
        ws_fail_abnormal_close: count_of("ws_fail_abnormal_close"),
        ws_fail_timeout: count_of("ws_fail_timeout"),
        ws_connect_p95_ms: ($connect["p(95)"] | num),
        ws_message_p95_ms: ($message["p(95)"] | num),
        ws_message_max_ms: ($message.max | num),
        ws_close_p95_ms: ($close["p(95)"] | num),
        ws_close_p99_ms: ($close["p(99)"] | num),
        ws_close_max_ms: ($close.max | num),
        # The endpoint's own counts (GET /ws/stats after the cell): sessions
        # it opened and replies it sent or could not send.
        ws_server_sessions: ($extra_in.websocket.sessionsOpened // null),
        ws_server_replies: ($extra_in.websocket.replies // null),
        ws_server_replies_lost: ($extra_in.websocket.repliesLost // null),
        # The close path, server side (the client's are in netstat-delta.tsv).
        delayed_acks: delta("server"; "TcpExtDelayedACKs"),
        delayed_ack_lost: delta("server"; "TcpExtDelayedACKLost"),
        abort_on_close: delta("server"; "TcpExtTCPAbortOnClose"),
        abort_on_data: delta("server"; "TcpExtTCPAbortOnData"),
        abort_on_linger: delta("server"; "TcpExtTCPAbortOnLinger"),
        abort_on_timeout: delta("server"; "TcpExtTCPAbortOnTimeout"),
        tcp_timeouts: delta("server"; "TcpExtTCPTimeouts")
      }
  else {} end;

# Latency is that of answered requests (2xx/3xx); failures are counted apart.
# No answered request: the percentiles are null, not k6's zeros.
env_of as $env
| (($summary.metrics // {})["http_req_duration{traffic:load,expected_response:true}"].values
 | if . == null or (.count // 1) == 0 then {} else . end) as $d
| metric("http_reqs") as $reqs
| metric("http_req_failed") as $failed
| ($summary.state.testRunDurationMs // null) as $run_ms
| metric("lt_vu_first_request") as $first
| gauge_max("lt_request_end") as $last_end
| metric("lt_iterations_started") as $started
| (if $first == null or $last_end == null then null else (($last_end - $first.min) / 1000 | num) end) as $window_s
| {
    run_id: $run_id,
    cell: $cell,
    repeat_of: ($repeat.of // $cell),
    repeat: ($repeat.k // 1),
    scenario: $env.SCENARIO,
    status: $status,
    axes: $axes,
    vus_max: (metric("vus_max").max // metric("vus_max").value // null),
    vus_started: (if $started == null then null else ($first.count // 0) end),
    duration_s: (if $run_ms == null then null else ($run_ms / 1000 | num) end),
    load_window_s: $window_s,
    first_request_after_s: (if $first == null or $phases.k6_start == null then null
                            else (($first.min - $phases.k6_start) / 1000 | num) end),
    first_request_spread_ms: (if $first == null then null else ($first.max - $first.min | round) end),
    http_reqs: ($reqs.count // null),
    # Requests per second of the load itself: from the first request's start
    # to the last one's end, not over setup and the graceful stop.
    tps: (if $reqs == null then null
          elif $window_s != null and $window_s > 0 then ($reqs.count / $window_s | num)
          else ($reqs.rate | num) end),
    lat_min_ms: ($d.min | num),
    lat_avg_ms: ($d.avg | num),
    lat_med_ms: ($d.med | num),
    lat_p90_ms: ($d["p(90)"] | num),
    lat_p95_ms: ($d["p(95)"] | num),
    lat_p99_ms: ($d["p(99)"] | num),
    lat_max_ms: ($d.max | num),
    failed_reqs: (if $failed == null then null else $failed.passes end),
    failed_rate: (if $failed == null then null else ($failed.rate | num) end),
    fail_connect: count_of("fail_connect"),
    fail_reset: count_of("fail_reset"),
    fail_timeout: count_of("fail_timeout"),
    fail_http_4xx: count_of("fail_http_4xx"),
    fail_http_5xx: count_of("fail_http_5xx"),
    fail_other: count_of("fail_other"),
    # Dial errors that were "cannot assign requested address" (k6.log): the
    # client ran out of ephemeral ports towards the server's address and port.
    fail_no_local_port: $no_port,
    iterations: (metric("iterations").count // null),
    iterations_started: (if $started == null then null else $started.count end),
    iterations_interrupted: (if $started == null then null
                             else ([$started.count - (metric("iterations").count // 0), 0] | max) end),
    dropped_iterations: count_of("dropped_iterations"),
    client_connects: delta("client"; "TcpActiveOpens"),
    server_accepts: delta("server"; "TcpPassiveOpens"),
    listen_overflows: delta("server"; "TcpExtListenOverflows"),
    listen_drops: delta("server"; "TcpExtListenDrops"),
    syn_retrans: delta("client"; "TcpExtTCPSynRetrans"),
    syn_cookies_sent: delta("server"; "TcpExtSyncookiesSent"),
    syn_recv_peak: $peaks.server_syn_recv,
    server_conns_peak: $peaks.server_estab,
    accept_queue_peak: $peaks.listen_recvq,
    listen_backlog: $peaks.listen_sendq,
    queue_capacity: (
      if ($env.TOMCAT_MAX_CONNECTIONS // "") == "" or $peaks.listen_sendq == null then null
      else ($env.TOMCAT_MAX_CONNECTIONS | tonumber) + $peaks.listen_sendq + 1 end),
    time_wait_peak: $peaks.time_wait_total,
    server_time_wait_peak: $peaks.server_time_wait,
    client_time_wait_peak: $peaks.client_time_wait,
    tomcat_threads_busy_peak: $peaks.tomcat_threads_busy,
    k6_cpu_avg_pct: $peaks.k6_cpu_avg,
    k6_cpu_peak_pct: $peaks.k6_cpu_pct,
    # Seconds in which k6 used at least 90 % of all the machine's cores.
    k6_cpu_saturated_s: $peaks.k6_cpu_saturated_s,
    k6_rss_peak_mb: $peaks.k6_rss_mb,
    setup_s: phase_s("cell_start"; "target_start"),
    target_start_s: phase_s("target_start"; "target_ready"),
    k6_s: phase_s("k6_start"; "k6_end"),
    teardown_s: phase_s("k6_end"; "stopped"),
    files_s: phase_s("stopped"; "files"),
    cell_wall_s: (if $wall_s == "" then null else ($wall_s | tonumber) end),
    k6_exit: (if $k6_exit == "" then null else ($k6_exit | tonumber) end),
    error: $error,
    notes: null,
    extra: extra($env)
  }
| (design_findings($env; .; $machine) + connector_findings) as $findings
# The generator set the pace: k6 saturated the machine's cores, or VUs
# started later than the scenario asked.
| .generator_bound = (if .k6_cpu_saturated_s == null and .vus_started == null then null
                      elif ($findings | map(.flag) | (index("gen") != null or index("late") != null)) then 1
                      else 0 end)
| .as_designed = (if .vus_started == null and .k6_cpu_saturated_s == null then null
                  elif ($findings | length) == 0 then 1 else 0 end)
| .design_notes = (if ($findings | length) == 0 then null else $findings | map(.note) | join("; ") end)
| .notes = (row_notes($env) | if length == 0 then null else join("; ") end)
| predictions($env; $sysctls; $machine) as $predicted
| . + $predicted
| . + prediction_verdict($env; $sysctls; $predicted; .; $deltas; $machine; $findings)
| if $require_as_designed == "1" and .as_designed == 0 and .status == "ok" then
    .status = "failed" | .error = "not as designed (REQUIRE_AS_DESIGNED=1): " + .design_notes
  else . end
