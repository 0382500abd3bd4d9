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

teardown() {
  if [[ -n "${TARGET_PID:-}" ]]; then kill "$TARGET_PID" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}

# free_port: a TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
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
  port="$(free_port)"
  mgmt="$(free_port)"
  SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" MANAGEMENT_PORT="$mgmt" \
    java -Xmx128m -jar "$LT_ROOT/server/target/loadtest-target.jar" >"$BATS_TEST_TMPDIR/target.log" 2>&1 &
  TARGET_PID=$!
  local deadline=$((SECONDS + 60))
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "target did not start: $(tail -n 3 "$BATS_TEST_TMPDIR/target.log")"
    sleep 0.2
  done
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
