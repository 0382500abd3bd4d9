# shellcheck shell=bash
# Summary: run a k6 scenario for one cell from the client namespace.

LT_K6="${LT_K6:-$LT_ROOT/.tools/bin/k6}"
# The k6 processes of the running cell (one per K6_INSTANCES), their cell
# directory and count: state of this file only, read by k6_wait and k6_stop.
K6_PIDS=()
K6_CELL_DIR=""
# Filled by hooks (monitoring, reports) before k6_start.
K6_EXTRA_ARGS=()
K6_EXTRA_ENV=()

# k6_duration_seconds DURATION: whole seconds (rounded up) of a k6 duration
# such as 1m30s or 500ms.
k6_duration_seconds() {
  local rest="$1" total_ms=0 number unit
  while [[ "$rest" =~ ^([0-9]+(\.[0-9]+)?)(ms|s|m|h)(.*)$ ]]; do
    number="${BASH_REMATCH[1]}"
    unit="${BASH_REMATCH[3]}"
    rest="${BASH_REMATCH[4]}"
    case "$unit" in
      ms) total_ms=$(awk -v t="$total_ms" -v n="$number" 'BEGIN { printf "%d", t + n }') ;;
      s) total_ms=$(awk -v t="$total_ms" -v n="$number" 'BEGIN { printf "%d", t + n * 1000 }') ;;
      m) total_ms=$(awk -v t="$total_ms" -v n="$number" 'BEGIN { printf "%d", t + n * 60000 }') ;;
      h) total_ms=$(awk -v t="$total_ms" -v n="$number" 'BEGIN { printf "%d", t + n * 3600000 }') ;;
    esac
  done
  printf '%d\n' $(((total_ms + 999) / 1000))
}

# k6_planned_seconds CELL_ASSOC: the longest the scenario can run (load time
# plus graceful stop), used to bound k6 and the sampler.
k6_planned_seconds() {
  local -n cell_values="$1"
  local load=0 stage
  local -a stage_list
  case "${cell_values[SCENARIO]}" in
    ramp | waiting-room)
      IFS=',' read -r -a stage_list <<<"${cell_values[STAGES]}"
      for stage in "${stage_list[@]}"; do
        load=$((load + $(k6_duration_seconds "${stage%:*}")))
      done
      ;;
    burst) load=$(($(k6_duration_seconds "${cell_values[DURATION]}") + (cell_values[BURST_LEAD_MS] + 999) / 1000)) ;;
    websocket)
      # Its teardown() waits two sample intervals, so the sampler sees the
      # TIME-WAITs of the last sessions.
      load=$(($(k6_duration_seconds "${cell_values[DURATION]}") + 2 * cell_values[SAMPLE_INTERVAL]))
      ;;
    *) load="$(k6_duration_seconds "${cell_values[DURATION]}")" ;;
  esac
  printf '%d\n' $((load + $(k6_duration_seconds "${cell_values[GRACEFUL_STOP]}")))
}

# k6_start CELL_ASSOC CELL_DIR TARGET_URL LIMIT_S [k6 args...]: start
# `k6 run` in the client namespace in the background. k6 sees only the
# cell's knobs and the run's identity, not the caller's environment.
# "-e LT_RUN_ID=" marks the process as this suite's (a --tag would replace
# the script's own tags). After LIMIT_S it gets SIGINT (it then still writes
# its summary), and SIGKILL 30 s later.
# K6_INSTANCES=N runs N k6 processes, each its execution segment of the
# scenario (as on N machines): one process holds at most its open-file limit
# of sockets. Each writes k6-summaries/<i>.json, merged by k6_wait; only the
# first writes the side outputs (K6_EXTRA_ARGS, K6_EXTRA_ENV).
k6_start() {
  local -n cell_values="$1"
  local cell_dir="$2" target_url="$3" limit_s="$4" key
  shift 4
  local instances="${cell_values[K6_INSTANCES]:-1}" i summary log
  local -a env_args=("PATH=$PATH" "HOME=${HOME:-/root}")
  for key in "${!cell_values[@]}"; do
    env_args+=("$key=${cell_values[$key]}")
  done
  local -a in_namespace local_ips=() segment=() extra_args extra_env
  mapfile -t in_namespace < <(netns_prefix client)
  if [[ "${cell_values[CLIENT_ADDRESSES]:-1}" -gt 1 && "$NETNS_HOST_MODE" != 1 ]]; then
    local addresses
    addresses="$(netns_client_addresses "${cell_values[CLIENT_ADDR]}" "${cell_values[CLIENT_ADDRESSES]}")"
    local_ips=("--local-ips=${addresses// /,}")
  fi
  K6_CELL_DIR="$cell_dir"
  K6_PIDS=()
  # One start instant for every instance of a burst.
  [[ "$instances" -eq 1 ]] || env_args+=("BURST_START_AT=$(($(date +%s%3N) + ${cell_values[BURST_LEAD_MS]:-0}))")
  [[ "$instances" -eq 1 ]] || mkdir -p "$cell_dir/k6-summaries"
  for ((i = 0; i < instances; i++)); do
    summary="$cell_dir/summary.json"
    log="$cell_dir/k6.log"
    extra_args=("${K6_EXTRA_ARGS[@]}")
    extra_env=("${K6_EXTRA_ENV[@]}")
    if [[ "$instances" -gt 1 ]]; then
      summary="$cell_dir/k6-summaries/$i.json"
      [[ $i -eq 0 ]] || { log="$cell_dir/k6-$((i + 1)).log"; extra_args=(); extra_env=(); }
      segment=(--execution-segment "$i/$instances:$((i + 1))/$instances"
        --execution-segment-sequence "$(k6_segment_sequence "$instances")")
    fi
    # After the knobs: env keeps the last of duplicate names, and these are
    # the runner's, e.g. TARGET_URL is the resolved target even when the knob is empty.
    (
      # k6 keeps one socket per VU: give it every file descriptor allowed.
      ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
      exec timeout --signal=INT --kill-after=30 "$limit_s" \
        "${in_namespace[@]}" env -i "${env_args[@]}" \
        "TARGET_URL=$target_url" "SUMMARY_FILE=$summary" \
        "RUN_ID=$LT_RUN_ID" "CELL_ID=$(basename "$cell_dir")" "${extra_env[@]}" \
        "$LT_K6" run --no-usage-report --address "" -e "LT_RUN_ID=$LT_RUN_ID" \
        "${segment[@]}" "${local_ips[@]}" "${extra_args[@]}" "$@" \
        "$LT_ROOT/scenarios/${cell_values[SCENARIO]}.js"
    ) >"$log" 2>&1 &
    K6_PIDS+=("$!")
  done
}

# k6_segment_sequence N: "0,1/N,2/N,...,1".
k6_segment_sequence() {
  local n="$1" i sequence="0"
  for ((i = 1; i < n; i++)); do
    sequence+=",$i/$n"
  done
  printf '%s,1\n' "$sequence"
}

# k6_wait: wait for every k6 of the cell; return the first non-zero exit
# status (0 if all succeeded). With several instances their summaries are
# merged into summary.json.
k6_wait() {
  local status=0 pid pid_status
  for pid in "${K6_PIDS[@]}"; do
    pid_status=0
    wait "$pid" || pid_status=$?
    [[ $status -ne 0 ]] || status=$pid_status
  done
  if [[ ${#K6_PIDS[@]} -gt 1 ]]; then
    k6_merge_summaries "$K6_CELL_DIR/k6-summaries" | write_atomic "$K6_CELL_DIR/summary.json" || true
  fi
  K6_PIDS=()
  return "$status"
}

# k6_merge_summaries DIR: one k6 summary from the instances' (merge-summaries.jq).
k6_merge_summaries() {
  jq -s -f "$LT_ROOT/scripts/lib/merge-summaries.jq" "$1"/*.json
}

# k6_stop: interrupt running k6 processes (they write their summaries) and reap them.
k6_stop() {
  local pid
  for pid in "${K6_PIDS[@]}"; do
    kill -INT "$pid" 2>/dev/null || true
  done
  for pid in "${K6_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  K6_PIDS=()
}

# k6_version: the k6 version line.
k6_version() {
  "$LT_K6" version 2>/dev/null | head -n 1
}
