#!/usr/bin/env bats
# The runner's exit path ends in bounded time: a Ctrl-C that nginx and the
# delayer also receive (they handle SIGINT and end with it) must not leave the
# runner waiting for them after bash has reaped them, while the target, in a
# session of its own, runs on unsignalled.

setup() {
  load '../test_helper'
}

# ctrl_c_once N: the stand-in runner (tests/fixtures/exit-path/runner.bash)
# in a process group of its own, SIGINT to the group once nginx and the
# delayer run, as a terminal's Ctrl-C; fails when it has not ended 10 s later.
ctrl_c_once() {
  local ready="$BATS_TEST_TMPDIR/ready.$1" pid i target
  python3 -c 'import os, signal, sys
os.setpgrp()
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$LT_ROOT/tests/fixtures/exit-path/runner.bash" "$ready" 3>&- &
  pid=$!
  for ((i = 0; i < 250; i++)); do [[ ! -s "$ready" ]] || break; sleep 0.02; done
  [[ -s "$ready" ]] || fail "attempt $1: the stand-ins never started"
  target="$(head -n 1 "$ready")"
  sleep 0.3
  kill -INT -- "-$pid"
  for ((i = 0; i < 500; i++)); do pid_running "$pid" || break; sleep 0.02; done
  if pid_running "$pid"; then
    local children wchan
    children="$(cat /proc/"$pid"/task/*/children 2>/dev/null)"
    wchan="$(cat "/proc/$pid/wchan" 2>/dev/null)"
    kill -KILL "$pid" "$target" 2>/dev/null || true
    fail "attempt $1: the runner still waits 10 s after Ctrl-C (in $wchan), its children: $children (the target: $target)"
  fi
  wait "$pid" || status=$?
  [ "$status" -eq 130 ] || fail "attempt $1: exit status $status, not 130"
  grep -qx "stopped $target" "$ready" || fail "attempt $1: the target was not stopped: $(cat "$ready")"
  ! pid_running "$target" || fail "attempt $1: the target (pid $target) still runs"
}

@test "Ctrl-C with nginx and the delayer: the exit path stops them and the target, and ends, every time" {
  lt_source_libs
  local n status
  for n in 1 2 3 4 5 6 7 8 9 10 11 12; do
    status=0
    ctrl_c_once "$n"
  done
}

# ignore_term_child READY: start a child of this shell that ignores SIGTERM
# (a process that must be killed); its pid is $!. It writes READY once its
# handler is set.
ignore_term_child() {
  python3 -c 'import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], "w").close()
time.sleep(60)' "$1" >/dev/null 3>&- &
}

# wait_for_file FILE: up to 10 s.
wait_for_file() {
  local i
  for ((i = 0; i < 500; i++)); do [[ ! -e "$1" ]] || return 0; sleep 0.02; done
  fail "$1 never appeared"
}

@test "end_pids: SIGKILL to what ignores SIGTERM, every pid bounded together, and it says it had to kill" {
  local a b t0 t1 ms
  lt_source_libs
  ignore_term_child "$BATS_TEST_TMPDIR/a"
  a=$!
  ignore_term_child "$BATS_TEST_TMPDIR/b"
  b=$!
  wait_for_file "$BATS_TEST_TMPDIR/a"
  wait_for_file "$BATS_TEST_TMPDIR/b"
  t0="$(date +%s%N)"
  run end_pids TERM 1 "$a" "$b"
  t1="$(date +%s%N)"
  [ "$status" -eq 1 ]
  ! pid_running "$a" || fail "pid $a still runs"
  ! pid_running "$b" || fail "pid $b still runs"
  ms=$(((t1 - t0) / 1000000))
  # One second for both, not one each.
  [ "$ms" -lt 1900 ] || fail "two pids took $ms ms to end with a 1 s bound"
}

@test "end_pids: a process group ends whole, and a pid already gone is success" {
  local leader i
  lt_source_libs
  leader="$(python3 -c 'import os, subprocess, sys
pid = os.fork()
if pid == 0:
    os.setpgrp()
    # Off the pipe of the command substitution, which would wait for the group to end.
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    subprocess.Popen(["sleep", "60"])
    os.execvp("sleep", ["sleep", "60"])
print(pid)' 3>&-)"
  for ((i = 0; i < 500; i++)); do ! kill -0 -- "-$leader" 2>/dev/null || break; sleep 0.02; done
  kill -0 -- "-$leader" || fail "process group $leader never formed"
  run end_pids TERM 5 "-$leader"
  [ "$status" -eq 0 ]
  ! kill -0 -- "-$leader" 2>/dev/null || fail "process group $leader still has members"
  run end_pids TERM 1 "$leader"
  [ "$status" -eq 0 ]
}

@test "pid_running reads /proc itself: end_pids' checks, every few ms while a cell waits for its sampler and JVM, start no process" {
  [[ $EUID -eq 0 ]] || skip "a PID namespace of its own needs root"
  # The first process of a PID namespace of its own: every process started
  # takes the next pid, so /proc/sys/kernel/ns_last_pid counts them.
  # shellcheck disable=SC2016 # SC2016: expanded by the bash that runs it
  run env LT_ROOT="$LT_ROOT" unshare --pid --fork --mount-proc bash -c '
    set -euo pipefail
    source "$LT_ROOT/scripts/lib/common.sh"
    sleep 30 &
    child=$!
    read -r before </proc/sys/kernel/ns_last_pid
    for ((i = 0; i < 20; i++)); do pid_running "$child"; done
    ! pid_running 999999
    read -r after </proc/sys/kernel/ns_last_pid
    kill "$child"
    wait "$child" || true
    printf "%s\n" "$((after - before))"'
  assert_success
  # Before: a cat for each check.
  assert_output 0
}
