#!/usr/bin/env bats
# scripts/lib/design.jq: the checks before a run, the findings after it, the
# predictions and their verdict, from fixed inputs.
# shellcheck disable=SC2016 # SC2016: jq programs and literal backquotes in single quotes on purpose

setup() {
  load '../test_helper'
  # A cell as the runner resolves it (every value a string).
  BASE='{"SCENARIO":"spike","VUS":"11","DURATION":"1s","DELAY_MS":"30000","REQUEST_TIMEOUT":"10s",
         "GRACEFUL_STOP":"15s","THINK_TIME_MS":"0","TOMCAT_MAX_THREADS":"1","TOMCAT_MAX_CONNECTIONS":"1",
         "TOMCAT_ACCEPT_COUNT":"1","REQUESTS_PER_VU":"1","CONNECTION_REUSE":"1","START_SPREAD_LIMIT_MS":"1000",
         "STAGES":"5s:10,10s:40,5s:0"}'
  SYSCTLS='{"server":{"net.core.somaxconn":"4096"},"client":{"net.ipv4.tcp_syn_retries":"4","net.ipv4.tcp_syn_linear_timeouts":"0"}}'
  MACHINE='{"cpus":2,"nofile":20000,"mem_available_mb":20000,"vu_start_rate":1600}'
}

# design EXPR [ENV_PATCH]: evaluate EXPR with $env (BASE + patch), $sysctls, $machine.
design() {
  jq -nc -L "$LT_ROOT/scripts/lib" --argjson env "$BASE" --argjson patch "${2:-{\}}" \
    --argjson sysctls "$SYSCTLS" --argjson machine "$MACHINE" \
    "include \"design\"; (\$env + \$patch) as \$env | $1"
}

@test "a graceful stop shorter than a request may take is warned about" {
  run design 'design_warnings($env; $machine)' '{"GRACEFUL_STOP":"5s"}'
  assert_output --partial 'GRACEFUL_STOP=5s is shorter than an iteration may take (10000 ms'
  run design 'design_warnings($env; $machine) | map(select(test("GRACEFUL_STOP")))'
  assert_output '[]'
}

@test "a delay as long as the timeout: every request times out" {
  run design 'design_warnings($env; $machine)'
  assert_output --partial 'DELAY_MS=30000 is not shorter than REQUEST_TIMEOUT=10s'
  run design 'design_warnings($env; $machine)' '{"DELAY_MS":"100"}'
  refute_output --partial 'not shorter than REQUEST_TIMEOUT'
}

@test "more VUs than k6 starts within DURATION at the measured rate" {
  run design 'design_warnings($env; $machine)' '{"VUS":"10000","DELAY_MS":"5000","REQUEST_TIMEOUT":"60s","GRACEFUL_STOP":"70s"}'
  assert_output --partial 'k6 needs about 6.3 s to start 10000 VUs here (K6_VU_START_RATE=1600/s) but DURATION=1s'
  run design 'design_warnings($env; $machine)' '{"VUS":"1000","DURATION":"10s"}'
  refute_output --partial 'k6 needs about'
}

@test "more VUs than ports or open files" {
  run design 'design_warnings($env; $machine)' '{"VUS":"30000"}'
  assert_output --partial "one client address has 28232 ephemeral ports (32768-60999)"
  assert_output --partial "a process may open at most 20000 (ulimit -Hn"
  run design 'design_warnings($env; $machine)' '{"VUS":"30000","CLIENT_IP_LOCAL_PORT_RANGE":"1024-65535"}'
  refute_output --partial "ephemeral ports"
}

@test "findings: VUs that never sent a request, with the numbers" {
  run design 'design_findings($env; {http_reqs: 1636, vus_started: 1636, first_request_after_s: 6.1, first_request_spread_ms: 3900}; $machine)' \
    '{"VUS":"10000"}'
  assert_output --partial 'only 1636 of 10000 VUs sent a request: k6 needed 6.1 s from its start to the first request and spread the first requests over 3.9 s, and DURATION is 1s'
  assert_output --partial 'the first requests of 1636 VUs were spread over 3.9 s (START_SPREAD_LIMIT_MS=1000)'
}

@test "findings: interrupted iterations and no request at all" {
  run design 'design_findings($env; {http_reqs: 0, vus_started: 11, iterations_started: 11, iterations_interrupted: 11, first_request_spread_ms: 5}; $machine) | map(.note)' \
    '{"GRACEFUL_STOP":"5s"}'
  assert_output '["no request completed (http_reqs is 0)","11 of 11 iterations were interrupted by GRACEFUL_STOP=5s before REQUEST_TIMEOUT=10s"]'
}

@test "findings: a saturated generator" {
  run design 'design_findings($env; {http_reqs: 10, vus_started: 11, k6_cpu_saturated_s: 5, k6_cpu_peak_pct: 190.4}; $machine) | map(.note)'
  assert_output '["k6 used 190 % CPU of 2 cores for 5 s: the generator, not the target, set the pace"]'
}

@test "findings: none for a cell that ran as designed" {
  run design 'design_findings($env; {http_reqs: 10, vus_started: 11, iterations_started: 11, iterations_interrupted: 0, first_request_spread_ms: 20, k6_cpu_saturated_s: 0}; $machine)'
  assert_output '[]'
}

@test "predictions of a held burst: capacity, failed users, SYNs per failed user" {
  run design 'predictions($env; $sysctls; $machine) | [.predicted_server_conns_peak, .predicted_failed_users, .predicted_listen_overflows, .predicted_syn_retrans, .predicted_lat_max_ms]'
  # capacity 1 + 1 + 1 = 3; 8 fail; SYNs at 0 1 3 7 before the 10 s timeout.
  assert_output '[3,8,32,24,10000]'
}

@test "somaxconn caps the backlog in the predicted capacity" {
  SYSCTLS='{"server":{"net.core.somaxconn":"128"},"client":{"net.ipv4.tcp_syn_retries":"6"}}'
  run design 'predictions($env; $sysctls; $machine) | .predicted_server_conns_peak' \
    '{"VUS":"3000","TOMCAT_MAX_CONNECTIONS":"8192","TOMCAT_ACCEPT_COUNT":"10000"}'
  assert_output '3000'
  run design 'predictions($env; $sysctls; $machine) | .predicted_server_conns_peak' \
    '{"VUS":"3000","TOMCAT_MAX_CONNECTIONS":"100","TOMCAT_ACCEPT_COUNT":"10000"}'
  assert_output '229'
}

@test "no overflow prediction when connections are released before the failed users stop trying" {
  run design 'predictions($env; $sysctls; $machine) | [.predicted_server_conns_peak, .predicted_failed_users, .predicted_listen_overflows]' \
    '{"DELAY_MS":"2000"}'
  assert_output '[3,null,null]'
}

@test "verdict: exact counts match, the queue race may add one user per extra CPU" {
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 3, listen_overflows: 32, syn_retrans: 24}; {}; $machine; [])'
  assert_output '{"prediction_check":"match","prediction_notes":null,"predicted_failed_users_from":null}'
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 4, listen_overflows: 28, syn_retrans: 21}; {}; $machine; []) | .prediction_check'
  assert_output '"match"'
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 5, listen_overflows: 24, syn_retrans: 18}; {}; $machine; []) | .prediction_check'
  assert_output '"mismatch"'
}

@test "verdict: SYN cookies explain a mismatch" {
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 3, listen_overflows: 40, syn_retrans: 5}; {server: {TcpExtTCPReqQFullDoCookies: 3, TcpExtSyncookiesRecv: 24}}; $machine; []) | .prediction_notes'
  assert_output --partial 'listen_overflows 40 where 32 was predicted; syn_retrans 5 where 24 was predicted: the server sent SYN cookies (TCPReqQFullDoCookies 3, SyncookiesRecv 24)'
}

@test "verdict: late connects explain extra overflows; otherwise nothing does" {
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 3, listen_overflows: 35, syn_retrans: 27}; {}; $machine; []) | .prediction_notes'
  assert_output --partial '3 more overflows and as many more SYN retransmits than predicted'
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 3, listen_overflows: 30, syn_retrans: 24}; {}; $machine; []) | .prediction_notes'
  assert_output --partial "nothing in the cell's counters explains the difference"
}

@test "verdict: empty where no rule applies" {
  run design 'predictions($env; {}; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 3}; {}; $machine; [])'
  assert_output '{"prediction_check":null,"prediction_notes":null,"predicted_failed_users_from":null}'
}

@test "verdict: final ACKs that met a full queue explain a mismatch" {
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 3, listen_overflows: 94, syn_retrans: 9}; {server: {TcpExtTCPSynRetrans: 21}}; $machine; []) | .prediction_notes'
  assert_output --partial 'the server retransmitted SYN-ACKs 21 times (server TCPSynRetrans)'
  refute_output --partial "nothing in the cell's counters"
}

@test "verdict: users that could not connect are the dial failures when connect() gives up before the timeout" {
  local env='{"VUS":"10000","DELAY_MS":"45000","REQUEST_TIMEOUT":"60s","TOMCAT_MAX_THREADS":"1000","TOMCAT_MAX_CONNECTIONS":"8192","TOMCAT_ACCEPT_COUNT":"100","SCENARIO":"burst","DURATION":"75s"}'
  # connect() gives up at 31 s (4 retries, linear 0), before the 60 s timeout.
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 8293, fail_connect: 1707, failed_reqs: 9000, listen_overflows: 8535, syn_retrans: 6828}; {}; $machine; [])' "$env"
  assert_output '{"prediction_check":"match","prediction_notes":null,"predicted_failed_users_from":"fail_connect"}'
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 8293, fail_connect: 1234, failed_reqs: 9000, listen_overflows: 8535, syn_retrans: 6828}; {}; $machine; []) | .prediction_notes' "$env"
  assert_output --partial 'failed users (fail_connect) 1234 where 1707 was predicted'
}

@test "a burst against a fast endpoint predicts no connection peak: its users leave before the others arrive" {
  run design 'predictions($env; $sysctls; $machine) | .predicted_server_conns_peak' '{"SCENARIO":"burst","DELAY_MS":"0"}'
  assert_output 'null'
  run design 'predictions($env; $sysctls; $machine) | .predicted_server_conns_peak' '{"SCENARIO":"burst","DELAY_MS":"5000"}'
  assert_output '3'
}

@test "the port wall: ephemeral ports times client addresses cap the connections" {
  SYSCTLS='{"server":{"net.core.somaxconn":"4096"},"client":{"net.ipv4.tcp_syn_retries":"6","net.ipv4.tcp_syn_linear_timeouts":"4","net.ipv4.ip_local_port_range":"60000\t60999"}}'
  local env='{"SCENARIO":"burst","VUS":"1500","DELAY_MS":"15000","REQUEST_TIMEOUT":"30s","TOMCAT_MAX_THREADS":"2000","TOMCAT_MAX_CONNECTIONS":"8192","TOMCAT_ACCEPT_COUNT":"2000","DURATION":"40s"}'
  run design 'predictions($env; $sysctls; $machine) | [.predicted_server_conns_peak, .predicted_failed_users, .predicted_listen_overflows]' "$env"
  assert_output '[1000,500,0]'
  run design 'predictions($env; $sysctls; $machine) | .predicted_server_conns_peak' "$(jq -c '. + {CLIENT_ADDRESSES: "2"}' <<<"$env")"
  assert_output '1500'
  # Three ports still in TIME-WAIT from the health checks: a match.
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 997, fail_connect: 503, failed_reqs: 503, listen_overflows: 0, syn_retrans: 0}; {}; $machine; []) | .prediction_check' "$env"
  assert_output '"match"'
  run design 'predictions($env; $sysctls; $machine) as $p | prediction_verdict($env; $sysctls; $p; {server_conns_peak: 700, fail_connect: 800, failed_reqs: 800, listen_overflows: 0, syn_retrans: 0, fail_no_local_port: 800}; {}; $machine; []) | .prediction_notes' "$env"
  assert_output --partial "800 requests failed with 'cannot assign requested address': the client ran out of ephemeral ports (1000"
}

@test "a script of one's own: its VUs and executors from k6 inspect" {
  run design 'script_facts({scenarios: {default: {executor: "constant-vus", vus: 16, duration: "5s", startTime: null}}})'
  assert_output '{"vus":16,"at_once":true,"load_ms":5000}'
  run design 'script_facts({scenarios: {r: {executor: "ramping-vus", startVUs: 0, stages: [{duration: "5s", target: 30}, {duration: "5s", target: 0}]}}})'
  assert_output '{"vus":30,"at_once":false,"load_ms":null}'
  run design 'script_facts({scenarios: {o: {executor: "constant-arrival-rate", rate: 10}}})'
  assert_output '{"vus":null,"at_once":false,"load_ms":null}'
}

@test "the design checks apply to a script of one's own where its knobs are known" {
  run design 'with_script($env; {scenarios: {default: {executor: "constant-vus", vus: 8000, duration: "2s"}}}) as $env | design_warnings($env; $machine)[]'
  assert_output --partial "k6 needs about 5 s to start 8000 VUs here (K6_VU_START_RATE=1600/s) but the script's duration is 2 s"
  run design 'with_script($env; {scenarios: {default: {executor: "constant-vus", vus: 16, duration: "5s"}}}) as $env
    | design_findings($env; {http_reqs: 20, vus_started: 9, first_request_spread_ms: 2500, first_request_after_s: 0.1}; $machine) | map(.flag)'
  assert_output '["late","late"]'
}

@test "a burst is checked against its DURATION less the lead, not the graceful stop alone" {
  local burst='{"SCENARIO":"burst","VUS":"6000","DELAY_MS":"5000","REQUEST_TIMEOUT":"160s","TOMCAT_MAX_THREADS":"200","TOMCAT_MAX_CONNECTIONS":"8192","DURATION":"175s","BURST_LEAD_MS":"6000","GRACEFUL_STOP":"5s","REQUESTS_PER_VU":"1"}'
  run design 'design_warnings($env; $machine) | map(select(test("interrupted")))' "$burst"
  assert_output '[]'
  run design 'design_warnings($env; $machine)[]' "$(jq -c '. + {DURATION: "60s"}' <<<"$burst")"
  assert_output --partial "DURATION=60s less BURST_LEAD_MS=6000, plus GRACEFUL_STOP=5s, leaves 59000 ms, less than REQUESTS_PER_VU=1 requests may take (160000 ms each"
}
