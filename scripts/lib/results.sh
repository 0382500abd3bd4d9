# shellcheck shell=bash
# Summary: one results row per cell (row.json), and the run's tables built from them.
#
# Every file is written to a temporary name and renamed, so a reader (or an
# interrupted run) never sees half a file.

# The columns of results.csv after run_id, cell, scenario, status and the axes.
readonly RESULTS_COLUMNS=(
  as_designed design_notes
  vus_max vus_started duration_s load_window_s first_request_after_s first_request_spread_ms
  http_reqs tps
  lat_min_ms lat_avg_ms lat_med_ms lat_p90_ms lat_p95_ms lat_p99_ms lat_max_ms
  failed_reqs failed_rate
  fail_connect fail_reset fail_timeout fail_http_4xx fail_http_5xx fail_other fail_no_local_port
  iterations iterations_started iterations_interrupted dropped_iterations
  client_connects server_accepts
  listen_overflows listen_drops syn_retrans syn_cookies_sent syn_recv_peak
  server_conns_peak accept_queue_peak listen_backlog queue_capacity
  time_wait_peak server_time_wait_peak client_time_wait_peak
  tomcat_threads_busy_peak
  k6_cpu_avg_pct k6_cpu_peak_pct k6_cpu_saturated_s k6_rss_peak_mb generator_bound
  predicted_server_conns_peak predicted_failed_users predicted_failed_users_from predicted_listen_overflows predicted_syn_retrans
  predicted_tps predicted_lat_max_ms prediction_check prediction_notes
  setup_s target_start_s k6_s teardown_s files_s
  cell_wall_s
  k6_exit
  error
)

# write_atomic FILE: copy stdin to FILE through a temporary file and a rename.
# Empty input (a failed producer in the pipeline) leaves FILE as it was and
# fails: no result file is ever replaced by nothing.
write_atomic() {
  local file="$1"
  if ! cat >"$file.tmp.$$" || [[ ! -s "$file.tmp.$$" ]]; then
    rm -f "$file.tmp.$$"
    return 1
  fi
  mv -f "$file.tmp.$$" "$file"
}

# results_samples_peaks SAMPLES_TSV CPUS INTERVAL_S: JSON object with the
# peak of every sampled series (null for a series never read), found by
# header name; plus the TIME-WAIT peak of both sides together, k6's mean CPU
# and the seconds in which k6 used at least 90 % of all CPUS cores.
results_samples_peaks() {
  awk -F'\t' -v cpus="${2:-1}" -v interval="${3:-1}" '
    NR == 1 { for (i = 1; i <= NF; i++) { name[i] = $i; col[$i] = i }; next }
    {
      for (i = 2; i <= NF; i++) {
        if ($i == "") continue
        if (!(i in peak) || $i + 0 > peak[i] + 0) peak[i] = $i
      }
      tw = $col["server_time_wait"] + $col["client_time_wait"]
      if (tw > tw_peak) tw_peak = tw
      cpu = $col["k6_cpu_pct"]
      if (cpu != "") {
        cpu_sum += cpu; cpu_n++
        if (cpu + 0 >= 90 * cpus) saturated++
      }
    }
    END {
      printf "{"
      for (i = 2; i in name; i++) printf "%s\"%s\":%s", (i > 2 ? "," : ""), name[i], ((i in peak) ? peak[i] + 0 : "null")
      printf ",\"time_wait_total\":%d,\"k6_cpu_avg\":%s,\"k6_cpu_saturated_s\":%s}\n", tw_peak,
        (cpu_n ? sprintf("%.1f", cpu_sum / cpu_n) : "null"), (cpu_n ? saturated * interval : "null")
    }
  ' "$1"
}

# results_summary_problem SUMMARY_JSON: why k6's summary cannot be used
# (missing, empty, not JSON, no metrics), or nothing when it is fine.
results_summary_problem() {
  local file="$1"
  if [[ ! -e "$file" ]]; then
    printf 'k6 wrote no summary.json\n'
  elif [[ ! -s "$file" ]]; then
    printf 'summary.json is empty\n'
  elif ! jq -e 'type == "object" and (.metrics | type == "object")' "$file" >/dev/null 2>&1; then
    printf 'summary.json is not a k6 summary (truncated or not JSON)\n'
  fi
}

# results_sysctls_json SYSCTLS_TSV: {"server": {name: value}, "client": {...}}.
results_sysctls_json() {
  if [[ ! -s "$1" ]]; then
    printf '{}\n'
    return
  fi
  jq -Rn '[inputs | split("\t") | select(length == 3)]
          | reduce .[] as $r ({}; .[$r[0]][$r[1]] = $r[2])' <"$1"
}

# results_phases_json PHASES_TSV: {"phase": epoch_ms, ...} (the last mark of
# each name).
results_phases_json() {
  if [[ ! -s "$1" ]]; then
    printf '{}\n'
    return
  fi
  jq -Rn '[inputs | split("\t") | select(length == 2) | {(.[0]): (.[1] | tonumber)}] | add // {}' <"$1"
}

# results_log_count CELL_DIR TEXT: lines of the cell's k6 logs (one per k6
# instance) that contain TEXT.
results_log_count() {
  cat "$1"/k6*.log 2>/dev/null | grep -c -F -- "$2" || true
}

# results_machine_json: the machine facts the design rules use.
results_machine_json() {
  jq -n --argjson cpus "$(nproc)" '{cpus: $cpus}'
}

# results_row CELL_DIR STATUS ERROR AXES_JSON [WALL_S] [REPEAT_JSON]: write
# CELL_DIR/row.json. REPEAT_JSON ({"of": CELL_ID, "k": K}) names the
# repetition a cell directory holds when the run has REPEAT > 1.
# A summary that is missing or unreadable makes the cell failed with that
# reason; if the row itself cannot be built, a failed row says why, so a
# cell never ends without one.
results_row() {
  local cell_dir="$1" status="$2" error="$3" axes_json="$4" wall_s="${5:-}" repeat_json="${6:-null}"
  local summary="{}" peaks="{}" extra_in="{}" cell_json deltas_json problem interval row
  cell_json="$(results_env_json "$cell_dir/cell.env")" || cell_json='{}'
  problem="$(results_summary_problem "$cell_dir/summary.json")"
  if [[ -z "$problem" ]]; then
    summary="$(cat "$cell_dir/summary.json")"
  elif [[ "$status" == ok ]]; then
    status=failed
    error="$problem"
  fi
  interval="$(jq -r '.SAMPLE_INTERVAL // "1"' <<<"$cell_json")"
  if [[ -s "$cell_dir/samples.tsv" ]]; then
    peaks="$(results_samples_peaks "$cell_dir/samples.tsv" "$(nproc)" "$interval")" || peaks='{}'
  fi
  # The server's own account of a scenario (run_cell_steps): waiting_room, websocket.
  local stats
  for stats in waiting-room websocket; do
    if [[ -s "$cell_dir/$stats-stats.json" ]] && jq -e . "$cell_dir/$stats-stats.json" >/dev/null 2>&1; then
      extra_in="$(jq -c --arg k "${stats//-/_}" '{($k): .}' "$cell_dir/$stats-stats.json")"
    fi
  done
  if [[ -s "$cell_dir/connector.json" ]] && jq -e . "$cell_dir/connector.json" >/dev/null 2>&1; then
    extra_in="$(jq -c --slurpfile c "$cell_dir/connector.json" '. + {connector: $c[0]}' <<<"$extra_in")"
  fi
  deltas_json="$(results_deltas_json "$cell_dir/netstat-delta.tsv")" || deltas_json='{}'
  if row="$(jq -n -L "$LT_ROOT/scripts/lib" \
    --arg run_id "$LT_RUN_ID" --arg cell "$(basename "$cell_dir")" \
    --arg status "$status" --arg error "$error" --arg k6_exit "${CELL_K6_EXIT:-}" --arg wall_s "$wall_s" \
    --argjson axes "$axes_json" --argjson cell_env "$cell_json" \
    --argjson inspected "$(results_inspected_json "$cell_dir")" \
    --argjson summary "$summary" --argjson peaks "$peaks" --argjson deltas "$deltas_json" \
    --argjson extra_in "$extra_in" --argjson repeat "$repeat_json" \
    --argjson sysctls "$(results_sysctls_json "$cell_dir/sysctls.tsv")" \
    --argjson machine "$(results_machine_json)" \
    --argjson phases "$(results_phases_json "$cell_dir/phases.tsv")" \
    --argjson no_port "$(results_log_count "$cell_dir" 'cannot assign requested address')" \
    --arg require_as_designed "$(jq -r '.REQUIRE_AS_DESIGNED // "0"' <<<"$cell_json")" \
    -f "$LT_ROOT/scripts/lib/row.jq" 2>"$cell_dir/row.err")" && [[ -n "$row" ]]; then
    printf '%s\n' "$row" | write_atomic "$cell_dir/row.json"
    rm -f "$cell_dir/row.err"
    return 0
  fi
  jq -n --arg run_id "$LT_RUN_ID" --arg cell "$(basename "$cell_dir")" \
    --arg scenario "$(jq -r '.SCENARIO // ""' <<<"$cell_json")" --arg axes "$axes_json" \
    --arg error "the row could not be built: $(head -c 300 "$cell_dir/row.err")${error:+; $error}" \
    --argjson repeat "$repeat_json" \
    '{run_id: $run_id, cell: $cell, repeat_of: ($repeat.of // $cell), repeat: ($repeat.k // 1),
      scenario: $scenario, status: "failed", axes: ($axes | fromjson? // {}), error: $error}' \
    | write_atomic "$cell_dir/row.json"
  return 1
}

# results_inspected_json CELL_DIR: k6's inspection of a script of one's own
# (k6-script.json), or null.
results_inspected_json() {
  if [[ -s "$1/k6-script.json" ]] && jq -e . "$1/k6-script.json" >/dev/null 2>&1; then
    jq -c . "$1/k6-script.json"
  else
    printf 'null\n'
  fi
}

# results_env_json ENV_FILE: a cell.env as a JSON object of strings.
results_env_json() {
  local -A env_pairs=()
  local key
  load_cell_env "$1" env_pairs || return 1
  for key in "${!env_pairs[@]}"; do
    printf '%s\t%s\n' "$key" "${env_pairs[$key]}"
  done | jq -Rn '[inputs | index("\t") as $tab | {(.[:$tab]): .[$tab + 1:]}] | add // {}' -S
}

# results_deltas_json DELTA_TSV: {"server": {counter: delta}, "client": {...}}.
results_deltas_json() {
  if [[ ! -s "$1" ]]; then
    printf '{}\n'
    return
  fi
  jq -Rn '[inputs | split("\t") | select(length == 3 and (.[2] | test("^-?[0-9]+$")))]
          | reduce .[] as $r ({}; .[$r[1]][$r[0]] = ($r[2] | tonumber))' <"$1"
}

# results_render RUN_DIR: results.csv and results.md from every cells/*/row.json,
# in cell order, with the axis columns the manifest names.
results_render() {
  local run_dir="$1" axes_json
  axes_json="$(jq -c '.axes' "$run_dir/manifest.json")"
  local -a rows=()
  local row
  for row in "$run_dir"/cells/*/row.json; do
    [[ -e "$row" ]] && rows+=("$row")
  done
  if [[ ${#rows[@]} -eq 0 ]]; then
    printf 'run_id,cell,scenario,status\n' | write_atomic "$run_dir/results.csv"
    printf 'No cell finished.\n' | write_atomic "$run_dir/results.md"
    return
  fi
  local extra_json head_json
  extra_json="$(results_extra_json "${rows[@]}")"
  head_json="$(results_head_json "$axes_json" "$extra_json")"
  jq -rs --argjson head "$head_json" '
    # Quote a field only when it needs it (RFC 4180), so numbers stay bare.
    def field: if . == null then ""
      elif type == "string" and test("[\",\r\n]") then "\"" + gsub("\""; "\"\"") + "\""
      else tostring end;
    ($head | join(",")),
      (.[] | . as $r | [$head[] | . as $k
        | (if $r | has($k) then $r[$k] elif ($r.extra // {}) | has($k) then $r.extra[$k] else $r.axes[$k] end)
        | field] | join(","))
  ' "${rows[@]}" | write_atomic "$run_dir/results.csv"
  jq -rs -L "$LT_ROOT/scripts/lib" --argjson axes "$axes_json" --argjson extra "$extra_json" -f "$LT_ROOT/scripts/lib/table.jq" "${rows[@]}" \
    | write_atomic "$run_dir/results.md"
}

# results_extra_json ROW_JSON...: the columns some scenarios add, in the
# order the rows first name them, as a JSON array.
results_extra_json() {
  jq -cs '[.[] | .extra // {} | keys_unsorted[]]
    | reduce .[] as $k ([]; if index([$k]) then . else . + [$k] end)' "$@"
}

# results_head_json AXES_JSON EXTRA_JSON: every column of results.csv, in
# order, as a JSON array (the report's table uses the same).
results_head_json() {
  printf '%s\n' "${RESULTS_COLUMNS[@]}" | jq -cRn --argjson axes "$1" --argjson extra "$2" \
    '[inputs] as $cols | ["run_id", "cell", "scenario", "status"] + $axes + ["repeat_of", "repeat"] + $cols[0:-1] + $extra + ["error", "notes"]'
}
