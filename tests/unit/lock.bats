#!/usr/bin/env bats
# The run lock's files in a directory every user may write (/run/lock): the
# runner (root) trusts, opens, truncates and removes nothing another user
# could have put there.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  # Files owned by another user (chown nobody) need root.
  lt_require_root
  # lockdir stands for /run/lock (every user's, mode 1777); the lock is in
  # a directory of the runner's own there.
  export LT_LOCK_FILE="$BATS_TEST_TMPDIR/lockdir/ltsuite/run-matrix.lock"
  mkdir -p "$BATS_TEST_TMPDIR/lockdir"
  chmod 1777 "$BATS_TEST_TMPDIR/lockdir"
  mkdir -m 700 "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  lt_source_libs results manifest lock
  LT_RUN_ID="" LT_RUN_DIR="" LT_TMP_DIR=""
  # A victim directory any path in a planted state file could name.
  VICTIM="$BATS_TEST_TMPDIR/victim"
  mkdir -p "$VICTIM"
  printf 'keep\n' >"$VICTIM/data"
}

teardown() {
  if [[ -n "${RUNNER_PID:-}" ]]; then kill -KILL "$RUNNER_PID" 2>/dev/null || true; fi
  local pid
  for pid in "${HELPER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
}

# dead_pid: the pid of a process that has ended.
dead_pid() {
  sleep 0 &
  local pid=$!
  wait "$pid"
  printf '%s\n' "$pid"
}

@test "a state file owned by another user is not read: its tmp_dir is not removed" {
  printf '%s\t12345\t\t\t%s\n' "$(dead_pid)" "$VICTIM" >"$LT_LOCK_STATE"
  chown nobody "$LT_LOCK_STATE"
  run end_dead_run
  assert_failure
  assert_output --partial "ignoring the lock's state: $LT_LOCK_STATE belongs to uid $(id -u nobody)"
  [ -f "$VICTIM/data" ]
}

@test "a state file that is a symlink is neither read nor written through" {
  printf 'precious\n' >"$BATS_TEST_TMPDIR/target"
  ln -s "$BATS_TEST_TMPDIR/target" "$LT_LOCK_STATE"
  run end_dead_run
  assert_failure
  assert_output --partial "is a symlink"
  LT_RUN_ID=r LT_TMP_DIR=/tmp/x lock_state_write
  [ "$(cat "$BATS_TEST_TMPDIR/target")" = precious ]
  [ ! -L "$LT_LOCK_STATE" ]
  [ "$(cut -f1 "$LT_LOCK_STATE")" = "$$" ]
}

@test "take_lock refuses a lock file or state that is a symlink or another user's, naming it" {
  printf 'precious\n' >"$BATS_TEST_TMPDIR/target"
  ln -s "$BATS_TEST_TMPDIR/target" "$LT_LOCK_FILE"
  run take_lock
  assert_failure 1
  assert_output --partial "$LT_LOCK_FILE is a symlink"
  assert_output --partial "remove it"
  rm "$LT_LOCK_FILE"
  : >"$LT_LOCK_STATE"
  chown nobody "$LT_LOCK_STATE"
  run take_lock
  assert_failure 1
  assert_output --partial "$LT_LOCK_STATE belongs to uid $(id -u nobody)"
  [ "$(cat "$BATS_TEST_TMPDIR/target")" = precious ]
}

@test "a state of this user's naming a directory the suite did not make: it is kept" {
  printf '%s\t12345\t\t\t%s\n' "$(dead_pid)" "$VICTIM" >"$LT_LOCK_STATE"
  run end_dead_run
  assert_success
  assert_output --partial "not removing $VICTIM"
  [ -f "$VICTIM/data" ]
  # Named like a run's, but another user's: kept too.
  local foreign
  foreign="$(TMPDIR="$BATS_TEST_TMPDIR" mktemp -d "$BATS_TEST_TMPDIR/${LT_TMP_PREFIX}XXXXXX")"
  chown nobody "$foreign"
  printf '%s\t12345\t\t\t%s\n' "$(dead_pid)" "$foreign" >"$LT_LOCK_STATE"
  run end_dead_run
  assert_success
  assert_output --partial "not removing $foreign"
  [ -d "$foreign" ]
}

@test "a killed run's own temporary directory is removed" {
  TMPDIR="$BATS_TEST_TMPDIR" run_tmp_dir
  printf 'x\n' >"$LT_TMP_DIR/file"
  printf '%s\t12345\t\t\t%s\n' "$(dead_pid)" "$LT_TMP_DIR" >"$LT_LOCK_STATE"
  run end_dead_run
  assert_success
  assert_output --partial "removing its temporary directory $LT_TMP_DIR"
  [ ! -e "$LT_TMP_DIR" ]
}

# start_helper WORD: a process of this test whose command line holds WORD
# (as nginx's and the delayer's hold theirs), on HELPER_PIDS; its pid on stdout.
start_helper() {
  bash -c 'exec -a "$0" sleep 60' "$1" &
  HELPER_PIDS+=("$!")
  local i
  for ((i = 0; i < 50; i++)); do
    [[ "$(tr '\0' ' ' <"/proc/$!/cmdline")" == "$1 60 " ]] && break
    sleep 0.05
  done
}

@test "a killed run's nginx and delayer, named in its state, are ended by pid" {
  HELPER_PIDS=()
  start_helper "nginx: master process nginx -c /x/nginx.conf"
  start_helper "python3 -S -m ltsuite.netdelay 31 /x/netdelay.json"
  local nginx="${HELPER_PIDS[0]}" delayer="${HELPER_PIDS[1]}"
  LT_RUN_ID=r LT_TMP_DIR="" lock_state_write
  lock_state_pids "$nginx" nginx "" ignored "$delayer" ltsuite.netdelay
  [ "$(cut -f6 "$LT_LOCK_STATE")" = "$nginx:$(process_start "$nginx"):nginx $delayer:$(process_start "$delayer"):ltsuite.netdelay" ]
  # The same state, as a runner killed with -9 left it.
  sed -i "s/^$$\t[0-9]*/$(dead_pid)\t12345/" "$LT_LOCK_STATE"
  run end_dead_run
  assert_success
  assert_output --regexp "ending what it left running: .*pid $nginx \(sleep\)"
  assert_output --regexp "ending what it left running: .*pid $delayer \(sleep\)"
  wait "$nginx" "$delayer" || true
  run kill -0 "$nginx"
  assert_failure
  run kill -0 "$delayer"
  assert_failure
}

@test "a pid in the state that is no longer that process is left alone: another start time or command" {
  HELPER_PIDS=()
  start_helper "nginx: worker process"
  start_helper "python3 -m http.server"
  local other="${HELPER_PIDS[0]}" renamed="${HELPER_PIDS[1]}"
  # other: the pid, but not the start time recorded; renamed: the start
  # time, but not the command recorded.
  printf '%s\t12345\tr\t\t\t%s\n' "$(dead_pid)" \
    "$other:1:nginx $renamed:$(process_start "$renamed"):ltsuite.netdelay" >"$LT_LOCK_STATE"
  run end_dead_run
  assert_success
  refute_output --partial "ending what it left running"
  kill -0 "$other"
  kill -0 "$renamed"
  kill "$other" "$renamed"
}

@test "lock_state_pids writes nothing when the state is another runner's, or missing" {
  run lock_state_pids "$$" bash
  assert_success
  [ ! -e "$LT_LOCK_STATE" ]
  printf '%s\t12345\tr\t\t\t\n' "$(dead_pid)" >"$LT_LOCK_STATE"
  local before
  before="$(cat "$LT_LOCK_STATE")"
  lock_state_pids "$$" bash
  [ "$(cat "$LT_LOCK_STATE")" = "$before" ]
}

@test "take_lock writes the state and lock_state_clear removes it" {
  take_lock
  [ "$(cut -f1 "$LT_LOCK_STATE")" = "$$" ]
  [ -O "$LT_LOCK_STATE" ]
  lock_state_clear
  [ ! -e "$LT_LOCK_STATE" ]
  exec 9>&-
}

# start_trapped_runner: a shell with the runner's traps (its cell's
# processes and renders stubbed), a lock state and a temporary directory,
# waiting to be signalled; its stderr goes to /dev/full, where every write
# fails as on a terminal that is gone.
start_trapped_runner() {
  mkdir -p "$BATS_TEST_TMPDIR/run" "$BATS_TEST_TMPDIR/tmp"
  printf '{"run_id": "r", "status": "running", "warnings": []}\n' >"$BATS_TEST_TMPDIR/run/manifest.json"
  cat >"$BATS_TEST_TMPDIR/runner.sh" <<'SH'
set -euo pipefail
source "$LT_ROOT/scripts/lib/common.sh"
for lib in results manifest lock space cell; do source "$LT_ROOT/scripts/lib/$lib.sh"; done
stop_cell_processes() { say "stopping"; }
results_render() { :; }
report_render() { :; }
LT_RUN_ID="${RUNNER_RUN_ID:-r}" LT_RUN_DIR="$1" LT_FINISHED=0 LT_INTERRUPTED=0
TMPDIR="$2" run_tmp_dir
lock_state_write
run_traps_set
# A cell's finish still running when the signal comes (RUNNER_FINISH_S > 0):
# it writes the cell's row after that long.
if [[ "${RUNNER_FINISH_S:-0}" != 0 ]]; then
  mkdir -p "$1/cells/01"
  cell_finish_steps() { sleep "$RUNNER_FINISH_S"; printf '{"status": "ok"}\n' >"$1/row.json"; }
  cell_finish_begin "$1/cells/01" ok "" 1.0 0 1 "$SECONDS"
fi
# A process of the run's whose pid no variable kept (RUNNER_LEFTOVER=1): one
# started just as the signal came. Only its id marks it as the run's.
if [[ "${RUNNER_LEFTOVER:-0}" == 1 ]]; then
  env -i "LT_RUN_ID=$LT_RUN_ID" sleep 300 9>&- &
  printf '%s\n' "$!" >"$1/leftover.pid"
fi
printf 'ready\n' >"$3"
while :; do sleep 0.05; done
SH
  bash "$BATS_TEST_TMPDIR/runner.sh" "$BATS_TEST_TMPDIR/run" "$BATS_TEST_TMPDIR/tmp" "$BATS_TEST_TMPDIR/ready" 2>/dev/full &
  RUNNER_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s "$BATS_TEST_TMPDIR/ready" ]] && return 0
    sleep 0.1
  done
  fail "the runner never got ready"
}

@test "SIGHUP with the terminal gone: status 129, the run interrupted, no lock state, no temporary file" {
  start_trapped_runner
  [ -s "$LT_LOCK_STATE" ]
  kill -HUP "$RUNNER_PID"
  local status=0
  wait "$RUNNER_PID" || status=$?
  [ "$status" -eq 129 ]
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/run/manifest.json")" = interrupted ]
  [ ! -e "$LT_LOCK_STATE" ]
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ''
}

@test "SIGTERM while a cell's finish runs beside the next cell: the exit waits for its row before marking the run" {
  RUNNER_FINISH_S=1 start_trapped_runner
  kill -TERM "$RUNNER_PID"
  local status=0
  wait "$RUNNER_PID" || status=$?
  [ "$status" -eq 143 ]
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/run/cells/01/row.json")" = ok ]
  # Its report mark came after the row, before the runner ended.
  grep -q '^reported' "$BATS_TEST_TMPDIR/run/cells/01/phases.tsv"
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/run/manifest.json")" = interrupted ]
}

@test "SIGTERM twice (timeout(1) signals the runner, then its process group): the second does not cut the clean-up short" {
  RUNNER_FINISH_S=1 start_trapped_runner
  kill -TERM "$RUNNER_PID"
  # The clean-up waits about a second for the cell's finish: signalled again meanwhile.
  sleep 0.3
  kill -TERM "$RUNNER_PID"
  sleep 0.1
  kill -INT "$RUNNER_PID"
  local status=0
  wait "$RUNNER_PID" || status=$?
  [ "$status" -eq 143 ]
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/run/cells/01/row.json")" = ok ]
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/run/manifest.json")" = interrupted ]
  [ ! -e "$LT_LOCK_STATE" ]
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ''
}

@test "SIGTERM: status 143, the run interrupted, no lock state" {
  start_trapped_runner
  kill -TERM "$RUNNER_PID"
  local status=0
  wait "$RUNNER_PID" || status=$?
  [ "$status" -eq 143 ]
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/run/manifest.json")" = interrupted ]
  [ ! -e "$LT_LOCK_STATE" ]
}

@test "the lock's directory is made with mode 0700 when missing" {
  rmdir "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  run bash -c 'source "$LT_ROOT/scripts/lib/common.sh"; source "$LT_ROOT/scripts/lib/manifest.sh"
    source "$LT_ROOT/scripts/lib/lock.sh"; lock_open; flock -n 9 && echo locked'
  assert_success
  assert_output locked
  [ "$(stat -c '%a %U' "$BATS_TEST_TMPDIR/lockdir/ltsuite")" = "700 root" ]
  [ -f "$LT_LOCK_FILE" ]
}

@test "the lock's directory planted by another user (a symlink, theirs, or writable by others): refused before anything is opened, nothing made where it points" {
  rmdir "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  mkdir "$BATS_TEST_TMPDIR/elsewhere"
  ln -s "$BATS_TEST_TMPDIR/elsewhere" "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  chown -h nobody "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  run bash -c 'source "$LT_ROOT/scripts/lib/common.sh"; source "$LT_ROOT/scripts/lib/manifest.sh"
    source "$LT_ROOT/scripts/lib/lock.sh"; lock_open'
  assert_failure
  assert_output --partial "the run lock's directory $BATS_TEST_TMPDIR/lockdir/ltsuite is a symlink (to $BATS_TEST_TMPDIR/elsewhere)"
  run ls -A "$BATS_TEST_TMPDIR/elsewhere"
  assert_output ''

  rm "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  mkdir -m 700 "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  chown nobody "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  run bash -c 'source "$LT_ROOT/scripts/lib/common.sh"; source "$LT_ROOT/scripts/lib/manifest.sh"
    source "$LT_ROOT/scripts/lib/lock.sh"; lock_open'
  assert_failure
  assert_output --partial "ltsuite belongs to uid $(id -u nobody), not to this user"
  [ ! -e "$LT_LOCK_FILE" ]

  chown root "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  chmod 1777 "$BATS_TEST_TMPDIR/lockdir/ltsuite"
  run bash -c 'source "$LT_ROOT/scripts/lib/common.sh"; source "$LT_ROOT/scripts/lib/manifest.sh"
    source "$LT_ROOT/scripts/lib/lock.sh"; lock_open'
  assert_failure
  assert_output --partial "ltsuite is writable by other users (mode 1777)"
  [ ! -e "$LT_LOCK_FILE" ]
}

@test "SIGTERM: a process of the run whose pid nothing kept (started as the signal came) is ended by the run's id" {
  RUNNER_RUN_ID="leftover-$$-$BATS_TEST_NUMBER" RUNNER_LEFTOVER=1 start_trapped_runner
  local leftover
  leftover="$(cat "$BATS_TEST_TMPDIR/run/leftover.pid")"
  kill -0 "$leftover"
  kill -TERM "$RUNNER_PID"
  local status=0
  wait "$RUNNER_PID" || status=$?
  [ "$status" -eq 143 ]
  # Gone, not a zombie of the runner's: its /proc entry is no more, or it is no longer that sleep.
  run cat "/proc/$leftover/cmdline"
  [[ "$status" -ne 0 || "$output" != sleep* ]] || fail "pid $leftover still runs: $output"
}

@test "end_child_in ends the background process a variable names, reaps it and empties the variable; an empty one is nothing" {
  # A child that ends on SIGTERM, as the cell's helpers do.
  sleep 30 &
  HELPER_PID=$!
  local pid="$HELPER_PID"
  end_child_in HELPER_PID TERM 5
  [ -z "$HELPER_PID" ]
  [ ! -e "/proc/$pid" ] || fail "the child $pid is still there"
  run end_child_in HELPER_PID TERM 5
  assert_success
}
