#!/usr/bin/env bats
# Every cell checks itself: three small runs whose load did not happen as
# designed, or whose counters differ from the kernel's rules, and what their
# rows say about it.
# Each @test runs in its own subshell on purpose: what one sets never leaks.
# shellcheck disable=SC2030,SC2031

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

@test "cut: 11 of 11 iterations interrupted, no request completed, the cell not as designed but ok" {
  use_run cut
  [ "$(lt_row_value 01 status)" = ok ]
  [ "$(lt_row_value 01 as_designed)" = 0 ]
  [ "$(lt_row_value 01 vus_started)" = 11 ]
  [ "$(lt_row_value 01 iterations_started)" = 11 ]
  [ "$(lt_row_value 01 iterations_interrupted)" = 11 ]
  # k6 counts none of the 11 requests the graceful stop cut; the row counts them as failed.
  [ "$(jq -r '.metrics["http_reqs{traffic:load}"].values.count' "$RUN_DIR/cells/01/summary.json")" = 0 ]
  [ "$(lt_row_value 01 http_reqs)" = 11 ]
  [ "$(lt_row_value 01 failed_reqs)" = 11 ]
  [ "$(lt_row_value 01 fail_interrupted)" = 11 ]
  [ -z "$(lt_row_value 01 lat_p95_ms)" ]
  run lt_row_value 01 design_notes
  assert_output --partial "no request completed (every one of the 11 sent was cut off while it waited: fail_interrupted)"
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

@test "cookies: predictions from the knobs and the recorded sysctls" {
  use_run cookies
  # SYNs at 0, 1, 3 and 7 s before the 10 s timeout: 4 per failed user.
  run jq -sc 'map([.cell, .predicted_server_conns_peak, .predicted_failed_users, .predicted_listen_overflows, .predicted_syn_retrans])' "$RUN_DIR"/cells/*/row.json
  assert_output '[["01_accept_count-1_tcp_syncookies-1",3,17,68,51],["02_accept_count-1_tcp_syncookies-2",3,17,68,51],["03_accept_count-10_tcp_syncookies-1",12,8,32,24],["04_accept_count-10_tcp_syncookies-2",12,8,32,24]]'
}

@test "cookies: each cell matches its prediction exactly, or its counters explain the difference" {
  use_run cookies
  local cell in overflows retrans
  for cell in $(lt_cells); do
    in="$(lt_row_value "$cell" server_conns_peak)"
    overflows="$(lt_row_value "$cell" listen_overflows)"
    retrans="$(lt_row_value "$cell" syn_retrans)"
    case "$(lt_row_value "$cell" prediction_check)" in
      match)
        # Exact: every user past capacity sent 4 SYNs into a full queue.
        [ "$overflows" -eq $(((20 - in) * 4)) ] && [ "$retrans" -eq $(((20 - in) * 3)) ] \
          || fail "$cell: match with $overflows overflows, $retrans retransmits, $in connected"
        ;;
      mismatch)
        run lt_row_value "$cell" prediction_notes
        assert_output --partial "listen_overflows $overflows where"
        refute_output --partial "nothing in the cell's counters explains"
        ;;
      *) fail "$cell: no prediction_check" ;;
    esac
  done
}

@test "cookies: tcp_syncookies=2 answers every SYN with a cookie, and a cookie mismatch says so" {
  use_run cookies
  local cell
  for cell in 02_accept_count-1_tcp_syncookies-2 04_accept_count-10_tcp_syncookies-2; do
    [ "$(lt_effective_sysctl "$cell" server net.ipv4.tcp_syncookies)" = 2 ]
    awk -F'\t' '$1 == "TcpExtTCPReqQFullDoCookies" && $2 == "server" && $3 > 0 { found = 1 } END { exit !found }' \
      "$RUN_DIR/cells/$cell/netstat-delta.tsv" || fail "$cell: no cookie"
    if [ "$(lt_row_value "$cell" prediction_check)" = mismatch ]; then
      run lt_row_value "$cell" prediction_notes
      assert_output --partial "the server sent SYN cookies"
    fi
  done
}

@test "late: k6 could not start 12000 VUs within DURATION=1s, and the row says how many came" {
  use_run late
  local started
  started="$(lt_row_value 01 vus_started)"
  [ "$started" -gt 0 ] && [ "$started" -lt 12000 ] || fail "vus_started $started"
  [ "$(lt_row_value 01 as_designed)" = 0 ]
  [ "$(lt_row_value 01 generator_bound)" = 1 ]
  run lt_row_value 01 design_notes
  assert_output --partial "only $started of 12000 VUs sent a request: k6 needed "
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
