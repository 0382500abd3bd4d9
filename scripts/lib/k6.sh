# shellcheck shell=bash
# Summary: run a k6 scenario for one cell from the client namespace.

LT_K6="${LT_K6:-$LT_ROOT/.tools/bin/k6}"
# k6 runs in a directory of the cell (k6_start): a relative path to it
# would no longer lead there.
[[ "$LT_K6" != */* || "$LT_K6" == /* ]] || LT_K6="$PWD/$LT_K6"
# The k6 processes of the running cell (one per K6_INSTANCES), their cell
# directory and count: state of this file only, read by k6_wait and k6_stop.
K6_PIDS=()
K6_CELL_DIR=""

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

# k6_planned_seconds CELL_ASSOC [CELL_DIR]: the longest the scenario can run
# (load time plus graceful stop), used to bound k6 and the sampler. A script
# of one's own says it in CELL_DIR/k6-script.json (k6_prepare_script).
k6_planned_seconds() {
  local -n cell_values="$1"
  local cell_dir="${2:-}" load=0 stage
  local -a stage_list
  if k6_own_script "${cell_values[SCENARIO]}"; then
    k6_duration_seconds "$(jq -r '.totalDuration // "0s"' "$cell_dir/k6-script.json")"
    return
  fi
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

# k6_script_path SCENARIO: the file k6 runs for SCENARIO.
k6_script_path() {
  if k6_own_script "$1"; then
    printf '%s\n' "$1"
  else
    printf '%s\n' "$LT_ROOT/scenarios/$1.js"
  fi
}

# k6_cell_env CELL_ASSOC TARGET_URL: the environment k6 gets, "NAME=value" a
# line: every knob of the cell, then the runner's own (env keeps the last of
# duplicate names: TARGET_URL is the resolved target even when the knob is
# empty). BASE_URL is the same URL, the name many scripts read.
k6_cell_env() {
  local -n env_values="$1"
  local target_url="$2" key
  printf '%s\n' "PATH=$PATH" "HOME=${HOME:-/root}"
  for key in "${!env_values[@]}"; do
    printf '%s=%s\n' "$key" "${env_values[$key]}"
  done
  printf '%s\n' "TARGET_URL=$target_url" "BASE_URL=$target_url"
  # HTTPS (TARGET_TLS, tls_cell_prepare): the run's certificate as k6's only
  # root (Go reads SSL_CERT_FILE on Linux), so k6 verifies every handshake.
  [[ -z "${TLS_CERT_FILE:-}" ]] || printf '%s\n' "SSL_CERT_FILE=$TLS_CERT_FILE"
}

# k6_inspect CELL_ASSOC TARGET_URL: `k6 inspect --execution-requirements` of
# the cell's script with the environment it will run with: its options as
# k6 resolved them, maxVUs and totalDuration. Fails with k6's message.
k6_inspect() {
  local -n inspect_values="$1"
  local target_url="$2"
  local -a env_args
  mapfile -t env_args < <(k6_cell_env inspect_values "$target_url")
  # k6 inspect reads no environment variable without the flag.
  env -i "${env_args[@]}" "$LT_K6" inspect --include-system-env-vars --execution-requirements \
    "$(k6_script_path "${inspect_values[SCENARIO]}")" 2>&1
}

# k6_prepare_script CELL_ASSOC CELL_DIR TARGET_URL [INSPECTED]: for a script
# of one's own, its inspection (k6-script.json: a copy of INSPECTED when that
# file exists, made with the same values before the run; else k6 is asked)
# and the entry module k6 runs (k6-entry.js, see scenarios/lib/own-script.js).
# Nothing for a shipped one. On failure the reason is in CELL_ERROR.
k6_prepare_script() {
  local -n prepare_values="$1"
  local cell_dir="$2" target_url="$3" inspected="${4:-}"
  k6_own_script "${prepare_values[SCENARIO]}" || return 0
  if [[ -n "$inspected" && -s "$inspected" ]]; then
    cp "$inspected" "$cell_dir/k6-script.json" || { cell_error "cannot copy $inspected into the cell"; return 1; }
  else
    k6_inspect_into prepare_values "$target_url" "$cell_dir/k6-script.json" || return 1
  fi
  k6_entry_module "${prepare_values[SCENARIO]}" "$cell_dir/k6-script.json" | write_atomic "$cell_dir/k6-entry.js"
}

# k6_inspect_into CELL_ASSOC TARGET_URL FILE: k6_inspect of the cell's
# script into FILE. On failure the reason is in CELL_ERROR.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
k6_inspect_into() {
  local -n into_values="$1"
  local target_url="$2" file="$3" inspected
  if ! inspected="$(k6_inspect into_values "$target_url")" || ! jq -e . <<<"$inspected" >/dev/null 2>&1; then
    cell_error "k6 cannot read $(k6_script_path "${into_values[SCENARIO]}"): $(grep -m1 -iE 'error' <<<"$inspected" | cut -c1-200)"
    return 1
  fi
  jq . <<<"$inspected" | write_atomic "$file"
}

# k6_archive CELL_ASSOC TARGET_URL DIR: the cell's script for k6 on other
# machines (the fan-outs): DIR/k6-script.json (its inspection: options and
# tags), for a script of one's own DIR/k6-entry.js (k6_prepare_script), and
# DIR/script.tar, a k6 archive of the script and every module it imports,
# made with the cell's values as its environment (a `k6 run -e` on the
# machine overrides them). On failure the reason is in CELL_ERROR.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
k6_archive() {
  local -n archive_values="$1"
  local target_url="$2" dir="$3" script line log
  local -a env_args=()
  script="$(k6_script_path "${archive_values[SCENARIO]}")"
  if k6_own_script "${archive_values[SCENARIO]}"; then
    k6_prepare_script archive_values "$dir" "$target_url" || return 1
    script="$dir/k6-entry.js"
  else
    k6_inspect_into archive_values "$target_url" "$dir/k6-script.json" || return 1
  fi
  while IFS= read -r line; do
    [[ "$line" == PATH=* || "$line" == HOME=* ]] || env_args+=(-e "$line")
  done < <(k6_cell_env archive_values "$target_url")
  if ! log="$("$LT_K6" archive --include-system-env-vars=false "${env_args[@]}" -O "$dir/script.tar" "$script" 2>&1)"; then
    cell_error "k6 archive of $(k6_script_path "${archive_values[SCENARIO]}") failed: $(tail -n 1 <<<"$log" | cut -c1-300)"
    return 1
  fi
}

# k6_entry_module SCRIPT INSPECTED_JSON: the entry module for a script of
# one's own: it re-exports the script and wraps its options, setup,
# handleSummary and every function a scenario executes.
k6_entry_module() {
  local script="$1" inspected="$2"
  jq -r --arg script "$script" --arg own "$LT_ROOT/scenarios/lib/own-script.js" '
    ([.scenarios // {} | .[] | .exec // "default"] + ["default"] | unique) as $execs
    | "// Written by the runner: \($script | @json) runs unchanged;",
      "// scenarios/lib/own-script.js says what is added.",
      "import * as script from \($script | @json);",
      "import * as own from \($own | @json);",
      "export * from \($script | @json);",
      "export const options = own.options(script.options);",
      "export const setup = own.setup(script.setup);",
      "export const handleSummary = own.summary(script.handleSummary);",
      ($execs[] | if . == "default" then "export default own.iteration(script.default);"
                  else "export const \(.) = own.iteration(script.\(.));" end)
  ' "$inspected"
}

# k6_run_tags SCENARIO INSPECTED_JSON RUN_ID CELL: the tags k6 is given on
# its command line, "name=value" a line. A --tag replaces all of the
# script's own options.tags, so those come first; a script of one's own
# then gets the run's and the cell's tags and traffic=load, which the
# suite's scenarios set themselves. The scenario tag stays k6's own: k6
# sets it to the name of the script's k6 scenario over any --tag.
k6_run_tags() {
  local scenario="$1" inspected="$2" run_id="$3" cell="$4"
  jq -r '.tags // {} | to_entries[] | "\(.key)=\(.value)"' "$inspected"
  k6_own_script "$scenario" || return 0
  printf '%s\n' "run_id=$run_id" "cell=$cell" traffic=load
}

# k6_script_args SCENARIO INSPECTED_JSON RUN_ID CELL: the arguments k6 run
# gets for the script beside the runner's own, one word a line: a --tag for
# each of k6_run_tags, and for a script of one's own the trend statistics
# the suite's scenarios set in their options (p99 among them).
k6_script_args() {
  local tag stats
  while IFS= read -r tag; do
    printf '%s\n' --tag "$tag"
  done < <(k6_run_tags "$@")
  k6_own_script "$1" || return 0
  stats="$(k6_trend_stats)"
  [[ -n "$stats" ]] || abort "scenarios/lib/summary.js: no 'export const TREND_STATS = [...];' line to read the trend statistics from"
  printf '%s\n' "--summary-trend-stats=$stats"
}

# k6_trend_stats: the summary's trend statistics as --summary-trend-stats
# takes them (min,avg,...). The one list is TREND_STATS of
# scenarios/lib/summary.js, which the suite's scenarios set in their options;
# a script of one's own gets it on k6's command line, read from that line.
k6_trend_stats() {
  sed -n "s/^export const TREND_STATS = \[\(.*\)\];\$/\1/p" "$LT_ROOT/scenarios/lib/summary.js" | tr -d "' "
}

# k6_start CELL_ASSOC CELL_DIR TARGET_URL LIMIT_S [OPTION...]: start
# `k6 run` in the client namespace in the background. k6 sees only the
# cell's knobs, the run's identity and the OPTIONs (monitoring_k6_options:
# "--name=value" goes to k6's command line, NAME=value to its environment),
# not the caller's environment.
# "-e LT_RUN_ID=" marks the process as this suite's (a --tag would replace
# the script's own tags). After LIMIT_S it gets SIGINT (it then still writes
# its summary), and SIGKILL 30 s later.
# K6_INSTANCES=N runs N k6 processes, each its execution segment of the
# scenario (as on N machines): one process holds at most its open-file limit
# of sockets. Each writes k6-summaries/<i>.json, merged by k6_wait; only the
# first gets the OPTIONs (the side outputs: dashboard export, samples).
# Each process runs in its own directory of the cell (k6-outputs,
# k6-outputs-2, ...), so what a script's handleSummary writes to a relative
# path lands there, not wherever the runner was started (k6 resolves the
# script's imports and open() from the script's own place); a script of
# one's own lists what it asked for in k6-outputs.json (OUTPUTS_FILE, see
# scenarios/lib/own-script.js), which k6_wait checks (k6_outputs_check).
k6_start() {
  local -n cell_values="$1"
  local cell_dir="$2" target_url="$3" limit_s="$4" option relative_dir=""
  shift 4
  local instances="${cell_values[K6_INSTANCES]:-1}" i summary log script outputs nofile
  [[ "$instances" =~ ^[1-9][0-9]*$ ]] \
    || abort "k6_start: K6_INSTANCES=$instances: a cell's settings get their auto knobs resolved first (ltsuite.cell plan or resolve)"
  local port_fd="" port=""
  # The dashboard's port is asked of the client namespace (a process there,
  # k6_dashboard_port) while the rest of k6's start is made ready.
  for option in "$@"; do
    [[ "$option" != K6_WEB_DASHBOARD_PORT=-1 || -n "$port_fd" ]] || exec {port_fd}< <(k6_dashboard_port)
  done
  nofile="$(k6_nofile cell_values)"
  k6_file_limits "$cell_dir" "$nofile"
  local -a env_args script_args=() option_args=() option_env=()
  if [[ "$cell_dir" != /* ]]; then
    # Every path k6 is given must hold from the directory it runs in.
    relative_dir="$cell_dir"
    cell_dir="$PWD/$cell_dir"
  fi
  for option in "$@"; do
    [[ -z "$relative_dir" ]] || option="${option//"$relative_dir/"/"$cell_dir/"}"
    case "$option" in
      K6_WEB_DASHBOARD_PORT=-1) ;; # its port is given below
      --*=*) option_args+=("$option") ;;
      [A-Z]*=*) option_env+=("$option") ;;
      *) abort "k6_start: '$option' is neither --name=value nor NAME=value" ;;
    esac
  done
  mapfile -t env_args < <(k6_cell_env cell_values "$target_url")
  local -a in_namespace local_ips=() segment=() extra_args extra_env
  mapfile -t in_namespace < <(netns_prefix client)
  if [[ "${cell_values[CLIENT_ADDRESSES]:-1}" -gt 1 && "$NETNS_HOST_MODE" != 1 ]]; then
    local addresses
    addresses="$(netns_client_addresses "${cell_values[CLIENT_ADDR]}" "${cell_values[CLIENT_ADDRESSES]}")"
    local_ips=("--local-ips=${addresses// /,}")
  fi
  if [[ -n "$port_fd" ]]; then
    read -r port <&"$port_fd" || true
    exec {port_fd}<&-
    option_env+=("K6_WEB_DASHBOARD_PORT=${port:--1}")
  fi
  K6_CELL_DIR="$cell_dir"
  K6_PIDS=()
  script="$(k6_script_path "${cell_values[SCENARIO]}")"
  if k6_own_script "${cell_values[SCENARIO]}"; then
    # The script runs unchanged from the cell's entry module; the suite's
    # tags and p99 come from the command line.
    script="$cell_dir/k6-entry.js"
    mapfile -t script_args < <(k6_script_args "${cell_values[SCENARIO]}" "$cell_dir/k6-script.json" "$LT_RUN_ID" "$(basename "$cell_dir")")
  fi
  # One start instant for every instance of a burst.
  [[ "$instances" -eq 1 ]] || env_args+=("BURST_START_AT=$(($(date +%s%3N) + ${cell_values[BURST_LEAD_MS]:-0}))")
  [[ "$instances" -eq 1 ]] || mkdir -p "$cell_dir/k6-summaries"
  for ((i = 0; i < instances; i++)); do
    local -a files
    # One process for the instance's file names (k6_instance_file).
    mapfile -t files < <(k6_instance_file "$cell_dir" "$i" "$instances" summary log outputs outputs-list pid)
    summary="${files[0]}" log="${files[1]}" outputs="${files[2]}"
    extra_args=("${option_args[@]}")
    extra_env=("${option_env[@]}")
    if [[ "$instances" -gt 1 ]]; then
      [[ $i -eq 0 ]] || { extra_args=(); extra_env=(); }
      # Every process writes its own per-request samples (k6-samples-<n>.json.gz,
      # named as its log), reduced to its latency histogram when it ends
      # (k6_histograms), so the row's percentiles are those of all of them
      # (ltsuite.histogram); the other side outputs stay the first's.
      for option in "${option_args[@]}" "${option_env[@]}"; do
        case "$i:$option" in
          0:*) ;;
          *:--out=json=*/k6-samples.json.gz) extra_args+=("${option%.json.gz}-$((i + 1)).json.gz") ;;
          *:K6_SYSTEM_TAGS=*) extra_env+=("$option") ;;
        esac
      done
      segment=(--execution-segment "$i/$instances:$((i + 1))/$instances"
        --execution-segment-sequence "$(k6_segment_sequence "$instances")")
    fi
    # Left by an earlier run of the cell (RESUME) or a script's own output:
    # removed only when there (each rm is a process).
    [[ ! -e "$outputs" && ! -e "${files[3]}" ]] || rm -rf "$outputs" "${files[3]}"
    mkdir -p "$outputs"
    extra_env+=("OUTPUTS_FILE=${files[3]}")
    (
      # k6 keeps one socket per VU: give it every file descriptor allowed
      # (K6_NOFILE: fewer, to meet the file wall on purpose). Go raises its
      # soft limit to the hard one as it starts, so the limit is set as both
      # (in this subshell only); at the hard limit that is the soft limit
      # raised to it.
      ulimit -n "$nofile" 2>/dev/null || true
      cd "$outputs" || exit 1
      # Read before the environment is replaced: either may be exported.
      local k6="$LT_K6" run_id="$LT_RUN_ID" cell_id="${cell_dir%/}"
      # TARGET_CHECKED: the caller waited for the target to answer its health
      # path (target_wait_healthy), so setup() does not ask it again from the
      # users' namespace (scenarios/lib/target.js).
      k6_environment_only "${env_args[@]}" "SUMMARY_FILE=$summary" \
        "RUN_ID=$run_id" "CELL_ID=${cell_id##*/}" TARGET_CHECKED=1 "${extra_env[@]}"
      exec timeout --signal=INT --kill-after=30 "$limit_s" \
        "${in_namespace[@]}" "$k6" run --no-usage-report --address "" -e "LT_RUN_ID=$run_id" \
        "${segment[@]}" "${local_ips[@]}" "${script_args[@]}" "${extra_args[@]}" "$script"
    ) >"$log" 2>&1 9>&- & # 9>&-: not the run lock (run-matrix.sh LT_LOCK_FD)
    K6_PIDS+=("$!")
    k6_pid_file "$!" "${files[4]}"
  done
}

# k6_dashboard_port: the port k6's web dashboard listens on (its HTML export
# needs no server, but k6 v2.2.0 listens on a port of its own choosing even
# with K6_WEB_DASHBOARD_PORT=-1, measured with ss -tlnp): in the client
# namespace the last of the suite's own ports (netns_own_ports), outside the
# users' ephemeral range, as a port bound by a listener is one no connect()
# there may pick (__inet_hash_connect()); -1 where there is none.
k6_dashboard_port() {
  local to=""
  read -r _ to < <(netns_own_ports) || true
  printf '%s\n' "${to:--1}"
}

# k6_environment_only NAME=VALUE...: this (sub)shell's environment becomes
# exactly the NAME=VALUEs (the last of a name wins), as `env -i` would make
# it, but in the shell: a value (K6_INFLUXDB_PASSWORD) is never in a
# process's arguments, which every user can read (ps), only in its
# environment, which only its owner can.
k6_environment_only() {
  local name assignment
  for name in $(compgen -e); do
    unset "$name" 2>/dev/null || true
  done
  for assignment in "$@"; do
    # shellcheck disable=SC2163 # SC2163: exports NAME=VALUE as given
    export "$assignment"
  done
}

# k6_nofile CELL_ASSOC: the open-file limit each k6 process of the cell runs
# with: K6_NOFILE, at most the hard limit, else the hard limit.
k6_nofile() {
  local -n nofile_values="$1"
  local hard wanted="${nofile_values[K6_NOFILE]:-}"
  hard="$(ulimit -Hn)"
  if [[ -z "$wanted" ]] || { [[ "$hard" != unlimited ]] && ((wanted > hard)); }; then
    printf '%s\n' "$hard"
  else
    printf '%s\n' "$wanted"
  fi
}

# k6_open_files_soft_limit PID: the soft open-file limit of process PID,
# from /proc/PID/limits; nothing when it cannot be read. Read by the shell
# itself: it runs as k6 starts, when every process more costs a few ms
# (docs/performance.md).
k6_open_files_soft_limit() {
  local line soft
  while IFS= read -r line; do
    [[ "$line" == "Max open files "* ]] || continue
    read -r _ _ _ soft _ <<<"$line"
    printf '%s\n' "$soft"
    return 0
  done <"/proc/$1/limits" 2>/dev/null
}

# k6_file_limits CELL_DIR NOFILE: file-limits.tsv, the open-file limits the
# cell runs with (ltsuite.design.file_limits): "k6 NOFILE", and where the
# suite started the target (TARGET_PID, a JVM that inherited the runner's
# limit; COMPOSE_TARGET_PID, the container's process), "target SOFT_LIMIT
# OPEN_FILES": its limit and the files it holds as the load starts (its own:
# jars, logs, listeners), from /proc. The open files are counted by the
# shell, not by find and wc: it runs just before k6 starts.
k6_file_limits() {
  local cell_dir="$1" nofile="$2" pid="${TARGET_PID:-${COMPOSE_TARGET_PID:-}}" limit
  local -a fds
  printf 'k6\t%s\n' "$nofile" >"$cell_dir/file-limits.tsv"
  [[ -n "$pid" && -r "/proc/$pid/limits" ]] || return 0
  limit="$(k6_open_files_soft_limit "$pid")"
  fds=("/proc/$pid/fd/"*)
  [[ -e "${fds[0]}" || -L "${fds[0]}" ]] || fds=()
  [[ "$limit" =~ ^[0-9]+$ && ${#fds[@]} -gt 0 ]] || return 0
  printf 'target\t%s\t%s\n' "$limit" "${#fds[@]}" >>"$cell_dir/file-limits.tsv"
}

# k6_check_cells TOTAL MACHINE_JSON [PLAN_DIR REPEAT]: refuse the run (exit
# 2) before anything starts when a cell cannot run as designed on this
# machine at all (ltsuite.design.refusals: a network knob out of range, more
# memory for its VUs than is available), with the numbers. Every cell in one
# process (ltsuite.cell refusals); with PLAN_DIR (an empty directory), when
# none is refused, the same process plans the run there (its warnings, each
# cell's resolved settings, the space its cells need, each REPEAT times:
# ltsuite.cell plan_ahead), which the runner reads after its lock.
# The cells' settings reach Python through a pipe, each line after its
# cell's index.
k6_check_cells() {
  local total="$1" machine="$2" plan_dir="${3:-}" index reason
  local -a reasons=() plan=()
  [[ -z "$plan_dir" ]] || plan=(--plan-dir "$plan_dir" --repeat "$4")
  while IFS=$'\t' read -r index reason; do
    [[ -z "$reason" ]] || reasons+=("cell $(matrix_cell_id "$index"): $reason")
  done < <(k6_cells_values "$total" | PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.cell refusals "$machine" "${plan[@]}")
  [[ ${#reasons[@]} -eq 0 ]] || usage_error "cannot run as designed on this machine: $(printf '%s; ' "${reasons[@]}" | sed 's/; $//')"
}

# k6_cells_values TOTAL: every cell's settings (matrix_cell_values), each
# line as "INDEX<TAB>KEY=VALUE".
k6_cells_values() {
  local total="$1" index line
  for ((index = 0; index < total; index++)); do
    while IFS= read -r line; do
      printf '%s\t%s\n' "$index" "$line"
    done < <(matrix_cell_values "$index")
  done
}

# k6_pid_file WRAPPER_PID FILE: the pid of the k6 process that WRAPPER_PID
# (the timeout k6_start runs k6 under) started, into FILE, so an operator
# (or a test) can find one k6 among several. k6 keeps the pid of timeout's
# child: `ip netns exec` and env exec it. Waits up to 5 s for the child;
# writes nothing when there is none (the wrapper already ended).
k6_pid_file() {
  local wrapper="$1" file="$2" child="" tries
  [[ ! -e "$file" ]] || rm -f "$file"
  for ((tries = 0; tries < 500; tries++)); do
    [[ -d "/proc/$wrapper" ]] || return 0
    k6_child_into child "$wrapper"
    [[ -z "$child" ]] || break
    sleep 0.01
  done
  [[ -z "$child" ]] || printf '%s\n' "$child" >"$file"
}

# k6_segment_sequence N: "0,1/N,2/N,...,1".
k6_segment_sequence() {
  local n="$1" i sequence="0"
  for ((i = 1; i < n; i++)); do
    sequence+=",$i/$n"
  done
  printf '%s,1\n' "$sequence"
}

# k6_wait: wait for every k6 of the cell and record how each ended in
# k6-exits.tsv (k6_exits_record); with several instances their summaries are
# merged into summary.json. Returns the first status that is neither 0 nor
# 99, else 99 if a threshold was crossed, else 0: the status of the worst
# process, never one that hides another's crash. Whether the cell failed,
# and why, is k6_failure's to say (a missing summary fails it too).
k6_wait() {
  local status=0 pid pid_status n="${#K6_PIDS[@]}"
  local -a statuses=()
  for pid in "${K6_PIDS[@]}"; do
    pid_status=0
    wait "$pid" || pid_status=$?
    statuses+=("$pid_status")
  done
  if [[ $n -gt 0 ]]; then
    k6_exits_record "$K6_CELL_DIR" "${statuses[@]}" | write_atomic "$K6_CELL_DIR/k6-exits.tsv" || true
    # A pid file names a running k6; the pids stay in k6-exits.tsv.
    k6_remove_pid_files "$K6_CELL_DIR"
  fi
  for pid_status in "${statuses[@]}"; do
    case "$pid_status" in
      0) ;;
      99) [[ $status -ne 0 ]] || status=99 ;;
      *) [[ $status -ne 0 && $status -ne 99 ]] || status=$pid_status ;;
    esac
  done
  if [[ $n -gt 1 ]]; then
    k6_merge_summaries "$K6_CELL_DIR/k6-summaries" "$n" | write_atomic "$K6_CELL_DIR/summary.json" || true
    k6_histograms "$K6_CELL_DIR" "$n"
  fi
  [[ $n -eq 0 ]] || k6_outputs_check "$K6_CELL_DIR" "$n" || true
  K6_PIDS=()
  return "$status"
}

# k6_histograms CELL_DIR N: each of the cell's N k6 processes' answered
# load requests, reduced from its samples file to its latency histogram
# (ltsuite.histogram reduce), with, in the same pass, one histogram of each
# trend metric a column names (ltsuite.columns trend_metrics: ws_connect,
# wr_time_to_admission, ...), which the row's percentiles merge; the
# processes are reduced side by side. A process without samples
# (K6_SAMPLES=0) gets none, and the row says so.
k6_histograms() {
  local cell_dir="$1" n="$2" i samples
  local -a pids=()
  mkdir -p "$cell_dir/k6-histograms"
  for ((i = 0; i < n; i++)); do
    samples="$(k6_instance_file "$cell_dir" "$i" "$n" samples)"
    [[ -s "$samples" ]] || continue
    PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.histogram reduce "$samples" 9>&- \
      | write_atomic "$(k6_instance_file "$cell_dir" "$i" "$n" histogram)" &
    pids+=("$!")
  done
  for i in "${pids[@]}"; do
    wait "$i" || warn "a k6 process's samples could not be reduced to its histogram (k6-histograms/)"
  done
}

# k6_instance_file CELL_DIR I N WHAT...: the files of instance I (0-based)
# of N named WHAT, one a line in the order asked: log (k6.log, k6-2.log,
# ...), pid (k6.pid, k6-2.pid, ...: the k6 process itself), summary
# (summary.json, or k6-summaries/<I>.json with several), samples (its
# per-request samples when it writes them: k6-samples.json.gz,
# k6-samples-2.json.gz, ...), histogram (its latency histogram with several:
# k6-histograms/<I>.json), outputs (the working directory k6 runs in:
# k6-outputs, k6-outputs-2, ...) or outputs-list (what the script's
# handleSummary asked to write: k6-outputs.json, k6-outputs-2.json, ...).
# Several WHATs in one call: k6's start and end ask for their files with
# one process instead of one each (docs/performance.md).
k6_instance_file() {
  local cell_dir="$1" i="$2" n="$3" what suffix=""
  shift 3
  [[ $i -eq 0 ]] || suffix="-$((i + 1))"
  for what in "$@"; do
    case "$what" in
      log) printf '%s\n' "$cell_dir/k6$suffix.log" ;;
      pid) printf '%s\n' "$cell_dir/k6$suffix.pid" ;;
      outputs) printf '%s\n' "$cell_dir/k6-outputs$suffix" ;;
      outputs-list) printf '%s\n' "$cell_dir/k6-outputs$suffix.json" ;;
      samples) printf '%s\n' "$cell_dir/k6-samples$suffix.json.gz" ;;
      histogram) printf '%s\n' "$cell_dir/k6-histograms/$i.json" ;;
      summary)
        if [[ $n -gt 1 ]]; then
          printf '%s\n' "$cell_dir/k6-summaries/$i.json"
        else
          printf '%s\n' "$cell_dir/summary.json"
        fi
        ;;
      *) abort "k6_instance_file: unknown file '$what'" ;;
    esac
  done
}

# k6_outputs_check CELL_DIR N: what the script's own handleSummary asked
# each of the cell's N k6 processes to write (its outputs-list, written by
# scenarios/lib/own-script.js) against what is there: each output that k6
# could not write (its log says "could not open '<path>'", or no file is
# there after the run) is a line of CELL_DIR/k6-warnings.txt, with k6's
# reason; the row's notes carry them. No file when nothing is missing.
k6_outputs_check() {
  local cell_dir="$1" n="$2" i output file reason who
  local -a warnings=() files
  [[ ! -e "$cell_dir/k6-warnings.txt" ]] || rm -f "$cell_dir/k6-warnings.txt"
  for ((i = 0; i < n; i++)); do
    local list log outputs
    mapfile -t files < <(k6_instance_file "$cell_dir" "$i" "$n" outputs-list log outputs)
    list="${files[0]}" log="${files[1]}" outputs="${files[2]}"
    [[ -s "$list" ]] || continue
    who=""
    [[ $n -eq 1 ]] || who="k6 process $((i + 1)) of $n: "
    while IFS= read -r output; do
      file="$output"
      [[ "$file" == /* ]] || file="$outputs/$output"
      reason="$(k6_output_error "$log" "$output")"
      [[ -n "$reason" || ! -e "$file" ]] || continue
      warnings+=("${who}handleSummary's output '$output' was not written: ${reason:-no file at ${file#"$cell_dir"/} after the run}")
    done < <(jq -r '.[]' "$list")
  done
  [[ ${#warnings[@]} -gt 0 ]] || return 0
  printf '%s\n' "${warnings[@]}" | write_atomic "$cell_dir/k6-warnings.txt"
}

# k6_output_error LOG OUTPUT: why k6 could not write OUTPUT (a key of
# handleSummary's result), from the end-of-test error in its LOG ("could
# not open 'OUTPUT': open ...: no such file or directory"); nothing if the
# log has no such error.
k6_output_error() {
  local log="$1" output="$2" line rest
  line="$(grep -F -m1 "could not open '$output': " "$log" 2>/dev/null)" || return 0
  rest="${line#*"could not open '$output': "}"
  rest="${rest%%\\n*}"
  rest="${rest%%\"*}"
  printf '%s\n' "$rest"
}

# k6_exits_record CELL_DIR STATUS...: how each of the cell's k6 processes
# ended, as k6-exits.tsv: a header, then a line per process: process
# (1-based), pid (of k6, from its pid file; empty if unknown), status, log
# and summary (file names in CELL_DIR), summary_written (1 if that summary
# exists and is not empty, else 0).
k6_exits_record() {
  local cell_dir="$1" i=0 n status pid summary written
  shift
  n=$#
  printf 'process\tpid\tstatus\tlog\tsummary\tsummary_written\n'
  local -a files
  for status in "$@"; do
    # One process for the names; the pid file is read by the shell.
    mapfile -t files < <(k6_instance_file "$cell_dir" "$i" "$n" pid summary log)
    pid=""
    read -r pid 2>/dev/null <"${files[0]}" || true
    summary="${files[1]}"
    written=0
    [[ ! -s "$summary" ]] || written=1
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$((i + 1))" "$pid" "$status" \
      "${files[2]##*/}" "${summary#"$cell_dir"/}" "$written"
    i=$((i + 1))
  done
}

# k6_failure CELL_DIR: why the cell's k6 failed, from CELL_DIR/k6-exits.tsv
# (k6_wait): every process that exited with a status other than 0 (done)
# or 99 (a threshold was crossed: a result), with the first error line of
# its log, and every process that wrote no summary (its share of the
# requests would be missing from the row). Succeeds with the reasons, "; "
# between them; fails (printing nothing) when no process failed.
k6_failure() {
  local cell_dir="$1" process pid status log summary written reason n first
  local -a reasons=()
  [[ -s "$cell_dir/k6-exits.tsv" ]] || { printf 'k6 left no record of how it ended (k6-exits.tsv)\n'; return 0; }
  n=$(($(wc -l <"$cell_dir/k6-exits.tsv") - 1))
  while IFS=$'\t' read -r process pid status log summary written; do
    [[ "$process" != process ]] || continue
    if [[ "$status" != 0 && "$status" != 99 ]]; then
      first="$(grep -m1 -iE 'error|panic' "$cell_dir/$log" 2>/dev/null | cut -c1-200 || true)"
      if [[ $n -eq 1 ]]; then
        # One process: the message runs have always given.
        reasons+=("k6 exited with status $status: $first")
        continue
      fi
      reason="k6 process $process of $n${pid:+ (pid $pid)} exited with status $status$(k6_signal_words "$status")"
      if [[ -n "$first" ]]; then
        reason+=": $log: $first"
      else
        reason+=": no error line in $log"
      fi
      reasons+=("$reason")
    elif [[ "$written" != 1 ]]; then
      if [[ $n -eq 1 ]]; then
        reasons+=("k6 wrote no summary ($summary)")
      else
        reasons+=("k6 process $process of $n${pid:+ (pid $pid)} wrote no summary ($summary)")
      fi
    fi
  done <"$cell_dir/k6-exits.tsv"
  [[ ${#reasons[@]} -gt 0 ]] || return 1
  local joined=""
  for reason in "${reasons[@]}"; do
    joined+="${joined:+; }$reason"
  done
  printf '%s\n' "$joined"
}

# k6_signal_words STATUS: " (killed by SIGNAME)" for a status above 128 that
# names a signal, else nothing.
k6_signal_words() {
  local status="$1" name
  ((status > 128 && status < 160)) || return 0
  name="$(kill -l "$((status - 128))" 2>/dev/null)" || return 0
  printf ' (killed by SIG%s)' "${name#SIG}"
}

# k6_merge_summaries DIR [EXPECTED]: one k6 summary from the instances'
# (merge-summaries.jq); EXPECTED is how many processes ran (default: as
# many as there are summaries), so the merge says when some are missing.
k6_merge_summaries() {
  local -a parts=("$1"/*.json)
  jq -s --argjson expected "${2:-${#parts[@]}}" -f "$LT_ROOT/scripts/lib/merge-summaries.jq" "${parts[@]}"
}

# k6_stop: interrupt running k6 processes (they write their summaries) and reap them.
# The signal goes to k6 itself, not to the timeout it runs under: timeout
# passes a signal on to its child and then to its whole process group, so k6
# would get SIGINT twice, and a second SIGINT aborts k6 without its summary.
k6_stop() {
  local pid child
  for pid in "${K6_PIDS[@]}"; do
    k6_child_into child "$pid"
    kill -INT "${child:-$pid}" 2>/dev/null || true
  done
  # Interrupted, k6 writes its summary and ends in a second or two; a
  # second SIGINT would abort it without one.
  for pid in "${K6_PIDS[@]}"; do
    end_child "$pid" 0 30 || true
  done
  [[ -z "$K6_CELL_DIR" ]] || k6_remove_pid_files "$K6_CELL_DIR"
  K6_PIDS=()
}

# k6_child_into VAR WRAPPER_PID: set VAR to the pid of the program the
# timeout WRAPPER_PID runs (k6: `ip netns exec` and env exec it), or to ""
# while WRAPPER_PID is not yet timeout or has no child. Into a variable, not
# on stdout: k6_pid_file asks up to 500 times, and each command substitution
# is a process.
k6_child_into() {
  local wrapper="$2" comm="" _k6_child=""
  read -r comm 2>/dev/null <"/proc/$wrapper/comm" || true
  if [[ "$comm" == timeout ]]; then
    read -r _k6_child _ 2>/dev/null <"/proc/$wrapper/task/$wrapper/children" || true
  fi
  printf -v "$1" '%s' "$_k6_child"
}

# k6_remove_pid_files CELL_DIR: remove the cell's k6 pid files (k6.pid,
# k6-2.pid, ...); no rm process when there is none.
k6_remove_pid_files() {
  local -a pid_files
  pid_files=("$1"/k6.pid "$1"/k6-[0-9]*.pid)
  [[ -e "${pid_files[0]}" || -e "${pid_files[1]}" ]] || return 0
  rm -f "${pid_files[@]}"
}

# k6_version: the k6 version line.
k6_version() {
  "$LT_K6" version 2>/dev/null | head -n 1
}
