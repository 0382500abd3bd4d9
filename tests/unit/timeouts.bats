#!/usr/bin/env bats
# Every test has a time limit: a hang fails its test, names it and what was
# running, and the tests after it still run (tests/fixtures/timeouts).

setup() {
  load '../test_helper'
}

@test "bats: a hanging test fails at BATS_TEST_TIMEOUT with what ran, and the next test runs" {
  local started=$SECONDS
  BATS_TEST_TIMEOUT=5 run "$LT_ROOT/.tools/bats/node_modules/bats/bin/bats" "$LT_ROOT/tests/fixtures/timeouts/hang.bats" 3>&-
  assert_failure
  assert_line 'ok 1 quick before'
  assert_line 'not ok 2 hangs in a child # timeout after 5s'
  assert_line 'ok 3 quick after'
  assert_line --regexp '^# # hangs in a child is about to be ended after 5 s \(BATS_TEST_TIMEOUT\); what runs:'
  assert_line --regexp '^# +[0-9]+ .* sleep 100$'
  [ $((SECONDS - started)) -lt 30 ] || fail "took $((SECONDS - started)) s"
}

@test "bats: a hanging setup_file is ended at LT_SETUP_FILE_TIMEOUT with what ran, and fails its file" {
  local started=$SECONDS
  BATS_TEST_TIMEOUT=5 LT_SETUP_FILE_TIMEOUT=4 run "$LT_ROOT/.tools/bats/node_modules/bats/bin/bats" \
    "$LT_ROOT/tests/fixtures/timeouts/hang-setup-file.bats" "$LT_ROOT/tests/fixtures/timeouts/quick.bats" 3>&-
  assert_failure
  assert_line 'not ok 1 setup_file failed'
  assert_line --regexp '^# # setup_file of hang-setup-file.bats ended after 4 s \(LT_SETUP_FILE_TIMEOUT\); what ran:'
  assert_line --regexp '^# +[0-9]+ .* sleep 100$'
  refute_line --partial 'never reached'
  assert_line 'ok 2 the next file runs'
  [ $((SECONDS - started)) -lt 30 ] || fail "took $((SECONDS - started)) s"
}

@test "pytest: a hanging test fails at its timeout with its stack, and the next test runs" {
  [[ -x "$LT_ROOT/.tools/venv/bin/python" ]] || fail "no .tools/venv: make pytest"
  local started=$SECONDS
  run "$LT_ROOT/.tools/venv/bin/python" -m pytest -v -p no:cacheprovider --timeout=3 \
    "$LT_ROOT/tests/fixtures/timeouts/test_hang.py"
  assert_failure
  assert_line --regexp 'test_hang.py::test_quick_before PASSED'
  assert_line --regexp 'test_hang.py::test_hangs FAILED'
  assert_line --regexp 'test_hang.py::test_quick_after PASSED'
  assert_output --partial 'Failed: Timeout (>3.0s) from pytest-timeout'
  assert_output --partial 'time.sleep(100)'
  [ $((SECONDS - started)) -lt 60 ] || fail "took $((SECONDS - started)) s"
}
