# Builds one results row from a cell's k6 summary, sample peaks and counter
# deltas extra_in (files some scenarios collect, e.g. waiting_room stats). Inputs (--arg/--argjson): run_id cell status error axes env summary
# peaks deltas.

def metric($name):
  ($summary.metrics // {}) as $m
  | ($m[$name + "{traffic:load}"] // $m[$name] // null) | if . == null then null else .values end;
def num: if . == null then null else (. * 1000 | round) / 1000 end;
def count_of($name): (metric($name).count // 0);
def delta($side; $counter): ($deltas[$side][$counter] // 0);
# k6 duration ("1m30s", "500ms") -> milliseconds.
def duration_ms:
  [scan("([0-9.]+)(ms|s|m|h)") | (.[0] | tonumber) * ({"ms": 1, "s": 1000, "m": 60000, "h": 3600000}[.[1]])]
  | add;
# Figures only some scenarios have; results.csv adds their columns when a
# row carries them.
def extra:
  if $env.SCENARIO == "waiting-room" then
    (($summary.metrics // {}).wr_time_to_admission.values // {}) as $t
    | {
        wr_visitors: count_of("wr_visitors"),
        wr_admitted: count_of("wr_admitted"),
        wr_gave_up: count_of("wr_gave_up"),
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
  else {} end;

# Latency is that of answered requests (2xx/3xx); failures are counted apart.
($summary.metrics // {})["http_req_duration{traffic:load,expected_response:true}"].values as $d
| metric("http_reqs") as $reqs
| metric("http_req_failed") as $failed
| ($summary.state.testRunDurationMs // null) as $run_ms
| {
    run_id: $run_id,
    cell: $cell,
    scenario: $env.SCENARIO,
    status: $status,
    axes: $axes,
    vus_max: (metric("vus_max").max // metric("vus_max").value // null),
    duration_s: (if $run_ms == null then null else ($run_ms / 1000 | num) end),
    http_reqs: ($reqs.count // null),
    tps: (if $reqs == null then null else ($reqs.rate | num) end),
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
    iterations: (metric("iterations").count // null),
    dropped_iterations: count_of("dropped_iterations"),
    client_connects: delta("client"; "TcpActiveOpens"),
    server_accepts: delta("server"; "TcpPassiveOpens"),
    listen_overflows: delta("server"; "TcpExtListenOverflows"),
    listen_drops: delta("server"; "TcpExtListenDrops"),
    syn_retrans: delta("client"; "TcpExtTCPSynRetrans"),
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
    k6_rss_peak_mb: $peaks.k6_rss_mb,
    # k6 near a full core of its own: the generator, not the server, may be
    # the limit of this cell.
    generator_bound: (if $peaks.k6_cpu_avg == null then null elif $peaks.k6_cpu_avg >= 90 then 1 else 0 end),
    cell_wall_s: (if $wall_s == "" then null else ($wall_s | tonumber) end),
    k6_exit: (if $k6_exit == "" then null else ($k6_exit | tonumber) end),
    error: $error,
    notes: null,
    extra: extra
  }
