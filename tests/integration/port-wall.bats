#!/usr/bin/env bats
# The port wall, exactly: one client address has HIGH - LOW + 1 ephemeral
# ports towards the server's address and port, and the users get all of
# them. The suite's own sockets in the client namespace (the runner's health
# check, k6's web dashboard, k6's setup()) use none of them: a health
# check's TIME-WAIT held a port for 60 s, and the dashboard's listener one
# for the whole load (998 connections of 1,000 before).
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_LOCK_WAIT=900
  local matrix="$BATS_FILE_TMPDIR/port-wall.matrix"
  # 150 users at once over 100 ports, holding their connections 3 s, with
  # room for all of them on the server; the dashboard's export on (the default).
  printf '%s\n' SCENARIO=burst VUS=150 REQUESTS_PER_VU=1 DELAY_MS=3000 BURST_LEAD_MS=1500 DURATION=2s \
    GRACEFUL_STOP=8s REQUEST_TIMEOUT=10s TOMCAT_MAX_THREADS=200 TOMCAT_MIN_SPARE_THREADS=200 TOMCAT_ACCEPT_COUNT=200 \
    CLIENT_IP_LOCAL_PORT_RANGE=60000-60099 K6_HTML_REPORT=1 MONITORING=off >"$matrix"
  lt_run_matrix_once "$matrix"
}

setup() {
  load '../test_helper'
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  CELL="$(lt_cells | head -n 1)"
}

@test "100 ports: exactly 100 users connect and the other 50 fail for want of a port, as predicted" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ]
  [ "$(lt_effective_sysctl "$CELL" client net.ipv4.ip_local_port_range)" = '60000 60099' ]
  [ "$(lt_row_value "$CELL" predicted_server_conns_peak)" -eq 100 ]
  [ "$(lt_row_value "$CELL" predicted_failed_users)" -eq 50 ]
  [ "$(lt_row_value "$CELL" server_conns_peak)" -eq 100 ]
  [ "$(lt_row_value "$CELL" fail_no_local_port)" -eq 50 ]
  [ "$(lt_row_value "$CELL" fail_connect)" -eq 50 ]
  run lt_row_value "$CELL" prediction_notes
  refute_output --regexp '(server_conns_peak|fail_connect\)) [0-9.]+ where'
  # The dashboard still wrote its export.
  [ -s "$RUN_DIR/cells/$CELL/k6-report.html" ]
}
