#!/usr/bin/env bats
# The websocket scenario for real: k6's WebSocket client against the target's
# /ws endpoint, SO_LINGER off and 0, and sessions that fail by cause.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/websocket.matrix" >"$BATS_FILE_TMPDIR/websocket.log" 2>&1
  readlink -f "$LT_RESULTS_DIR/latest" >"$BATS_FILE_TMPDIR/websocket.dir"
  "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/websocket-failures.matrix" >"$BATS_FILE_TMPDIR/failures.log" 2>&1
  readlink -f "$LT_RESULTS_DIR/latest" >"$BATS_FILE_TMPDIR/failures.dir"
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(cat "$BATS_FILE_TMPDIR/websocket.dir")"
  FAILURES="$(cat "$BATS_FILE_TMPDIR/failures.dir")"
  OFF=01_so_linger-off
  ZERO=02_so_linger-0
}

# extra DIR CELL FIELD: a websocket column of a cell's row.
extra() {
  jq -r --arg f "$3" '.extra[$f]' "$1/cells/$2/row.json"
}

# client_delta CELL COUNTER: a client-side counter delta of a cell.
client_delta() {
  lt_source_libs counters
  counters_value "$RUN_DIR/cells/$1/netstat-delta.tsv" client "$2"
}

@test "both linger cells ran and every session ended cleanly" {
  run lt_csv_column "$RUN_DIR/results.csv" status
  assert_output $'ok\nok'
  for cell in "$OFF" "$ZERO"; do
    # 5 users x 2 sessions, each of 2 jobs.
    [ "$(extra "$RUN_DIR" "$cell" ws_sessions)" -eq 10 ] || fail "$cell: ws_sessions $(extra "$RUN_DIR" "$cell" ws_sessions)"
    [ "$(extra "$RUN_DIR" "$cell" ws_sessions_ok)" -eq 10 ]
    [ "$(extra "$RUN_DIR" "$cell" ws_sessions_failed)" -eq 0 ]
    jq -e '.metrics.ws_message.values.count == 20 and .metrics.ws_close.values.count == 10
           and .metrics.ws_connect.values.count == 10' "$RUN_DIR/cells/$cell/summary.json"
    jq -e '.extra | .ws_message_p95_ms >= 20 and .ws_close_max_ms >= .ws_close_p95_ms' "$RUN_DIR/cells/$cell/row.json"
    # The endpoint counted what k6 counted: every session, every reply sent.
    jq -e '.extra | .ws_server_sessions == 10 and .ws_server_replies == 20 and .ws_server_replies_lost == 0' \
      "$RUN_DIR/cells/$cell/row.json"
  done
}

@test "the target logged the SO_LINGER each cell asked for" {
  grep -q 'connector "http-nio-198.18.0.1-8080".*soLinger=off$' "$RUN_DIR/cells/$OFF/target.log"
  grep -q 'connector "http-nio-198.18.0.1-8080".*soLinger=on/0$' "$RUN_DIR/cells/$ZERO/target.log"
}

@test "linger 0: the server resets every connection it closes and keeps no TIME-WAIT" {
  local aborts
  aborts="$(extra "$RUN_DIR" "$ZERO" abort_on_data)"
  # The 10 sessions, and without a warm-up the runner's last health checks
  # when the target resets them after the counters were first read: with
  # linger 0 the JDK leaves the socket to Tomcat's poller, which closes it when
  # it next wakes. A warm-up (2 s by default) comes between them and the
  # counters' first snapshot: the sessions' alone.
  local least=11 most=12
  [ -z "$(lt_row_value "$ZERO" warmup_s)" ] || least=10 most=10
  [ "$aborts" -ge "$least" ] && [ "$aborts" -le "$most" ] \
    || fail "abort_on_data $aborts, not $least-$most; deltas: $(cat "$RUN_DIR/cells/$ZERO/netstat-delta.tsv")"
  # Every reset is one the target sent for an established connection.
  lt_source_libs counters
  [ "$(counters_value "$RUN_DIR/cells/$ZERO/netstat-delta.tsv" server TcpEstabResets)" -eq "$aborts" ]
  [ "$(lt_row_value "$ZERO" server_time_wait_peak)" -eq 0 ]
  [ "$(lt_row_value "$ZERO" client_time_wait_peak)" -eq 0 ]
  [ "$(extra "$RUN_DIR" "$ZERO" abort_on_close)" -eq 0 ]
}

@test "linger off: no reset, and every session leaves a TIME-WAIT on the side that closed first" {
  [ "$(extra "$RUN_DIR" "$OFF" abort_on_data)" -eq 0 ]
  [ "$(extra "$RUN_DIR" "$OFF" abort_on_close)" -eq 0 ]
  local server client
  server="$(lt_row_value "$OFF" server_time_wait_peak)"
  client="$(lt_row_value "$OFF" client_time_wait_peak)"
  # Each of the 10 sessions leaves one TIME-WAIT on the side that closed first
  # (a race either side may win: 0 of 10 on the server in one run, 2 to 1 in
  # others), the runner's health check one on the client (curl closes first).
  [[ "$server" =~ ^[0-9]+$ ]] || fail "server_time_wait_peak '$server': not measured"
  [ $((server + client)) -ge 11 ] || fail "server $server client $client"
  # The sampler saw every TIME-WAIT the client entered during the cell (they
  # last 60 s, and the scenario waits for a last sample).
  [ "$(client_delta "$OFF" TcpExtTW)" -le "$client" ]
}

@test "failed sessions are split by cause and add up to the sessions" {
  local r="$FAILURES/cells/01/row.json"
  jq -e '.status == "ok"' "$r"
  jq -e '.extra | .ws_sessions == 6 and .ws_sessions_ok == 0 and .ws_sessions_failed == 6' "$r" \
    || fail "$(jq -c .extra "$r")"
  jq -e '.extra | (.ws_fail_refused + .ws_fail_handshake_timeout + .ws_fail_abnormal_close + .ws_fail_timeout) == .ws_sessions_failed' "$r"
  # Users beyond the 3 connections the server holds never get a connection;
  # those that do wait 2 s for a 2.5 s job.
  jq -e '.extra | .ws_fail_handshake_timeout >= 1 and .ws_fail_timeout >= 3 and .ws_fail_refused == 0' "$r" \
    || fail "$(jq -c .extra "$r")"
  jq -e '.syn_retrans >= .extra.ws_fail_handshake_timeout and .listen_drops >= 1' "$r"
}

@test "the websocket columns are in results.csv after the common ones" {
  local header
  header="$(head -n 1 "$RUN_DIR/results.csv")"
  for column in ws_sessions ws_sessions_failed ws_connect_p95_ms ws_message_p95_ms ws_message_max_ms \
    ws_close_p95_ms ws_close_p99_ms ws_close_max_ms delayed_acks delayed_ack_lost abort_on_close \
    abort_on_data abort_on_linger abort_on_timeout tcp_timeouts server_time_wait_peak client_time_wait_peak; do
    [[ ",$header," == *",$column,"* ]] || fail "$column missing"
  done
}
