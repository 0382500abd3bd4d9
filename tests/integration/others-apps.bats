#!/usr/bin/env bats
# Applications nobody here wrote, of two Spring Boot generations, from Maven
# Central: Spring Cloud Config Server on Spring Boot 4 (tests/fixtures/
# configserver) and Spring Cloud Netflix Eureka Server on Spring Boot 3.5
# (tests/fixtures/eurekaserver), each a main of a few lines with an actuator
# that exposes only health, under an unchanged ramping script of the kind
# their users write (tests/fixtures/own-script/ramp-{users,registry}.js), their usual
# health path, max-connections 20 and 200 (tests/fixtures/{configserver,
# eurekaserver}.matrix). About four minutes.

# The applications, by the name of their matrix and fixture.
APPS=(configserver eurekaserver)

setup_file() {
  load '../test_helper'
  lt_require_root
  cd "$LT_ROOT" || return 1
  [[ -f tests/fixtures/configserver/target/config-server.jar && -f tests/fixtures/eurekaserver/target/eureka-server.jar ]] \
    || make -s ownapp >/dev/null
  sha256sum tests/fixtures/own-script/ramp-users.js tests/fixtures/own-script/ramp-registry.js >"$BATS_FILE_TMPDIR/script.sha256"
  local app
  for app in "${APPS[@]}"; do
    run env LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results-$app" scripts/run-matrix.sh "tests/fixtures/$app.matrix"
    printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run-$app.log"
    [ "$status" -eq 0 ] || { printf '%s\n' "$output" >&3; return 1; }
  done
}

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  lt_require_root
}

# use_app APP: the run of APP's matrix is the one lt_cells and lt_row_value read.
use_app() {
  RUN_DIR="$(lt_latest "$BATS_FILE_TMPDIR/results-$1")"
}

@test "every cell of both applications runs as designed, the scripts unchanged, with busy threads measured and the connector checked" {
  sha256sum -c "$BATS_FILE_TMPDIR/script.sha256"
  local app cell
  for app in "${APPS[@]}"; do
    use_app "$app"
    for cell in $(lt_cells); do
      [ "$(lt_row_value "$cell" status)" = ok ] || fail "$app $cell: $(lt_row_value "$cell" error)"
      [ "$(lt_row_value "$cell" as_designed)" = 1 ] || fail "$app $cell: $(lt_row_value "$cell" design_notes)"
      # Measured, not empty (a registry's 2 ms answers can leave none busy at the sampled instants).
      [[ "$(lt_row_value "$cell" tomcat_threads_busy_peak)" =~ ^[0-9]+$ ]] || fail "$app $cell: busy threads unmeasured"
      run jq -c '[.checked, .mismatches]' "$RUN_DIR/cells/$cell/connector.json"
      assert_output '[true,[]]'
    done
  done
}

@test "max-connections 20 holds 20 + 10 + 1 connections, and its failed users are told apart from the answered" {
  local app cell found
  for app in "${APPS[@]}"; do
    use_app "$app"
    found=0
    for cell in $(lt_cells); do
      [ "$(lt_cell_value "$cell" TOMCAT_MAX_CONNECTIONS)" = 20 ] || continue
      found=1
      [ "$(lt_row_value "$cell" server_conns_peak)" -eq 31 ] || fail "$app: $(lt_row_value "$cell" server_conns_peak) held"
      [ "$(lt_row_value "$cell" queue_capacity)" -eq 31 ]
      [ "$(lt_row_value "$cell" failed_reqs)" -ge 1 ]
      run grep "^$cell: " "$RUN_DIR/findings.txt"
      assert_output --regexp "the [0-9,]+ answered waited p99"
    done
    [ "$found" -eq 1 ] || fail "$app: no cell of max-connections 20"
  done
}

@test "each run's first lines say what max-connections changed" {
  local app
  for app in "${APPS[@]}"; do
    use_app "$app"
    run head -3 "$RUN_DIR/results.md"
    assert_output --partial "Across cells:"
    assert_output --partial "Max-connections 20 / 200 changed connections held 31 -> "
  done
}
