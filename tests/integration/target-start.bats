#!/usr/bin/env bats
# A jar of one's own gets a start archive without being touched: the first
# cell that runs it makes one from a training start (in its namespace, with
# its settings), the next cell starts from it, and each cell says which
# start it got (target-start.txt). The archive lives under the jar's
# checksum in a cache of the test's own.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_TARGET_START_CACHE="$BATS_FILE_TMPDIR/cache"
  JAR="$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar"
  [ -f "$JAR" ] || { printf 'make ownapp first\n' >&3; return 1; }
  sha256sum "$JAR" | cut -d' ' -f1 >"$BATS_FILE_TMPDIR/jar.sha256"
  printf 'GREETING_WORKMS=10\n' >"$BATS_FILE_TMPDIR/greeting.env"
  lt_write "$BATS_FILE_TMPDIR/start.matrix" <<EOF
TARGET_JAR=$JAR
TARGET_ENV_FILE=$BATS_FILE_TMPDIR/greeting.env
TOMCAT_ACCEPT_COUNT=100 101
VUS=1
DURATION=1s
GRACEFUL_STOP=1s
EOF
  lt_run_matrix_once "$BATS_FILE_TMPDIR/start.matrix"
}

setup() {
  load '../test_helper'
  lt_require_root
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" = 0 ] || { cat "$BATS_FILE_TMPDIR/run.log" >&3; return 1; }
  RUN_DIR="$(readlink -f "$BATS_FILE_TMPDIR/results/latest")"
  SUM="$(cat "$BATS_FILE_TMPDIR/jar.sha256")"
  lt_source_libs envfile netns results target
  # An AOT cache where a JDK 25 or later is installed, class-data sharing
  # where there is none.
  EXPECTED=cds
  [ -z "$(target_aot_java)" ] || EXPECTED=aot
}

# marks CELL: the names in the cell's phases.tsv, in order, on one line.
marks() {
  cut -f1 "$RUN_DIR/cells/$1/phases.tsv" | paste -sd' '
}

@test "the first cell trains the start before its own start; the second starts from the archive" {
  run marks 01_accept_count-100
  assert_output --partial "train_start train_end target_start target_healthy target_ready"
  [ -s "$RUN_DIR/cells/01_accept_count-100/target-train.log" ]
  run marks 02_accept_count-101
  refute_output --partial train_start
  run lt_csv_column "$RUN_DIR/results.csv" status
  assert_output "$(printf '%s\n' ok ok)"
}

@test "each cell says which start it got: the archive of the jar's checksum, with its JDK" {
  local cell
  for cell in 01_accept_count-100 02_accept_count-101; do
    run cat "$RUN_DIR/cells/$cell/target-start.txt"
    assert_line "target_start_mode=$EXPECTED"
    assert_line --regexp "^target_start_archive=$LT_TARGET_START_CACHE/$SUM/app-[0-9a-f]{12}\.(aot|jsa)\$"
    assert_line "target_start_note="
    # Spring AOT needs the jar's own build: never for a jar of one's own.
    assert_line "target_spring_aot=off: not the suite's own jar"
    assert_line --regexp '^target_java=[0-9]+'
  done
  # The copy the archive was trained on, beside it.
  [ -f "$LT_TARGET_START_CACHE/$SUM/app/greeting-service.jar" ]
}

@test "the jar of one's own is untouched" {
  run sha256sum "$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar"
  assert_output --partial "$SUM"
}
