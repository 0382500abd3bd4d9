#!/usr/bin/env bats
# .ci/run's count line: bats' TAP and pytest's verbose lines, in one sum.

setup() {
  load '../test_helper'
}

@test "the count adds pytest's passed, failed and skipped tests to bats', test ids with spaces too" {
  cat >"$BATS_TEST_TMPDIR/log" <<'LOG'
ok 1 a bats test
ok 2 a skipped one # skip no root
not ok 3 a failed bats test
tests/python/test_row.py::test_the_row_is_the_recorded_row_key_for_key[cut-off] PASSED [  1%]
tests/python/test_row.py::test_counter_deltas_are_the_recorded_ones[cut-off] FAILED [  2%]
tests/python/test_rules.py::test_k6_durations_in_milliseconds PASSED   [  3%]
tests/python/test_causes.py::test_the_causes_in_order SKIPPED (no node) [  4%]
tests/python/test_design.py::test_x ERROR [  5%]
tests/python/test_causes.py::test_y[0-1213-dial tcp: socket: too many open files-no_fd] PASSED [  6%]
tests/python/test_causes.py::test_y[0-1050-request timeout-timeout] FAILED [  7%]
============================= 2 passed, 1 failed in 0.1s ==============================
LOG
  run "$LT_ROOT/.ci/run" --count "$BATS_TEST_TMPDIR/log"
  assert_success
  assert_output 'tests: 4 passed, 4 failed, 2 skipped'
}
