# shellcheck shell=bash
# Summary: run a k6 scenario for one cell from the client namespace.

LT_K6="${LT_K6:-$LT_ROOT/.tools/bin/k6}"
K6_PID=""
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
    *) load="$(k6_duration_seconds "${cell_values[DURATION]}")" ;;
  esac
  printf '%d\n' $((load + $(k6_duration_seconds "${cell_values[GRACEFUL_STOP]}")))
}

# k6_start CELL_ASSOC CELL_DIR TARGET_URL LIMIT_S [k6 args...]: start
# `k6 run` in the client namespace in the background (pid in K6_PID). k6 sees
# only the cell's knobs and the run's identity, not the caller's environment.
# "-e LT_RUN_ID=" marks the process as this suite's (a --tag would replace
# the script's own tags). After LIMIT_S it gets SIGINT (it then still writes its summary), and SIGKILL
# 30 s later.
k6_start() {
  local -n cell_values="$1"
  local cell_dir="$2" target_url="$3" limit_s="$4" key
  shift 4
  local -a env_args=("PATH=$PATH" "HOME=${HOME:-/root}")
  for key in "${!cell_values[@]}"; do
    env_args+=("$key=${cell_values[$key]}")
  done
  # After the knobs: env keeps the last of duplicate names, and these are the
  # runner's, e.g. TARGET_URL is the resolved target even when the knob is empty.
  env_args+=(
    "TARGET_URL=$target_url"
    "SUMMARY_FILE=$cell_dir/summary.json"
    "RUN_ID=$LT_RUN_ID" "CELL_ID=$(basename "$cell_dir")"
    "${K6_EXTRA_ENV[@]}"
  )
  local -a in_namespace
  mapfile -t in_namespace < <(netns_prefix client)
  (
    # k6 keeps one socket per VU: give it every file descriptor allowed.
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    exec timeout --signal=INT --kill-after=30 "$limit_s" \
      "${in_namespace[@]}" env -i "${env_args[@]}" \
      "$LT_K6" run --no-usage-report --address "" -e "LT_RUN_ID=$LT_RUN_ID" \
      "${K6_EXTRA_ARGS[@]}" "$@" \
      "$LT_ROOT/scenarios/${cell_values[SCENARIO]}.js"
  ) >"$cell_dir/k6.log" 2>&1 &
  K6_PID=$!
}

# k6_wait: wait for k6 and return its exit status.
k6_wait() {
  local status=0
  wait "$K6_PID" || status=$?
  K6_PID=""
  return "$status"
}

# k6_stop: interrupt a running k6 (it writes its summary) and reap it.
k6_stop() {
  [[ -n "$K6_PID" ]] || return 0
  kill -INT "$K6_PID" 2>/dev/null || true
  wait "$K6_PID" 2>/dev/null || true
  K6_PID=""
}

# k6_version: the k6 version line.
k6_version() {
  "$LT_K6" version 2>/dev/null | head -n 1
}
