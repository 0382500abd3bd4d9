#!/usr/bin/env bats
# Where load may go: the suite's own namespace by default, loopback when
# TARGET_URL says so, anywhere else only with ALLOW_REMOTE_TARGET=1.

setup() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  MATRIX="$BATS_TEST_TMPDIR/one.matrix"
  printf 'VUS=2\nDURATION=3s\nDELAY_MS=50\nGRACEFUL_STOP=1s\n' >"$MATRIX"
}

# start_loopback_target PORT MANAGEMENT_PORT [NAME=VALUE...]: the suite's
# target on 127.0.0.1, with the given settings; waits until it answers.
start_loopback_target() {
  local port="$1" mgmt="$2"
  shift 2
  env SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" MANAGEMENT_PORT="$mgmt" "$@" \
    java -Xmx128m -jar "$LT_ROOT/server/target/loadtest-target.jar" >"$BATS_TEST_TMPDIR/target.log" 2>&1 3>&- &
  TARGET_PID=$!
  local deadline=$((SECONDS + 60))
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "target did not start: $(tail -n 3 "$BATS_TEST_TMPDIR/target.log")"
    sleep 0.2
  done
}

teardown() {
  lt_end "${RUNNER_PID:-}" "${TARGET_PID:-}"
}

@test "a non-loopback TARGET_URL is refused without ALLOW_REMOTE_TARGET" {
  TARGET_URL=http://192.0.2.10:8080 run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 2
  assert_output --partial "TARGET_URL: 192.0.2.10 is not loopback; set ALLOW_REMOTE_TARGET=1"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "an external target refuses sysctls, which would change the host" {
  TARGET_URL=http://127.0.0.1:1 SOMAXCONN=64 run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 2
  assert_output --partial "SOMAXCONN: sysctls apply to the suite's own namespaces only"
}

@test "a loopback target is loaded from the host, and the run says where load goes" {
  local port mgmt
  port="$(lt_free_port)"
  mgmt="$(lt_free_port)"
  start_loopback_target "$port" "$mgmt"
  TARGET_URL="http://127.0.0.1:$port" run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  assert_output --partial "load goes to http://127.0.0.1:$port (an external target), from this host"
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  jq -e '.status == "ok" and .http_reqs > 10 and .failed_reqs == 0 and .lat_min_ms >= 50' "$run_dir/cells/01/row.json"
  # Only the client side exists: the host's counters, no server namespace.
  [ -s "$run_dir/cells/01/nstat-client-before.txt" ]
  [ ! -e "$run_dir/cells/01/nstat-server-before.txt" ]
  kill -0 "$TARGET_PID"
}

@test "waiting room: a visitor the room forgot registers again, at the back of the line, and is admitted" {
  local port mgmt run_dir deadline
  port="$(lt_free_port)"
  mgmt="$(lt_free_port)"
  start_loopback_target "$port" "$mgmt" WAITING_ROOM_ADMIT_PER_SECOND=2
  # Six visitors at a time, two admitted a second: there is always a line.
  printf '%s\n' SCENARIO=waiting-room STAGES=1s:6,7s:6 WAITING_ROOM_ADMIT_PER_SECOND=2 MAX_POLLS=60 \
    THINK_TIME_MS=0 REQUEST_TIMEOUT=2s GRACEFUL_STOP=15s >"$MATRIX"
  TARGET_URL="http://127.0.0.1:$port" "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 3>&- &
  RUNNER_PID=$!
  # Once the line has formed, the operator empties the room: every waiting
  # token becomes unknown (404) at once.
  deadline=$((SECONDS + 60))
  until [[ "$(curl -fsS "http://127.0.0.1:$mgmt/actuator/waitingroom" | jq .registered)" -ge 10 ]]; do
    ((SECONDS < deadline)) || fail "no line formed: $(cat "$BATS_TEST_TMPDIR/run.log")"
    sleep 0.2
  done
  curl -fsS -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$mgmt/actuator/waitingroom" >/dev/null
  wait "$RUNNER_PID" || fail "run failed: $(cat "$BATS_TEST_TMPDIR/run.log")"
  RUNNER_PID=""
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run jq -c '.extra | {wr_visitors, wr_admitted, wr_forgotten, wr_wait_requests, wr_gave_up}' "$run_dir/cells/01/row.json"
  echo "# $output" >&3
  # Some were forgotten; each registered again (one more POST /api/wait) and
  # got in; none gave up and none is counted twice as a visitor.
  jq -e '.extra.wr_forgotten > 0 and .extra.wr_gave_up == 0
         and .extra.wr_wait_requests == .extra.wr_visitors + .extra.wr_forgotten
         and .extra.wr_admitted == .extra.wr_visitors
         and .fail_http_4xx == .extra.wr_forgotten' "$run_dir/cells/01/row.json"
}
