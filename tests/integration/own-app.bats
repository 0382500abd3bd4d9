#!/usr/bin/env bats
# A service and a k6 script the suite did not write: the example Spring Boot
# service of tests/fixtures/ownapp (only Spring Boot's own properties and
# actuator) under a user-style spike script, in a small saturated matrix
# (tests/fixtures/own-app.matrix). The table keeps its columns and its
# exactness.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  SCRIPT="$LT_ROOT/tests/fixtures/own-script/spike-test.js"
  sha256sum "$SCRIPT" >"$BATS_FILE_TMPDIR/script.sha256"
  # The matrix's paths are relative to the directory the run starts from.
  cd "$LT_ROOT" || return 1
  run scripts/run-matrix.sh tests/fixtures/own-app.matrix
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  [ "$status" -eq 0 ] || { printf '%s\n' "$output" >&3; return 1; }
}

setup() {
  load '../test_helper'
  lt_setup_latest
}

@test "with no health path set, the jar is waited for at /readyz, and the scripts are told so" {
  local cell
  for cell in $(lt_cells); do
    [ "$(lt_cell_value "$cell" TARGET_HEALTH_PATH)" = /readyz ]
    [ "$(lt_row_value "$cell" status)" = ok ]
  done
}

# own_app_run LOG [KNOB=value...]: one more run of the fixture's matrix, one
# cell (accept-count 1), with the KNOBs on its command line, into its own
# results directory; its output in LOG, its exit status in status, its run
# directory in RUN_DIR.
own_app_run() {
  local log="$1"
  shift
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  cd "$LT_ROOT" || return 1
  status=0
  env TOMCAT_ACCEPT_COUNT=1 "$@" scripts/run-matrix.sh tests/fixtures/own-app.matrix >"$log" 2>&1 || status=$?
  RUN_DIR="$(lt_latest)"
}

# shellcheck disable=SC2030 # SC2030: each test reads the status own_app_run set in its own shell
@test "TARGET_HEALTH_PATH=/actuator/health is asked on the actuator's port, and the actuator is still sampled" {
  own_app_run "$BATS_TEST_TMPDIR/run.log" TARGET_HEALTH_PATH=/actuator/health
  [ "$status" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/run.log"; fail "the run failed"; }
  local cell
  cell="$(lt_cells)"
  [ "$(lt_row_value "$cell" status)" = ok ]
  [ "$(lt_cell_value "$cell" TARGET_HEALTH_PATH)" = /actuator/health ]
  [ "$(lt_row_value "$cell" tomcat_threads_busy_peak)" -eq 2 ]
  run jq -c . "$RUN_DIR/cells/$cell/connector.json"
  assert_output '{"checked":true,"reason":null,"mismatches":[],"source":"/actuator/configprops"}'
}

# own_app_generation JAR TOMCAT_MAJOR: one cell of the fixture's service
# built on another Spring Boot generation (JAR), which runs Tomcat
# TOMCAT_MAJOR: as designed, its connector checked (each generation keeps
# Tomcat's properties where it does: Spring Boot 4 in a bean of their own,
# server.tomcat; 2.7 in ServerProperties, "server", and shows their values
# without management.endpoint.configprops.show-values), busy threads (the
# application does not turn on Tomcat's MBean registry; the suite does) and
# app_* in ms: each greeting takes 1000 ms (greeting.env), whether Tomcat
# logs %D in microseconds (10, 11) or milliseconds (9). Its cell in CELL,
# its run directory in RUN_DIR.
own_app_generation() {
  local jar="$1" tomcat_major="$2"
  own_app_run "$BATS_TEST_TMPDIR/run.log" TARGET_JAR="$jar"
  # shellcheck disable=SC2031 # SC2031: own_app_run set it in this test's shell
  [ "$status" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/run.log"; fail "the run failed"; }
  CELL="$(lt_cells)"
  grep -q "Apache Tomcat/$tomcat_major\." "$RUN_DIR/cells/$CELL/target.log"
  [ "$(lt_row_value "$CELL" status)" = ok ]
  run jq -c . "$RUN_DIR/cells/$CELL/connector.json"
  assert_output '{"checked":true,"reason":null,"mismatches":[],"source":"/actuator/configprops"}'
  [ "$(lt_row_value "$CELL" as_designed)" -eq 1 ]
  lt_assert_saturated_capacity "$CELL"
  [ "$(lt_row_value "$CELL" tomcat_threads_busy_peak)" -eq 2 ]
  run jq -e '.app_lat_med_ms >= 1000 and .app_lat_med_ms < 2000' "$RUN_DIR/cells/$CELL/row.json"
  assert_success
}

@test "the same service on Spring Boot 4 (Tomcat 11): as designed, its connector checked, busy threads, app_* in ms" {
  own_app_generation tests/fixtures/ownapp-boot4/target/greeting-service.jar 11
}

@test "the same service on Spring Boot 2.7 (Tomcat 9): as designed, its connector checked, busy threads, app_* in ms, the split" {
  own_app_generation tests/fixtures/ownapp-boot2/target/greeting-service.jar 9
  # Tomcat 9's %D in milliseconds, read as microseconds, would make it 1 ms.
  run jq -e '.app_lat_p99_ms >= 1000 and .app_lat_p99_ms < 2000' "$RUN_DIR/cells/$CELL/row.json"
  assert_success
  # The unchanged script's requests carry the entry module's ids: every one
  # Tomcat answered is split, the others failed to connect.
  [ "$(lt_row_value "$CELL" decomposed_reqs)" -eq "$(lt_row_value "$CELL" app_reqs)" ]
  [ "$(lt_row_value "$CELL" decomposed_reqs)" -eq $(($(lt_row_value "$CELL" http_reqs) - $(lt_row_value "$CELL" fail_connect))) ]
  [ "$(lt_row_value "$CELL" reqs_never_seen_by_app_never_read)" -eq 0 ]
  run jq -e '.t_service_med_ms >= 1000 and .t_service_med_ms < 2000' "$RUN_DIR/cells/$CELL/row.json"
  assert_success
}

@test "a health path the application answers with 404 fails the cell within seconds, with the path and the fix" {
  own_app_run "$BATS_TEST_TMPDIR/run.log" TARGET_HEALTH_PATH=/status TARGET_START_TIMEOUT=120
  [ "$status" -eq 1 ]
  local cell
  cell="$(lt_cells)"
  [ "$(lt_row_value "$cell" status)" = failed ]
  run lt_row_value "$cell" error
  assert_output "target answers 404 (not found) to GET /status at http://198.18.0.1:8080/status: set TARGET_HEALTH_PATH to a path it answers with 200 once ready; left unset it is /readyz, the readiness probe the suite turns on in a Spring Boot jar (a path under /actuator/ is asked on the actuator's port, MANAGEMENT_PORT=8081)"
  # The application was up (its start takes a few seconds), and the cell
  # ended well before TARGET_START_TIMEOUT.
  grep -q 'Started GreetingApplication' "$RUN_DIR/cells/$cell/target.log"
  [ "$(jq -r .cell_wall_s "$RUN_DIR/cells/$cell/row.json" | cut -d. -f1)" -lt 40 ]
}

@test "the application is the given jar, started with the cell's connector as Spring Boot properties" {
  local cell
  for cell in $(lt_cells); do
    grep -q 'Started GreetingApplication' "$RUN_DIR/cells/$cell/target.log"
    # /actuator/configprops of the running application agrees with the cell.
    run jq -c . "$RUN_DIR/cells/$cell/connector.json"
    assert_output '{"checked":true,"reason":null,"mismatches":[],"source":"/actuator/configprops"}'
  done
}

@test "at saturation the server holds max-connections + min(accept-count, somaxconn) + 1, as predicted or explained" {
  local cell
  for cell in $(lt_cells); do
    lt_assert_saturated_capacity "$cell"
    [ "$(lt_row_value "$cell" predicted_server_conns_peak)" -eq "$(lt_row_value "$cell" queue_capacity)" ]
    # A handshake race on several CPUs can put up to CPUs - 1 more in the
    # accept queue; the prediction allows for it, and any other difference
    # must be explained by the cell's counters.
    lt_assert_prediction_kept "$cell"
  done
}

@test "the kernel's counters are there: overflows, drops and SYN retransmits" {
  local cell
  for cell in $(lt_cells); do
    [ "$(lt_row_value "$cell" listen_overflows)" -gt 0 ]
    [ "$(lt_row_value "$cell" listen_drops)" -ge "$(lt_row_value "$cell" listen_overflows)" ]
    [ "$(lt_row_value "$cell" syn_retrans)" -gt 0 ]
    grep -q $'^TcpExtListenOverflows\tserver\t' "$RUN_DIR/cells/$cell/netstat-delta.tsv"
  done
}

@test "Tomcat's busy threads come from the application's own actuator" {
  local cell
  for cell in $(lt_cells); do
    # Two connections, one thread each, all the time.
    [ "$(lt_row_value "$cell" tomcat_threads_busy_peak)" -eq 2 ]
    run awk -F'\t' 'NR > 1 && $9 != "" { n++ } END { print n + 0 }' "$RUN_DIR/cells/$cell/samples.tsv"
    [ "$output" -ge 3 ]
  done
}

@test "the user's script ran unchanged, and its row is complete" {
  local cell column
  sha256sum -c "$BATS_FILE_TMPDIR/script.sha256"
  for cell in $(lt_cells); do
    grep -qF "import * as script from \"$LT_ROOT/tests/fixtures/own-script/spike-test.js\"" "$RUN_DIR/cells/$cell/k6-entry.js"
    for column in vus_max vus_started http_reqs tps lat_p95_ms lat_p99_ms failed_reqs iterations \
      iterations_started load_window_s first_request_spread_ms k6_cpu_avg_pct as_designed; do
      [ -n "$(lt_row_value "$cell" "$column")" ] || fail "$cell: $column is empty"
    done
    [ "$(lt_row_value "$cell" vus_max)" -eq 16 ]
    [ "$(lt_row_value "$cell" vus_started)" -eq 16 ]
    [ "$(lt_row_value "$cell" as_designed)" -eq 1 ]
    [ "$(lt_row_value "$cell" iterations_interrupted)" -eq 0 ]
    run lt_row_value "$cell" notes
    assert_output --partial "a k6 script of one's own"
  done
  # k6 read the script once per matrix cell, before the run, for the design
  # check; the cells used that inspection instead of asking k6 again.
  local index=0
  for cell in $(lt_cells); do
    cmp "$RUN_DIR/k6-inspect/$index.json" "$RUN_DIR/cells/$cell/k6-script.json"
    index=$((index + 1))
  done
  [ "$(find "$RUN_DIR/k6-inspect" -name '*.json' | wc -l)" -eq 2 ]
}

@test "failures are split by k6's error_code and add up, without the suite's helpers in the script" {
  local cell sum
  run ! grep -q 'fail_' "$LT_ROOT/tests/fixtures/own-script/spike-test.js"
  for cell in $(lt_cells); do
    sum=$(jq '.fail_connect + .fail_reset + .fail_timeout + .fail_http_4xx + .fail_http_5xx + .fail_other + .fail_interrupted' \
      "$RUN_DIR/cells/$cell/row.json")
    [ "$sum" -eq "$(lt_row_value "$cell" failed_reqs)" ]
    # Users beyond the queue gave up connecting (CLIENT_TCP_SYN_RETRIES=2).
    [ "$(lt_row_value "$cell" fail_connect)" -eq "$(lt_row_value "$cell" failed_reqs)" ]
  done
  [ "$(jq -s 'map(.failed_reqs) | add' "$RUN_DIR"/cells/*/row.json)" -gt 0 ]
}

@test "the load is tagged from the command line: the script sets no tag, yet traffic=load counts every request" {
  local cell
  cell="$(lt_cells | head -n 1)"
  run ! grep -q 'tags' "$LT_ROOT/tests/fixtures/own-script/spike-test.js"
  run jq -r '.metrics["http_reqs{traffic:load}"].values.count' "$RUN_DIR/cells/$cell/summary.json"
  [ "$output" -eq "$(lt_row_value "$cell" http_reqs)" ]
  [ "$(jq -r .scenario "$RUN_DIR/cells/$cell/row.json")" = "$LT_ROOT/tests/fixtures/own-script/spike-test.js" ]
}
