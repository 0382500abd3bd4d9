# shellcheck shell=bash
# Summary: the live line while a cell's k6 runs (ltsuite.live).

# The running live line: state of this file only, read by live_stop.
LIVE_PID=""
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
# for nothing.
live_start() {
  local cell_dir="$1" expected_s="$2" i n="${#K6_PIDS[@]}"
  [[ "${LT_LIVE:-on}" != off ]] || return 0
  local -a args=(--samples "$cell_dir/samples.tsv" --expected-s "$expected_s" --max-s "$((expected_s + 60))")
  if [[ -t 2 ]]; then
    args+=(--tty)
  else
    local every="${LT_LIVE_EVERY:-$LIVE_EVERY_DEFAULT}"
    ((expected_s >= every)) || return 0
    args+=(--every "$every")
  fi
  for ((i = 0; i < n; i++)); do
    args+=(--k6-samples "$(k6_instance_file "$cell_dir" "$i" "$n" samples)")
  done
  # A simple command in the background: $! is the process; not the run lock
  # (run-matrix.sh LT_LOCK_FD).
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.live "${args[@]}" 9>&- &
  LIVE_PID=$!
}

# live_stop: end the live line (it clears itself on a terminal).
live_stop() {
  [[ -n "$LIVE_PID" ]] || return 0
  end_child "$LIVE_PID" TERM 5 || true
  LIVE_PID=""
}
