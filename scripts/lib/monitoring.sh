# shellcheck shell=bash
# Summary: live metrics for a run: k6 samples, queue/thread samples, counter deltas and rows to InfluxDB.
#
# The runner calls these hooks; with MONITORING=off they do nothing.
#   monitoring_run_start RUN_DIR CELL_ASSOC  once, before the first cell
#   monitoring_cell_start CELL_ASSOC CELL_DIR before k6 starts, then
#   monitoring_k6_options CELL_ASSOC CELL_DIR the k6 outputs (k6_start's options)
#   monitoring_sampler_hook                 the sampler's per-row hook
#   monitoring_cell_done CELL_ASSOC CELL_DIR  after the cell's files are written
# A monitoring failure never fails a cell: it becomes a manifest warning.
#
# k6 runs in the client namespace, which has no route to the host's
# 127.0.0.1, and a live InfluxDB output costs a saturated k6 up to half its
# throughput. So by default (MONITORING_K6_OUTPUT=file) k6 writes its samples
# to the cell's k6-samples.json.gz and monitoring_cell_done sends them, with
# the runner's own files, once the cell is over. The sampler's rows (one
# point a second) are also sent as they are taken, so a cell in progress
# shows its queues and threads; the send after the cell writes the same
# points again (same series and time: InfluxDB keeps one) and fills any gap.
# What is sent:
#   <k6 metric>      k6's samples, as k6's own InfluxDB output names them
#   ltsuite_samples  samples.tsv (queues, connection states, Tomcat threads)
#   ltsuite_counters netstat-delta.tsv (field delta, tags side and counter)
#   ltsuite_cells    row.json (every number of the results row)
#   ltsuite_time_parts each request's connect, queued, service and rest
#                    (k6's samples joined with Tomcat's access log), per second
# Every point carries the tags run_id, cell and scenario.
#
# Needs common.sh, manifest.sh and results.sh (write_atomic); netns.sh for
# MONITORING_K6_OUTPUT=live.

# State of the current run, set by monitoring_run_start.
MONITORING_ACTIVE=0
MONITORING_RUN_DIR=""
MONITORING_URL=""
# InfluxDB's user and password ("user:password", percent-encoded as in a
# URL), kept out of MONITORING_URL, the knobs and every file: curl gets them
# in a config on a pipe, k6 in its environment (monitoring_take_credentials).
MONITORING_CREDENTIALS="${MONITORING_CREDENTIALS:-}"
MONITORING_DB=""
MONITORING_K6_MODE="file"
# Where the current cell's k6 samples go: none, file or live.
MONITORING_CELL_K6="none"
MONITORING_LIVE_CHECKED=0
# Lines per POST to /write: InfluxDB's own guidance is 5,000-10,000 points
# per batch; bigger batches gain nothing on loopback.
MONITORING_BATCH_LINES="${MONITORING_BATCH_LINES:-10000}"
# The sampler's live sending: monitoring_samples_lines' arguments for the
# current cell, and failed sends in a row.
MONITORING_SAMPLE_ARGS=()
MONITORING_SAMPLE_FAILURES=0
# Set by monitoring_ship_cell: points sent and why it failed.
MONITORING_POINTS=0
MONITORING_ERROR=""

MONITORING_LIB_DIR="$(dirname "${BASH_SOURCE[0]}")"

# monitoring_take_credentials VALUES_ASSOC: an INFLUXDB_URL with a user and
# password (http://user:password@host:8086) keeps them in
# MONITORING_CREDENTIALS and becomes the URL without them, before any cell's
# settings, the manifest or a command line see it. A resumed run recorded the
# URL without them: an INFLUXDB_URL in the environment that is the same URL
# with them gives them again.
monitoring_take_credentials() {
  local -n credential_values="$1"
  local url="${credential_values[INFLUXDB_URL]:-}" given="${INFLUXDB_URL:-}"
  [[ "$url" != *" "* ]] || return 0
  if [[ -z "$(url_credentials "$url")" && -n "$(url_credentials "$given")" \
    && "$(url_without_credentials "$given")" == "$url" ]]; then
    url="$given"
  fi
  [[ -n "$(url_credentials "$url")" ]] || return 0
  MONITORING_CREDENTIALS="$(url_credentials "$url")"
  credential_values[INFLUXDB_URL]="$(url_without_credentials "$url")"
}

# monitoring_credential PART: the user (1) or the password (2) of
# MONITORING_CREDENTIALS, percent-decoded.
monitoring_credential() {
  local part
  if [[ "$1" == 1 ]]; then part="${MONITORING_CREDENTIALS%%:*}"; else
    [[ "$MONITORING_CREDENTIALS" == *:* ]] || return 0
    part="${MONITORING_CREDENTIALS#*:}"
  fi
  printf '%b' "${part//%/\\x}"
}

# monitoring_curl_config: curl's config (curl -K) with InfluxDB's user and
# password; empty without them. Read from a pipe, never on curl's command line.
monitoring_curl_config() {
  [[ -n "$MONITORING_CREDENTIALS" ]] || return 0
  local user
  user="$(monitoring_credential 1):$(monitoring_credential 2)"
  user="${user//\\/\\\\}"
  printf 'user = "%s"\n' "${user//\"/\\\"}"
}

# monitoring_run_start RUN_DIR CELL_ASSOC: decide once whether this run goes
# to InfluxDB (MONITORING, INFLUXDB_URL, INFLUXDB_DB of the run's knobs) and
# record the decision in the manifest.
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
monitoring_run_start() {
  local run_dir="$1"
  local -n run_values="$2"
  local mode="${run_values[MONITORING]:-auto}"
  MONITORING_RUN_DIR="$run_dir"
  monitoring_take_credentials run_values
  MONITORING_URL="${run_values[INFLUXDB_URL]:-http://127.0.0.1:8086}"
  MONITORING_URL="${MONITORING_URL%/}"
  MONITORING_DB="${run_values[INFLUXDB_DB]:-k6}"
  MONITORING_K6_MODE="${run_values[MONITORING_K6_OUTPUT]:-file}"
  MONITORING_LIVE_CHECKED=0
  MONITORING_ACTIVE=0
  case "$mode" in
    off) ;;
    on | auto)
      if monitoring_ping "$MONITORING_URL" && monitoring_create_db "$MONITORING_URL" "$MONITORING_DB"; then
        MONITORING_ACTIVE=1
        say "monitoring: InfluxDB $MONITORING_URL, database $MONITORING_DB (k6 samples: $MONITORING_K6_MODE)"
      elif [[ "$mode" == on ]]; then
        # The operator asked for it: keep the samples and try again after
        # every cell, so a late InfluxDB still gets the rest of the run.
        MONITORING_ACTIVE=1
        warn "monitoring: no InfluxDB answers at $MONITORING_URL; trying again after each cell"
        manifest_warn "$run_dir" "monitoring: no InfluxDB answered at $MONITORING_URL when the run started (MONITORING=on)"
      else
        say "monitoring: no InfluxDB at $MONITORING_URL ('make up' starts one); running without it"
      fi
      ;;
    *) warn "monitoring: unknown MONITORING='$mode'; running without it" ;;
  esac
  manifest_update "$run_dir" '.monitoring = {mode: $mode, influxdb_url: $url, database: $db,
      k6_samples: $k6, active: ($active == 1), points_written: 0}' \
    --arg mode "$mode" --arg url "$MONITORING_URL" --arg db "$MONITORING_DB" \
    --arg k6 "$(if ((MONITORING_ACTIVE)); then printf '%s' "$MONITORING_K6_MODE"; else printf none; fi)" \
    --argjson active "$MONITORING_ACTIVE"
}

# monitoring_cell_start CELL_ASSOC CELL_DIR: before the sampler and k6
# start: where k6's samples go for this cell (checking once per run that a
# live InfluxDB output can reach InfluxDB) and what the sampler's live
# sending tags its points with. State of this file only; the runner then asks
# monitoring_k6_options and monitoring_sampler_hook.
monitoring_cell_start() {
  local -n cell_knobs="$1"
  local cell_dir="$2"
  MONITORING_CELL_K6="none"
  if ((MONITORING_ACTIVE)); then
    MONITORING_SAMPLE_ARGS=("$LT_RUN_ID" "$(basename "$cell_dir")" "${cell_knobs[SCENARIO]}"
      "${cell_knobs[TOMCAT_MAX_THREADS]:-}" "${cell_knobs[TOMCAT_MAX_CONNECTIONS]:-}")
    MONITORING_SAMPLE_FAILURES=0
  fi
  if ((MONITORING_ACTIVE)) && [[ "$MONITORING_K6_MODE" == live ]] && monitoring_live_reachable; then
    MONITORING_CELL_K6="live"
  elif ((MONITORING_ACTIVE)) || [[ "${cell_knobs[K6_SAMPLES]:-1}" == 1 ]]; then
    MONITORING_CELL_K6="file"
  fi
}

# monitoring_k6_options CELL_ASSOC CELL_DIR: the k6 outputs of the cell, one
# per line: "--name=value" for k6's command line, NAME=value for its
# environment (k6_start takes both). The web dashboard's HTML export with
# K6_HTML_REPORT=1; the samples file (K6_SAMPLES=1 or a monitored run) or
# the live InfluxDB output, as monitoring_cell_start chose.
monitoring_k6_options() {
  local -n option_knobs="$1"
  local cell_dir="$2"
  if [[ "${option_knobs[K6_HTML_REPORT]:-1}" == 1 ]]; then
    # A period of 1 s, or k6 skips the export of a short cell; port -1: no
    # server, only the file (k6_start gives it a port of the suite's own).
    printf '%s\n' K6_WEB_DASHBOARD=true "K6_WEB_DASHBOARD_EXPORT=$cell_dir/k6-report.html" \
      K6_WEB_DASHBOARD_PERIOD=1s K6_WEB_DASHBOARD_PORT=-1
  fi
  case "$MONITORING_CELL_K6" in
    live)
      printf '%s\n' "--out=influxdb=$MONITORING_URL/$MONITORING_DB"
      # k6's InfluxDB output reads its user and password from these.
      if [[ -n "$MONITORING_CREDENTIALS" ]]; then
        printf '%s\n' "K6_INFLUXDB_USERNAME=$(monitoring_credential 1)" "K6_INFLUXDB_PASSWORD=$(monitoring_credential 2)"
      fi
      # Fewer, larger writes: a saturated k6 keeps 0.74 of its throughput
      # with these instead of 0.5 with the defaults (1 s, 4 writers).
      printf '%s\n' K6_INFLUXDB_PUSH_INTERVAL=5s K6_INFLUXDB_CONCURRENT_WRITES=8
      ;;
    file)
      # The file serves both the report's per-request charts and InfluxDB.
      # JSON, not CSV: k6 spends 1.2x its own CPU writing compressed JSON
      # lines, 1.8x writing compressed CSV (k6 1.8.1, 40,000 requests). Only
      # the system tags the dashboards and the tables use: without url,
      # method, proto, group and the rest, a saturated cell kept 0.97 of its
      # unmonitored TPS instead of 0.87 (3 cells each way, 100 VUs, no delay).
      printf '%s\n' "--out=json=$cell_dir/k6-samples.json.gz" \
        "K6_SYSTEM_TAGS=status,error_code,expected_response,name,scenario,check"
      ;;
  esac
}

# monitoring_sampler_hook: the command the sampler runs with each row as it
# is taken (sampler_start's HOOK); nothing when the run is not monitored.
monitoring_sampler_hook() {
  ((MONITORING_ACTIVE == 0)) || printf 'monitoring_send_sample\n'
}

# monitoring_send_sample ROW: send one samples row (in the sampler's
# subshell) as it is taken. Bounded to half a second; after 3 failures in a
# row the cell stops trying (monitoring_cell_done reports what is missing).
monitoring_send_sample() {
  ((MONITORING_SAMPLE_FAILURES < 3)) || return 0
  if printf '%s\n%s\n' "$SAMPLES_HEADER" "$1" | monitoring_samples_lines "${MONITORING_SAMPLE_ARGS[@]}" \
    | curl -K <(monitoring_curl_config) -fsS -o /dev/null --connect-timeout 0.2 --max-time 0.5 --data-binary @- \
      "$MONITORING_URL/write?db=$MONITORING_DB&precision=ns" 2>/dev/null; then
    MONITORING_SAMPLE_FAILURES=0
  else
    MONITORING_SAMPLE_FAILURES=$((MONITORING_SAMPLE_FAILURES + 1))
  fi
}

# monitoring_live_reachable: succeed if k6 in the client namespace can reach
# InfluxDB. Checked once per run; when it cannot, the run falls back to the
# samples file with a warning.
monitoring_live_reachable() {
  if ((MONITORING_LIVE_CHECKED == 0)); then
    if netns_exec client curl -K <(monitoring_curl_config) -fsS -o /dev/null --max-time 2 "$MONITORING_URL/ping" 2>/dev/null; then
      MONITORING_LIVE_CHECKED=1
    else
      MONITORING_LIVE_CHECKED=2
      warn "monitoring: $MONITORING_URL is not reachable from the client namespace; k6 writes its samples to a file instead"
      manifest_warn "$MONITORING_RUN_DIR" "monitoring: MONITORING_K6_OUTPUT=live but $MONITORING_URL is not reachable from the client namespace; k6 samples were sent after each cell instead"
    fi
  fi
  ((MONITORING_LIVE_CHECKED == 1))
}

# monitoring_cell_done CELL_ASSOC CELL_DIR: send the cell's files to
# InfluxDB. Never fails: a refused or failed write is a manifest warning.
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
monitoring_cell_done() {
  local -n done_knobs="$1"
  local cell_dir="$2" started_ms
  ((MONITORING_ACTIVE)) || return 0
  started_ms="$(date +%s%3N)"
  if monitoring_ship_cell "$MONITORING_URL" "$MONITORING_DB" "$LT_RUN_ID" "$cell_dir" "${done_knobs[SCENARIO]}"; then
    say "  monitoring: $MONITORING_POINTS points to InfluxDB in $(monitoring_elapsed "$started_ms")"
  else
    warn "monitoring: cell $(basename "$cell_dir") not stored in InfluxDB: $MONITORING_ERROR"
    manifest_warn "$MONITORING_RUN_DIR" "monitoring: cell $(basename "$cell_dir") not (fully) stored in InfluxDB at $MONITORING_URL: $MONITORING_ERROR; its files are complete (scripts/monitoring.sh ship RUN_DIR sends the run again)" || true
  fi
  manifest_update "$MONITORING_RUN_DIR" '.monitoring.points_written += $n' --argjson n "$MONITORING_POINTS" || true
  return 0
}

# monitoring_elapsed START_MS: seconds since START_MS (epoch ms), e.g. "1.25s".
monitoring_elapsed() {
  local ms=$(($(date +%s%3N) - $1))
  printf '%d.%02ds' $((ms / 1000)) $((ms % 1000 / 10))
}

# monitoring_ping URL: succeed if an InfluxDB answers URL/ping.
monitoring_ping() {
  curl -K <(monitoring_curl_config) -fsS -o /dev/null --connect-timeout 2 --max-time 5 "$1/ping" 2>/dev/null
}

# monitoring_create_db URL DB: create DB (nothing happens if it exists).
monitoring_create_db() {
  curl -K <(monitoring_curl_config) -fsS -o /dev/null --connect-timeout 2 --max-time 10 -XPOST "$1/query" \
    --data-urlencode "q=CREATE DATABASE \"$2\"" 2>/dev/null
}

# monitoring_ship_cell URL DB RUN_ID CELL_DIR SCENARIO: write every point of
# one cell to InfluxDB. Sets MONITORING_POINTS (points accepted) and, on
# failure, MONITORING_ERROR.
monitoring_ship_cell() {
  local url="$1" db="$2" run_id="$3" cell_dir="$4" scenario="$5" batches status=0
  MONITORING_POINTS=0
  MONITORING_ERROR=""
  # An InfluxDB that came up (or was wiped) during the run has no database yet.
  monitoring_create_db "$url" "$db" || true
  batches="$(mktemp -d "${TMPDIR:-/tmp}/ltsuite-points.XXXXXX")"
  # Batches are cut while the lines are made: one pass over the samples,
  # and never the whole cell in memory.
  if ! monitoring_cell_lines "$run_id" "$cell_dir" "$scenario" \
    | split -l "$MONITORING_BATCH_LINES" -a 6 - "$batches/batch."; then
    MONITORING_ERROR="cannot convert the cell's files to line protocol"
    rm -rf "$batches"
    return 1
  fi
  monitoring_write_batches "$url" "$db" "$batches" || status=$?
  rm -rf "$batches"
  return "$status"
}

# monitoring_write_batches URL DB DIR: POST every DIR/batch.* to URL/write;
# stops at the first failure (InfluxDB gone: no use in trying the rest).
monitoring_write_batches() {
  local url="$1" db="$2" dir="$3" batch code lines
  for batch in "$dir"/batch.*; do
    [[ -e "$batch" ]] || continue
    lines="$(wc -l <"$batch")"
    if ! code="$(curl -K <(monitoring_curl_config) -sS -o "$dir/response" -w '%{http_code}' --connect-timeout 2 --max-time 60 \
      -H 'Content-Type: text/plain; charset=utf-8' --data-binary "@$batch" \
      "$url/write?db=$db&precision=ns" 2>"$dir/curl.err")"; then
      MONITORING_ERROR="$(tr -d '\n' <"$dir/curl.err" | cut -c1-200)"
      return 1
    fi
    if [[ "$code" != 204 ]]; then
      MONITORING_ERROR="POST /write answered $code: $(tr -d '\n' <"$dir/response" | cut -c1-200)"
      return 1
    fi
    MONITORING_POINTS=$((MONITORING_POINTS + lines))
  done
}

# monitoring_cell_lines RUN_ID CELL_DIR SCENARIO: every point of one cell, in
# line protocol with nanosecond times.
monitoring_cell_lines() {
  local run_id="$1" cell_dir="$2" scenario="$3" cell end_ns
  local -A knobs=()
  cell="$(basename "$cell_dir")"
  end_ns="$(monitoring_cell_end_ns "$cell_dir")"
  [[ -f "$cell_dir/cell.env" ]] && load_cell_env "$cell_dir/cell.env" knobs
  if [[ -s "$cell_dir/k6-samples.json.gz" ]]; then
    # A k6 that was killed leaves a truncated file: use what is there.
    { gzip -dc "$cell_dir/k6-samples.json.gz" 2>/dev/null || true; } \
      | monitoring_k6_lines "$run_id" "$cell" "$scenario"
  fi
  if [[ -s "$cell_dir/samples.tsv" ]]; then
    monitoring_samples_lines "$run_id" "$cell" "$scenario" \
      "${knobs[TOMCAT_MAX_THREADS]:-}" "${knobs[TOMCAT_MAX_CONNECTIONS]:-}" <"$cell_dir/samples.tsv"
  fi
  if [[ -s "$cell_dir/netstat-delta.tsv" ]]; then
    monitoring_counter_lines "$run_id" "$cell" "$scenario" "$end_ns" <"$cell_dir/netstat-delta.tsv"
  fi
  if [[ -s "$cell_dir/row.json" ]]; then
    monitoring_row_lines "$end_ns" <"$cell_dir/row.json"
  fi
  if [[ -s "$cell_dir/tomcat-access.log" ]]; then
    monitoring_time_parts_lines "$run_id" "$cell" "$scenario" "$cell_dir"
  fi
}

# monitoring_time_parts_lines RUN_ID CELL SCENARIO CELL_DIR: where the users'
# time went, as ltsuite_time_parts points, one per second of the requests'
# starts: the mean connect, queued, service and rest (ms) of the requests
# k6 and Tomcat's access log both saw (ltsuite.timeparts).
monitoring_time_parts_lines() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.timeparts lines "$4" "$1" "$2" "$3"
}

# monitoring_cell_end_ns CELL_DIR: when the load of the cell ended, in ns:
# the "after" counter snapshot, taken as k6 exits (now, if there is none).
monitoring_cell_end_ns() {
  local file
  for file in "$1/nstat-server-after.txt" "$1/row.json"; do
    if [[ -e "$file" ]]; then
      date -r "$file" +%s%N
      return
    fi
  done
  date +%s%N
}

# monitoring_k6_lines RUN_ID CELL SCENARIO: k6's JSON samples (stdin) as
# points, read by a JSON parser (lib/k6-lines.py; 200,000 samples in about
# 2.4 s of CPU, where jq 1.6 took 43 s).
monitoring_k6_lines() {
  "$LT_PYTHON" "$MONITORING_LIB_DIR/k6-lines.py" "$1" "$2" "$3"
}

# monitoring_samples_lines RUN_ID CELL SCENARIO THREADS_MAX CONNECTIONS_MAX:
# samples.tsv (stdin) as ltsuite_samples points, one field per column (empty
# cells left out), plus the cell's Tomcat limits so a panel can draw busy
# threads against the maximum.
monitoring_samples_lines() {
  LP_TAGS="$(monitoring_tags "$1" "$2" "$3")" awk -F'\t' -v threads_max="$4" -v connections_max="$5" '
    BEGIN { tags = ENVIRON["LP_TAGS"] }
    NR == 1 { for (i = 1; i <= NF; i++) name[i] = $i; next }
    $1 ~ /^[0-9]+(\.[0-9]+)?$/ {
      split($1, part, ".")
      ns = part[1] substr(part[2] "000000000", 1, 9)
      fields = ""
      for (i = 2; i <= NF; i++) {
        if ($i ~ /^-?[0-9]+(\.[0-9]+)?$/) fields = fields (fields == "" ? "" : ",") name[i] "=" $i
      }
      if (fields == "") next
      if (threads_max != "") fields = fields ",tomcat_threads_max=" threads_max
      if (connections_max != "") fields = fields ",tomcat_connections_max=" connections_max
      print "ltsuite_samples" tags " " fields " " ns
    }
  '
}

# monitoring_counter_lines RUN_ID CELL SCENARIO END_NS: netstat-delta.tsv
# (stdin) as ltsuite_counters points at the end of the cell.
monitoring_counter_lines() {
  LP_TAGS="$(monitoring_tags "$1" "$2" "$3")" awk -F'\t' -v ns="$4" '
    BEGIN { tags = ENVIRON["LP_TAGS"] }
    NR > 1 && NF == 3 && $1 ~ /^[A-Za-z0-9_]+$/ && $2 ~ /^[a-z]+$/ && $3 ~ /^-?[0-9]+$/ {
      print "ltsuite_counters" tags ",side=" $2 ",counter=" $1 " delta=" $3 " " ns
    }
  '
}

# monitoring_row_lines END_NS: row.json (stdin) as one ltsuite_cells point:
# the row's numbers a field each (the columns' schema's influx_fields,
# scripts/ltsuite/columns.py), status and the axes as tags, the error as text.
monitoring_row_lines() {
  jq -r --arg ns "$1" --argjson columns "$(results_columns_json)" '
    def tag: tostring | gsub("(?<c>[ ,=\\\\])"; "\\\(.c)");
    def text: gsub("(?<c>[\"\\\\])"; "\\\(.c)");
    ($columns.influx_fields | map({(.): true}) | add) as $sent
    | ([to_entries[] | select($sent[.key] and (.value | type == "number")) | "\(.key)=\(.value)"]
      + (if (.error // "") != "" then ["error=\"\(.error | text)\""] else [] end)) as $fields
    | select($fields | length > 0)
    | "ltsuite_cells,run_id=\(.run_id | tag),cell=\(.cell | tag),scenario=\(.scenario // "" | if . == "" then "none" else . end | tag),status=\(.status | tag)"
      + ([(.axes // {}) | to_entries[] | select(.value != "") | ",\(.key | tag)=\(.value | tag)"] | join(""))
      + " " + ($fields | join(",")) + " " + $ns
  '
}

# monitoring_tags RUN_ID CELL SCENARIO: ",run_id=...,cell=...,scenario=..."
# escaped for line protocol.
monitoring_tags() {
  local tags="" key value
  for key in run_id cell scenario; do
    value="$1"
    shift
    value="${value//\\/\\\\}"
    value="${value//,/\\,}"
    value="${value//=/\\=}"
    value="${value// /\\ }"
    tags+=",$key=${value:-none}"
  done
  printf '%s' "$tags"
}
