#!/usr/bin/env bats
# The Makefile hands make's arguments to the scripts as single words: a value
# with shell syntax in it is a (wrong) value, never a command.

setup() {
  load '../test_helper'
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  MARK="$BATS_TEST_TMPDIR/ran"
}

# lt_make ARGS...: make in the repository, without remaking the tools the
# recipes depend on (-o: taken as up to date).
lt_make() {
  make --no-print-directory -C "$LT_ROOT" -o run-tools -o report-tools -o aws-tools -o .tools/bin/k6 "$@"
}

@test "make run-matrix 'MATRIX=x;touch FILE' runs no touch: the runner is given one word" {
  [[ $EUID -eq 0 ]] || skip "make run-matrix checks for root first"
  run lt_make run-matrix "MATRIX=x;touch $MARK"
  assert_failure
  assert_output --partial "run-matrix: x;touch $MARK: no such matrix file"
  [ ! -e "$MARK" ]
}

@test "a quote in MATRIX is part of the word, not the end of it" {
  [[ $EUID -eq 0 ]] || skip "make run-matrix checks for root first"
  run lt_make run-matrix "MATRIX=x';touch $MARK;'"
  assert_failure
  assert_output --partial "run-matrix: x';touch $MARK;': no such matrix file"
  [ ! -e "$MARK" ]
}

@test "make report RUN=... and make compare A=... B=... run no command either" {
  run lt_make report "RUN=\$(touch $MARK)"
  assert_failure
  [ ! -e "$MARK" ]
  run lt_make compare "A=a\";touch $MARK;\"" "B=b\`touch $MARK\`"
  assert_failure 2
  [ ! -e "$MARK" ]
  run lt_make compare "A=a" "B=b" "THRESHOLD_PCT=5;touch $MARK"
  assert_failure 2
  assert_output --partial "compare: THRESHOLD_PCT: '5;touch $MARK' is not a percentage"
  [ ! -e "$MARK" ]
}

@test "make ssm-run and operator-manifest pass CELL and MATRIX as single words" {
  run lt_make operator-manifest "CELL=1;touch $MARK" "MATRIX=x"
  assert_failure
  [ ! -e "$MARK" ]
  run lt_make ssm-run DRY_RUN=1 "MATRIX=x|touch $MARK"
  assert_failure
  [ ! -e "$MARK" ]
}

@test "an ordinary value reaches the script as it was, and compare still asks for two runs" {
  run lt_make -n run-matrix MATRIX=env/matrices/default.matrix
  assert_line "scripts/run-matrix.sh 'env/matrices/default.matrix'"
  run lt_make compare A=x
  assert_failure 2
  assert_output --partial "make compare: give two runs: make compare A=<run-id> B=<run-id>"
}
