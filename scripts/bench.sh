#!/usr/bin/env bash
# Summary: measure the suite's own overhead and its effect on what it measures; write results/bench-<id>/.
# Usage: scripts/bench.sh   (BENCH_REPS=3 repetitions; BENCH_CAPACITY_VUS="1000 2000 4000";
#        BENCH_START_VUS="1000 5000 12000 30000"; BENCH_USERS_PER_VU=auto; BENCH_START_MODES="jar cds aot";
#        BENCH_NETDELAY_RATES="20000 40000"; BENCH_NETDELAY_BURSTS="500 1000 2000 3000";
#        BENCH_WARMUP=5s (the orchestration cells' warm-up);
#        BENCH_WHOLERUN_CELLS="1 3" (the whole run's sizes);
#        BENCH_SECTIONS="orchestration wholerun perturbation capacity start wrk sampler ownscript netdelay", a subset runs only those)
#
# The machines are shared and noisy, so every figure is a ratio of two
# variants measured side by side (alternating, in the same bench run), the
# median of BENCH_REPS repetitions, with the spread (min..max) shown.
#   1. orchestration: where a cell's time goes outside k6's own test time,
#      phase by phase (phases.tsv), per cell and per run, the warm-up's
#      seconds (BENCH_WARMUP) apart from the overhead, for each start of
#      the target (TARGET_START_MODE=jar|cds|aot: plain java -jar, the
#      class-data-sharing archive, the JDK 25 AOT cache), runs alternating
#   1b. the whole run: `make run-matrix` as a user types it, for matrices of
#      BENCH_WHOLERUN_CELLS cells (spike, 3 VUs, 3 s, a 50 ms endpoint),
#      its wall against k6's test time and the target's bare start (the
#      default start, taken under the run lock right before and after), and
#      where the time outside k6 goes: make, before the first cell, each
#      cell, after the last (ltsuite.wholerun), with the Python starts the
#      kernel saw in each (tests/tools/execwatch.py)
#   2. metrics perturbation: the same cell with the suite's monitoring
#      defaults versus none, in the seeds' regime and with k6 saturated
#   3. generator capacity: the largest spike against a 5 s endpoint that one
#      k6 process sustains, with its memory per VU and CPU
#   3b. start: VUs started per second, memory per user and the spread of
#      the first requests for 1k..30k users, burst (many users per VU, and a
#      VU per user) against spike, and the most concurrent connections the
#      target held
#   4. reference: requests per second of wrk versus the spike scenario
#   5. sampler: the same cell with the sampler on and off (LT_SAMPLER), its
#      own CPU time (sampler.json) and what it costs the cell
#   6. a script of one's own: the same saturating load from a user-style
#      script (run in the runner's entry module, with its 212 error-code
#      sub-metrics) and from the suite's spike scenario: k6's CPU and TPS
#   7. the delayer (NET_RTT_MS): the connect time it adds at 0 and 20 ms, and
#      the packets a second it holds at 20 ms (scripts/netdelay-bench.sh);
#      then real bursts of BENCH_NETDELAY_BURSTS users at NET_RTT_MS=50 (k6 on
#      the same cores): the packets a second it held and whether it was flagged
set -euo pipefail

LT_PROG=bench
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix netns target k6 results lock; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

readonly REPS="${BENCH_REPS:-3}"
readonly CAPACITY_VUS="${BENCH_CAPACITY_VUS:-1000 2000 4000}"
readonly START_VUS="${BENCH_START_VUS:-1000 5000 12000 30000}"
readonly BATCH_USERS="${BENCH_USERS_PER_VU:-auto}"
readonly START_MODES="${BENCH_START_MODES:-jar cds aot}"
readonly NETDELAY_RATES="${BENCH_NETDELAY_RATES:-20000 40000}"
readonly NETDELAY_BURSTS="${BENCH_NETDELAY_BURSTS:-500 1000 2000 3000}"
# The orchestration cells' warm-up: a jar of one's own's default (target.sh's
# target_warmup_default), its seconds shown apart from the cell's overhead.
readonly WARMUP_S="${BENCH_WARMUP:-5s}"
readonly WHOLERUN_CELLS="${BENCH_WHOLERUN_CELLS:-1 3}"
readonly SECTIONS="${BENCH_SECTIONS:-orchestration wholerun perturbation capacity start wrk sampler ownscript netdelay}"
BENCH_DIR=""
STARTED_MONITORING=0

main() {
  [[ "${1:-}" == -h || "${1:-}" == --help ]] && { print_summary "${BASH_SOURCE[0]}"; return 0; }
  [[ "$REPS" =~ ^[1-9][0-9]*$ ]] || usage_error "BENCH_REPS: '$REPS' is not a count"
  [[ "$NETDELAY_BURSTS" =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] || usage_error "BENCH_NETDELAY_BURSTS: '$NETDELAY_BURSTS' is not a list of counts"
  [[ "$BATCH_USERS" =~ ^([1-9][0-9]*|auto)$ ]] || usage_error "BENCH_USERS_PER_VU: '$BATCH_USERS' is not a count or auto"
  [[ "$WHOLERUN_CELLS" =~ ^[1-9][0-9]?( [1-9][0-9]?)*$ ]] || usage_error "BENCH_WHOLERUN_CELLS: '$WHOLERUN_CELLS' is not a list of cell counts (1-99)"
  [[ "$WARMUP_S" =~ ^([0-9]+(ms|s|m|h))+$ ]] || usage_error "BENCH_WARMUP: '$WARMUP_S' is not a duration (e.g. 5s, 0s)"
  local section mode
  for mode in $START_MODES; do
    [[ "$mode" =~ ^(jar|cds|aot|auto)$ ]] || usage_error "BENCH_START_MODES: unknown start mode '$mode' (jar cds aot auto)"
  done
  for section in $SECTIONS; do
    case "$section" in
      orchestration | wholerun | perturbation | capacity | start | wrk | sampler | ownscript | netdelay) ;;
      *) usage_error "BENCH_SECTIONS: unknown section '$section' (orchestration wholerun perturbation capacity start wrk sampler ownscript netdelay)" ;;
    esac
  done
  [[ $EUID -eq 0 ]] || abort "the benchmarks run the suite, which needs root"
  command -v wrk >/dev/null || install_wrk
  BENCH_DIR="$LT_ROOT/results/bench-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$BENCH_DIR/runs"
  trap on_exit EXIT
  say "bench: $REPS repetition(s) per figure -> ${BENCH_DIR#"$LT_ROOT"/}"

  for section in $SECTIONS; do
    "bench_$section"
  done
  render
  cat "$BENCH_DIR/bench.md"
}

install_wrk() {
  say "installing wrk (apt-get) for the reference measurement"
  apt-get install -y -qq wrk >&2 || abort "cannot install wrk"
}

# run_matrix NAME LINES...: run a matrix made of LINES; print its run dir.
run_matrix() {
  local name="$1" matrix
  shift
  matrix="$BENCH_DIR/runs/$name.matrix"
  printf '%s\n' "$@" >"$matrix"
  LT_RESULTS_DIR="$BENCH_DIR/runs" LT_LOCK_WAIT=1800 MONITORING="${MONITORING:-off}" \
    K6_HTML_REPORT="${K6_HTML_REPORT:-0}" K6_SAMPLES="${K6_SAMPLES:-0}" \
    "$LT_ROOT/scripts/run-matrix.sh" "$matrix" >"$BENCH_DIR/runs/$name.log" 2>&1 \
    || warn "run $name failed; see $BENCH_DIR/runs/$name.log"
  readlink -f "$BENCH_DIR/runs/latest"
}

# record FIGURE JSON_LINES...: append measurements of one figure to figures.jsonl.
record() {
  local figure="$1"
  shift
  printf '%s\n' "$@" | jq -c --arg f "$figure" '. + {figure: $f}' >>"$BENCH_DIR/measurements.jsonl"
}

# bench_orchestration: BENCH_REPS runs of 4 short cells per start mode,
# the modes alternating cell by cell (the last axis changes fastest), so a
# machine that gets busier or quieter shakes every mode alike. Per cell: its
# phases from phases.tsv (bench-cell.jq), up to the next cell's start; per
# run: its wall time from its first cell on, minus k6's test time, over its
# cells (what a user waits per cell; all the modes of the run together).
bench_orchestration() {
  say "1/8 orchestration overhead: 4 short cells per start mode ($START_MODES), alternating cell by cell"
  local rep run_dir started ended mode
  for ((rep = 1; rep <= REPS; rep++)); do
    bench_bare_starts "$rep"
    started="$(date +%s%3N)"
    run_dir="$(run_matrix "orchestration-$rep" "TOMCAT_ACCEPT_COUNT=100 101 102 103" "TARGET_START_MODE=$START_MODES" \
      "VUS=2" "DURATION=2s" "DELAY_MS=10" "GRACEFUL_STOP=1s" "WARMUP=$WARMUP_S")"
    ended="$(date +%s%3N)"
    bench_orchestration_record "$rep" "$run_dir" "$started" "$ended"
    bench_bare_starts "$rep"
  done
}

# bench_bare_starts REP: the floor, the same target started bare once per
# start mode, under the run lock, so no other run's cell shares the machine
# with them any more than with the bench's own cells (bench_orchestration
# takes them right before and right after each run's cells).
bench_bare_starts() {
  local rep="$1" mode
  bench_lock
  for mode in $START_MODES; do
    record bare-start "$(bench_bare_start "$rep" "$mode")"
  done
  bench_unlock
}

# bench_lock: take the suite's run lock (one run at a time on this host,
# lock.sh), waiting up to 1800 s, on the runner's descriptor (LT_LOCK_FD),
# which every child the suite starts closes (9>&-), opened as the runner
# opens it (lock_open).
bench_lock() {
  lock_open
  flock -w 1800 "$LT_LOCK_FD" || abort "the suite's lock stayed taken"
  lock_fd="$LT_LOCK_FD"
}

# bench_unlock: let the lock go (bench_lock).
bench_unlock() {
  exec 9>&-
  lock_fd=""
}

# bench_bare_start REP MODE: the suite's own target started bare with start
# mode MODE (the java, archive and Spring AOT switch a cell gets,
# target_start_words), outside any namespace, on 127.0.0.1 with free ports
# and the environment of its training start (build-target-start.sh): the
# wall time from the exec to its first 200 on /health (asked every 10 ms),
# Spring Boot's own "Started ... in" and the CPU-seconds it took. One JSON line.
bench_bare_start() {
  local rep="$1" mode="$2" port mport pid t0 t1 log i ready=0 cpu_s line
  # shellcheck disable=SC2034 # SC2034: read through a nameref (target_start_words)
  local -A bare=([TARGET_START_MODE]="$mode" [TARGET_JAR]="" [TARGET_CMD]="" [TARGET_ARGS]="" [TARGET_ENV_FILE]=""
    [TOMCAT_VIRTUAL_THREADS]=0 [TARGET_JAVA_OPTS]="")
  local -a words
  target_start_warm bare
  mapfile -t words < <(target_start_words bare)
  port="$(bench_free_port)"
  mport="$(bench_free_port)"
  log="$BENCH_DIR/runs/bare-start-$rep-$mode.log"
  t0="${EPOCHREALTIME/./}"
  env -i "PATH=$PATH" "HOME=${HOME:-/root}" SERVER_ADDRESS=127.0.0.1 "SERVER_PORT=$port" \
    MANAGEMENT_ADDRESS=127.0.0.1 "MANAGEMENT_PORT=$mport" \
    MANAGEMENT_ENDPOINT_HEALTH_PROBES_ENABLED=true MANAGEMENT_ENDPOINT_HEALTH_PROBES_ADDADDITIONALPATHS=true \
    "${words[0]}" -Xmx512m -Djava.net.preferIPv4Stack=true "${words[@]:1:${#words[@]}-2}" -jar "${words[-1]}" >"$log" 2>&1 9>&- &
  pid=$!
  for ((i = 0; i < 6000; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$port/health" 2>/dev/null; then
      ready=1
      break
    fi
    sleep 0.01
  done
  t1="${EPOCHREALTIME/./}"
  cpu_s="$(target_cpu_s "$pid")"
  stop_pid "$pid" 10 || true
  end_child "$pid" TERM 5 || true
  line="$(grep -m1 -oE 'Started .* in [0-9.]+ seconds \(process running for [0-9.]+\)' "$log" 2>/dev/null || true)"
  jq -n -c --argjson rep "$rep" --arg variant "$mode" --argjson ready "$ready" --argjson us "$((t1 - t0))" \
    --arg cpu_s "$cpu_s" --arg line "$line" \
    '($line | capture("in (?<s>[0-9.]+) seconds \\(process running for (?<p>[0-9.]+)\\)")? // null) as $started
    | {rep: $rep, variant: $variant,
       start_s: (if $ready == 1 then ($us / 1e6 * 1000 | round / 1000) else null end),
       cpu_s: ($cpu_s | if . == "" then null else tonumber end),
       spring_s: ($started.s // null | if . == null then null else tonumber end),
       jvm_to_spring_s: (if $started == null then null else (($started.p | tonumber) - ($started.s | tonumber)) * 1000 | round / 1000 end)}'
}

# bench_wholerun: BENCH_REPS times, for each size of BENCH_WHOLERUN_CELLS, the
# whole run as its user waits for it: `make run-matrix` of that many cells
# (TOMCAT_ACCEPT_COUNT 70, 71, ...; SCENARIO=spike VUS=3 DURATION=3s
# DELAY_MS=50, every other knob at its default), timed from the command to
# its exit, every program it started logged by the kernel
# (tests/tools/execwatch.py), and split by ltsuite.wholerun. The floor, the
# target's bare start with the default start mode, is taken under the run
# lock right before and right after each repetition's runs.
bench_wholerun() {
  say "1b/8 the whole run: make run-matrix of $WHOLERUN_CELLS cell(s), against the target's bare start"
  local rep cells
  for ((rep = 1; rep <= REPS; rep++)); do
    bench_bare_starts_of "$rep" auto wholerun-bare-start
    for cells in $WHOLERUN_CELLS; do
      record wholerun "$(bench_wholerun_one "$rep" "$cells")"
    done
    bench_bare_starts_of "$rep" auto wholerun-bare-start
  done
}

# bench_bare_starts_of REP MODE FIGURE: one bare start (bench_bare_start)
# with start mode MODE under the run lock, recorded as FIGURE.
bench_bare_starts_of() {
  bench_lock
  record "$3" "$(bench_bare_start "$1" "$2")"
  bench_unlock
}

# bench_wholerun_one REP CELLS: one `make run-matrix` of CELLS cells, watched;
# its breakdown as one JSON line (ltsuite.wholerun) with the machine's load
# average as it began and ended.
bench_wholerun_one() {
  local rep="$1" cells="$2" name matrix log execs t0 t1 load0 run_dir i counts=""
  name="wholerun-$cells-$rep"
  matrix="$BENCH_DIR/runs/$name.matrix"
  for ((i = 0; i < cells; i++)); do counts+="${counts:+ }$((70 + i))"; done
  printf '%s
' "SCENARIO=spike" "VUS=3" "DURATION=3s" "DELAY_MS=50" "TOMCAT_ACCEPT_COUNT=$counts" >"$matrix"
  log="$BENCH_DIR/runs/$name.log"
  execs="$BENCH_DIR/runs/$name.execs"
  load0="$(cut -d' ' -f1 /proc/loadavg)"
  read -r t0 t1 < <(bench_watched "$execs" "$log" env LT_RESULTS_DIR="$BENCH_DIR/runs/$name" LT_LOCK_WAIT=1800     make -s -C "$LT_ROOT" run-matrix MATRIX="$matrix")
  run_dir="$(readlink -f "$BENCH_DIR/runs/$name/latest")"
  [[ -d "$run_dir" ]] || { warn "run $name made no run directory; see $log"; return 0; }
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.wholerun "$run_dir" "$execs" "$t0" "$t1"     | jq -c --argjson rep "$rep" --arg load0 "$load0" --arg load1 "$(cut -d' ' -f1 /proc/loadavg)"       --arg run "$(basename "$run_dir")"       '. + {rep: $rep, variant: "\(.cells) cell(s)", run: $run, load_avg_start: ($load0 | tonumber), load_avg_end: ($load1 | tonumber)}'
}

# bench_watched EXECS LOG COMMAND...: run COMMAND (its output to LOG) in a
# subshell whose every program the kernel's process events connector logs to
# EXECS (tests/tools/execwatch.py, from the subshell down); print the
# command's start and end, epoch ms.
bench_watched() {
  local execs="$1" log="$2"
  shift 2
  (
    local root="$BASHPID" ready="" t0 t1 watcher
    coproc WATCH { exec "$LT_PYTHON" "$LT_ROOT/tests/tools/execwatch.py" "$root" "$execs" 3>&- 9>&-; }
    watcher="$WATCH_PID"
    ready="$(timeout 10 head -n 1 <&"${WATCH[0]}")" || true
    [[ "$ready" == ready ]] || warn "execwatch did not start: the Python starts of $log are not counted"
    t0="${EPOCHREALTIME/./}"
    "$@" >"$log" 2>&1 9>&- || warn "the run failed; see $log"
    t1="${EPOCHREALTIME/./}"
    end_child "$watcher" TERM 5 || true
    printf '%s %s
' "${t0%???}" "${t1%???}"
  )
}

# bench_free_port: a TCP port nothing listens on at 127.0.0.1 (the kernel's choice).
bench_free_port() {
  "$LT_PYTHON" -S -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}


# bench_orchestration_record REP RUN_DIR STARTED_MS ENDED_MS: one
# measurement per cell of the run (figure orchestration) and one for the run
# (figure orchestration-run: from its first cell's start to its end, the
# final tables and report included), each with the start the target got.
bench_orchestration_record() {
  local rep="$1" run_dir="$2" started="$3" ended="$4" cell next_start got asked
  local -a cells
  mapfile -t cells < <(find "$run_dir/cells" -mindepth 1 -maxdepth 1 -type d | sort)
  local i
  for ((i = 0; i < ${#cells[@]}; i++)); do
    cell="${cells[i]}"
    next_start=""
    if ((i + 1 < ${#cells[@]})); then
      next_start="$(awk -F'\t' '$1 == "cell_start" { print $2; exit }' "${cells[i + 1]}/phases.tsv")"
    fi
    asked="$(jq -r '.axes.TARGET_START_MODE // "auto"' "$cell/row.json")"
    got="$(sed -n 's/^target_start_mode=//p' "$cell/target-start.txt" 2>/dev/null)"
    record orchestration "$(jq -Rn -c --argjson rep "$rep" --arg asked "$asked" --arg got "${got:-$asked}" \
      --arg cpu_s "$(sed -n 's/^target_start_cpu_s=//p' "$cell/target-start.txt" 2>/dev/null)" \
      --arg next_start "$next_start" --slurpfile row "$cell/row.json" \
      --arg started_line "$(grep -m1 -oE 'Started .* in [0-9.]+ seconds \(process running for [0-9.]+\)' "$cell/target.log" 2>/dev/null)" \
      -f "$LT_ROOT/scripts/lib/bench-cell.jq" <"$cell/phases.tsv")"
  done
  # From the first cell's start, not from the call: the run may have waited
  # for the host-wide lock.
  if ((${#cells[@]} > 0)); then
    started="$(awk -F'\t' '$1 == "cell_start" { print $2; exit }' "${cells[0]}/phases.tsv")"
  fi
  record orchestration-run "$(jq -n -c --argjson rep "$rep" --arg variant "${START_MODES// /+}" \
    --argjson wall_s "$((ended - started))" \
    --argjson k6 "$(jq -s '[.[].duration_s // 0] | add' "$run_dir"/cells/*/row.json)" \
    --argjson warmup_ms "$(bench_warmup_ms "${cells[@]}")" \
    --argjson cells "${#cells[@]}" \
    '{rep: $rep, variant: $variant, cells: $cells, wall_s: ($wall_s / 1000), k6_s: $k6, warmup_s: ($warmup_ms / 1000),
      overhead_per_cell_s: (if $cells > 0 then (($wall_s / 1000 - $k6 - $warmup_ms / 1000) / $cells * 100 | round / 100) else null end)}')"
}

# bench_warmup_ms CELL_DIR...: the cells' warm-ups together, ms (each its
# phases.tsv's last warmup_start to its last warmup_end; 0 without one).
bench_warmup_ms() {
  local cell total=0 ms
  for cell in "$@"; do
    ms="$(awk -F'\t' '$1 == "warmup_start" { s = $2 } $1 == "warmup_end" { e = $2 }
      END { print (s != "" && e != "") ? e - s : 0 }' "$cell/phases.tsv")"
    total=$((total + ms))
  done
  printf '%s\n' "$total"
}

bench_perturbation() {
  say "2/5 metrics perturbation: monitoring defaults versus none, two regimes"
  if ! "$LT_ROOT/scripts/monitoring.sh" status >/dev/null 2>&1; then
    "$LT_ROOT/scripts/monitoring.sh" up --native >&2 || abort "cannot start InfluxDB"
    STARTED_MONITORING=1
  fi
  local rep regime variant run_dir
  local -A regime_lines=(
    [seeds]="VUS=1000|DELAY_MS=1000|DURATION=15s|TOMCAT_MAX_THREADS=1000|SERVER_HEAP=1g|GRACEFUL_STOP=3s"
    [saturated]="VUS=100|DELAY_MS=0|DURATION=10s|GRACEFUL_STOP=1s"
  )
  for ((rep = 1; rep <= REPS; rep++)); do
    for regime in seeds saturated; do
      for variant in none defaults; do
        local -a lines
        IFS='|' read -r -a lines <<<"${regime_lines[$regime]}"
        if [[ "$variant" == none ]]; then
          run_dir="$(MONITORING=off K6_HTML_REPORT=0 K6_SAMPLES=0 run_matrix "perturbation-$regime-$variant-$rep" "${lines[@]}")"
        else
          run_dir="$(MONITORING=on K6_HTML_REPORT=1 run_matrix "perturbation-$regime-$variant-$rep" "${lines[@]}")"
        fi
        record "perturbation-$regime" "$(jq -c --argjson rep "$rep" --arg v "$variant" '{rep: $rep, variant: $v,
          tps: .tps, p95_ms: .lat_p95_ms, k6_cpu_avg_pct: .k6_cpu_avg_pct, generator_bound: .generator_bound}' \
          "$run_dir/cells/01/row.json")"
      done
    done
  done
}

bench_capacity() {
  say "3/5 generator capacity: spikes of $CAPACITY_VUS VUs against a 5 s endpoint"
  local vus run_dir
  for vus in $CAPACITY_VUS; do
    # Queues as large as the spike and every thread started with the
    # target, so it takes all the users at once and only the generator can
    # fall short. (With the defaults, 4000 simultaneous connects overflow a
    # backlog of 100, and a pool that starts with 10 threads took 5 s here
    # to grow to 4000: both start requests late.)
    run_dir="$(run_matrix "capacity-$vus" "VUS=$vus" "DELAY_MS=5000" "DURATION=20s" \
      "TOMCAT_MAX_THREADS=$vus" "TOMCAT_MIN_SPARE_THREADS=$vus" "TOMCAT_ACCEPT_COUNT=$vus" "SOMAXCONN=$vus" \
      "SERVER_HEAP=2g" "REQUEST_TIMEOUT=30s" "GRACEFUL_STOP=6s")"
    # In 20 s every VU starts exactly 4 requests of 5 s: sustained means all
    # 4 x VUs answered, with a median latency of 5 s.
    record capacity "$(jq -c --argjson vus "$vus" '{vus: $vus, http_reqs: .http_reqs, expected_reqs: ($vus * 4),
      completed_ratio: (.http_reqs / ($vus * 4)), lat_med_ms: .lat_med_ms, lat_max_ms: .lat_max_ms,
      failed_reqs: .failed_reqs, k6_cpu_avg_pct: .k6_cpu_avg_pct,
      k6_rss_peak_mb: .k6_rss_peak_mb, kb_per_vu: (.k6_rss_peak_mb * 1024 / $vus),
      generator_bound: .generator_bound}' "$run_dir/cells/01/row.json")"
  done
}

# bench_start: burst against spike for each of BENCH_START_VUS users, one
# request each, held 20 s so every connection is open at once. The k6
# processes and the burst's lead are the suite's own choice (K6_INSTANCES
# and BURST_LEAD_MS left at auto, as a user leaves them); the target's JVM
# may open fewer than 20,000 files here, so Tomcat takes at most 15,000 and
# the kernel's accept queue holds the rest. Per cell: the processes and
# lead chosen, when the first request left and how spread the first
# requests were, memory per user. The burst runs twice, side by side: with
# BENCH_USERS_PER_VU users a VU (auto: what the suite chooses for the cell,
# scripts/ltsuite/rules.py users_per_vu) and with a VU per user
# (USERS_PER_VU=1); k6 VUs are the users over the users each VU carries.
# The spread is taken as each user's request is sent (before its connect);
# beside it, what the users then waited for: k6's connecting median (the
# time parts' when the cell kept its samples, else k6's summary), the
# SYNs the kernel retransmitted and the listen queue's overflows, and the
# machine's load average (1 min) as the cell ended.
bench_start() {
  say "3b/5 VU start: burst ($BATCH_USERS and 1 users per VU) versus spike for $START_VUS users"
  local vus scenario run_dir mc per_vu
  for vus in $START_VUS; do
    mc=$((vus + 100 < 15000 ? vus + 100 : 15000))
    for scenario in "burst:$BATCH_USERS" burst:1 spike:1; do
      per_vu="${scenario#*:}"
      scenario="${scenario%%:*}"
      run_dir="$(run_matrix "start-$scenario-$per_vu-$vus" "SCENARIO=$scenario" "VUS=$vus" "USERS_PER_VU=$per_vu" \
        "REQUESTS_PER_VU=1" "DELAY_MS=20000" "REQUEST_TIMEOUT=40s" "DURATION=$((vus / 400 + 30))s" "GRACEFUL_STOP=5s" \
        "TOMCAT_MAX_THREADS=200" "TOMCAT_MAX_CONNECTIONS=$mc" "TOMCAT_ACCEPT_COUNT=$vus" "SOMAXCONN=65535" \
        "SERVER_HEAP=3g")"
      record start "$(jq -c --argjson vus "$vus" --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
        --slurpfile env <(results_env_json "$run_dir/cells/01/cell.env") \
        --slurpfile summary <(cat "$run_dir/cells/01/summary.json" 2>/dev/null || echo null) '{vus: $vus,
        scenario: .scenario, k6_instances: ($env[0].K6_INSTANCES | tonumber? // null),
        users_per_vu: (if .scenario == "burst" then ($env[0].USERS_PER_VU | tonumber? // null) else 1 end),
        k6_vus: (if .vus_max == null then null
                 else (($env[0].USERS_PER_VU | tonumber? // 1) as $per | (.vus_max + $per - 1) / $per | floor) end),
        burst_lead_ms: (if .scenario == "burst" then ($env[0].BURST_LEAD_MS | tonumber? // null) else null end),
        vus_started: .vus_started,
        first_request_after_s: .first_request_after_s, first_request_spread_ms: .first_request_spread_ms,
        vus_per_s: (if (.first_request_after_s // 0) > 0 and .scenario == "spike"
                    then (.vus_started / .first_request_after_s * 10 | round / 10) else null end),
        k6_rss_peak_mb: .k6_rss_peak_mb,
        kb_per_vu: (if .k6_rss_peak_mb == null then null else (.k6_rss_peak_mb * 1024 / $vus | round) end),
        connect_med_ms: (.t_connect_med_ms // $summary[0].metrics.http_req_connecting.values.med? // null),
        syn_retrans: .syn_retrans, listen_overflows: .listen_overflows,
        load_avg: ($load | tonumber? // null),
        server_conns_peak: .server_conns_peak, as_designed: .as_designed, design_notes: .design_notes}' \
        "$run_dir/cells/01/row.json")"
    done
  done
}

# bench_wrk: wrk and k6 against one running target, alternating, in the
# suite's namespaces (the same path the scenarios take).
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
bench_wrk() {
  say "4/5 reference: wrk versus the spike scenario, 50 connections, fast endpoint"
  knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  local -A cell=()
  local key
  for key in "${KNOB_ORDER[@]}"; do cell[$key]="${KNOB_DEFAULT[$key]}"; done
  cell[VUS]=50
  cell[K6_INSTANCES]=1 # one process, as wrk is one
  cell[DELAY_MS]=0
  cell[DURATION]=10s
  cell[GRACEFUL_STOP]=1s
  bench_lock
  LT_RUN_ID="bench-wrk"
  netns_down
  netns_up "${cell[SERVER_ADDR]}" "${cell[CLIENT_ADDR]}"
  target_start cell "$BENCH_DIR/runs/wrk-target.log"
  target_wait_healthy "http://${cell[SERVER_ADDR]}:${cell[SERVER_PORT]}${cell[TARGET_HEALTH_PATH]}" 60 target_alive || abort "$CELL_ERROR"
  local url="http://${cell[SERVER_ADDR]}:${cell[SERVER_PORT]}" rep wrk_rps k6_rps dir
  for ((rep = 1; rep <= REPS; rep++)); do
    wrk_rps="$(netns_exec client wrk -t2 -c50 -d10s "$url/hello?delayMs=0" | awk '/^Requests\/sec/ { print $2 }')"
    dir="$BENCH_DIR/runs/wrk-k6-$rep"
    mkdir -p "$dir"
    k6_start cell "$dir" "$url" 60
    k6_wait || true
    k6_rps="$(jq '.metrics["http_reqs{traffic:load}"].values.rate' "$dir/summary.json")"
    record reference "$(jq -nc --argjson rep "$rep" --argjson w "${wrk_rps:-null}" --argjson k "${k6_rps:-null}" \
      '{rep: $rep, wrk_rps: $w, k6_rps: $k, ratio: (if $w and $k then $k / $w else null end)}')"
  done
  target_stop
  netns_down
  # The sections after this one run matrices, which take the lock themselves.
  bench_unlock
}

# bench_sampler: the seeds' regime (1000 users, 1 s endpoint: 2000 sockets
# per sample) with the sampler off and on, alternating; the sampler's own
# CPU (both namespaces read in its own process) from sampler.json.
bench_sampler() {
  say "5/5 sampler: the same cell with the sampler off and on"
  local rep variant run_dir
  for ((rep = 1; rep <= REPS; rep++)); do
    for variant in off on; do
      run_dir="$(LT_SAMPLER="$variant" run_matrix "sampler-$variant-$rep" \
        "VUS=1000" "DELAY_MS=1000" "DURATION=15s" "TOMCAT_MAX_THREADS=1000" "SERVER_HEAP=1g" "GRACEFUL_STOP=3s")"
      record sampler "$(jq -c --argjson rep "$rep" --arg v "$variant" \
        --argjson cost "$(cat "$run_dir/cells/01/sampler.json" 2>/dev/null || printf null)" '{rep: $rep, variant: $v,
          tps: .tps, p95_ms: .lat_p95_ms, wall_s: .cell_wall_s, k6_cpu_avg_pct: .k6_cpu_avg_pct,
          sampler_cpu_s: $cost.cpu_s, sampler_cpu_pct: $cost.cpu_pct, samples: $cost.samples,
          sampler_cpu_ms_per_sample: (if ($cost.samples // 0) > 0 then $cost.cpu_s * 1000 / $cost.samples else null end),
          missed_ticks: $cost.missed_ticks}' "$run_dir/cells/01/row.json")"
    done
  done
}

# bench_ownscript: 100 users as fast as the target answers, from the suite's
# spike scenario and from a script written the way a user writes one (one
# GET, a check), which the runner wraps (scenarios/lib/own-script.js: the
# delivered-load marks and one threshold sub-metric per k6 error code),
# alternating. k6 saturates here, so its CPU and TPS show what the wrapper
# costs next to the suite's own scenario.
bench_ownscript() {
  say "6/6 a script of one's own: the same load from it and from the spike scenario, alternating"
  local rep variant run_dir script="$BENCH_DIR/runs/own-spike.js"
  printf '%s\n' "// A user-style script: one GET, a check on the status." \
    "import http from 'k6/http';" "import { check } from 'k6';" \
    "export const options = { vus: 100, duration: '10s' };" \
    "export default function () {" \
    "  check(http.get(\`\${__ENV.BASE_URL}/hello\`), { 'status is 200': (r) => r.status === 200 });" \
    "}" >"$script"
  for ((rep = 1; rep <= REPS; rep++)); do
    for variant in spike own; do
      if [[ "$variant" == spike ]]; then
        run_dir="$(run_matrix "ownscript-$variant-$rep" "VUS=100" "DURATION=10s" "DELAY_MS=0" "GRACEFUL_STOP=1s")"
      else
        run_dir="$(run_matrix "ownscript-$variant-$rep" "SCENARIO=$script" "DELAY_MS=0" "GRACEFUL_STOP=1s")"
      fi
      record ownscript "$(jq -c --argjson rep "$rep" --arg v "$variant" '{rep: $rep, variant: $v,
        tps: .tps, p95_ms: .lat_p95_ms, k6_cpu_avg_pct: .k6_cpu_avg_pct, http_reqs: .http_reqs}' \
        "$run_dir/cells/01/row.json")"
    done
  done
}

# bench_netdelay: the delayer on this machine, kept small (two RTTs, the
# rates of BENCH_NETDELAY_RATES for 2 s each, at 20 ms): its own namespaces
# and tables (scripts/netdelay-bench.sh), in netdelay.md and at the end of
# bench.md.
bench_netdelay() {
  say "7/7 delayer: connect times at NET_RTT_MS 0 and 20, packets a second held at 20 ($NETDELAY_RATES /s asked)"
  NETDELAY_BENCH_RTTS="0 20" NETDELAY_BENCH_RATES="$NETDELAY_RATES" "$LT_ROOT/scripts/netdelay-bench.sh" \
    >"$BENCH_DIR/netdelay.md" || warn "the delayer's bench failed; see $BENCH_DIR/netdelay.md"
  bench_netdelay_bursts
}

# bench_netdelay_bursts: one run of BENCH_NETDELAY_BURSTS users at one
# instant, one request each on a new connection to a 0 ms endpoint, through
# the delayer at NET_RTT_MS=50, on a server with room for all (the timings
# matrix's); its table (netdelay_burst_table) in netdelay-burst.md.
bench_netdelay_bursts() {
  say "7/7 delayer: bursts of $NETDELAY_BURSTS users at NET_RTT_MS=50"
  local run_dir
  run_dir="$(K6_SAMPLES=1 run_matrix netdelay-bursts "SCENARIO=burst" "VUS=$NETDELAY_BURSTS" "REQUESTS_PER_VU=1" \
    "DELAY_MS=0" "REQUEST_TIMEOUT=20s" "DURATION=20s" "GRACEFUL_STOP=5s" "TOMCAT_MAX_THREADS=400" \
    "TOMCAT_MAX_CONNECTIONS=8192" "TOMCAT_ACCEPT_COUNT=4096" "SOMAXCONN=4096" "NET_RTT_MS=50")"
  netdelay_burst_table "$run_dir" >"$BENCH_DIR/netdelay-burst.md"
}

# netdelay_burst_table RUN_DIR: per cell of the run, the users, the packets
# a second the delayer released at its peak and in all, its holds, its
# unread backlog, the kernel's drops, k6's and the machine's CPU while the
# users were released, the users' connect median, and whether the cell was
# flagged for the delayer ("the delayer fell behind" in design_notes).
netdelay_burst_table() {
  printf '## Bursts through the delayer at NET_RTT_MS=50 (run %s)\n\n' "$(basename "$1")"
  printf '| users | peak packets/s held | packets held | hold p99 ms | unread p99 ms | unread peak | kernel drops | k6 CPU %% in the release | machine busy %% | connect median ms | delayer flagged |\n'
  printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
  local row held
  for row in "$1"/cells/*/row.json; do
    [[ -f "$row" ]] || continue
    held="$(jq '.held' "$(dirname "$row")/netdelay.json" 2>/dev/null)" || held=null
    jq -r --argjson held "${held:-null}" 'def v: if . == null then "-" else tostring end;
      "| \(.vus_max | v) | \(.net_held_peak_per_s | v) | \($held | v) | \(.net_hold_p99_ms | v) | \(.net_unread_p99_ms | v) | \(.net_unread_peak | v) | \(.net_delayer_drops | v) | \(.k6_release_cpu_pct | v) | \(.machine_release_busy_pct | v) | \(.t_connect_new_med_ms | v) | \(if ((.design_notes // "") | test("the delayer fell behind")) then "yes" else "no" end) |"' "$row"
  done
}

# render: bench.json (every measurement and the medians) and bench.md, the
# delayer's tables (netdelay.md) after the rest.
render() {
  touch "$BENCH_DIR/measurements.jsonl"
  jq -s -f "$LT_ROOT/scripts/lib/bench.jq" "$BENCH_DIR/measurements.jsonl" >"$BENCH_DIR/bench.json"
  jq -r -f "$LT_ROOT/scripts/lib/bench-md.jq" "$BENCH_DIR/bench.json" >"$BENCH_DIR/bench.md"
  if [[ -s "$BENCH_DIR/netdelay.md" ]]; then
    printf '
## 7. The delayer (NET_RTT_MS; scripts/netdelay-bench.sh, on its own namespaces)

' >>"$BENCH_DIR/bench.md"
    sed 's/^## /### /' "$BENCH_DIR/netdelay.md" >>"$BENCH_DIR/bench.md"
  fi
  if [[ -s "$BENCH_DIR/netdelay-burst.md" ]]; then
    printf '\n' >>"$BENCH_DIR/bench.md"
    sed 's/^## /### /' "$BENCH_DIR/netdelay-burst.md" >>"$BENCH_DIR/bench.md"
  fi
}

# on_exit: stop what the bench started; the namespaces only while it holds
# the run lock (bench_wrk): without it they are another run's, mid-cell.
on_exit() {
  local status=$?
  k6_stop
  target_stop
  [[ -z "${lock_fd:-}" ]] || netns_down
  if [[ $STARTED_MONITORING -eq 1 ]]; then
    "$LT_ROOT/scripts/monitoring.sh" down >&2 || true
  fi
  exit "$status"
}

# Sourced (tests): the functions only.
[[ "${BASH_SOURCE[0]}" != "$0" ]] || main "$@"
