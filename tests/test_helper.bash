# shellcheck shell=bash
# Shared set-up for every .bats file: assertions, the repo root, a sandbox.

LT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LT_ROOT
load "$LT_ROOT/.tools/bats/node_modules/bats-support/load.bash"
load "$LT_ROOT/.tools/bats/node_modules/bats-assert/load.bash"

# Runs started by tests queue behind any other run on this host instead of
# failing on the host-wide lock.
export LT_LOCK_WAIT="${LT_LOCK_WAIT:-900}"

# lt_source_libs NAME...: source scripts/lib/NAME.sh into the test's shell.
lt_source_libs() {
  local lib
  # shellcheck source=scripts/lib/common.sh
  source "$LT_ROOT/scripts/lib/common.sh"
  for lib in "$@"; do
    # shellcheck source=/dev/null
    source "$LT_ROOT/scripts/lib/$lib.sh"
  done
}

# lt_untraced CMD [ARG...]: CMD without bats' DEBUG trap, put back after it. Bats runs
# that trap before every command of a test (for its stack traces), so a library's loop of
# many small commands runs many times slower inside a test than in the suite: knobs_load of
# env/defaults.env took 2.87 s traced against 0.20 s untraced here. A failing CMD still fails
# the test (errexit), without the stack trace inside CMD.
lt_untraced() {
  local debug_trap
  debug_trap="$(trap -p DEBUG)"
  trap - DEBUG
  "$@"
  eval "$debug_trap"
}

# lt_write FILE: stdin into FILE (under the test's temporary directory).
lt_write() {
  mkdir -p "$(dirname "$1")"
  cat >"$1"
}

# lt_require_root: integration tests create network namespaces.
lt_require_root() {
  if [[ $EUID -ne 0 ]]; then
    skip "needs root (network namespaces); run make test as root"
  fi
}

# lt_run_matrix_once MATRIX: in setup_file, one run of MATRIX into the test
# file's own results directory (LT_RESULTS_DIR, exported for the tests); its
# output goes to run.log and its exit status to run.status there.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run
lt_run_matrix_once() {
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  run "$LT_ROOT/scripts/run-matrix.sh" "$1"
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  printf '%s\n' "$status" >"$BATS_FILE_TMPDIR/run.status"
}

# lt_latest [RESULTS_DIR]: the latest run under RESULTS_DIR (LT_RESULTS_DIR
# when none is given), its path resolved: what lt_cells and lt_row_value read
# as RUN_DIR.
lt_latest() {
  readlink -f "${1:-$LT_RESULTS_DIR}/latest"
}

# lt_setup_latest [RESULTS_DIR]: a setup() over the run its file's
# setup_file made into RESULTS_DIR (BATS_FILE_TMPDIR/results when none is
# given): root checked, RUN_DIR that run (lt_latest).
lt_setup_latest() {
  bats_require_minimum_version 1.5.0
  lt_require_root
  RUN_DIR="$(lt_latest "${1:-$BATS_FILE_TMPDIR/results}")"
}

# lt_run_settings_once NAME KEY=VALUE...: in setup_file, as root, one run of
# a matrix of these lines (BATS_FILE_TMPDIR/NAME.matrix; lt_run_matrix_once).
lt_run_settings_once() {
  lt_require_root
  local matrix="$BATS_FILE_TMPDIR/$1.matrix"
  shift
  printf '%s\n' "$@" >"$matrix"
  lt_run_matrix_once "$matrix"
}

# lt_csv_column CSV NAME: the values of column NAME, one per line (no header).
# The suite's CSV quotes only text with commas or quotes; numbers are bare.
lt_csv_column() {
  local csv="$1" name="$2"
  python3 - "$csv" "$name" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    for row in csv.DictReader(f):
        print(row[sys.argv[2]])
PY
}

# The readers below look at the run in $RUN_DIR (set by the test's setup).

# lt_cell_value CELL KEY: a knob of a cell, as the runner resolved it.
lt_cell_value() {
  sed -n "s/^$2=//p" "$RUN_DIR/cells/$1/cell.env"
}

# lt_effective_sysctl CELL SIDE NAME: what the kernel reported in that namespace.
lt_effective_sysctl() {
  awk -F'\t' -v side="$2" -v name="$3" '$1 == side && $2 == name { print $3 }' \
    "$RUN_DIR/cells/$1/sysctls.tsv"
}

# lt_row_value CELL COLUMN: one value of the results row of CELL.
lt_row_value() {
  jq -r --arg c "$2" '.[$c] // empty' "$RUN_DIR/cells/$1/row.json"
}

# lt_assert_saturated_capacity CELL: at saturation the listener's backlog is
# min(accept-count, somaxconn), Tomcat holds max-connections and the accept
# queue backlog + 1, so the server max-connections + backlog + 1. The kernel
# checks "queue full" before it adds a connection, without a lock, so
# handshakes that complete at the same moment on several CPUs can each pass
# the check: the queue may hold up to (CPUs - 1) more. Fails with the cell's
# sampled series.
lt_assert_saturated_capacity() {
  local cell="$1" mc ac somaxconn backlog expected peak queue cpus
  mc="$(lt_cell_value "$cell" TOMCAT_MAX_CONNECTIONS)"
  ac="$(lt_cell_value "$cell" TOMCAT_ACCEPT_COUNT)"
  somaxconn="$(lt_effective_sysctl "$cell" server net.core.somaxconn)"
  backlog=$((ac < somaxconn ? ac : somaxconn))
  expected=$((mc + backlog + 1))
  cpus="$(nproc)"
  peak="$(lt_row_value "$cell" server_conns_peak)"
  queue="$(lt_row_value "$cell" accept_queue_peak)"
  # Saturated: more users than the server can hold.
  [ "$(lt_cell_value "$cell" VUS)" -gt "$expected" ] || fail "$cell: not saturated"
  [ "$(lt_row_value "$cell" listen_backlog)" -eq "$backlog" ] || fail "$cell: listen_backlog $(lt_row_value "$cell" listen_backlog), expected $backlog"
  [ "$(lt_row_value "$cell" queue_capacity)" -eq "$expected" ] || fail "$cell: queue_capacity $(lt_row_value "$cell" queue_capacity), expected $expected"
  if [ "$queue" -lt $((backlog + 1)) ] || [ "$queue" -gt $((backlog + cpus)) ] \
    || [ "$peak" -ne $((mc + queue)) ]; then
    fail "$cell: server_conns_peak $peak, accept_queue_peak $queue; expected $expected and $((backlog + 1)) (at most $((cpus - 1)) more on $cpus CPUs); samples:
$(cat "$RUN_DIR/cells/$cell/samples.tsv")"
  fi
}

# lt_assert_prediction_kept CELL: the row's prediction check matched, or its
# notes name the counters that explain the difference.
lt_assert_prediction_kept() {
  local cell="$1"
  case "$(lt_row_value "$cell" prediction_check)" in
    match) ;;
    mismatch)
      run lt_row_value "$cell" prediction_notes
      refute_output --partial "nothing in the cell's counters explains"
      ;;
    *) fail "$cell: no prediction_check" ;;
  esac
}

# lt_assert_raw_percentiles ROW_JSON SAMPLES...: the row's med, p90, p95 and
# p99 (from merged histograms) are those of every raw sample in the k6 JSON
# outputs SAMPLES (ltsuite.latency, as k6 computes them) within the
# histogram's 0.5 % (and the row's 0.001 ms). Prints the samples' count.
lt_assert_raw_percentiles() {
  local row="$1" exact column name
  shift
  exact="$(PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.latency "$@")"
  for column in med:lat_med_ms 'p(90):lat_p90_ms' 'p(95):lat_p95_ms' 'p(99):lat_p99_ms'; do
    name="${column%%:*}"
    jq -e --arg name "$name" --arg column "${column#*:}" --argjson exact "$exact" \
      '.[$column] != null and ((.[$column] - $exact[$name]) | fabs <= 0.005 * $exact[$name] + 0.0005)' "$row" >/dev/null \
      || { fail "${column#*:} $(jq --arg c "${column#*:}" '.[$c]' "$row") against $(jq --arg n "$name" '.[$n]' <<<"$exact") of the raw samples"; return 1; }
  done
  jq .count <<<"$exact"
}

# lt_end PID...: end what the test started and a failure left running (a
# runner, a server, a lock holder; an empty PID is skipped): SIGTERM, SIGKILL
# after 30 s, then reaped. Never a bare `wait`: it would wait for bats' own
# timer of BATS_TEST_TIMEOUT and for lt_watch too, the test's whole limit.
lt_end() {
  local pid i stat
  for pid in "$@"; do
    if [[ "$pid" =~ ^[0-9]+$ ]]; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for pid in "$@"; do
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    for ((i = 0; i < 300; i++)); do
      stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || break
      [[ "${stat##*) }" != Z* ]] || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    [[ ! -e "/proc/$pid" ]] || wait "$pid" 2>/dev/null || true
  done
}

# lt_execwatch_start LOG: every program this shell's descendants start from
# now on, as the kernel reports it (tests/tools/execwatch.py: its process
# events, every execve however started), logged to LOG until
# lt_execwatch_stop LOG; its pid in LT_EXECWATCH_PID. A watcher that did not
# start is written to LOG.failed (lt_execwatch_whole).
lt_execwatch_start() {
  local log="$1" ready="" root="$BASHPID"
  coproc WATCH { exec python3 "$LT_ROOT/tests/tools/execwatch.py" "$root" "$log" 3>&-; }
  LT_EXECWATCH_PID="$WATCH_PID"
  ready="$(timeout 10 head -n 1 <&"${WATCH[0]}")" || true
  [[ "$ready" == ready ]] || printf 'execwatch did not start\n' >"$log.failed"
}

# lt_execwatch_stop LOG: end the watcher lt_execwatch_start started; a
# watcher that ended before (so saw not all) or lost events (its socket's
# buffer overflowed: a count would be short) is written to LOG.failed.
lt_execwatch_stop() {
  local log="$1" stat
  stat="$(cat "/proc/$LT_EXECWATCH_PID/stat" 2>/dev/null)" || stat="gone) Z"
  [[ "${stat##*) }" != Z* ]] || printf 'execwatch ended before the run did\n' >>"$log.failed"
  lt_end "$LT_EXECWATCH_PID"
  ! grep -q $'\tLOST\t' "$log" \
    || printf 'execwatch lost events (its socket buffer overflowed): the counts would be short\n' >>"$log.failed"
}

# lt_execwatch_whole LOG: fail when the watcher did not see the whole run
# (it did not start, ended early or lost events): a count over LOG would be short.
lt_execwatch_whole() {
  [[ ! -e "$1.failed" ]] || fail "$(cat "$1.failed")"
}

# lt_python_starts: from execwatch's log on stdin, every process that became
# Python (its exe python3*), once, as "epoch ms<TAB>arguments". A process
# whose /proc was gone before it was read (exe "?", most often a short
# sleep or cat) is not counted: a Python among them would make a count
# short, never right.
lt_python_starts() {
  awk -F'\t' '$3 ~ /\/python3[.0-9]*$/ && !seen[$2]++ { print $1 "\t" $4 }'
}

# lt_cells: the run's cell ids, in order.
lt_cells() {
  lt_csv_column "$RUN_DIR/results.csv" cell
}

# lt_free_port: a TCP port nothing listens on at 127.0.0.1 now.
lt_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- Time limits ------------------------------------------------------------
# Every test runs under bats' BATS_TEST_TIMEOUT (seconds; the Makefile's
# default, a file that needs more sets its own at its top): bats ends the
# test's processes and names it "# timeout after N s", and the suite goes on.
# A little before that, the test's processes are written to its output
# (lt_watch), so a hang says what was running. bats gives a file's setup_file
# no limit: it gets LT_SETUP_FILE_TIMEOUT seconds, then its processes are
# written and ended and the file fails as "setup_file failed".

# lt_descendants PID: PID's descendants (children first), one a line, from
# the kernel's parent links (/proc/PID/task/*/children).
lt_descendants() {
  local pid child
  local -a queue=("$1")
  while [[ ${#queue[@]} -gt 0 ]]; do
    pid="${queue[0]}"
    queue=("${queue[@]:1}")
    # shellcheck disable=SC2013 # SC2013: the file is one line of space-separated pids
    for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
      printf '%s\n' "$child"
      queue+=("$child")
    done
  done
}

# lt_process_tree PID [EXCEPT]: PID and its descendants (all but EXCEPT and
# its own), as ps draws them: pid, parent, group, session, state, age, what
# each waits in, command.
lt_process_tree() {
  local pid
  local -a pids=("$1")
  for pid in $(lt_descendants "$1"); do pids+=("$pid"); done
  if [[ -n "${2:-}" ]]; then
    local -a keep=()
    local skip
    skip=" $2 $(lt_descendants "$2" | tr '\n' ' ') "
    for pid in "${pids[@]}"; do [[ "$skip" == *" $pid "* ]] || keep+=("$pid"); done
    pids=("${keep[@]}")
  fi
  ps -o pid,ppid,pgid,sid,stat,etime,wchan:16,args --forest -p "$(IFS=,; printf '%s' "${pids[*]}")" 2>/dev/null \
    | cut -c1-400
}

# lt_watch: started by test_helper's load (in setup or setup_file) in the
# background, fd 3 closed (bats waits on it): in a test with
# BATS_TEST_TIMEOUT, the test's processes written to its output 3 s before
# bats ends them; in setup_file, after LT_SETUP_FILE_TIMEOUT, its processes
# written to the file's output and ended (SIGTERM, the file's shell too, so
# setup_file fails). It ends with the test, or once setup_file has returned
# (the file's shell writes no more to its output: BATS_OUT).
lt_watch() {
  local shell_pid="$1" mode="$2" limit="$3" self="$BASHPID" deadline fd
  # Nothing of bats' but its output: a pipe bats reads to its end (the
  # test's TAP line) would wait for this process too.
  for fd in /proc/"$self"/fd/*; do
    fd="${fd##*/}"
    ((fd <= 2)) || eval "exec $fd>&-"
  done
  deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    [[ -d "/proc/$shell_pid" ]] || return 0
    [[ "$mode" != setup_file || "/proc/$shell_pid/fd/1" -ef "$BATS_OUT" ]] || return 0
    sleep 1
  done
  [[ -d "/proc/$shell_pid" ]] || return 0
  if [[ "$mode" == test ]]; then
    printf '# %s is about to be ended after %s s (BATS_TEST_TIMEOUT); what runs:\n%s\n' \
      "${BATS_TEST_DESCRIPTION:-the test}" "$BATS_TEST_TIMEOUT" "$(lt_process_tree "$shell_pid" "$self")" >&2
    return 0
  fi
  [[ "/proc/$shell_pid/fd/1" -ef "$BATS_OUT" ]] || return 0
  local -a pids
  mapfile -t pids < <(lt_descendants "$shell_pid" | grep -vxF -f <(printf '%s\n' "$self"; lt_descendants "$self"))
  printf '# setup_file of %s ended after %s s (LT_SETUP_FILE_TIMEOUT); what ran:\n%s\n' \
    "${BATS_TEST_FILENAME##*/}" "$limit" "$(lt_process_tree "$shell_pid" "$self")" >&2
  kill -TERM "${pids[@]}" "$shell_pid" 2>/dev/null || true
}

# lt_watch_start: lt_watch for the test or setup_file that loads this file.
lt_watch_start() {
  # Once a shell: a file loaded twice (a helper that loads it) watches once.
  [[ -z "${LT_WATCHED:-}" ]] || return 0
  LT_WATCHED=1
  # This shell's pid, taken here: the arguments of a background command are
  # expanded in its own process.
  local shell_pid="$BASHPID"
  if [[ -n "${BATS_TEST_NAME:-}" ]]; then
    [[ "${BATS_TEST_TIMEOUT:-}" =~ ^[0-9]+$ ]] && ((BATS_TEST_TIMEOUT > 3)) || return 0
    lt_watch "$shell_pid" test $((BATS_TEST_TIMEOUT - 3)) 3>&- &
  elif [[ -n "${BATS_OUT:-}" ]]; then
    lt_watch "$shell_pid" setup_file "${LT_SETUP_FILE_TIMEOUT:-1800}" 3>&- &
  fi
}
lt_watch_start
