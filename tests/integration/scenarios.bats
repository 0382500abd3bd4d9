#!/usr/bin/env bats
# Every scenario at small scale, for real, and the truths specific to each.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/scenarios.matrix" >"$BATS_FILE_TMPDIR/scenarios.log" 2>&1
  readlink -f "$LT_RESULTS_DIR/latest" >"$BATS_FILE_TMPDIR/scenarios.dir"
  "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/keepalive.matrix" >"$BATS_FILE_TMPDIR/keepalive.log" 2>&1
  readlink -f "$LT_RESULTS_DIR/latest" >"$BATS_FILE_TMPDIR/keepalive.dir"
}

setup() {
  load '../test_helper'
  lt_require_root
  SCENARIOS="$(cat "$BATS_FILE_TMPDIR/scenarios.dir")"
  KEEPALIVE="$(cat "$BATS_FILE_TMPDIR/keepalive.dir")"
}

# row DIR CELL: the row.json of a cell.
row() {
  cat "$1/cells/$2/row.json"
}

@test "every scenario cell ran and finished ok" {
  run lt_csv_column "$SCENARIOS/results.csv" scenario
  assert_output $'ramp\nspike-open\nwaiting-room'
  run lt_csv_column "$SCENARIOS/results.csv" status
  assert_output $'ok\nok\nok'
  run lt_csv_column "$KEEPALIVE/results.csv" status
  assert_output $'ok\nok'
}

@test "failure causes add up to failed_reqs in every row" {
  for row in "$SCENARIOS"/cells/*/row.json "$KEEPALIVE"/cells/*/row.json; do
    jq -e '(.fail_connect + .fail_reset + .fail_timeout + .fail_http_4xx + .fail_http_5xx + .fail_other + .fail_interrupted) == .failed_reqs' "$row" \
      || fail "$row"
  done
}

@test "ramp: the users follow the stages up to their peak" {
  row "$SCENARIOS" 01_scenario-ramp | jq -e '.vus_max == 8 and .http_reqs > 0 and .lat_min_ms >= 200'
}

@test "open model: the cell reports its arrival rate and keeps it" {
  local r
  r="$(row "$SCENARIOS" 02_scenario-spike.open)"
  jq -e '.extra.arrival_rate_per_s == 20' <<<"$r"
  # 20/s for 5 s: 100 iterations started on time, none dropped with 20 VUs allowed.
  jq -e '.iterations + .dropped_iterations >= 95 and .iterations + .dropped_iterations <= 101' <<<"$r"
  head -n 1 "$SCENARIOS/results.csv" | grep -q ',arrival_rate_per_s,'
  head -n 1 "$SCENARIOS/results.csv" | grep -q ',dropped_iterations,'
}

@test "waiting room: every visitor is eventually admitted" {
  local r
  r="$(row "$SCENARIOS" 03_scenario-waiting.room)"
  jq -e '.extra.wr_visitors > 0 and .extra.wr_admitted == .extra.wr_visitors and .extra.wr_gave_up == 0' <<<"$r"
  # The server admitted exactly the visitors k6 saw admitted.
  jq -e '.extra.wr_server_admitted == .extra.wr_admitted' <<<"$r"
}

@test "waiting room: the admission rule is never broken" {
  local stats="$SCENARIOS/cells/03_scenario-waiting.room/waiting-room-stats.json"
  [ -s "$stats" ]
  [ "$(jq '.admitPerSecond' "$stats")" -eq 4 ]
  # Every calendar second, from the server's own log of admissions.
  jq -e '[.admissionsPerSecond[]] | length > 1 and max <= 4' "$stats"
  row "$SCENARIOS" 03_scenario-waiting.room | jq -e '.extra.wr_server_max_admitted_in_one_second <= .extra.wr_admit_per_second'
}

@test "waiting room: the results add the wait/entry figures as columns" {
  local header
  header="$(head -n 1 "$SCENARIOS/results.csv")"
  for column in wr_wait_requests wr_entry_requests wr_can_enter_true wr_can_enter_false wr_admission_p95_ms; do
    [[ ",$header," == *",$column,"* ]] || fail "$column missing"
  done
  row "$SCENARIOS" 03_scenario-waiting.room | jq -e '
    .extra.wr_wait_requests == .extra.wr_visitors
    and .extra.wr_can_enter_true == .extra.wr_admitted
    and .extra.wr_entry_requests > 0
    and .extra.wr_admission_p95_ms > 0'
}

@test "keep-alive off makes more connects and more TIME-WAIT than keep-alive on" {
  local on off
  on="$(row "$KEEPALIVE" 01_connection_reuse-1)"
  off="$(row "$KEEPALIVE" 02_connection_reuse-0)"
  [ "$(jq .client_connects <<<"$off")" -gt "$(jq .client_connects <<<"$on")" ]
  [ "$(jq .client_time_wait_peak <<<"$off")" -gt "$(jq .client_time_wait_peak <<<"$on")" ]
  [ "$(jq .time_wait_peak <<<"$off")" -gt "$(jq .time_wait_peak <<<"$on")" ]
  # Keep-alive: about one connection per user.
  [ "$(jq .client_connects <<<"$on")" -le 8 ]
}

@test "a narrow client port range without TIME-WAIT reuse runs out of ports" {
  local off
  off="$(row "$KEEPALIVE" 02_connection_reuse-0)"
  # 4 x 40 requests, each on a new connection, through 100 ports.
  jq -e '.fail_connect > 0 and .fail_connect == .failed_reqs' <<<"$off"
  grep -q "cannot assign requested address" "$KEEPALIVE/cells/02_connection_reuse-0/k6.log"
  row "$KEEPALIVE" 01_connection_reuse-1 | jq -e '.failed_reqs == 0'
}
