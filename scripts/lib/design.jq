# Did a cell run as designed, and what do the kernel's rules predict for it?
# Included by row.jq (after the run) and by the runner's checks before a run
# (design_warnings). Inputs are plain objects: $env (the cell's knobs, as
# strings), $sysctls ({server: {name: value}, client: {...}}), $machine
# ({cpus, nofile, mem_available_mb, vu_start_rate, port_range_default}), and
# the row built so far. Unit-tested in tests/unit/design.bats.
include "rules";

def num_or_null: if . == null or . == "" then null else tonumber end;
def r1: (. * 10 | round) / 10;
def r2: (. * 100 | round) / 100;
def seconds_text: if . == null then "?" else "\(r1) s" end;

# The scenario families: which rules apply to which k6 executor.
# All VUs are meant to start together (constant-vus, per-vu-iterations).
def at_once_scenario: . == "spike" or . == "burst" or . == "keepalive";
# The suite's /hello scenarios (one request per iteration, plus think time).
def hello_scenario: . == "spike" or . == "burst" or . == "keepalive" or . == "ramp" or . == "spike-open";

# script_facts(inspected): what a k6 script of one's own asks for, from
# `k6 inspect --execution-requirements`: {vus (at the peak, null when its
# executors start VUs only as needed), at_once (every VU is meant to start
# together: constant-vus, per-vu-iterations, shared-iterations, all at
# time 0), load_ms (the load's duration when every executor has one)}.
def script_facts($inspected):
  [$inspected.scenarios // {} | .[]] as $scenarios
  | ["constant-vus", "per-vu-iterations", "shared-iterations"] as $together
  | ($scenarios | all(.executor as $e | $together | index([$e]) != null)) as $fixed
  | {
      vus: (if ($scenarios | length) == 0 then null
            elif $fixed then [$scenarios[] | .vus // 1] | add
            elif ($scenarios | all(.executor == "ramping-vus")) then
              [$scenarios[] | [(.startVUs // 1), (.stages // [] | .[] | .target)] | max] | add
            else null end),
      at_once: ($fixed and ($scenarios | length) > 0
                and ($scenarios | all((.startTime // "0s") | duration_ms == 0))),
      load_ms: (if ($scenarios | length) > 0 and ($scenarios | all(.executor == "constant-vus")) then
                  [$scenarios[] | .duration | duration_ms] | max
                else null end)
    };

# with_script(env; inspected): the cell's knobs, plus .script (script_facts)
# for a script of one's own (inspected is null for a shipped scenario).
def with_script($env; $inspected):
  if $inspected == null then $env else $env + {script: script_facts($inspected)} end;

# designed_vus(env): the VUs the scenario asks for at its peak (null when
# the executor starts VUs only as needed).
def designed_vus($env):
  if $env.script != null then $env.script.vus
  elif ($env.SCENARIO | at_once_scenario) then ($env.VUS | tonumber)
  elif $env.SCENARIO == "ramp" or $env.SCENARIO == "waiting-room" then
    [$env.STAGES | split(",")[] | split(":") | .[-1] | tonumber] | max
  else null end;

# The effective server backlog and capacity of a cell, from its knobs and
# the sysctls it recorded (null without a server side).
def cell_somaxconn($sysctls): $sysctls.server["net.core.somaxconn"] | num_or_null;
def cell_capacity($env; $sysctls):
  cell_somaxconn($sysctls) as $somaxconn
  | if $somaxconn == null or ($env.TOMCAT_MAX_CONNECTIONS // "") == "" then null
    else server_capacity($env.TOMCAT_MAX_CONNECTIONS | tonumber; $env.TOMCAT_ACCEPT_COUNT | tonumber; $somaxconn) end;

# request_time_ms(env): the longest a request of a /hello scenario is
# expected to take: the waves in which the thread pool (or max-connections)
# serves VUS requests of DELAY_MS each, plus a margin of 100 ms and 10 %,
# never more than the request timeout.
def request_time_ms($env):
  ($env.DELAY_MS | tonumber) as $delay_ms
  | ([($env.TOMCAT_MAX_THREADS // "" | num_or_null), ($env.TOMCAT_MAX_CONNECTIONS // "" | num_or_null)]
     | map(select(. != null)) | min) as $workers
  | (if $workers == null then $delay_ms
     else waves_ms(designed_vus($env) // 1; $workers; $delay_ms) end) as $served_ms
  | [($served_ms * 1.1 + 100 | round), ($env.REQUEST_TIMEOUT | duration_ms)] | min;

# syn_window_s(env; sysctls): how long a client that cannot connect keeps
# trying: until connect() gives up or the request times out.
def syn_retries($sysctls): $sysctls.client["net.ipv4.tcp_syn_retries"] | num_or_null;
def syn_linear($sysctls): ($sysctls.client["net.ipv4.tcp_syn_linear_timeouts"] // "0") | num_or_null;
def syn_window_s($env; $sysctls):
  if syn_retries($sysctls) == null then null
  else [syn_give_up_s(syn_retries($sysctls); syn_linear($sysctls)), ($env.REQUEST_TIMEOUT | duration_ms) / 1000] | min end;

# ---- Before the run -------------------------------------------------------

# design_warnings(env; machine): sentences about a cell's design that make
# its result unlikely to mean what it seems to. They warn; they never refuse.
def design_warnings($env; $machine):
  $env.SCENARIO as $scenario
  | designed_vus($env) as $vus
  | [
      (if ($scenario | hello_scenario) then
         request_time_ms($env) as $request_ms
         | (($env.THINK_TIME_MS // "0") | tonumber) as $think_ms
         | ($env.GRACEFUL_STOP | duration_ms) as $grace_ms
         | if $scenario == "burst" then
             # A burst's iterations run within DURATION (k6's maxDuration,
             # the lead included), then the graceful stop.
             ((($env.DURATION | duration_ms) - (($env.BURST_LEAD_MS // "0") | tonumber)) + $grace_ms) as $room_ms
             | if $room_ms < $request_ms * (($env.REQUESTS_PER_VU // "1") | tonumber) then
                 "DURATION=\($env.DURATION) less BURST_LEAD_MS=\($env.BURST_LEAD_MS), plus GRACEFUL_STOP=\($env.GRACEFUL_STOP), leaves \($room_ms) ms, less than REQUESTS_PER_VU=\($env.REQUESTS_PER_VU) requests may take (\($request_ms) ms each: DELAY_MS=\($env.DELAY_MS) in waves of TOMCAT_MAX_THREADS, at most REQUEST_TIMEOUT=\($env.REQUEST_TIMEOUT)): iterations will be interrupted"
               else empty end
           elif $grace_ms < $request_ms + $think_ms then
             "GRACEFUL_STOP=\($env.GRACEFUL_STOP) is shorter than an iteration may take (\($request_ms + $think_ms) ms: DELAY_MS=\($env.DELAY_MS) in waves of TOMCAT_MAX_THREADS, at most REQUEST_TIMEOUT=\($env.REQUEST_TIMEOUT)\(if $think_ms > 0 then ", plus THINK_TIME_MS=\($think_ms)" else "" end)): iterations still running when the load ends will be interrupted and their requests lost"
           else empty end
       else empty end),
      (if ($scenario | hello_scenario) and ($env.DELAY_MS | tonumber) >= ($env.REQUEST_TIMEOUT | duration_ms) then
         "DELAY_MS=\($env.DELAY_MS) is not shorter than REQUEST_TIMEOUT=\($env.REQUEST_TIMEOUT): every request times out before the server answers"
       else empty end),
      (if $vus != null and ($scenario == "spike" or $scenario == "keepalive" or $env.script.load_ms != null)
          and ($machine.vu_start_rate // 0) > 0 then
         ($vus / $machine.vu_start_rate) as $start_s
         | ($env.script.load_ms // ($env.DURATION | duration_ms)) as $duration_ms
         | if $start_s * 1000 > $duration_ms then
             "k6 needs about \($start_s | r1) s to start \($vus) VUs here (K6_VU_START_RATE=\($machine.vu_start_rate)/s) but \(if $env.script != null then "the script's duration is \($duration_ms / 1000 | r1) s" else "DURATION=\($env.DURATION)" end): many VUs will start late or never send a request; the burst scenario releases them together"
           else empty end
       else empty end),
      (($env.K6_INSTANCES // "1" | tonumber) as $instances
       | if $vus != null and ($machine.nofile // 0) > 0 and ($vus / $instances) + 100 > $machine.nofile then
         "\($vus) VUs in \($instances) k6 process(es) need about \($vus / $instances | ceil) open files each, but a process may open at most \($machine.nofile) (ulimit -Hn, which this machine does not let the suite raise): connects will fail with 'too many open files'; set K6_INSTANCES to spread the VUs over more k6 processes"
       else empty end),
      (($env.CLIENT_IP_LOCAL_PORT_RANGE // "") as $range
       | (if $range == "" then $machine.port_range_default // "32768-60999" else $range end) as $r
       | ($r | split("-") | map(tonumber) | .[1] - .[0] + 1) as $ports
       | if $vus != null and ($env.CLIENT_ADDRESSES // "1" | tonumber) * $ports < $vus then
           "\($vus) VUs need \($vus) connections at once, but one client address has \($ports) ephemeral ports (\($r)) towards one server port: connects will fail with 'cannot assign requested address'"
         else empty end),
      (if $vus != null and ($machine.mem_available_mb // 0) > 0 and $vus * 0.25 > $machine.mem_available_mb * 0.8 then
         "\($vus) VUs need about \($vus * 0.25 | round) MB in k6 (about 250 KB each), close to the \($machine.mem_available_mb) MB available"
       else empty end)
    ];

# ---- After the run: the load that happened ----------------------------------

# design_findings(env; row; machine): [{flag, note}] for every way the load
# that happened differs from the load designed. flag "late" marks a
# generator that did not keep up; "cut" interrupted work; "gen" a saturated
# generator; "none" no load at all.
def design_findings($env; $row; $machine):
  $env.SCENARIO as $scenario
  | designed_vus($env) as $vus
  | [
      (if ($row.http_reqs // 0) == 0 and (($scenario | hello_scenario) or $env.script != null) then
         {flag: "none", note: "no request completed (http_reqs is 0)"}
       else empty end),
      (if $vus != null and $row.vus_started != null and $row.vus_started < $vus then
         {flag: "late", note: "only \($row.vus_started) of \($vus) VUs sent a request: k6 needed \($row.first_request_after_s | seconds_text) from its start to the first request and spread the first requests over \(($row.first_request_spread_ms // 0) / 1000 | r2) s\(if $env.DURATION then ", and DURATION is \($env.DURATION)" else "" end)"}
       else empty end),
      (if (($scenario | at_once_scenario) or ($env.script.at_once // false)) and $row.first_request_spread_ms != null
          and $row.first_request_spread_ms > ($env.START_SPREAD_LIMIT_MS | tonumber) then
         {flag: "late", note: "the first requests of \($row.vus_started) VUs were spread over \($row.first_request_spread_ms / 1000 | r2) s (START_SPREAD_LIMIT_MS=\($env.START_SPREAD_LIMIT_MS)): the users did not arrive at once"}
       else empty end),
      (if ($row.iterations_interrupted // 0) > 0 then
         {flag: "cut", note: "\($row.iterations_interrupted) of \($row.iterations_started) iterations were interrupted by \(if $env.script != null then "the script's gracefulStop" else "GRACEFUL_STOP=\($env.GRACEFUL_STOP)" end)\(if ($scenario | hello_scenario) then " before REQUEST_TIMEOUT=\($env.REQUEST_TIMEOUT)" else "" end)"}
       else empty end),
      (if ($row.k6_cpu_saturated_s // 0) >= 1 then
         {flag: "gen", note: "k6 used \($row.k6_cpu_peak_pct | round) % CPU of \($machine.cpus) cores for \($row.k6_cpu_saturated_s | r1) s: the generator, not the target, set the pace"}
       else empty end),
      (if ($row.dropped_iterations // 0) > 0 then
         {flag: "late", note: "k6 dropped \($row.dropped_iterations) iterations it was asked to start (no free VU: raise MAX_VUS, or the generator is short of CPU)"}
       else empty end)
    ];

# ---- After the run: predicted beside measured ---------------------------------

# one_attempt_burst(env; sysctls): every VU makes one attempt that the server
# holds at least as long as the failing users keep trying, so the users past
# capacity fail and each of their SYNs meets a full queue.
def one_attempt_burst($env; $sysctls):
  syn_window_s($env; $sysctls) as $window_s
  | ($env.DELAY_MS | tonumber) as $delay_ms
  | ($env.REQUEST_TIMEOUT | duration_ms) as $timeout_ms
  | if $window_s == null then false
    elif $env.SCENARIO == "burst" or $env.SCENARIO == "keepalive" then
      ($env.REQUESTS_PER_VU | tonumber) == 1 and ([$delay_ms, $timeout_ms] | min) >= $window_s * 1000
    elif $env.SCENARIO == "spike" then
      ($env.DURATION | duration_ms) as $duration_ms
      | $delay_ms >= $duration_ms and $window_s * 1000 >= $duration_ms
        and ([$delay_ms, $timeout_ms] | min) >= $window_s * 1000
    else false end;

# client_ports(env; sysctls): connections the client can hold towards one
# server address and port: the ephemeral range (ip_local_port_range, as the
# client namespace reported it) times CLIENT_ADDRESSES; null if unknown.
def client_ports($env; $sysctls):
  ($sysctls.client["net.ipv4.ip_local_port_range"] // null) as $range
  | if $range == null then null
    else ($range | [scan("[0-9]+") | tonumber]) as $r
         | if ($r | length) != 2 then null
           else ($r[1] - $r[0] + 1) * (($env.CLIENT_ADDRESSES // "1") | tonumber) end
    end;

# The runner's own health checks leave a few client ports in TIME-WAIT when
# the load starts, so where the port range is the limit the measured peak may
# be this many below it.
def port_slack: 10;

# predictions(env; sysctls; machine): the predicted_* columns (null where no
# rule applies). Users past the client's ports fail at once ("cannot assign
# requested address") and send no SYN; users with a port but no room on the
# server send their SYNs into a full queue.
def predictions($env; $sysctls; $machine):
  cell_capacity($env; $sysctls) as $capacity
  | designed_vus($env) as $vus
  # A burst's users leave after their answer: their connections are all
  # open at once only if each is held longer than the burst takes to arrive.
  | (if $capacity == null or $vus == null or $env.SCENARIO == "waiting-room"
       or ($env.SCENARIO == "keepalive" and $env.CONNECTION_REUSE != "1")
       or ($env.SCENARIO == "burst" and ($env.DELAY_MS | tonumber) < 2 * (($env.START_SPREAD_LIMIT_MS // "1000") | tonumber)) then null
     else [$vus, $capacity, (client_ports($env; $sysctls) // $vus)] | min end) as $conns
  | ([$vus, (client_ports($env; $sysctls) // $vus)] | min) as $with_port
  # Past the ports alone (the server has room for every user with a port),
  # users fail at once, so holding the connections does not matter.
  | (($env.SCENARIO == "burst" or $env.SCENARIO == "keepalive") and ($env.REQUESTS_PER_VU // "1") == "1"
     and $conns != null and $capacity >= $with_port and $with_port < $vus) as $ports_only
  | (if $conns != null and (one_attempt_burst($env; $sysctls) or $ports_only) then $vus - $conns else null end) as $failed
  | (if $failed == null then null else $with_port - $conns end) as $overflowing
  | (if $failed == null then null
     else syns_within(syn_retries($sysctls); syn_linear($sysctls); syn_window_s($env; $sysctls)) end) as $syns
  | ([($env.TOMCAT_MAX_THREADS // "" | num_or_null), ($env.TOMCAT_MAX_CONNECTIONS // "" | num_or_null)] | min) as $workers
  | ($env.DELAY_MS | tonumber) as $delay_ms
  | {
      predicted_server_conns_peak: $conns,
      predicted_failed_users: $failed,
      predicted_listen_overflows: (if $failed == null then null else $overflowing * $syns end),
      predicted_syn_retrans: (if $failed == null then null else $overflowing * ($syns - 1) end),
      predicted_tps: (if $conns == null or $workers == null or ($env.SCENARIO | hello_scenario | not) then null
                      else closed_tps($conns; $workers; $delay_ms; (($env.THINK_TIME_MS // "0") | tonumber)) | if . == null then null else r1 end end),
      predicted_lat_max_ms: (if $conns == null or $workers == null or $delay_ms == 0 or ($env.SCENARIO | hello_scenario | not) then null
                             else [waves_ms($conns; $workers; $delay_ms), ($env.REQUEST_TIMEOUT | duration_ms)] | min end)
    };

# prediction_verdict(env; sysctls; predicted; row; deltas; machine; findings):
# {prediction_check, prediction_notes}. The kernel figures must match
# (capacity within the queue race's slack); latency and throughput are shown,
# not judged. A mismatch is explained from the cell's counters when they can.
def prediction_verdict($env; $sysctls_of_cell; $p; $row; $deltas; $machine; $findings):
  capacity_slack($machine.cpus) as $slack
  | ($row.server_conns_peak) as $peak
  | ($deltas.server // {}) as $srv
  | ($env.TCP_SYNCOOKIES // "") as $sysctls_cookies
  # Which measured count stands for the users that could not connect: dial
  # failures when connect() gives up before the request times out; failed
  # requests when every connected user is answered in time; else none.
  | ($env.REQUEST_TIMEOUT | duration_ms) as $timeout_ms
  | ([($env.TOMCAT_MAX_THREADS // "" | num_or_null), ($env.TOMCAT_MAX_CONNECTIONS // "" | num_or_null)]
     | map(select(. != null)) | min) as $workers
  | client_ports($env; $sysctls_of_cell) as $ports
  | ($ports != null and $p.predicted_server_conns_peak != null and $p.predicted_server_conns_peak == $ports
     and $ports < designed_vus($env)) as $port_bound
  | (if $p.predicted_failed_users == null then null
     elif $port_bound and ($p.predicted_listen_overflows // 0) == 0 then
       {what: "fail_connect", measured: $row.fail_connect}
     elif syn_retries($sysctls_of_cell) != null
          and syn_give_up_s(syn_retries($sysctls_of_cell); syn_linear($sysctls_of_cell)) * 1000 < $timeout_ms then
       {what: "fail_connect", measured: $row.fail_connect}
     elif $workers != null and waves_ms($p.predicted_server_conns_peak; $workers; $env.DELAY_MS | tonumber) < $timeout_ms then
       {what: "failed_reqs", measured: $row.failed_reqs}
     else null end) as $failed_measure
  | (if $p.predicted_failed_users == null or $p.predicted_listen_overflows == null then null
     else syns_within(syn_retries($sysctls_of_cell); syn_linear($sysctls_of_cell); syn_window_s($env; $sysctls_of_cell)) end) as $syns
  # Users with a client port and no room on the server: each SYN they send meets a full queue.
  | (if $syns == null or $syns == 0 then null else $p.predicted_listen_overflows / $syns end) as $overflowing
  | [
      (if $p.predicted_server_conns_peak == null or $peak == null then empty
       else {what: "server_conns_peak", predicted: $p.predicted_server_conns_peak, measured: $peak,
             ok: (if $port_bound then
                    $peak <= $p.predicted_server_conns_peak and $peak >= $p.predicted_server_conns_peak - port_slack
                  else
                    $peak >= $p.predicted_server_conns_peak
                    and $peak <= $p.predicted_server_conns_peak
                       + (if $p.predicted_server_conns_peak < designed_vus($env) then $slack else 0 end)
                  end)} end),
      # Users beyond capacity: the queue race may let a few more in, and each
      # of them sends no further SYN.
      (if $p.predicted_failed_users == null or $peak == null then empty else
         ([$peak - $p.predicted_server_conns_peak, 0] | max) as $extra_in
         | (if $failed_measure == null then empty
            else {what: "failed users (\($failed_measure.what))", predicted: $p.predicted_failed_users,
                  measured: $failed_measure.measured,
                  ok: (if $port_bound then
                         $failed_measure.measured >= $p.predicted_failed_users
                         and $failed_measure.measured <= $p.predicted_failed_users + port_slack
                       else $failed_measure.measured == $p.predicted_failed_users - $extra_in end)} end),
           {what: "listen_overflows", predicted: $p.predicted_listen_overflows, measured: $row.listen_overflows,
            ok: ($row.listen_overflows == ([$overflowing - $extra_in, 0] | max) * $syns)},
           {what: "syn_retrans", predicted: $p.predicted_syn_retrans, measured: $row.syn_retrans,
            ok: ($row.syn_retrans == ([$overflowing - $extra_in, 0] | max) * ($syns - 1))}
       end)
    ] as $checks
  | [$checks[] | select(.ok | not)] as $off
  | (if ($checks | length) == 0 then {prediction_check: null, prediction_notes: null}
    elif ($off | length) == 0 then {prediction_check: "match", prediction_notes: null}
    else
      ($off | map("\(.what) \(.measured) where \(.predicted) was predicted") | join("; ")) as $what
      | ((($srv.TcpExtTCPReqQFullDoCookies // 0) + ($srv.TcpExtSyncookiesSent // 0))) as $cookies
      | ((($row.listen_overflows // 0) - ($p.predicted_listen_overflows // 0))) as $more_overflows
      | ((($row.syn_retrans // 0) - ($p.predicted_syn_retrans // 0))) as $more_retrans
      | [
          (if $cookies > 0 then
             "the server sent SYN cookies (TCPReqQFullDoCookies \($srv.TcpExtTCPReqQFullDoCookies // 0), SyncookiesRecv \($srv.TcpExtSyncookiesRecv // 0)) \(if ($sysctls_cookies // "") == "2" then "for every SYN (tcp_syncookies=2)" else "because its SYN queue counted as full" end): those clients completed the handshake while the accept queue had no room, their final ACKs overflowed it (counted in ListenOverflows) and they retransmitted data instead of SYNs, failing as request timeouts"
           else empty end),
          (if $peak != null and $p.predicted_server_conns_peak != null and $peak < $p.predicted_server_conns_peak
              and ($row.listen_overflows // 0) == 0 and ($row.failed_reqs // 0) == 0 and ($row.http_reqs // 0) >= designed_vus($env) then
             "every user got in (no overflow, no failed request) but not all at once: the first answers (DELAY_MS=\($env.DELAY_MS)) closed connections while others were still connecting, and the peak is sampled every SAMPLE_INTERVAL"
           else empty end),
          (if ($row.fail_no_local_port // 0) > 0 then
             "\($row.fail_no_local_port) requests failed with 'cannot assign requested address': the client ran out of ephemeral ports (\($ports // "?") towards the server's address and port)"
           else empty end),
          (if ($srv.TcpExtTCPSynRetrans // 0) > 0 then
             "the server retransmitted SYN-ACKs \($srv.TcpExtTCPSynRetrans) times (server TCPSynRetrans): handshakes whose SYN found room but whose final ACK met a full accept queue were dropped there (counted in ListenOverflows); those clients believed they were connected, sent no more SYNs and failed as request timeouts"
           else empty end),
          (if ($findings | map(.flag) | index("late")) != null then
             "k6 did not deliver the designed load (\($findings | map(select(.flag == "late") | .note) | first))"
           else empty end),
          (if $p.predicted_listen_overflows != null and $cookies == 0 and $more_overflows > 0 and $more_overflows == $more_retrans then
             "\($more_overflows) more overflows and as many more SYN retransmits than predicted: users whose first SYNs met a full queue and who connected on a retry, while Tomcat was still taking connections off the queue"
           else empty end),
          (if $peak != null and $p.predicted_server_conns_peak != null and $peak > $p.predicted_server_conns_peak + $slack then
             "the server held more connections than max-connections + backlog + 1 + \($slack) (the queue race allows CPUs - 1 more): check the effective accept-count in target.log"
           else empty end)
        ] as $why
      | {prediction_check: "mismatch",
         prediction_notes: ($what + ": " + (if ($why | length) > 0 then $why | join("; ") else "nothing in the cell's counters explains the difference" end))}
    end)
  # Which measured column the failed users were checked against (the report
  # draws the prediction beside that one).
  + {predicted_failed_users_from: (if $failed_measure == null then null else $failed_measure.what end)};
