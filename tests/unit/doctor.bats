#!/usr/bin/env bats
# make doctor's arguments reach scripts/doctor.sh as single words and bad ones
# are refused with their name; the matrix it writes is one the lab loads as is.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  MARK="$BATS_TEST_TMPDIR/ran"
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
}

@test "make doctor PORT='1;touch FILE' is a wrong port, not a command" {
  run make --no-print-directory -C "$LT_ROOT" doctor "PORT=1;touch $MARK"
  assert_failure
  assert_output --partial "doctor: PORT '1;touch $MARK' is not a TCP port (1-65535)"
  [ ! -e "$MARK" ]
}

@test "a window of 0, or not in seconds, is refused with its value" {
  run "$LT_ROOT/scripts/doctor.sh" --port 8080 --window 0
  assert_failure 2
  assert_output "doctor: WINDOW '0' is not a whole number of seconds from 1s to 3600s"
  run "$LT_ROOT/scripts/doctor.sh" --port 8080 --window 2m
  assert_failure 2
  assert_output --partial "WINDOW '2m'"
  run "$LT_ROOT/scripts/doctor.sh" --port 8080 --actuator 'file:///etc/passwd'
  assert_failure 2
  assert_output "doctor: ACTUATOR 'file:///etc/passwd' is not an http(s) URL"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "reproduce.matrix of every recorded reading loads as a matrix: two cells with the actuator, one without" {
  lt_source_libs envfile matrix
  knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  LT_PROG="test"
  local reading out
  for reading in "$LT_ROOT"/tests/python/fixtures/doctor/*/; do
    out="$BATS_TEST_TMPDIR/doctor-$(basename "$reading")"
    mkdir -p "$out"
    PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.doctor report "$reading" "$out" >/dev/null
    matrix_init
    matrix_load "$out/reproduce.matrix"
    if [[ -e "$reading/configprops.json" ]]; then
      [ "$(matrix_cell_count)" = 2 ]
    else
      [ "$(matrix_cell_count)" = 1 ]
    fi
    [ "${MATRIX_VALUE[SOMAXCONN]}" = "$(awk -F'\t' '$1 == "net.core.somaxconn" { print $2 }' "$reading/sysctls.tsv")" ]
  done
}
