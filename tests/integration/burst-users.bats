#!/usr/bin/env bats
# Many users per k6 VU (USERS_PER_VU): the same burst of 300 users, as one
# VU each and as 30 users in each of 10 VUs, gives the same figures. k6 may
# hold 200 files (K6_NOFILE), so about 108 users fail with "too many open
# files", in the same VUs as users that are answered; the server takes every
# connection but has 100 threads for 3 s answers, so the first 100 users are
# answered and the other 92 time out at 4 s, a wave before theirs would end.
# (A queue that overflows is no fit here: which of the users past it had
# their SYN dropped and which their ACK, so failing or not, is a race of the
# burst's microseconds, in either way.) About 40 s, 2 cells.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_run_settings_once burst-users SCENARIO=burst VUS=300 REQUESTS_PER_VU=1 'USERS_PER_VU=1 30' DELAY_MS=3000 \
    BURST_LEAD_MS=2000 DURATION=3s GRACEFUL_STOP=10s REQUEST_TIMEOUT=4s K6_NOFILE=200 K6_INSTANCES=1 \
    TOMCAT_MAX_THREADS=100 TOMCAT_MIN_SPARE_THREADS=100 TOMCAT_MAX_CONNECTIONS=1000 TOMCAT_ACCEPT_COUNT=1000 \
    SOMAXCONN=4096 K6_HTML_REPORT=0 MONITORING=off
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
  # vus_max and the iterations count users, not k6's VUs (10 here, one iteration each).
  [ "$(lt_row_value "$ONE" vus_max)" -eq 300 ]
  [ "$(lt_row_value "$MANY" vus_max)" -eq 300 ]
  [ "$(lt_row_value "$MANY" iterations_started)" -eq 300 ]
  local key one many
  for key in http_reqs failed_reqs fail_no_fd fail_timeout fail_connect listen_overflows server_conns_peak; do
    printf '%s %s %s\n' "$key" "$(lt_row_value "$ONE" "$key")" "$(lt_row_value "$MANY" "$key")"
  done
  for key in vus_started iterations iterations_interrupted http_reqs failed_reqs fail_no_fd fail_connect \
    fail_reset fail_timeout fail_http_4xx fail_http_5xx fail_other client_connects server_accepts server_conns_peak \
    listen_overflows decomposed_reqs; do
    one="$(lt_row_value "$ONE" "$key")"
    many="$(lt_row_value "$MANY" "$key")"
    [[ "$one" =~ ^[0-9]+$ && "$many" =~ ^[0-9]+$ ]] || fail "$key: '$one' and '$many' are not counts"
    ((one - many <= 1 && many - one <= 1)) || fail "$key: $one with a VU a user, $many with 30 users a VU"
  done
  # The figures are the ones designed: the file wall and the queue were met.
  [ "$(lt_row_value "$MANY" vus_started)" -eq 300 ]
  (($(lt_row_value "$MANY" fail_no_fd) >= 98)) || fail "fail_no_fd $(lt_row_value "$MANY" fail_no_fd)"
  (($(lt_row_value "$MANY" fail_timeout) > 0)) || fail "no timeout"
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
  # The access log's request ids: <user>-0-1, each user's own, once (Tomcat logs a request that
  # k6 gave up on too, when it ends before the target stops).
  local ids count
  ids="$(awk '$5 ~ /^[0-9]+-0-1$/ { split($5, id, "-"); print id[1] }' "$RUN_DIR/cells/$MANY/tomcat-access.log" | sort -n)"
  count="$(printf '%s\n' "$ids" | wc -l)"
  [ "$(printf '%s\n' "$ids" | uniq | wc -l)" -eq "$count" ]
  ((count >= $(lt_row_value "$MANY" decomposed_reqs))) || fail "$count ids in the access log"
  ((count + $(lt_row_value "$MANY" fail_no_fd) <= 300)) || fail "$count ids in the access log"
  # VUs (users 1-30, 31-60, ...) with users that reached the target beside users that failed.
  run awk '{ reached[int(($1 - 1) / 30)]++ } END { for (vu in reached) if (reached[vu] < 30) mixed++; print mixed + 0 }' <<<"$ids"
  ((output >= 1)) || fail "no VU with both answered and failed users"
}
