#!/usr/bin/env bats
# nginx in front (PROXY=nginx) of a target whose accept queue is tiny (one
# connection, accept count 1) and whose answers take 1.5 s: the users connect
# to nginx at once, and the connections nginx cannot get accepted within
# PROXY_CONNECT_TIMEOUT come back as its 504s, counted from its own logs. nginx
# stops with its cell.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_run_settings_once proxy SCENARIO=keepalive VUS=6 REQUESTS_PER_VU=2 CONNECTION_REUSE=1 DELAY_MS=1500 \
    DURATION=20s TOMCAT_MAX_CONNECTIONS=1 TOMCAT_ACCEPT_COUNT=1 PROXY=nginx PROXY_CONNECT_TIMEOUT=300ms \
    K6_HTML_REPORT=0 MONITORING=off
}

setup() {
  load '../test_helper'
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  CELL="$(lt_cells | head -n 1)"
}

@test "behind nginx the full accept queue shows as nginx's 504s, not as the users' connect failures" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || [ "$(lt_row_value "$CELL" status)" = ok ]
  local reqs p504 timeouts
  reqs="$(lt_row_value "$CELL" proxy_reqs)"
  p504="$(lt_row_value "$CELL" proxy_504)"
  timeouts="$(lt_row_value "$CELL" proxy_upstream_connect_timeouts)"
  # Every user request (and the runner's check before the load, proxy_check) went through nginx.
  [ "$reqs" -eq "$(($(lt_row_value "$CELL" http_reqs) + 1))" ] || fail "proxy_reqs $reqs"
  [ "$p504" -gt 0 ] || fail "no 504 from nginx"
  # Each 504 is a connection the target's kernel did not accept in time.
  [ "$timeouts" -eq "$p504" ] || fail "proxy_upstream_connect_timeouts $timeouts, proxy_504 $p504"
  [ "$(lt_row_value "$CELL" proxy_502)" -eq 0 ]
  [ "$(lt_row_value "$CELL" fail_connect)" -eq 0 ]
  [ "$(lt_row_value "$CELL" fail_http_5xx)" -eq "$p504" ]
  # The requests that connected waited at most the connect timeout for it.
  awk -v c="$(lt_row_value "$CELL" proxy_upstream_connect_p99_ms)" 'BEGIN { exit !(c >= 0 && c <= 300) }'
  awk -v c="$(lt_row_value "$CELL" proxy_request_p99_ms)" 'BEGIN { exit !(c >= 1500) }'
  # The rules agree across the tiers: the server held its capacity, no user failed to connect,
  # and each overflow (one SYN of nginx's within 300 ms) is one connect nginx gave up on.
  [ "$(lt_row_value "$CELL" predicted_server_conns_peak)" -eq 3 ]
  [ "$(lt_row_value "$CELL" listen_overflows)" -eq "$timeouts" ]
  [ "$(lt_row_value "$CELL" prediction_check)" = match ] || fail "$(lt_row_value "$CELL" prediction_notes)"
}

@test "the users loaded nginx's port, nginx the target's; nginx stopped with its cell" {
  grep -q "^    listen $(lt_cell_value "$CELL" SERVER_ADDR):8090 backlog=511;" "$RUN_DIR/cells/$CELL/nginx.conf"
  grep -q "^    server $(lt_cell_value "$CELL" SERVER_ADDR):8080 max_fails=0;" "$RUN_DIR/cells/$CELL/nginx.conf"
  grep -q "proxy_connect_timeout 300ms;" "$RUN_DIR/cells/$CELL/nginx.conf"
  grep -q "upstream timed out" "$RUN_DIR/cells/$CELL/nginx-error.log"
  [ ! -e "$RUN_DIR/cells/$CELL/nginx.pid" ]
}
