#!/usr/bin/env bats
# How the runner runs k6: several processes of one cell, each of which must
# end well for the row to stand.

setup() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
}

teardown() {
  # Whatever a failed test left: only the runner this test started.
  lt_end "${RUNNER_PID:-}"
}

# wait_for_file PATTERN SECONDS: wait until a file matches PATTERN (a glob)
# and is not empty; print its path.
wait_for_file() {
  local deadline=$((SECONDS + $2)) file
  while ((SECONDS < deadline)); do
    for file in $1; do
      [[ -s "$file" ]] && { printf '%s\n' "$file"; return 0; }
    done
    sleep 0.1
  done
  fail "no $1 after $2 s: $(cat "$BATS_TEST_TMPDIR/run.log")"
}

@test "one of two k6 processes killed mid-cell fails the cell, naming it, though the other crossed a threshold" {
  # A p95 of 1 ms is crossed at once (100 ms per request): the first
  # process exits 99, a result. The second is killed. (The run may first
  # queue behind another on the host lock.)
  printf '%s\n' K6_INSTANCES=2 VUS=4 DURATION=8s DELAY_MS=100 GRACEFUL_STOP=1s REQUEST_TIMEOUT=5s \
    THRESHOLD_P95_MS=1 K6_HTML_REPORT=0 >"$BATS_TEST_TMPDIR/two.matrix"
  "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/two.matrix" >"$BATS_TEST_TMPDIR/run.log" 2>&1 &
  RUNNER_PID=$!
  local pid_file pid
  pid_file="$(wait_for_file "$LT_RESULTS_DIR/*/cells/*/k6-2.pid" $((LT_LOCK_WAIT + 120)))"
  pid="$(cat "$pid_file")"
  [ "$(cat "/proc/$pid/comm")" = k6 ]
  # The pid file names the second process: its command line has its segment.
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--execution-segment 1/2:2/2'
  sleep 3
  kill -KILL "$pid"
  local runner_status=0
  wait "$RUNNER_PID" || runner_status=$?
  RUNNER_PID=""
  [ "$runner_status" -eq 1 ]
  local cell_dir
  cell_dir="$(dirname "$pid_file")"
  run jq -r '[.status, .k6_exit, .error] | @tsv' "$cell_dir/row.json"
  assert_output "$(printf 'failed\t137\tk6 process 2 of 2 (pid %s) exited with status 137 (killed by SIGKILL): no error line in k6-2.log' "$pid")"
  run cut -f 1,3,6 "$cell_dir/k6-exits.tsv"
  assert_output $'process\tstatus\tsummary_written\n1\t99\t1\n2\t137\t0'
  # What the first process measured is kept, and says it is a part.
  jq -e '.metrics."http_reqs{traffic:load}".values.count > 0' "$cell_dir/summary.json"
  jq -e '.merge_notes | test("only 1 of the 2 processes wrote a summary")' "$cell_dir/summary.json"
  [ ! -e "$pid_file" ]
}

@test "a script's own handleSummary writes into the cell; a file it could not write is a note of the row" {
  # A quick real target: Python's file server, serving the script's own directory.
  cat >"$BATS_TEST_TMPDIR/own.matrix" <<MATRIX
TARGET_CMD=python3 -m http.server --bind {SERVER_ADDR} --directory $LT_ROOT/tests/fixtures/own-script {SERVER_PORT}
TARGET_HEALTH_PATH=/
SCENARIO=$LT_ROOT/tests/fixtures/own-script/summary-outputs.js
K6_HTML_REPORT=0
MATRIX
  # Started from a directory of its own: nothing may land there.
  mkdir -p "$BATS_TEST_TMPDIR/cwd"
  cd "$BATS_TEST_TMPDIR/cwd"
  run "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/own.matrix"
  assert_success
  [ -z "$(ls -A "$BATS_TEST_TMPDIR/cwd")" ]
  local cell_dir
  cell_dir="$(echo "$LT_RESULTS_DIR"/latest/cells/*)"
  # The relative file is the cell's; the script's relative import and open()
  # still worked: every check passed.
  run jq -c '.checks | [.passes > 0, .fails]' "$cell_dir/k6-outputs/summary2.json"
  assert_output '[true,0]'
  [ ! -e "$cell_dir/k6-outputs/data" ]
  run cat "$cell_dir/k6-warnings.txt"
  assert_output "handleSummary's output './data/summary.json' was not written: open ./data/summary.json: no such file or directory"
  run jq -r '[.status, .notes] | @tsv' "$cell_dir/row.json"
  assert_output --partial $'ok\t'
  assert_output --partial "; handleSummary's output './data/summary.json' was not written: open ./data/summary.json: no such file or directory"
  # The suite's own summary is whole beside the script's files.
  jq -e '.metrics."http_reqs{traffic:load}".values.count > 0' "$cell_dir/summary.json"
}
