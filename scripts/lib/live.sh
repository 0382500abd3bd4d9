# shellcheck shell=bash
# Summary: the live line while a cell's k6 runs (ltsuite.live).

# The running live line: state of this file only, read by live_stop. LIVE_WAITS:
# 1 while a live process started with the warm-up waits for the load to show
# its line (live_start signals it).
LIVE_PID=""
LIVE_WAITS=0
# Seconds between plain lines without a terminal (ltsuite.live --every, which
# has no default of its own).
readonly LIVE_EVERY_DEFAULT=5

# live_start CELL_DIR EXPECTED_S: show what the users and the server are
# doing now, until live_stop: a line rewritten each second when the
# runner's stderr is a terminal, else a plain line every LT_LIVE_EVERY
# seconds (ltsuite.live's default, 5). The users' counts come from the new
# bytes of each k6 process's samples file (k6_instance_file samples, one per
# process k6_start started), the server's from the sampler's samples.tsv.
# It opens no socket: one to k6's REST API would be counted in the client
# namespace's TcpActiveOpens (client_connects). LT_LIVE=off shows nothing,
# and so does a cell planned to end before its first plain line (no
# terminal, EXPECTED_S under LT_LIVE_EVERY): a Python start, beside k6's own,
# for nothing. A live process the warm-up started (live_start_with_warmup)
# is told the load started (SIGUSR1) instead of a second one started.
live_start() {
  local cell_dir="$1" expected_s="$2"
  local -a args
  if [[ -n "$LIVE_PID" ]]; then
    if ((LIVE_WAITS)); then
      kill -USR1 "$LIVE_PID" 2>/dev/null || true
    fi
    return 0
  fi
  live_line_args_into args "$cell_dir" "$expected_s" "${#K6_PIDS[@]}" || return 0
  live_python "${args[@]}"
}

# live_arm CELL_DIR EXPECTED_S INSTANCES: the live process of the load's
# INSTANCES k6 processes started now, as a warm-up of a fixed length starts,
# to show its line once live_start signals the load's start (SIGUSR1): its
# Python's start (about 80 ms of CPU) then falls in the warm-up, not beside
# the load's k6 as it starts. Only with a warm-up: the signal must not come
# before the process can take it, and a warm-up lasts seconds. Nothing when
# there is no line to show.
live_arm() {
  local -a args
  live_line_args_into args "$1" "$2" "$3" || return 0
  live_python --armed "${args[@]}"
  LIVE_WAITS=1
}

# live_start_with_warmup CELL_DIR ACCESS_LOG EXPECTED_S INSTANCES START_MS LIMIT_S PID [COUNT]:
# the live process, started as the warm-up's k6 (PID) starts, watches the
# warm-up first (ltsuite.live --warmup-cell: WARMUP_UNTIL=settled, or count
# with COUNT, from the target's ACCESS_LOG as it is written:
# backend_access_log) and ends that k6 by the rule, then waits for live_start to show
# the line of the load's INSTANCES k6 processes (EXPECTED_S), or ends when
# there is none to show: the rule costs the cell no Python start of its own.
live_start_with_warmup() {
  local cell_dir="$1" expected_s="$3" instances="$4" stat="" started
  local -a args=() fields watch=(--warmup-cell "$1" --warmup-access-log "$2" --warmup-start-ms "$5"
    --warmup-limit-s "$6" --warmup-pid "$7")
  # PID's start time (field 22 of /proc/PID/stat, after its name's last ")"),
  # read while it is this shell's child not yet waited for, so that no other
  # process that takes its pid later is taken for it.
  read -r stat 2>/dev/null <"/proc/$7/stat" || true
  read -ra fields <<<"${stat##*) }"
  started="${fields[19]:-}"
  [[ -z "$started" ]] || watch+=(--warmup-started "$started")
  [[ -z "${8:-}" ]] || watch+=(--warmup-count "$8")
  if live_line_args_into args "$cell_dir" "$expected_s" "$instances"; then
    LIVE_WAITS=1
  else
    args=(--no-line)
  fi
  live_python "${watch[@]}" "${args[@]}"
}

# live_line_args_into ARRAY CELL_DIR EXPECTED_S INSTANCES: ARRAY set to
# ltsuite.live's arguments for the line of a cell of INSTANCES k6 processes;
# fails when there is no line to show (LT_LIVE=off, or no terminal and
# EXPECTED_S under LT_LIVE_EVERY). Into an array: no process.
live_line_args_into() {
  local -n line_args="$1"
  local cell_dir="$2" expected_s="$3" n="$4" i every
  line_args=()
  [[ "${LT_LIVE:-on}" != off ]] || return 1
  if [[ -t 2 ]]; then
    line_args+=(--tty)
  else
    every="${LT_LIVE_EVERY:-$LIVE_EVERY_DEFAULT}"
    ((expected_s >= every)) || return 1
    line_args+=(--every "$every")
  fi
  line_args=(--samples "$cell_dir/samples.tsv" --expected-s "$expected_s" --max-s "$((expected_s + 60))"
    "${line_args[@]}")
  for ((i = 0; i < n; i++)); do
    line_args+=(--k6-samples "$(k6_instance_file "$cell_dir" "$i" "$n" samples)")
  done
}

# live_python ARGS...: ltsuite.live with ARGS in the background (LIVE_PID).
live_python() {
  # A simple command in the background: $! is the process; not the run lock
  # (run-matrix.sh LT_LOCK_FD).
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.live "$@" 9>&- &
  LIVE_PID=$!
}

# live_stop: end the live line (it clears itself on a terminal).
live_stop() {
  end_child_in LIVE_PID TERM 5
  LIVE_WAITS=0
}
