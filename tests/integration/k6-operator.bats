#!/usr/bin/env bats
# The k6-operator path without a cluster: the TestRun that scripts/k6-operator.sh
# prints, its runner pods played on this machine as k6-operator runs them
# (play_testrun.py: the ConfigMap's files where a pod sees them, the runner's
# command and environment, `k6` found on the pod's PATH, started through each
# pod's REST API as the starter does), with the real k6 against the real target
# on loopback; then --collect over the saved logs, checked against every raw sample.
# Each @test runs in its own subshell on purpose: what one sources or sets never leaks.
# shellcheck disable=SC2030,SC2031

setup_file() {
  load '../test_helper'
  start_target
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  export MATRIX="$BATS_FILE_TMPDIR/spike.matrix"
  # 6 VUs for 3 s against /hello?delayMs=50: bounded, a few hundred requests.
  printf 'VUS=6\nDURATION=3s\nDELAY_MS=50\nREQUEST_TIMEOUT=2s\nGRACEFUL_STOP=2s\nTHINK_TIME_MS=0\n' >"$MATRIX"
  "$LT_ROOT/scripts/k6-operator.sh" --parallelism 2 --run-id op1 "$MATRIX" >"$BATS_FILE_TMPDIR/testrun.yaml"
  set +e
  "$LT_ROOT/.tools/venv/bin/python" "$BATS_TEST_DIRNAME/play_testrun.py" "$BATS_FILE_TMPDIR/testrun.yaml" \
    "${LT_K6:-$LT_ROOT/.tools/bin/k6}" "$BATS_FILE_TMPDIR/pods" "$BATS_FILE_TMPDIR/logs" 3>&-
  echo "$?" >"$BATS_FILE_TMPDIR/play.status"
  "$LT_ROOT/scripts/k6-operator.sh" --collect "$BATS_FILE_TMPDIR/testrun.yaml" --logs "$BATS_FILE_TMPDIR/logs" \
    >"$BATS_FILE_TMPDIR/collect.log" 2>&1
  echo "$?" >"$BATS_FILE_TMPDIR/collect.status"
  set -e
}

teardown_file() {
  [[ ! -f "$BATS_FILE_TMPDIR/target.pid" ]] || kill "$(cat "$BATS_FILE_TMPDIR/target.pid")" 2>/dev/null || true
}

setup() {
  load '../test_helper'
  CELL_DIR="$LT_RESULTS_DIR/op1/cells/$(jq -r .cell.id "$LT_RESULTS_DIR/op1/manifest.json")"
}

start_target() {
  local port management jar="$LT_ROOT/server/target/loadtest-target.jar" deadline
  [[ -f "$jar" ]] || (cd "$LT_ROOT" && make -s "${jar#"$LT_ROOT"/}")
  port="$(lt_free_port)"
  management="$(lt_free_port)"
  env -i PATH="$PATH" HOME="${HOME:-/root}" SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" \
    MANAGEMENT_ADDRESS=127.0.0.1 MANAGEMENT_PORT="$management" \
    java -Xmx256m -jar "$jar" >"$BATS_FILE_TMPDIR/target.log" 2>&1 3>&- &
  echo "$!" >"$BATS_FILE_TMPDIR/target.pid"
  export TARGET_URL="http://127.0.0.1:$port"
  deadline=$((SECONDS + 60))
  until curl -s -o /dev/null --max-time 1 "$TARGET_URL/health"; do
    ((SECONDS < deadline)) || { tail -n 20 "$BATS_FILE_TMPDIR/target.log" >&2; return 1; }
    sleep 0.2
  done
}

@test "each pod runs the instance-side script and prints its summary and histogram to its log" {
  [ "$(cat "$BATS_FILE_TMPDIR/play.status")" = 0 ]
  local log
  for log in "$BATS_FILE_TMPDIR"/logs/k6-op1-*-{1,2}.log; do
    run grep -cxF -e '=== k6-fanout summary begin ===' -e '=== k6-fanout histogram end ===' -e 'k6-fanout exit status: 0' "$log"
    assert_output 3
  done
}

@test "collect writes one row from both pods: counters added up, the two segments together the cell's VUs" {
  [ "$(cat "$BATS_FILE_TMPDIR/collect.status")" = 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/collect.log")"
  run jq -r '[.status, .backend, .instances, .vus_max] | @tsv' "$CELL_DIR/row.json"
  assert_output "$(printf 'ok\tk6-operator\t2\t6')"
  [ "$(jq .http_reqs "$CELL_DIR/row.json")" -eq "$(jq -s 'map(.http_reqs) | add' "$CELL_DIR"/instances/*/row.json)" ]
  [ "$(jq .http_reqs "$CELL_DIR/row.json")" -gt 50 ]
  run jq -r '[.instances[].segment] | join(" ")' "$LT_RESULTS_DIR/op1/manifest.json"
  assert_output "0:1/2 1/2:1"
  [ -s "$LT_RESULTS_DIR/op1/results.csv" ]
}

@test "percentiles: from the pods' merged histograms, those of all their raw samples within 0.5 %" {
  local count
  # Every raw sample of both pods.
  count="$(lt_assert_raw_percentiles "$CELL_DIR/row.json" "$BATS_FILE_TMPDIR"/pods/*/work/*/samples.json.gz)"
  [ "$count" -eq "$(jq -s 'map(.lat_count) | add' "$CELL_DIR"/instances/*/row.json)" ]
  run jq -r .notes "$CELL_DIR/row.json"
  assert_output "latency percentiles from the merged histograms of 2 instances ($count answered requests; within 0.5% of those of the raw samples)"
}
