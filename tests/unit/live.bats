#!/usr/bin/env bats
# live_start (lib/live.sh): what ltsuite.live is given for the running cell.
# shellcheck disable=SC2034,SC2030,SC2031 # SC2034: read by the sourced library under test; SC2030,SC2031: each @test runs in its own subshell on purpose, its state never leaks

setup() {
  load '../test_helper'
  lt_source_libs k6 live monitoring
  # A python that writes its arguments, one a line, and ends.
  cat >"$BATS_TEST_TMPDIR/python" <<SCRIPT
#!/bin/bash
printf '%s\n' "\$@" >'$BATS_TEST_TMPDIR/args'
SCRIPT
  chmod +x "$BATS_TEST_TMPDIR/python"
  LT_PYTHON="$BATS_TEST_TMPDIR/python"
  unset LT_LIVE LT_LIVE_EVERY
}

# live_args CELL_DIR: live_start's arguments to ltsuite.live, on one line.
live_args() {
  live_start "$1" 20 2>/dev/null
  wait "$LIVE_PID"
  LIVE_PID=""
  tr '\n' ' ' <"$BATS_TEST_TMPDIR/args"
}

@test "each k6 process the cell started gets its samples file read: k6_start's files, one per process" {
  K6_PIDS=(101 102 103)
  LT_LIVE_EVERY=2
  run live_args /cells/01
  assert_output "-S -m ltsuite.live --samples /cells/01/samples.tsv --expected-s 20 --max-s 80 --every 2 --k6-samples /cells/01/k6-samples.json.gz --k6-samples /cells/01/k6-samples-2.json.gz --k6-samples /cells/01/k6-samples-3.json.gz "
}

@test "one k6 process: its k6-samples.json.gz, the file monitoring_k6_options asks k6 to write" {
  K6_PIDS=(101)
  run live_args /cells/01
  assert_output "-S -m ltsuite.live --samples /cells/01/samples.tsv --expected-s 20 --max-s 80 --every 5 --k6-samples /cells/01/k6-samples.json.gz "
  MONITORING_CELL_K6="file"
  local -A values=([K6_HTML_REPORT]=0)
  run monitoring_k6_options values /cells/01
  assert_line "--out=json=/cells/01/k6-samples.json.gz"
}

@test "without a terminal, a cell planned to end before the first plain line starts no live line" {
  K6_PIDS=(101)
  live_start /cells/01 4
  [ -z "$LIVE_PID" ]
  [ ! -e "$BATS_TEST_TMPDIR/args" ]
  LT_LIVE_EVERY=2
  run live_args /cells/01
  assert_output --partial "--every 2 "
}

@test "LT_LIVE=off starts nothing" {
  K6_PIDS=(101)
  LT_LIVE=off
  live_start /cells/01 20
  [ -z "$LIVE_PID" ]
  [ ! -e "$BATS_TEST_TMPDIR/args" ]
}

# usr1_python: LT_PYTHON a python that writes its arguments, then waits (at
# most 10 s) for SIGUSR1 and says so.
usr1_python() {
  cat >"$BATS_TEST_TMPDIR/python" <<SCRIPT
#!/bin/bash
printf '%s\n' "\$@" >'$BATS_TEST_TMPDIR/args'
trap 'echo load >"$BATS_TEST_TMPDIR/usr1"; exit 0' USR1
for ((i = 0; i < 200; i++)); do sleep 0.05; done
SCRIPT
}

# args_written: wait (at most 5 s) until that python wrote its arguments.
args_written() {
  local tries
  for ((tries = 0; tries < 100; tries++)); do
    [[ ! -s "$BATS_TEST_TMPDIR/args" ]] || return 0
    sleep 0.05
  done
}

@test "a watched warm-up's live process is the cell's live line: live_start signals it the load started, and starts no second one" {
  usr1_python
  LT_LIVE_EVERY=2
  sleep 5 &
  local warm=$!
  live_start_with_warmup /cells/01 /proc/7/root/tmp/ltsuite-cell/tomcat-access.log 20 2 1700000000000 40 "$warm" 500
  local first="$LIVE_PID"
  [ "$LIVE_WAITS" = 1 ]
  args_written
  run tr '\n' ' ' <"$BATS_TEST_TMPDIR/args"
  assert_output --regexp "^-S -m ltsuite.live --warmup-cell /cells/01 --warmup-access-log /proc/7/root/tmp/ltsuite-cell/tomcat-access.log --warmup-start-ms 1700000000000 --warmup-limit-s 40 --warmup-pid $warm --warmup-started [0-9]+ --warmup-count 500 --samples /cells/01/samples.tsv --expected-s 20 --max-s 80 --every 2 --k6-samples /cells/01/k6-samples.json.gz --k6-samples /cells/01/k6-samples-2.json.gz \$"
  K6_PIDS=(101 102)
  live_start /cells/01 20
  [ "$LIVE_PID" = "$first" ]
  wait "$LIVE_PID"
  [ "$(cat "$BATS_TEST_TMPDIR/usr1")" = load ]
  kill "$warm"
  # No line to show: the watch alone.
  LIVE_PID="" LIVE_WAITS=0 LT_LIVE=off
  rm "$BATS_TEST_TMPDIR/args"
  live_start_with_warmup /cells/01 /cells/01/tomcat-access.log 20 1 1700000000000 40 "$$"
  [ "$LIVE_WAITS" = 0 ]
  args_written
  kill "$LIVE_PID"
  wait "$LIVE_PID" || true
  run tr '\n' ' ' <"$BATS_TEST_TMPDIR/args"
  assert_output --regexp "--warmup-pid $$ --warmup-started [0-9]+ --no-line \$"
}

@test "a warm-up of a fixed length arms the load's live line: started with it, signalled at the load's start, no second one" {
  usr1_python
  LT_LIVE_EVERY=2
  live_arm /cells/01 20 2
  local first="$LIVE_PID"
  [ -n "$first" ]
  [ "$LIVE_WAITS" = 1 ]
  args_written
  run tr '\n' ' ' <"$BATS_TEST_TMPDIR/args"
  assert_output "-S -m ltsuite.live --armed --samples /cells/01/samples.tsv --expected-s 20 --max-s 80 --every 2 --k6-samples /cells/01/k6-samples.json.gz --k6-samples /cells/01/k6-samples-2.json.gz "
  K6_PIDS=(101 102)
  live_start /cells/01 20
  [ "$LIVE_PID" = "$first" ]
  wait "$LIVE_PID"
  [ "$(cat "$BATS_TEST_TMPDIR/usr1")" = load ]
  # No line to show (a cell that ends before the first plain line): nothing armed.
  LIVE_PID="" LIVE_WAITS=0 LT_LIVE_EVERY=30
  live_arm /cells/01 20 1
  [ -z "$LIVE_PID" ]
  [ "$LIVE_WAITS" = 0 ]
}
