#!/usr/bin/env bats
# Interrupted, crashed and malformed runs: nothing measured is lost, nothing
# is left behind, nothing in a data file is executed.

setup() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  MATRIX="$BATS_TEST_TMPDIR/tiny.matrix"
  cp "$LT_ROOT/tests/fixtures/tiny.matrix" "$MATRIX"
}

teardown() {
  # Whatever a failed test left: only processes this test started.
  if [[ -n "${RUNNER_PID:-}" ]]; then kill -TERM "$RUNNER_PID" 2>/dev/null || true; fi
  if [[ -n "${HOLDER_PID:-}" ]]; then kill "$HOLDER_PID" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}

# start_runner: run-matrix on $MATRIX in the background.
start_runner() {
  "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 &
  RUNNER_PID=$!
}

# wait_for_log TEXT SECONDS: wait until the run's log contains TEXT.
wait_for_log() {
  local deadline=$((SECONDS + $2))
  until grep -q -- "$1" "$BATS_TEST_TMPDIR/run.log" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "'$1' not in the log after $2 s: $(cat "$BATS_TEST_TMPDIR/run.log")"
    sleep 0.2
  done
}

# wait_runner: wait for the background runner; its status goes to RUNNER_STATUS.
wait_runner() {
  RUNNER_STATUS=0
  wait "$RUNNER_PID" || RUNNER_STATUS=$?
  RUNNER_PID=""
}

# pid_in_netns NS COMM: the pid of the process named COMM in namespace NS.
pid_in_netns() {
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do
    if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$2" ]]; then
      printf '%s\n' "$pid"
      return
    fi
  done
}

# assert_nothing_left: no namespace, target or k6 of any run of the suite
# (the runner marks them: -Dltsuite.run_id= and -e LT_RUN_ID=).
assert_nothing_left() {
  run ip netns list
  refute_output --partial ltsuite
  run pgrep -f "ltsuite.run_id="
  assert_failure
  run pgrep -f "k6 run .*-e LT_RUN_ID="
  assert_failure
}

# host_sysctls: the host's values of every whitelisted sysctl.
host_sysctls() {
  awk '!/^#/ && NF == 3 { print $3 }' "$LT_ROOT/env/sysctls.tsv" | sort -u | xargs sysctl 2>/dev/null
}

@test "SIGTERM mid-cell stops everything, keeps finished cells, and RESUME completes the table" {
  local host_before
  host_before="$(host_sysctls)"
  start_runner
  wait_for_log "cell 2/3" 60
  sleep 3
  kill -TERM "$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -ne 0 ]
  assert_nothing_left
  # The cells set SOMAXCONN etc. only inside their namespaces.
  [ "$(host_sysctls)" = "$host_before" ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  [ "$(jq -r .status "$run_dir/manifest.json")" = interrupted ]
  [ "$(wc -l <"$run_dir/results.csv")" -eq 2 ]
  [ "$(jq -r .status "$run_dir/cells/01_accept_count-10/row.json")" = ok ]
  local kept
  kept="$(sha256sum "$run_dir/cells/01_accept_count-10/row.json" "$run_dir/cells/01_accept_count-10/summary.json")"

  # A changed matrix is refused: the cells would not be the same.
  printf 'VUS=3\n' >>"$MATRIX"
  RESUME="$(basename "$run_dir")" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  assert_output --partial "changed since run"
  cp "$LT_ROOT/tests/fixtures/tiny.matrix" "$MATRIX"

  RESUME="$(basename "$run_dir")" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_success
  assert_output --partial "cell 1/3 01_accept_count-10: kept from the earlier attempt"
  assert_output --partial "cell 3/3 03_accept_count-30"
  [ "$(jq -r .status "$run_dir/manifest.json")" = complete ]
  # The refused attempt left no trace.
  [ "$(jq '.resumed_at | length' "$run_dir/manifest.json")" -eq 1 ]
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'ok\nok\nok'
  [ "$(sha256sum "$run_dir/cells/01_accept_count-10/row.json" "$run_dir/cells/01_accept_count-10/summary.json")" = "$kept" ]
  assert_nothing_left
}

@test "a target killed mid-cell gives a failed row and the next cell still runs" {
  start_runner
  wait_for_log "cell 1/3" 60
  # The target is the process in the server namespace; wait for it to serve.
  local deadline=$((SECONDS + 60)) java_pid=""
  until [[ -n "$java_pid" ]] && grep -q "Started" "$LT_RESULTS_DIR"/*/cells/01_accept_count-10/target.log 2>/dev/null; do
    ((SECONDS < deadline)) || fail "target never started"
    java_pid="$(pid_in_netns ltsuite-srv java)"
    sleep 0.2
  done
  sleep 3
  kill -KILL "$java_pid"
  wait_runner
  [ "$RUNNER_STATUS" -eq 1 ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'failed\nok\nok'
  jq -e '.error == "target died during the cell"' "$run_dir/cells/01_accept_count-10/row.json"
  [ "$(jq -r .status "$run_dir/manifest.json")" = failed ]
  grep -q "1 of 3 cell(s) failed" "$BATS_TEST_TMPDIR/run.log"
  assert_nothing_left
}

@test "k6 killed mid-cell is a failed cell, not a failed run" {
  start_runner
  wait_for_log "cell 2/3" 60
  local deadline=$((SECONDS + 60)) k6_pid=""
  until [[ -n "$k6_pid" ]]; do
    ((SECONDS < deadline)) || fail "k6 never started"
    k6_pid="$(pid_in_netns ltsuite-cli k6)"
    sleep 0.2
  done
  sleep 1
  kill -KILL "$k6_pid"
  wait_runner
  [ "$RUNNER_STATUS" -eq 1 ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'ok\nfailed\nok'
  jq -e '.error | test("k6 exited with status 137")' "$run_dir/cells/02_accept_count-20/row.json"
}

@test "a target that cannot start fails its cell with the reason, and the run goes on" {
  # The actuator asked for the application's own port: Spring Boot cannot start.
  printf 'MANAGEMENT_PORT=8080 8081\nTOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'failed\nok'
  jq -e '.error | test("^target exited during start-up")' "$run_dir"/cells/01_*/row.json
  assert_nothing_left
}

@test "a step that fails midway fails its cell with what failed; the run is never complete" {
  # nstat that cannot read the counters: the first snapshot, after the
  # target started, fails.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  printf '#!/bin/sh\necho "nstat: cannot open /proc/net/snmp" >&2\nexit 1\n' >"$BATS_TEST_TMPDIR/bin/nstat"
  chmod +x "$BATS_TEST_TMPDIR/bin/nstat"
  printf 'TOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run jq -r '[.status, .error] | @tsv' "$run_dir"/cells/01*/row.json
  assert_output $'failed\tcannot read the server namespace\'s counters (nstat)'
  [ "$(jq -r .status "$run_dir/manifest.json")" = failed ]
  # No k6 ran: nothing after the failed step.
  [ ! -e "$run_dir/cells/01/k6.log" ]
  assert_nothing_left
}

@test "a crossed k6 threshold is a result: the cell is ok and records exit 99" {
  printf 'THRESHOLD_P95_MS=1\nTOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" k6_exit
  assert_output 99
  run lt_csv_column "$run_dir/results.csv" status
  assert_output ok
}

@test "a second run refuses while one holds the lock" {
  export LT_LOCK_FILE="$BATS_TEST_TMPDIR/lock" LT_LOCK_WAIT=0
  flock "$LT_LOCK_FILE" sleep 60 &
  HOLDER_PID=$!
  sleep 0.5
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  assert_output --partial "another run-matrix is running"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "namespaces left by a killed run are removed, with a message" {
  ip netns add ltsuite-srv
  printf 'TOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  assert_output --partial "removing network namespaces left by an earlier run"
  assert_nothing_left
}

@test "an existing run directory is never overwritten" {
  run "$LT_ROOT/scripts/run-matrix.sh" --help
  assert_success
  assert_output --partial "Usage:"
  mkdir -p "$LT_RESULTS_DIR"
  # Two runs in the same second get different directories.
  printf 'TOMCAT_ACCEPT_COUNT=10\nDURATION=1s\n' >"$MATRIX.2"
  grep -vE 'TOMCAT_ACCEPT_COUNT|DURATION' "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  local stamp
  stamp="$(date +%Y%m%d-%H%M%S)"
  mkdir "$LT_RESULTS_DIR/$stamp-tiny" "$LT_RESULTS_DIR/$(date -d '+1 sec' +%Y%m%d-%H%M%S)-tiny"
  touch "$LT_RESULTS_DIR/$stamp-tiny/marker"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  [ -e "$LT_RESULTS_DIR/$stamp-tiny/marker" ]
  [ ! -e "$LT_RESULTS_DIR/$stamp-tiny/manifest.json" ]
  [[ "$(basename "$(readlink -f "$LT_RESULTS_DIR/latest")")" == *-tiny* ]]
}
