#!/usr/bin/env bats
# The disk a run needs: refused before it starts when it would not fit, and
# a disk that fills during the run leaves one line and nothing half-written.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  # A small tmpfs needs root to mount.
  lt_require_root
  lt_source_libs envfile matrix results space
  DISK="$BATS_TEST_TMPDIR/disk"
  mkdir -p "$DISK"
  mount -t tmpfs -o size=300k tmpfs "$DISK"
  printf 'TOMCAT_ACCEPT_COUNT=10 20\nVUS=2\nDURATION=4s\nDELAY_MS=100\nGRACEFUL_STOP=1s\n' >"$BATS_TEST_TMPDIR/two.matrix"
  lt_untraced matrix_resolve "$BATS_TEST_TMPDIR/two.matrix"
}

teardown() {
  umount "$DISK" 2>/dev/null || true
}

@test "a run that would not fit is refused before it starts, naming the directory and what to free" {
  run space_check "$DISK" "0 1 01_accept_count-10" "1 1 02_accept_count-20"
  assert_failure 1
  assert_output --regexp "^bats-exec-test: not enough disk for this run: its 2 cell\\(s\\) write about [0-9.]+ (KB|MB) to $DISK, which has [0-9]+ KB free on $DISK; free at least [0-9.]+ (KB|MB) there, or set LT_RESULTS_DIR to a disk with room$"
  # The same cells fit on a larger disk.
  run space_check "$BATS_TEST_TMPDIR" "0 1 01_accept_count-10" "1 1 02_accept_count-20"
  assert_success
}

@test "the estimate grows with the users, the load time and the repetitions" {
  local one two long
  one="$(space_estimate "0 1 01")"
  two="$(space_estimate "0 1 01" "0 2 01")"
  [ "$two" -gt "$one" ]
  MATRIX_VALUE[DURATION]=40s
  long="$(space_estimate "0 1 01")"
  [ "$long" -gt "$one" ]
}

@test "a disk that fills: the cell is dropped, the temporary files go, the reserve comes back, one line says what to do" {
  LT_RUN_DIR="$DISK/run" LT_RUN_ID=r1
  mkdir -p "$LT_RUN_DIR/cells/01"
  space_reserve "$LT_RUN_DIR"
  [ "$(stat -c %s "$LT_RUN_DIR/.space-reserve")" -eq "$SPACE_RESERVE_BYTES" ]
  run space_stop_when_full "$LT_RUN_DIR/cells/01"
  assert_success
  # Filled by another writer, writers cut off left their temporary files.
  head -c 10M /dev/zero >"$DISK/filler" 2>/dev/null || true
  : >"$LT_RUN_DIR/cells/01/row.json.tmp.123"
  : >"$LT_RUN_DIR/manifest.json.tmp.45"
  run space_stop_when_full "$LT_RUN_DIR/cells/01"
  assert_failure
  assert_output "no space left on $DISK (results in $LT_RUN_DIR): the run stops; free some space there and continue it with RESUME=r1"
  [ ! -e "$LT_RUN_DIR/cells/01" ]
  [ ! -e "$LT_RUN_DIR/.space-reserve" ]
  run find "$LT_RUN_DIR" -name '*.tmp.*'
  assert_output ''
  # The reserve's room is there for the manifest.
  printf '{"status": "interrupted"}\n' | write_atomic "$LT_RUN_DIR/manifest.json"
}
