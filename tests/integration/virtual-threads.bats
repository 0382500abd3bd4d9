#!/usr/bin/env bats
# Virtual threads (TOMCAT_VIRTUAL_THREADS): the same burst of 12 users of 2 s
# on 4 threads is answered in 3 waves (the last at 6 s); on virtual threads
# all 12 at once (max-connections is the bound), on a JDK 21 or later, the
# suite's own jar without its Spring AOT code, and the cell shows it applied
# (no thread pool: the connector's maxThreads -1 in its log). About 40 s, 2 cells.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_LOCK_WAIT=900
  local matrix="$BATS_FILE_TMPDIR/virtual-threads.matrix"
  printf '%s\n' SCENARIO=burst VUS=12 REQUESTS_PER_VU=1 DELAY_MS=2000 BURST_LEAD_MS=1000 DURATION=2s \
    GRACEFUL_STOP=10s REQUEST_TIMEOUT=10s TOMCAT_MAX_THREADS=4 TOMCAT_MIN_SPARE_THREADS=4 \
    'TOMCAT_VIRTUAL_THREADS=0 1' K6_HTML_REPORT=0 MONITORING=off >"$matrix"
  lt_run_matrix_once "$matrix"
}

setup() {
  load '../test_helper'
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  POOL="$(lt_cells | head -n 1)"
  VIRTUAL="$(lt_cells | tail -n 1)"
}

@test "4 threads answer 12 users of 2 s in 3 waves; virtual threads in one" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ]
  [ "$(lt_cell_value "$POOL" TOMCAT_VIRTUAL_THREADS)" = 0 ]
  [ "$(lt_cell_value "$VIRTUAL" TOMCAT_VIRTUAL_THREADS)" = 1 ]
  local cell
  for cell in "$POOL" "$VIRTUAL"; do
    printf '%s: http_reqs %s failed %s lat_max %s t_queued_p99 %s predicted %s as_designed %s (%s)\n' "$cell" \
      "$(lt_row_value "$cell" http_reqs)" "$(lt_row_value "$cell" failed_reqs)" "$(lt_row_value "$cell" lat_max_ms)" \
      "$(lt_row_value "$cell" t_queued_p99_ms)" "$(lt_row_value "$cell" predicted_t_queued_p99_ms)" \
      "$(lt_row_value "$cell" as_designed)" "$(lt_row_value "$cell" design_notes)"
    [ "$(lt_row_value "$cell" http_reqs)" -eq 12 ]
    [ "$(lt_row_value "$cell" failed_reqs)" -eq 0 ]
    [ "$(lt_row_value "$cell" as_designed)" = 1 ]
  done
  # The third wave waits two requests' time; on virtual threads nobody waits.
  [ "$(lt_row_value "$POOL" predicted_t_queued_p99_ms)" = 4000 ]
  [ "$(lt_row_value "$VIRTUAL" predicted_t_queued_p99_ms)" = 0 ]
  python3 -c 'import sys; sys.exit(not float(sys.argv[1]) >= 5900)' "$(lt_row_value "$POOL" lat_max_ms)"
  python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 3000)' "$(lt_row_value "$VIRTUAL" lat_max_ms)"
}

@test "virtual threads ran on a JDK 21 or later, without Spring AOT, and showed no thread pool" {
  run lt_row_value "$VIRTUAL" target_java
  assert_output --regexp '^(2[1-9]|[3-9][0-9])\.'
  run grep '^target_spring_aot=' "$RUN_DIR/cells/$VIRTUAL/target-start.txt"
  assert_output "target_spring_aot=off: TOMCAT_VIRTUAL_THREADS=1, a condition Spring AOT fixed at build time (platform threads)"
  jq -e '.mismatches == []' "$RUN_DIR/cells/$VIRTUAL/connector.json"
  # Read from the line the target logged: Tomcat reports maxThreads -1 without a pool of its own.
  jq -e '.source == "target.log"' "$RUN_DIR/cells/$VIRTUAL/connector.json"
  grep -q 'connector "http-nio-198.18.0.1-8080": maxThreads=-1 ' "$RUN_DIR/cells/$VIRTUAL/target.log"
  grep -q 'connector "http-nio-198.18.0.1-8080": maxThreads=4 minSpareThreads=4 ' "$RUN_DIR/cells/$POOL/target.log"
  jq -e '.source == "target.log" and .mismatches == []' "$RUN_DIR/cells/$POOL/connector.json"
  [ -z "$(lt_row_value "$VIRTUAL" tomcat_threads_busy_peak)" ]
  [ "$(lt_row_value "$POOL" tomcat_threads_busy_peak)" = 4 ]
}
