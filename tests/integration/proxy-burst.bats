#!/usr/bin/env bats
# A held burst behind nginx past the server's capacity: 6 users at once, one
# request of 2.5 s each, one connection and accept count 1 (1 + 1 + 1 = 3),
# PROXY_CONNECT_TIMEOUT=300ms. The rules predict the failure one tier up: the
# server holds its 3, the other 3 users are nginx's 504s, each of them one SYN
# of nginx's into the full queue (one overflow), and no user fails to connect.
# Where the SYNs fill the queue before Tomcat's acceptor takes the first, it
# holds 2 and nginx gives 4 504s: a match, with a note that says why.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_run_settings_once proxy-burst SCENARIO=burst VUS=6 REQUESTS_PER_VU=1 DELAY_MS=2500 DURATION=20s \
    TOMCAT_MAX_CONNECTIONS=1 TOMCAT_ACCEPT_COUNT=1 PROXY=nginx PROXY_CONNECT_TIMEOUT=300ms \
    K6_HTML_REPORT=0 MONITORING=off
}

setup() {
  load '../test_helper'
  # shellcheck disable=SC2034 # SC2034: RUN_DIR is read by test_helper's lt_row_value
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  CELL="$(lt_cells | head -n 1)"
}

@test "behind nginx a held burst past the server's capacity: the rules predict nginx's 504s and no connect failure, and it matches" {
  [ "$(lt_row_value "$CELL" status)" = ok ]
  [ "$(lt_row_value "$CELL" predicted_server_conns_peak)" -eq 3 ]
  [ "$(lt_row_value "$CELL" predicted_failed_users)" -eq 3 ]
  [ "$(lt_row_value "$CELL" predicted_failed_users_from)" = proxy_504 ]
  [ "$(lt_row_value "$CELL" predicted_listen_overflows)" -eq 3 ]
  [ "$(lt_row_value "$CELL" predicted_syn_retrans)" -eq 0 ]
  [ "$(lt_row_value "$CELL" prediction_check)" = match ] || fail "$(lt_row_value "$CELL" prediction_notes)"
  [ "$(lt_row_value "$CELL" fail_connect)" -eq 0 ]
  [ "$(lt_row_value "$CELL" fail_http_5xx)" -eq "$(lt_row_value "$CELL" proxy_504)" ]
}
