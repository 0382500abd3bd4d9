#!/usr/bin/env bats
# Interrupted, crashed and malformed runs: nothing measured is lost, nothing
# is left behind, nothing in a data file is executed.

setup() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  MATRIX="$BATS_TEST_TMPDIR/tiny.matrix"
  cp "$LT_ROOT/tests/fixtures/tiny.matrix" "$MATRIX"
}

teardown() {
  # Whatever a failed test left: only processes this test started.
  # An nginx a failed test's killed runner left (it would hold bats' output open).
  local pid
  for pid in ${LEFT_NGINX_PIDS[@]+"${LEFT_NGINX_PIDS[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
  lt_end "${RUNNER_PID:-}" "${HOLDER_PID:-}"
  if mountpoint -q "$LT_RESULTS_DIR" 2>/dev/null; then umount "$LT_RESULTS_DIR" || true; fi
}

# start_runner: run-matrix on $MATRIX in the background; returns once it
# has the host-wide lock (other runs on the host may hold it for minutes).
start_runner() {
  "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 &
  RUNNER_PID=$!
  wait_for_log "^run .* cell(s) from " "$((LT_LOCK_WAIT + 60))"
}

# wait_for_log TEXT SECONDS: wait until the run's log contains TEXT.
wait_for_log() {
  local deadline=$((SECONDS + $2))
  until grep -q -- "$1" "$BATS_TEST_TMPDIR/run.log" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "'$1' not in the log after $2 s: $(cat "$BATS_TEST_TMPDIR/run.log")"
    sleep 0.2
  done
}

# wait_runner: wait for the background runner; its status goes to RUNNER_STATUS.
wait_runner() {
  RUNNER_STATUS=0
  wait "$RUNNER_PID" || RUNNER_STATUS=$?
  RUNNER_PID=""
}

# pid_in_netns NS COMM: the pid of the process named COMM in namespace NS.
pid_in_netns() {
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do
    if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$2" ]]; then
      printf '%s\n' "$pid"
      return
    fi
  done
}

# assert_nothing_left: no namespace, target or k6 of any run of the suite
# (the runner marks them: -Dltsuite.run_id= and -e LT_RUN_ID=).
assert_nothing_left() {
  run ip netns list
  refute_output --partial ltsuite
  run pgrep -f "ltsuite.run_id="
  assert_failure
  run pgrep -f "k6 run .*-e LT_RUN_ID="
  assert_failure
}

# host_sysctls: the host's values of every whitelisted sysctl.
host_sysctls() {
  awk '!/^#/ && NF >= 3 { print $3 }' "$LT_ROOT/env/sysctls.tsv" | sort -u | xargs sysctl 2>/dev/null
}

@test "SIGTERM mid-cell stops everything, keeps finished cells, and RESUME completes the table" {
  local host_before
  host_before="$(host_sysctls)"
  start_runner
  wait_for_log "cell 2/3" 60
  sleep 3
  kill -TERM "$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -ne 0 ]
  assert_nothing_left
  # The cells set SOMAXCONN etc. only inside their namespaces.
  [ "$(host_sysctls)" = "$host_before" ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  [ "$(jq -r .status "$run_dir/manifest.json")" = interrupted ]
  [ "$(wc -l <"$run_dir/results.csv")" -eq 2 ]
  [ "$(jq -r .status "$run_dir/cells/01_accept_count-10/row.json")" = ok ]
  local kept
  kept="$(sha256sum "$run_dir/cells/01_accept_count-10/row.json" "$run_dir/cells/01_accept_count-10/summary.json")"

  # A changed matrix is refused: the cells would not be the same.
  printf 'VUS=3\n' >>"$MATRIX"
  RESUME="$(basename "$run_dir")" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  assert_output --partial "changed since run"
  cp "$LT_ROOT/tests/fixtures/tiny.matrix" "$MATRIX"

  RESUME="$(basename "$run_dir")" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_success
  assert_output --partial "cell 1/3 01_accept_count-10: kept from the earlier attempt"
  assert_output --partial "cell 3/3 03_accept_count-30"
  [ "$(jq -r .status "$run_dir/manifest.json")" = complete ]
  # The refused attempt left no trace.
  [ "$(jq '.resumed_at | length' "$run_dir/manifest.json")" -eq 1 ]
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'ok\nok\nok'
  [ "$(sha256sum "$run_dir/cells/01_accept_count-10/row.json" "$run_dir/cells/01_accept_count-10/summary.json")" = "$kept" ]
  assert_nothing_left
}

@test "SIGTERM while a cell's finish runs beside the next cell's start: the exit waits for it, and its row is kept" {
  start_runner
  # The first cell's processes are stopped and its finish has begun (its
  # deltas are written): the next cell is starting beside it.
  local deadline=$((SECONDS + 120)) phases
  until phases="$(cat "$LT_RESULTS_DIR"/*/cells/01_accept_count-10/phases.tsv 2>/dev/null)" \
    && grep -q '^files' <<<"$phases"; do
    ((SECONDS < deadline)) || fail "cell 01's finish never began: $(cat "$BATS_TEST_TMPDIR/run.log")"
    sleep 0.02
  done
  kill -TERM "$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -eq 143 ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  [ "$(jq -r .status "$run_dir/cells/01_accept_count-10/row.json")" = ok ]
  [ "$(jq -r '[.status, .cells_done] | @tsv' "$run_dir/manifest.json")" = $'interrupted\t1' ]
  [ "$(wc -l <"$run_dir/results.csv")" -eq 2 ]
  # Its report line was said before the run stopped.
  grep -q '^  ok in ' "$BATS_TEST_TMPDIR/run.log"
  assert_nothing_left
}

# pid_running PID: the process exists and is not a zombie.
pid_running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ "${stat##*) }" != Z* ]]
}

# hold_host_lock: take the host-wide run lock for this test (queued like a
# run), so that no other run starts while the test's runs use a lock of
# their own (LT_LOCK_FILE) and the fixed namespaces. Released when the test
# ends; the runners close it (HOST_LOCK_FD).
hold_host_lock() {
  [[ -d /run/lock/ltsuite ]] || mkdir -m 700 /run/lock/ltsuite
  exec {HOST_LOCK_FD}>>/run/lock/ltsuite/run-matrix.lock
  flock -w 900 "$HOST_LOCK_FD" || fail "the host-wide run lock stayed taken for 900 s"
  export LT_LOCK_FILE="$BATS_TEST_TMPDIR/lock" LT_LOCK_WAIT=0
}

@test "a runner killed with SIGKILL mid-cell: the next run ends what it left, says so, and completes" {
  hold_host_lock
  mkdir "$BATS_TEST_TMPDIR/tmp"
  TMPDIR="$BATS_TEST_TMPDIR/tmp" "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 {HOST_LOCK_FD}>&- &
  RUNNER_PID=$!
  wait_for_log "cell 2/3" 60
  local deadline=$((SECONDS + 60)) java_pid="" k6_pid="" sampler_pid="" timeout_pid=""
  until [[ -n "$k6_pid" && -n "$sampler_pid" ]]; do
    ((SECONDS < deadline)) || fail "k6 or the sampler never started: $(cat "$BATS_TEST_TMPDIR/run.log")"
    k6_pid="$(pid_in_netns ltsuite-cli k6)"
    sampler_pid="$(pgrep -P "$RUNNER_PID" -f 'sampler.py run' || true)"
    sleep 0.1
  done
  java_pid="$(pid_in_netns ltsuite-srv java)"
  timeout_pid="$(ps -o ppid= -p "$k6_pid" | tr -d ' ')"
  [[ "$(cat "/proc/$timeout_pid/comm")" == timeout ]]
  local dead_run
  dead_run="$(basename "$(readlink -f "$LT_RESULTS_DIR/latest")")"
  local dead_pid="$RUNNER_PID"
  kill -KILL "$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -eq 137 ]
  # The runner could clean nothing: its target, k6 and sampler still run.
  pid_running "$java_pid"
  pid_running "$k6_pid"

  # The next run (one cell) ends them, by the run id they carry, and starts.
  printf 'TOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  TMPDIR="$BATS_TEST_TMPDIR/tmp" run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX.2" {HOST_LOCK_FD}>&-
  assert_success
  assert_output --partial "run-matrix: warning: run $dead_run (runner pid $dead_pid) was killed before it could clean up"
  assert_line --regexp "^ending what it left running: .*pid $java_pid \(java\)"
  assert_line --regexp "^ending what it left running: .*pid $k6_pid \(k6\)"
  assert_line --regexp "^ending what it left running: .*pid $timeout_pid \(timeout\)"
  assert_line --regexp "^ending what it left running: .*pid $sampler_pid \(python3\)"
  assert_line --regexp "^removing its temporary directory $BATS_TEST_TMPDIR/tmp/ltsuite-run\."
  assert_output --partial "removing network namespaces left by an earlier run"
  local pid
  for pid in "$java_pid" "$k6_pid" "$timeout_pid" "$sampler_pid"; do
    ! pid_running "$pid" || fail "pid $pid of the killed run still runs: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
  done
  [ "$(jq -r .status "$LT_RESULTS_DIR/$dead_run/manifest.json")" = interrupted ]
  jq -e --arg p "$dead_pid" 'any(.warnings[]; startswith("the runner (pid \($p)) was killed"))' "$LT_RESULTS_DIR/$dead_run/manifest.json"
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  [ "$(jq -r .status "$run_dir/manifest.json")" = complete ]
  run lt_csv_column "$run_dir/results.csv" status
  assert_output ok
  # Nothing of either run is left: no temporary file, no lock state.
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ''
  [ ! -e "$LT_LOCK_FILE.pid" ]
  assert_nothing_left
}

# wait_for_helpers RUN_DIR: once k6, nginx and the delayer of the cell in
# RUN_DIR run: NGINX_PIDS (the master, then its workers) and DELAYER_PID.
wait_for_helpers() {
  local deadline=$((SECONDS + 120)) master="" pid
  NGINX_PIDS=() DELAYER_PID=""
  until [[ -n "$master" && -n "$DELAYER_PID" && -n "$(pid_in_netns ltsuite-cli k6)" ]]; do
    ((SECONDS < deadline)) || fail "k6, nginx or the delayer never started: $(cat "$BATS_TEST_TMPDIR"/run*.log)"
    master="$(cat "$1"/cells/*/nginx.pid 2>/dev/null || true)"
    for pid in $(ip netns pids ltsuite-cli 2>/dev/null); do
      if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'ltsuite.netdelay'; then DELAYER_PID="$pid"; fi
    done
    sleep 0.1
  done
  mapfile -t NGINX_PIDS < <(printf '%s\n' "$master"; pgrep -P "$master")
  [ "${#NGINX_PIDS[@]}" -ge 2 ]
}

@test "nginx and the delayer: a runner killed with SIGKILL leaves them to the next run, which ends them; Ctrl-C leaves nothing" {
  hold_host_lock
  mkdir "$BATS_TEST_TMPDIR/tmp"
  printf '%s\n' VUS=2 DURATION=30s DELAY_MS=100 REQUEST_TIMEOUT=5s PROXY=nginx NET_RTT_MS=10 \
    K6_HTML_REPORT=0 MONITORING=off >"$MATRIX"
  TMPDIR="$BATS_TEST_TMPDIR/tmp" "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 {HOST_LOCK_FD}>&- &
  RUNNER_PID=$!
  wait_for_log "cell 1/1" 60
  wait_for_helpers "$(readlink -f "$LT_RESULTS_DIR/latest")"
  local -a dead_nginx=("${NGINX_PIDS[@]}")
  LEFT_NGINX_PIDS=("${NGINX_PIDS[0]}")
  local dead_delayer="$DELAYER_PID" pid
  kill -KILL "$RUNNER_PID"
  wait_runner
  # nginx outlives its runner (the delayer asked the kernel for SIGTERM).
  sleep 1
  for pid in "${dead_nginx[@]}"; do pid_running "$pid"; done

  # The next run ends them by the pids its state names, then starts its own;
  # Ctrl-C at a terminal signals the runner's whole process group.
  TMPDIR="$BATS_TEST_TMPDIR/tmp" python3 -c 'import os, signal, sys
os.setpgrp()
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" \
    >"$BATS_TEST_TMPDIR/run2.log" 2>&1 {HOST_LOCK_FD}>&- &
  RUNNER_PID=$!
  local deadline=$((SECONDS + 60))
  until grep -q "cell 1/1" "$BATS_TEST_TMPDIR/run2.log"; do
    ((SECONDS < deadline)) || fail "the second run never started its cell: $(cat "$BATS_TEST_TMPDIR/run2.log")"
    sleep 0.2
  done
  run cat "$BATS_TEST_TMPDIR/run2.log"
  assert_line --regexp "^ending what it left running: .*pid ${dead_nginx[0]} \(nginx\)"
  for pid in "${dead_nginx[@]}" "$dead_delayer"; do
    ! pid_running "$pid" || fail "pid $pid of the killed run still runs: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
  done
  wait_for_helpers "$(readlink -f "$LT_RESULTS_DIR/latest")"
  kill -INT -- "-$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -eq 130 ]
  for pid in "${NGINX_PIDS[@]}" "$DELAYER_PID"; do
    ! pid_running "$pid" || fail "pid $pid still runs after Ctrl-C: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
  done
  # Nothing else names the runs' files: no nginx, no delayer.
  local file left=""
  for file in /proc/[0-9]*/cmdline; do
    [[ "$(tr '\0' ' ' <"$file" 2>/dev/null)" != *"$LT_RESULTS_DIR"* ]] || left+=" ${file%/cmdline}"
  done
  [ -z "$left" ] || fail "still running with the runs' files:$left"
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ''
  [ ! -e "$LT_LOCK_FILE.pid" ]
  assert_nothing_left
}

@test "a closed terminal (SIGHUP) mid-cell stops the run as interrupted and leaves nothing" {
  hold_host_lock
  mkdir "$BATS_TEST_TMPDIR/tmp"
  TMPDIR="$BATS_TEST_TMPDIR/tmp" "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 {HOST_LOCK_FD}>&- &
  RUNNER_PID=$!
  wait_for_log "cell 1/3" 60
  local deadline=$((SECONDS + 60))
  until [[ -n "$(pid_in_netns ltsuite-cli k6)" ]]; do
    ((SECONDS < deadline)) || fail "k6 never started: $(cat "$BATS_TEST_TMPDIR/run.log")"
    sleep 0.1
  done
  kill -HUP "$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -eq 129 ]
  [ "$(jq -r .status "$(readlink -f "$LT_RESULTS_DIR/latest")/manifest.json")" = interrupted ]
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ''
  [ ! -e "$LT_LOCK_FILE.pid" ]
  assert_nothing_left
}

@test "Ctrl-C during the design checks leaves no temporary file" {
  hold_host_lock
  mkdir "$BATS_TEST_TMPDIR/tmp"
  # SIGINT as from a terminal: a background job of a script starts with
  # SIGINT ignored, and bash cannot trap a signal ignored at entry.
  TMPDIR="$BATS_TEST_TMPDIR/tmp" python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" \
    >"$BATS_TEST_TMPDIR/run.log" 2>&1 {HOST_LOCK_FD}>&- &
  RUNNER_PID=$!
  # The design checks' file of a cell's knobs (check_design).
  local deadline=$((SECONDS + 120)) file=""
  until [[ -n "$file" ]]; do
    ((SECONDS < deadline)) || fail "no design-check file: $(cat "$BATS_TEST_TMPDIR/run.log")"
    file="$(find "$BATS_TEST_TMPDIR/tmp" -path '*/ltsuite-run.*/tmp.*' -print -quit)"
  done
  kill -INT "$RUNNER_PID"
  wait_runner
  [ "$RUNNER_STATUS" -eq 130 ]
  grep -q "interrupted: stopping k6 and the target" "$BATS_TEST_TMPDIR/run.log"
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ''
  [ ! -e "$LT_LOCK_FILE.pid" ]
  assert_nothing_left
}

@test "a target killed mid-cell gives a failed row and the next cell still runs" {
  start_runner
  wait_for_log "cell 1/3" 60
  # The target is the process in the server namespace; wait for it to serve.
  local deadline=$((SECONDS + 60)) java_pid=""
  until [[ -n "$java_pid" ]] && grep -q "Started" "$LT_RESULTS_DIR"/*/cells/01_accept_count-10/target.log 2>/dev/null; do
    ((SECONDS < deadline)) || fail "target never started"
    java_pid="$(pid_in_netns ltsuite-srv java)"
    sleep 0.2
  done
  sleep 3
  kill -KILL "$java_pid"
  wait_runner
  [ "$RUNNER_STATUS" -eq 1 ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'failed\nok\nok'
  jq -e '.error == "target died during the cell"' "$run_dir/cells/01_accept_count-10/row.json"
  [ "$(jq -r .status "$run_dir/manifest.json")" = failed ]
  grep -q "1 of 3 cell(s) failed" "$BATS_TEST_TMPDIR/run.log"
  assert_nothing_left
}

@test "k6 killed mid-cell is a failed cell, not a failed run" {
  start_runner
  wait_for_log "cell 2/3" 60
  local deadline=$((SECONDS + 60)) k6_pid=""
  until [[ -n "$k6_pid" ]]; do
    ((SECONDS < deadline)) || fail "k6 never started"
    k6_pid="$(pid_in_netns ltsuite-cli k6)"
    sleep 0.2
  done
  sleep 1
  kill -KILL "$k6_pid"
  wait_runner
  [ "$RUNNER_STATUS" -eq 1 ]
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'ok\nfailed\nok'
  jq -e '.error | test("k6 exited with status 137")' "$run_dir/cells/02_accept_count-20/row.json"
}

@test "a target that cannot start fails its cell with the reason, and the run goes on" {
  # A heap of 1 KiB: the JVM exits as it starts.
  printf 'SERVER_HEAP=1k 256m\nTOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'failed\nok'
  jq -e '.error | test("^target exited during start-up")' "$run_dir"/cells/01_*/row.json
  assert_nothing_left
}

@test "a step that fails midway fails its cell with what failed; the run is never complete" {
  # nstat that cannot read the counters: the first snapshot, after the
  # target started, fails.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  printf '#!/bin/sh\necho "nstat: cannot open /proc/net/snmp" >&2\nexit 1\n' >"$BATS_TEST_TMPDIR/bin/nstat"
  chmod +x "$BATS_TEST_TMPDIR/bin/nstat"
  printf 'TOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run jq -r '[.status, .error] | @tsv' "$run_dir"/cells/01*/row.json
  assert_output $'failed\tcannot read the server namespace\'s counters (nstat): nstat: cannot open /proc/net/snmp'
  [ "$(jq -r .status "$run_dir/manifest.json")" = failed ]
  # No k6 ran: nothing after the failed step.
  [ ! -e "$run_dir/cells/01/k6.log" ]
  assert_nothing_left
}

@test "a crossed k6 threshold is a result: the cell is ok and records exit 99" {
  printf 'THRESHOLD_P95_MS=1\nTOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  local run_dir
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  run lt_csv_column "$run_dir/results.csv" k6_exit
  assert_output 99
  run lt_csv_column "$run_dir/results.csv" status
  assert_output ok
}

@test "a second run refuses while one holds the lock" {
  export LT_LOCK_FILE="$BATS_TEST_TMPDIR/lock" LT_LOCK_WAIT=0
  flock "$LT_LOCK_FILE" sleep 60 &
  HOLDER_PID=$!
  sleep 0.5
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  assert_output --partial "another run-matrix is running"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "namespaces left by a killed run are removed, with a message" {
  # Made by hand: no other run may be using the fixed names meanwhile.
  hold_host_lock
  ip netns add ltsuite-srv
  printf 'TOMCAT_ACCEPT_COUNT=10\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" {HOST_LOCK_FD}>&-
  assert_success
  assert_output --partial "removing network namespaces left by an earlier run"
  assert_nothing_left
}

@test "an existing run directory is never overwritten" {
  run "$LT_ROOT/scripts/run-matrix.sh" --help
  assert_success
  assert_output --partial "Usage:"
  mkdir -p "$LT_RESULTS_DIR"
  # Two runs in the same second get different directories.
  printf 'TOMCAT_ACCEPT_COUNT=10\nDURATION=1s\n' >"$MATRIX.2"
  grep -vE 'TOMCAT_ACCEPT_COUNT|DURATION' "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  local stamp
  stamp="$(date +%Y%m%d-%H%M%S)"
  mkdir "$LT_RESULTS_DIR/$stamp-tiny" "$LT_RESULTS_DIR/$(date -d '+1 sec' +%Y%m%d-%H%M%S)-tiny"
  touch "$LT_RESULTS_DIR/$stamp-tiny/marker"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  [ -e "$LT_RESULTS_DIR/$stamp-tiny/marker" ]
  [ ! -e "$LT_RESULTS_DIR/$stamp-tiny/manifest.json" ]
  [[ "$(basename "$(readlink -f "$LT_RESULTS_DIR/latest")")" == *-tiny* ]]
}

@test "a disk that fills mid-run: one line, no temporary file, the run interrupted, and RESUME finishes it once there is room" {
  hold_host_lock
  mkdir -p "$LT_RESULTS_DIR"
  mount -t tmpfs -o size=4m tmpfs "$LT_RESULTS_DIR"
  printf 'TOMCAT_ACCEPT_COUNT=10 20\n' >"$MATRIX.2"
  grep -v TOMCAT_ACCEPT_COUNT "$MATRIX" >>"$MATRIX.2"
  mv "$MATRIX.2" "$MATRIX"
  "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX" >"$BATS_TEST_TMPDIR/run.log" 2>&1 {HOST_LOCK_FD}>&- &
  RUNNER_PID=$!
  wait_for_log "cell 1/2" 60
  # Another writer fills the disk while the first cell runs.
  head -c 8M /dev/zero >"$LT_RESULTS_DIR/filler" 2>/dev/null || true
  wait_runner
  local log run_dir
  log="$(cat "$BATS_TEST_TMPDIR/run.log")"
  [ "$RUNNER_STATUS" -eq 1 ] || fail "status $RUNNER_STATUS: $log"
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  grep -qx "no space left on $LT_RESULTS_DIR (results in $run_dir): the run stops; free some space there and continue it with RESUME=$(basename "$run_dir")" \
    "$BATS_TEST_TMPDIR/run.log" || fail "no one line about the disk: $log"
  run find "$LT_RESULTS_DIR" -name '*.tmp.*'
  assert_output ''
  [ "$(jq -r .status "$run_dir/manifest.json")" = interrupted ]
  # Room again: RESUME runs the cell the full disk cut off, and the next.
  rm "$LT_RESULTS_DIR/filler"
  RESUME="$(basename "$run_dir")" run "$LT_ROOT/scripts/run-matrix.sh" {HOST_LOCK_FD}>&-
  assert_success
  [ "$(jq -r .status "$run_dir/manifest.json")" = complete ]
  run lt_csv_column "$run_dir/results.csv" status
  assert_output $'ok\nok'
  umount "$LT_RESULTS_DIR"
  assert_nothing_left
}
