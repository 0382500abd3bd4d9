#!/usr/bin/env bats
# An application nobody here wrote: Spring Cloud Config Server from Maven
# Central (tests/fixtures/configserver: a main of a few lines, an actuator
# that exposes only health) under an unchanged ramping script of the kind
# its users write (tests/fixtures/own-script/ramp-users.js), its usual
# health path, max-connections 20 and 200 (tests/fixtures/configserver.matrix).
# About two minutes.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  cd "$LT_ROOT" || return 1
  [ -f tests/fixtures/configserver/target/config-server.jar ] || make -s ownapp >/dev/null
  sha256sum tests/fixtures/own-script/ramp-users.js >"$BATS_FILE_TMPDIR/script.sha256"
  run scripts/run-matrix.sh tests/fixtures/configserver.matrix
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  [ "$status" -eq 0 ] || { printf '%s\n' "$output" >&3; return 1; }
}

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  lt_require_root
  RUN_DIR="$(readlink -f "$BATS_FILE_TMPDIR/results/latest")"
}

@test "both cells run as designed, the script unchanged, with busy threads and the connector checked" {
  sha256sum -c "$BATS_FILE_TMPDIR/script.sha256"
  local cell
  for cell in $(lt_cells); do
    [ "$(lt_row_value "$cell" status)" = ok ] || fail "$cell: $(lt_row_value "$cell" error)"
    [ "$(lt_row_value "$cell" as_designed)" = 1 ] || fail "$cell: $(lt_row_value "$cell" design_notes)"
    [ "$(lt_row_value "$cell" tomcat_threads_busy_peak)" -ge 1 ] || fail "$cell: no busy threads"
    run jq -c '[.checked, .mismatches]' "$RUN_DIR/cells/$cell/connector.json"
    assert_output '[true,[]]'
  done
}

@test "max-connections 20 holds 20 + 10 + 1 connections, and its failed users are told apart from the answered" {
  local cell
  for cell in $(lt_cells); do
    [ "$(lt_cell_value "$cell" TOMCAT_MAX_CONNECTIONS)" = 20 ] || continue
    [ "$(lt_row_value "$cell" server_conns_peak)" -eq 31 ]
    [ "$(lt_row_value "$cell" queue_capacity)" -eq 31 ]
    [ "$(lt_row_value "$cell" failed_reqs)" -ge 1 ]
    run grep "^$cell: " "$RUN_DIR/findings.txt"
    assert_output --regexp "the [0-9,]+ answered waited p99"
    return 0
  done
  fail "no cell of max-connections 20"
}

@test "the run's first lines say what max-connections changed" {
  run head -3 "$RUN_DIR/results.md"
  assert_output --partial "Across cells:"
  assert_output --partial "Max-connections 20 / 200 changed connections held 31 -> "
}
