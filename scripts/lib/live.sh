# shellcheck shell=bash
# Summary: the live line while a cell's k6 runs (ltsuite.live).

# The running live line: state of this file only, read by live_stop.
LIVE_PID=""

# live_start CELL_ASSOC CELL_DIR EXPECTED_S: show what the users and the
# server are doing now, until live_stop: a line rewritten each second when
# the runner's stderr is a terminal, else a plain line every LT_LIVE_EVERY
# seconds (ltsuite.live's default, 5). It reads each k6 process's REST API
# (k6_api_address), so it runs in the client namespace, and the sampler's
# samples.tsv. LT_LIVE=off shows nothing.
live_start() {
  local -n live_values="$1"
  local cell_dir="$2" expected_s="$3" i address
  [[ "${LT_LIVE:-on}" != off ]] || return 0
  local -a args=(--samples "$cell_dir/samples.tsv" --expected-s "$expected_s" --max-s "$((expected_s + 60))")
  for ((i = 0; i < ${live_values[K6_INSTANCES]:-1}; i++)); do
    address="$(k6_api_address live_values "$i")"
    [[ -z "$address" ]] || args+=(--api "$address")
  done
  if [[ -t 2 ]]; then
    args+=(--tty)
  elif [[ -n "${LT_LIVE_EVERY:-}" ]]; then
    args+=(--every "$LT_LIVE_EVERY")
  fi
  local -a in_namespace
  mapfile -t in_namespace < <(netns_prefix client)
  # A simple command in the background: $! is the process (ip netns exec
  # execs it); not the run lock (run-matrix.sh LT_LOCK_FD).
  PYTHONPATH="$LT_ROOT/scripts" "${in_namespace[@]}" "$LT_PYTHON" -S -m ltsuite.live "${args[@]}" 9>&- &
  LIVE_PID=$!
}

# live_stop: end the live line (it clears itself on a terminal).
live_stop() {
  [[ -n "$LIVE_PID" ]] || return 0
  kill -TERM "$LIVE_PID" 2>/dev/null || true
  wait "$LIVE_PID" 2>/dev/null || true
  LIVE_PID=""
}
