#!/usr/bin/env bats
# Matrix expansion: axes, cartesian product in file order, layering.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix
  lt_untraced knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  matrix_init
  LT_PROG="test"
  printf 'TOMCAT_ACCEPT_COUNT=1 5\nVUS=12\nSOMAXCONN=2 64 4096\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
}

@test "cells are the product of the axes" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  [ "$(matrix_cell_count)" -eq 6 ]
  [ "${AXIS_KEYS[*]}" = "TOMCAT_ACCEPT_COUNT SOMAXCONN" ]
}

@test "the first axis in the file changes slowest" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  local ids=()
  for i in 0 1 2 3 4 5; do ids+=("$(matrix_cell_id "$i")"); done
  [ "${ids[0]}" = "01_accept_count-1_somaxconn-2" ]
  [ "${ids[1]}" = "02_accept_count-1_somaxconn-64" ]
  [ "${ids[2]}" = "03_accept_count-1_somaxconn-4096" ]
  [ "${ids[3]}" = "04_accept_count-5_somaxconn-2" ]
  [ "${ids[5]}" = "06_accept_count-5_somaxconn-4096" ]
}

@test "a cell carries every knob: its axis values, the matrix and the defaults" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_cell_values 4
  assert_line "TOMCAT_ACCEPT_COUNT=5"
  assert_line "SOMAXCONN=64"
  assert_line "VUS=12"
  assert_line "TOMCAT_MAX_CONNECTIONS=8192"
  [ "${#lines[@]}" -eq "${#KNOB_ORDER[@]}" ]
}

@test "a knob from the command line beats the matrix" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  VUS=3 matrix_apply_overrides
  [ "${MATRIX_VALUE[VUS]}" = 3 ]
  [ "${MATRIX_ORIGIN[VUS]}" = "command line" ]
}

@test "a command-line value with several words replaces an axis" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  SOMAXCONN="8 16" matrix_apply_overrides
  [ "$(matrix_cell_count)" -eq 4 ]
  [ "$(matrix_cell_id 3)" = "04_accept_count-5_somaxconn-16" ]
}

@test "a bad command-line value names the command line" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  export DURATION=forever
  run matrix_apply_overrides
  assert_failure 2
  assert_output --partial "command line: DURATION: 'forever' is not a duration"
}

@test "a shell variable that is not exported is not an override" {
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  VUS=999
  matrix_apply_overrides
  [ "${MATRIX_VALUE[VUS]}" = 12 ]
}

@test "no axes: one cell" {
  printf 'VUS=2\n' | lt_write "$BATS_TEST_TMPDIR/one.matrix"
  matrix_load "$BATS_TEST_TMPDIR/one.matrix"
  [ "$(matrix_cell_count)" -eq 1 ]
  [ "$(matrix_cell_id 0)" = "01" ]
}

@test "every shipped matrix parses" {
  for m in "$LT_ROOT"/env/matrices/*.matrix; do
    matrix_init
    run matrix_load "$m"
    assert_success
  done
}

@test "past 99 cells the ids have three digits and sort in cell order; REPEAT=10 pads its repetitions" {
  printf 'VUS=%s\n' "$(seq -s ' ' 1 120)" >"$BATS_TEST_TMPDIR/big.matrix"
  lt_untraced matrix_resolve "$BATS_TEST_TMPDIR/big.matrix"
  [ "$(matrix_cell_id 0)" = 001_vus-1 ]
  [ "$(matrix_cell_id 119)" = 120_vus-120 ]
  local i
  local -a ids=()
  for ((i = 0; i < 120; i++)); do ids+=("$(matrix_cell_id "$i")"); done
  [ "$(printf '%s\n' "${ids[@]}" | LC_ALL=C sort)" = "$(printf '%s\n' "${ids[@]}")" ]
  source "$LT_ROOT/scripts/lib/rundir.sh"
  printf 'VUS=1 2\n' >"$BATS_TEST_TMPDIR/two.matrix"
  lt_untraced matrix_resolve "$BATS_TEST_TMPDIR/two.matrix"
  run run_plan 2 10 1
  assert_line "1 2 02_vus-2_rep-02"
  assert_line "1 10 02_vus-2_rep-10"
  # In name order, each cell's repetitions are in k order.
  [ "$(cut -d' ' -f3 <<<"$output" | LC_ALL=C sort | cut -d- -f3 | tr '\n' ' ')" = "01 02 03 04 05 06 07 08 09 10 01 02 03 04 05 06 07 08 09 10 " ]
  run run_plan 2 3 1
  assert_line "0 3 01_vus-1_rep-3"
}

@test "a resumed run keeps the width its cells were named with" {
  printf 'VUS=%s\n' "$(seq -s ' ' 1 120)" >"$BATS_TEST_TMPDIR/big.matrix"
  lt_untraced matrix_resolve "$BATS_TEST_TMPDIR/big.matrix"
  source "$LT_ROOT/scripts/lib/rundir.sh"
  run_keep_id_width "01_vus-1_rep-2"
  [ "$(matrix_cell_id 0)" = 01_vus-1 ]
  [ "$(matrix_cell_id 119)" = 120_vus-120 ]
}
