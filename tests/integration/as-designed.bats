#!/usr/bin/env bats
# Every cell checks itself: three small runs whose load did not happen as
# designed, or whose counters differ from the kernel's rules, and what their
# rows say about it.

setup_file() {
  load '../test_helper'
  lt_require_root
  local name
  for name in cut cookies late; do
    LT_RESULTS_DIR="$BATS_FILE_TMPDIR/$name" \
      "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/design-$name.matrix" \
      >"$BATS_FILE_TMPDIR/$name.log" 2>&1 || true
  done
}

setup() {
  load '../test_helper'
  lt_require_root
}

# use_run NAME: point the readers (lt_row_value, ...) at one of the runs.
use_run() {
  RUN_DIR="$(readlink -f "$BATS_FILE_TMPDIR/$1/latest")"
  LOG="$BATS_FILE_TMPDIR/$1.log"
}

@test "cut: the design check warns before the run, and the manifest keeps it" {
  use_run cut
  run grep -c "warning: cell 01: GRACEFUL_STOP=5s is shorter than an iteration may take" "$LOG"
  assert_output 1
  jq -e '.warnings | map(select(test("GRACEFUL_STOP=5s is shorter"))) | length == 1' "$RUN_DIR/manifest.json"
  # The warning was printed before the cell started.
  [ "$(grep -n 'GRACEFUL_STOP=5s is shorter' "$LOG" | cut -d: -f1)" -lt "$(grep -n '^cell 1/1' "$LOG" | cut -d: -f1)" ]
}

@test "cut: 11 of 11 iterations interrupted, no request, the cell not as designed but ok" {
  use_run cut
  [ "$(lt_row_value 01 status)" = ok ]
  [ "$(lt_row_value 01 as_designed)" = 0 ]
  [ "$(lt_row_value 01 vus_started)" = 11 ]
  [ "$(lt_row_value 01 iterations_started)" = 11 ]
  [ "$(lt_row_value 01 iterations_interrupted)" = 11 ]
  [ "$(lt_row_value 01 http_reqs)" = 0 ]
  [ -z "$(lt_row_value 01 lat_p95_ms)" ]
  run lt_row_value 01 design_notes
  assert_output --partial "11 of 11 iterations were interrupted by GRACEFUL_STOP=5s before REQUEST_TIMEOUT=10s"
  run grep -A2 "cell(s) ran as designed" "$LOG"
  assert_line "0 of 1 cell(s) ran as designed"
  assert_line --partial "  01: no request completed"
}

@test "cut: REQUIRE_AS_DESIGNED=1 makes the same cell failed, and the run too" {
  use_run cut
  run env LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" REQUIRE_AS_DESIGNED=1 DURATION=1s \
    "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/design-cut.matrix"
  assert_failure
  RUN_DIR="$(readlink -f "$BATS_TEST_TMPDIR/results/latest")"
  [ "$(lt_row_value 01 status)" = failed ]
  run lt_row_value 01 error
  assert_output --partial "not as designed (REQUIRE_AS_DESIGNED=1): "
  assert_output --partial "11 of 11 iterations were interrupted"
  [ "$(jq -r .status "$RUN_DIR/manifest.json")" = failed ]
}

# assert_cookie_mismatch CELL FAILED_USERS: the prediction says 4 SYNs per
# failed user, the server sent cookies, and the notes say what happened.
assert_cookie_mismatch() {
  local cell="$1" failed="$2"
  [ "$(lt_row_value "$cell" prediction_check)" = mismatch ]
  [ "$(lt_row_value "$cell" syn_cookies_sent)" -gt 0 ]
  run lt_row_value "$cell" prediction_notes
  assert_output --partial "listen_overflows $(lt_row_value "$cell" listen_overflows) where $((failed * 4)) was predicted"
  assert_output --partial "the server sent SYN cookies"
  assert_output --partial "failing as request timeouts"
  # Clients with a cookie believe they are connected: no dial error.
  [ "$(lt_row_value "$cell" fail_connect)" = 0 ]
}

@test "cookies: predictions from the knobs and the recorded sysctls" {
  use_run cookies
  # SYNs at 0, 1, 3 and 7 s before the 10 s timeout: 4 per failed user.
  run jq -sc 'map([.cell, .predicted_server_conns_peak, .predicted_failed_users, .predicted_listen_overflows, .predicted_syn_retrans])' "$RUN_DIR"/cells/*/row.json
  assert_output '[["01_accept_count-1_tcp_syncookies-1",3,17,68,51],["02_accept_count-1_tcp_syncookies-2",3,17,68,51],["03_accept_count-10_tcp_syncookies-1",12,8,32,24],["04_accept_count-10_tcp_syncookies-2",12,8,32,24]]'
}

@test "cookies: with room in the SYN queue and no cookie, the kernel's rule holds exactly" {
  use_run cookies
  local cell=03_accept_count-10_tcp_syncookies-1
  [ "$(lt_row_value $cell syn_cookies_sent)" = 0 ]
  [ "$(lt_row_value $cell prediction_check)" = match ] || fail "$(lt_row_value $cell prediction_notes)"
  local in=$(($(lt_row_value $cell server_conns_peak)))
  [ "$(lt_row_value $cell listen_overflows)" -eq $(((20 - in) * 4)) ]
  [ "$(lt_row_value $cell syn_retrans)" -eq $(((20 - in) * 3)) ]
}

@test "cookies: a backlog of 1 and a burst make the server send cookies; the notes explain the mismatch" {
  use_run cookies
  local cell=01_accept_count-1_tcp_syncookies-1
  if [ "$(lt_row_value $cell syn_cookies_sent)" -eq 0 ]; then
    [ "$(lt_row_value $cell prediction_check)" = match ] || fail "no cookie, yet: $(lt_row_value $cell prediction_notes)"
  else
    assert_cookie_mismatch $cell 17
  fi
}

@test "cookies: with SYN cookies always on, every such cell is a mismatch the counters explain" {
  use_run cookies
  assert_cookie_mismatch 02_accept_count-1_tcp_syncookies-2 17
  assert_cookie_mismatch 04_accept_count-10_tcp_syncookies-2 8
}

@test "late: k6 could not start 5000 VUs within DURATION=1s, and the row says how many came" {
  use_run late
  local started
  started="$(lt_row_value 01 vus_started)"
  [ "$started" -gt 0 ] && [ "$started" -lt 5000 ] || fail "vus_started $started"
  [ "$(lt_row_value 01 as_designed)" = 0 ]
  [ "$(lt_row_value 01 generator_bound)" = 1 ]
  run lt_row_value 01 design_notes
  assert_output --partial "only $started of 5000 VUs sent a request: k6 needed "
  assert_output --partial "and DURATION is 1s"
  run grep "warning: cell 01: k6 needs about" "$LOG"
  assert_success
}

@test "every row carries the delivered-load and prediction columns" {
  local name column header
  for name in cut cookies late; do
    use_run "$name"
    header="$(head -n 1 "$RUN_DIR/results.csv")"
    for column in as_designed design_notes vus_started iterations_started iterations_interrupted \
      first_request_spread_ms load_window_s first_request_after_s k6_cpu_saturated_s generator_bound \
      predicted_server_conns_peak predicted_failed_users predicted_listen_overflows predicted_syn_retrans \
      predicted_tps predicted_lat_max_ms prediction_check prediction_notes \
      setup_s target_start_s k6_s teardown_s files_s; do
      [[ ",$header," == *",$column,"* ]] || fail "$name: column $column missing"
    done
  done
}
