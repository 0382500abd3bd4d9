#!/usr/bin/env bats
# What the suite reads, it turns on: the example service as an application
# that exposes only its health (tests/fixtures/ownapp/health-only.properties,
# given as its own properties), under the unchanged user-style spike script,
# one cell with the suite's exposure (TARGET_ACTUATOR=needed) and one with
# the application's own (as-is); and a service whose actuator Spring Security
# guards (tests/fixtures/ownapp-secured). About two minutes.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  cd "$LT_ROOT" || return 1
  run env TOMCAT_ACCEPT_COUNT=1 "TARGET_ACTUATOR=needed as-is" \
    "TARGET_JAVA_OPTS=-Dspring.config.additional-location=file:tests/fixtures/ownapp/health-only.properties" \
    scripts/run-matrix.sh tests/fixtures/own-app.matrix
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  [ "$status" -eq 0 ] || { printf '%s\n' "$output" >&3; return 1; }
}

setup() {
  load '../test_helper'
  lt_setup_latest
}

# actuator_cell MODE: the cell that ran with TARGET_ACTUATOR=MODE.
actuator_cell() {
  local cell
  for cell in $(lt_cells); do
    [ "$(lt_cell_value "$cell" TARGET_ACTUATOR)" != "$1" ] || { printf '%s\n' "$cell"; return 0; }
  done
  return 1
}

@test "an application that exposes only health gets busy threads and its connector checked, as designed" {
  local cell
  cell="$(actuator_cell needed)"
  [ "$(lt_row_value "$cell" status)" = ok ]
  [ "$(lt_row_value "$cell" as_designed)" = 1 ]
  [ "$(lt_row_value "$cell" tomcat_threads_busy_peak)" -eq 2 ]
  run jq -c . "$RUN_DIR/cells/$cell/connector.json"
  assert_output '{"checked":true,"reason":null,"mismatches":[],"source":"/actuator/configprops"}'
}

@test "kept as it is (TARGET_ACTUATOR=as-is), the same application says what is unmeasured and why" {
  local cell
  cell="$(actuator_cell as-is)"
  [ "$(lt_row_value "$cell" status)" = ok ]
  [ -z "$(lt_row_value "$cell" tomcat_threads_busy_peak)" ]
  run jq -r .checked "$RUN_DIR/cells/$cell/connector.json"
  assert_output false
  run jq -r .notes "$RUN_DIR/cells/$cell/row.json"
  assert_output --partial 'TARGET_ACTUATOR=as-is keeps the application'"'"'s own exposure'
  assert_output --partial 'add configprops to management.endpoints.web.exposure.include, or leave TARGET_ACTUATOR at needed'
}

# shellcheck disable=SC2030 # SC2030: status is this test's own
@test "an actuator Spring Security guards is named as guarded, with its answer, and no property is asked for" {
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  cd "$LT_ROOT" || return 1
  [ -f tests/fixtures/ownapp-secured/target/secured-service.jar ] || make -s ownapp >/dev/null
  run scripts/run-matrix.sh tests/fixtures/secured-actuator.matrix
  [ "$status" -eq 0 ] || fail "the run failed: $output"
  RUN_DIR="$(lt_latest)"
  local cell
  cell="$(lt_cells)"
  [ "$(lt_row_value "$cell" status)" = ok ]
  [ -z "$(lt_row_value "$cell" tomcat_threads_busy_peak)" ]
  run jq -r '[.checked, .status] | @tsv' "$RUN_DIR/cells/$cell/connector.json"
  assert_output $'false\t401'
  run jq -r .notes "$RUN_DIR/cells/$cell/row.json"
  assert_output --partial "guarded by Spring Security"
  assert_output --partial "HTTP 401"
  refute_output --partial "exposure.include"
}
