#!/usr/bin/env bats
# Many users per k6 VU (USERS_PER_VU): the same burst of 300 users, as one
# VU each and as 30 users in each of 10 VUs, gives the same figures. k6 may
# hold 200 files (K6_NOFILE), so about 108 users fail with "too many open
# files", in the same VUs as users that are answered; the server holds 120
# connections and an accept queue of 51 for 4 s, longer than a client tries
# to connect (one SYN retransmission: it gives up after 3 s), so the other
# 21 users overflow the queue twice each and fail to connect (fail_connect).
# About 50 s, 2 cells.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_LOCK_WAIT=900
  local matrix="$BATS_FILE_TMPDIR/burst-users.matrix"
  printf '%s\n' SCENARIO=burst VUS=300 REQUESTS_PER_VU=1 'USERS_PER_VU=1 30' DELAY_MS=4000 BURST_LEAD_MS=2000 \
    DURATION=3s GRACEFUL_STOP=10s REQUEST_TIMEOUT=10s K6_NOFILE=200 K6_INSTANCES=1 TOMCAT_MAX_THREADS=200 \
    TOMCAT_MIN_SPARE_THREADS=200 TOMCAT_MAX_CONNECTIONS=120 TOMCAT_ACCEPT_COUNT=50 SOMAXCONN=4096 \
    CLIENT_TCP_SYN_RETRIES=1 CLIENT_TCP_SYN_LINEAR_TIMEOUTS=0 \
    K6_HTML_REPORT=0 MONITORING=off >"$matrix"
  lt_run_matrix_once "$matrix"
}

setup() {
  load '../test_helper'
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  ONE="$(lt_cells | head -n 1)"
  MANY="$(lt_cells | tail -n 1)"
}

@test "30 users a VU give the row figures of a VU a user, within the kernel's race of one" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ]
  [ "$(lt_cell_value "$ONE" USERS_PER_VU)" = 1 ]
  [ "$(lt_cell_value "$MANY" USERS_PER_VU)" = 30 ]
  [ "$(lt_row_value "$ONE" vus_max)" -eq 300 ]
  [ "$(lt_row_value "$MANY" vus_max)" -eq 10 ]
  local key one many
  for key in vus_started http_reqs failed_reqs fail_no_fd fail_connect fail_reset fail_timeout fail_http_4xx \
    fail_http_5xx fail_other client_connects server_accepts server_conns_peak listen_overflows decomposed_reqs; do
    one="$(lt_row_value "$ONE" "$key")"
    many="$(lt_row_value "$MANY" "$key")"
    [[ "$one" =~ ^[0-9]+$ && "$many" =~ ^[0-9]+$ ]] || fail "$key: '$one' and '$many' are not counts"
    ((one - many <= 1 && many - one <= 1)) || fail "$key: $one with a VU a user, $many with 30 users a VU"
  done
  # The figures are the ones designed: the file wall and the queue were met.
  [ "$(lt_row_value "$MANY" vus_started)" -eq 300 ]
  (($(lt_row_value "$MANY" fail_no_fd) >= 98)) || fail "fail_no_fd $(lt_row_value "$MANY" fail_no_fd)"
  (($(lt_row_value "$MANY" fail_connect) > 0)) || fail "no connect failure"
  (($(lt_row_value "$MANY" listen_overflows) > 0)) || fail "no listen overflow"
  # The predictions are judged alike: kept, or explained by the cell's counters.
  lt_assert_prediction_kept "$ONE"
  lt_assert_prediction_kept "$MANY"
}

@test "the barrier still releases every user of every VU at one instant" {
  local cell after spread
  for cell in "$ONE" "$MANY"; do
    after="$(lt_row_value "$cell" first_request_after_s)"
    spread="$(lt_row_value "$cell" first_request_spread_ms)"
    # Not before the lead: every user waited at the barrier; then within 500 ms of each other
    # on 2 busy cores (50-70 ms measured).
    awk -v a="$after" 'BEGIN { exit !(a >= 2.0) }' || fail "$cell: first request $after s after k6 started"
    ((spread < 500)) || fail "$cell: first requests spread over $spread ms"
    [ "$(lt_row_value "$cell" as_designed)" -eq 1 ]
  done
}

@test "a user's failure in a batch is its own: its VU's other users are answered, each with its own id" {
  # The access log's request ids: <user>-0-1, every answered user once.
  local ids
  ids="$(awk '$5 ~ /^[0-9]+-0-1$/ { split($5, id, "-"); print id[1] }' "$RUN_DIR/cells/$MANY/tomcat-access.log" | sort -n)"
  [ "$(printf '%s\n' "$ids" | wc -l)" -eq "$(lt_row_value "$MANY" decomposed_reqs)" ]
  [ "$(printf '%s\n' "$ids" | uniq | wc -l)" -eq "$(printf '%s\n' "$ids" | wc -l)" ]
  [ "$(($(printf '%s\n' "$ids" | wc -l) + $(lt_row_value "$MANY" failed_reqs)))" -eq 300 ]
  # VUs (users 1-30, 31-60, ...) with answered and failed users both.
  run awk '{ answered[int(($1 - 1) / 30)]++ } END { for (vu in answered) if (answered[vu] < 30) mixed++; print mixed + 0 }' <<<"$ids"
  ((output >= 1)) || fail "no VU with both answered and failed users"
}
