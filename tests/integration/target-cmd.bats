#!/usr/bin/env bats
# TARGET_CMD: a server that is not Spring Boot (Python's http.server), loaded
# by a user-style script; the kernel side is measured the same way, and the
# Tomcat columns stay empty with the reason in the notes.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  # A wrapper that forks its server and waits, as start scripts and
  # `mvn spring-boot:run` do: the server is not the process the suite started.
  # shellcheck disable=SC2016 # SC2016: the wrapper's own $1..$3, expanded when it runs
  printf '#!/bin/sh\npython3 -m http.server --bind "$1" --directory "$3" "$2" &\nwait\n' >"$BATS_FILE_TMPDIR/serve.sh"
  chmod 0755 "$BATS_FILE_TMPDIR/serve.sh"
  cat >"$BATS_FILE_TMPDIR/cmd.matrix" <<MATRIX
TARGET_CMD=$BATS_FILE_TMPDIR/serve.sh {SERVER_ADDR} {SERVER_PORT} $LT_ROOT/tests/fixtures/own-script
TARGET_HEALTH_PATH=/
SCENARIO=$LT_ROOT/tests/fixtures/own-script/spike-test.js
SOMAXCONN=2
MATRIX
  run "$LT_ROOT/scripts/run-matrix.sh" "$BATS_FILE_TMPDIR/cmd.matrix"
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  [ "$status" -eq 0 ] || { printf '%s\n' "$output" >&3; return 1; }
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(readlink -f "$BATS_FILE_TMPDIR/results/latest")"
  CELL="$(lt_cells | head -n 1)"
}

@test "the command ran with its placeholders replaced, in the server namespace" {
  grep -q 'GET /hello' "$RUN_DIR/cells/$CELL/target.log"
  [ -z "$(lt_cell_value "$CELL" TOMCAT_MAX_CONNECTIONS)" ]
}

@test "nothing the command started outlives its cell: the forked server ended with the wrapper" {
  local run_id
  local -a survivors
  run_id="$(basename "$RUN_DIR")"
  # Every process the target started carries the run's id in its environment.
  mapfile -t survivors < <(grep -lzx "LT_RUN_ID=$run_id" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
  # This test's own leftovers (the suite started them) are ended by pid.
  [[ ${#survivors[@]} -eq 0 ]] || { kill "${survivors[@]}"; printf 'still running after the run: %s\n' "${survivors[*]}" >&3; }
  [ "${#survivors[@]}" -eq 0 ]
}

@test "the kernel side: somaxconn caps the listen backlog Python asks for (5), and the counters are read" {
  [ "$(lt_row_value "$CELL" listen_backlog)" -eq 2 ]
  [ "$(lt_row_value "$CELL" server_accepts)" -gt 0 ]
  [ "$(lt_row_value "$CELL" server_accepts)" -eq "$(lt_row_value "$CELL" client_connects)" ]
  [ "$(lt_effective_sysctl "$CELL" server net.core.somaxconn)" -eq 2 ]
}

@test "every request failed as HTTP 404 (the directory has no /hello), and the causes add up" {
  [ "$(lt_row_value "$CELL" http_reqs)" -gt 0 ]
  [ "$(lt_row_value "$CELL" fail_http_4xx)" -eq "$(lt_row_value "$CELL" http_reqs)" ]
  [ "$(lt_row_value "$CELL" failed_reqs)" -eq "$(lt_row_value "$CELL" http_reqs)" ]
}

@test "no Tomcat: its columns and the predictions stay empty, and the notes say why" {
  [ -z "$(lt_row_value "$CELL" tomcat_threads_busy_peak)" ]
  [ -z "$(lt_row_value "$CELL" queue_capacity)" ]
  [ -z "$(lt_row_value "$CELL" predicted_server_conns_peak)" ]
  run lt_row_value "$CELL" notes
  assert_output --partial "TARGET_CMD is not Tomcat"
}
