#!/usr/bin/env bats
# Monitoring for real: a native InfluxDB started by scripts/monitoring.sh, a
# small matrix run into it, every dashboard query run against it. Then a
# second run whose InfluxDB is stopped after the first cell.
# The expensive work is in setup_file; every test reads what it left.

# Two short cells; some requests are answered (2 threads, 400 ms each), the
# rest time out after 1 s, so every failure panel has data too.
MATRIX_TEXT='# monitoring.bats: two short cells with answered and timed-out requests
TOMCAT_MAX_THREADS=2
TOMCAT_MAX_CONNECTIONS=2
TOMCAT_ACCEPT_COUNT=1 5
VUS=6
DURATION=3s
DELAY_MS=400
REQUEST_TIMEOUT=1s
GRACEFUL_STOP=1s'

setup_file() {
  load '../test_helper'
  lt_require_root
  [[ -x "$LT_ROOT/.tools/bin/influxd" ]] || skip "influxd is not built; run make tools"
  printf '%s\n' "$MATRIX_TEXT" >"$BATS_FILE_TMPDIR/monitoring.matrix"

  export DATA_A="$BATS_FILE_TMPDIR/data-a" DATA_B="$BATS_FILE_TMPDIR/data-b"
  export URL_A URL_B
  URL_A="http://127.0.0.1:$(free_port 28086)"
  influx_up "$DATA_A" "$URL_A" >"$BATS_FILE_TMPDIR/up-a.log" 2>&1
  URL_B="http://127.0.0.1:$(free_port 28186)"
  influx_up "$DATA_B" "$URL_B" >"$BATS_FILE_TMPDIR/up-b.log" 2>&1

  # Run 1: InfluxDB up all along; watched for samples that arrive while the
  # first cell still runs.
  local status=0 runner
  run_matrix "$BATS_FILE_TMPDIR/results-a" "$URL_A" >"$BATS_FILE_TMPDIR/run-a.log" 2>&1 &
  runner=$!
  watch_live_samples "$BATS_FILE_TMPDIR/results-a" "$URL_A" "$runner" >"$BATS_FILE_TMPDIR/live-samples"
  wait "$runner" || status=$?
  echo "$status" >"$BATS_FILE_TMPDIR/run-a.status"

  # Run C: one WebSocket cell into the same InfluxDB, for the WebSocket row:
  # the users the server cannot hold fail their handshake, the others end
  # cleanly (their 2.5 s job is answered within 10 s).
  REQUEST_TIMEOUT=10s run_matrix "$BATS_FILE_TMPDIR/results-c" "$URL_A" \
    "$LT_ROOT/tests/fixtures/websocket-failures.matrix" >"$BATS_FILE_TMPDIR/run-c.log" 2>&1 || true

  # Run 2: InfluxDB B stopped once the first cell is done.
  run_matrix "$BATS_FILE_TMPDIR/results-b" "$URL_B" >"$BATS_FILE_TMPDIR/run-b.log" 2>&1 &
  runner=$!
  status=0
  stop_influx_after_first_cell "$BATS_FILE_TMPDIR/results-b" "$DATA_B"
  wait "$runner" || status=$?
  echo "$status" >"$BATS_FILE_TMPDIR/run-b.status"
}

teardown_file() {
  local data
  for data in "${DATA_A:-}" "${DATA_B:-}"; do
    [[ -n "$data" && -e "$data/influxdb/influxd.pid" ]] || continue
    LT_DATA_DIR="$data" "$LT_ROOT/scripts/monitoring.sh" down >/dev/null 2>&1 || true
  done
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_A="$(readlink -f "$BATS_FILE_TMPDIR/results-a/latest")"
  RUN_B="$(readlink -f "$BATS_FILE_TMPDIR/results-b/latest")"
  RUN_ID_A="$(basename "$RUN_A")"
}

# free_port START: the first port from START on that nothing listens on.
free_port() {
  local port="$1"
  while [[ -n "$(ss -Hltn "sport = :$port")" || -n "$(ss -Hltn "sport = :$((port + 2))")" ]]; do
    port=$((port + 10))
  done
  printf '%s\n' "$port"
}

# influx_up DATA_DIR URL: a native InfluxDB for this file only.
influx_up() {
  LT_DATA_DIR="$1" INFLUXDB_URL="$2" "$LT_ROOT/scripts/monitoring.sh" up --native
}

# wait_for_runner_lock: the runner allows one run per host; wait (up to
# 15 min) for another run, e.g. another test file, to finish.
wait_for_runner_lock() {
  local lock="${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}" i
  for ((i = 0; i < 900; i++)); do
    [[ -e "$lock" ]] || return 0
    flock -n "$lock" true && return 0
    sleep 1
  done
}

# run_matrix RESULTS_DIR URL [MATRIX]: the small matrix (or MATRIX), monitored, into URL. Another
# run can take the host's lock between our wait and the runner's start: then
# the runner refuses at once, and we wait again.
run_matrix() {
  local attempt status log="$BATS_FILE_TMPDIR/run-matrix.$$.log"
  for ((attempt = 0; attempt < 10; attempt++)); do
    wait_for_runner_lock
    status=0
    LT_RESULTS_DIR="$1" MONITORING=on INFLUXDB_URL="$2" \
      "$LT_ROOT/scripts/run-matrix.sh" "${3:-$BATS_FILE_TMPDIR/monitoring.matrix}" >"$log" 2>&1 || status=$?
    cat "$log"
    grep -q 'another run-matrix is running' "$log" || return "$status"
  done
  return "$status"
}

# stop_influx_after_first_cell RESULTS_DIR DATA_DIR: once the run's manifest
# counts one finished cell, SIGTERM the influxd that DATA_DIR's pid file
# names (started by this file) and wait for it to exit.
stop_influx_after_first_cell() {
  local results="$1" pid i
  pid="$(cat "$2/influxdb/influxd.pid")"
  for ((i = 0; i < 1200; i++)); do
    if jq -e '.cells_done >= 1' "$results/latest/manifest.json" >/dev/null 2>&1; then
      break
    fi
    sleep 0.5
  done
  kill -TERM "$pid"
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

# watch_live_samples RESULTS_DIR URL RUNNER_PID: the most ltsuite_samples
# points seen in InfluxDB before any cell's row.json exists (a cell's files
# are sent only after its row is written), polled every half second while
# the runner lives (at most 10 minutes).
watch_live_samples() {
  local i seen=0 n
  for ((i = 0; i < 1200; i++)); do
    kill -0 "$3" 2>/dev/null || break
    if compgen -G "$1/*/cells/*/row.json" >/dev/null; then break; fi
    n="$(influx_query "$2" 'SELECT count("server_estab") FROM "ltsuite_samples"' \
      | jq '[.results[]?.series[]?.values[]?[1]] | add // 0' 2>/dev/null || echo 0)"
    if ((n > seen)); then seen=$n; fi
    sleep 0.5
  done
  printf '%s\n' "$seen"
}

# influx_query URL QUERY: InfluxDB's JSON answer to QUERY on database k6.
influx_query() {
  curl -sS -G "$1/query" --data-urlencode db=k6 --data-urlencode "q=$2"
}

# value_count: number of non-null values (besides time) in an answer (stdin).
value_count() {
  jq '[.results[].series[]?.values[]? | .[1:][] | select(. != null)] | length'
}

# fill_variables QUERY RUN_DIR CELL_REGEX: QUERY as Grafana would send it for
# that run and cell(s), over the run's time (with a minute either side).
fill_variables() {
  local query="$1" run_dir="$2" cell_regex="$3" from to
  from="$(($(date -d "$(jq -r .started_at "$run_dir/manifest.json")" +%s) - 60))000"
  to="$(($(date -d "$(jq -r .ended_at "$run_dir/manifest.json")" +%s) + 60))000"
  query="${query//\$run_id/$(basename "$run_dir")}"
  query="${query//\$cell/$cell_regex}"
  query="${query//\$timeFilter/time >= ${from}ms AND time <= ${to}ms}"
  query="${query//\$__interval/1s}"
  printf '%s' "$query"
}

# dashboard_queries: every panel query and variable query of every dashboard,
# but those of the WebSocket row (websocket_queries), which a run of the
# /hello scenarios has no data for.
dashboard_queries() {
  jq -r '(.panels[] | select(.type != "row") | .targets[].query | select(test("FROM (\"|/\\^)ws_") | not)),
         (.templating.list[].query)' "$LT_ROOT"/grafana/dashboards/*.json
}

# websocket_queries: the queries of the WebSocket row.
websocket_queries() {
  jq -r '.panels[] | select(.type != "row") | .targets[].query | select(test("FROM (\"|/\\^)ws_"))' \
    "$LT_ROOT"/grafana/dashboards/*.json
}

# cells RUN_DIR: the cell names of a run.
cells() {
  local dir
  for dir in "$1"/cells/*/; do
    basename "$dir"
  done
}

# assert_queries_return_data RUN_DIR CELL_REGEX [LISTER]: every query that
# LISTER (default dashboard_queries) prints, filled in, returns at least one
# value; lists those that do not.
assert_queries_return_data() {
  local lister="${3:-dashboard_queries}" minimum=10
  [[ "$lister" == dashboard_queries ]] || minimum=2
  local query filled count=0 empty=""
  while IFS= read -r query; do
    filled="$(fill_variables "$query" "$1" "$2")"
    [[ ! "$filled" =~ \$[A-Za-z_] ]] || fail "a variable is left in: $filled"
    if [[ "$(influx_query "$URL_A" "$filled" | value_count)" -eq 0 ]]; then
      empty+=$'\n'"$filled"
    fi
    count=$((count + 1))
  done < <("$lister")
  [ "$count" -gt "$minimum" ]
  [[ -z "$empty" ]] || fail "queries without data:$empty"
}

@test "the monitored run succeeds and every cell sends its points" {
  [ "$(cat "$BATS_FILE_TMPDIR/run-a.status")" -eq 0 ]
  run cat "$BATS_FILE_TMPDIR/run-a.log"
  assert_output --partial "monitoring: InfluxDB $URL_A, database k6 (k6 samples: file)"
  [ "$(grep -c 'monitoring: [0-9]* points to InfluxDB in' "$BATS_FILE_TMPDIR/run-a.log")" -eq 2 ]
  jq -e '.status == "complete" and .warnings == []' "$RUN_A/manifest.json"
  jq -e '.monitoring | .active and .mode == "on" and .k6_samples == "file" and .points_written > 100' "$RUN_A/manifest.json"
}

@test "the sampler's rows reach InfluxDB while the first cell still runs" {
  [ "$(cat "$BATS_FILE_TMPDIR/live-samples")" -ge 2 ] \
    || fail "samples seen during the first cell: $(cat "$BATS_FILE_TMPDIR/live-samples")"
}

@test "every dashboard panel and variable query returns data for the run and one cell" {
  local cell
  cell="$(cells "$RUN_A" | head -n 1)"
  assert_queries_return_data "$RUN_A" "$cell"
}

@test "every dashboard query returns data with cell set to All" {
  local all
  all="($(cells "$RUN_A" | paste -sd '|'))"
  assert_queries_return_data "$RUN_A" "$all"
}

@test "every query of the WebSocket row returns data for a websocket run" {
  local run_c
  run_c="$(readlink -f "$BATS_FILE_TMPDIR/results-c/latest")"
  jq -e '.status == "complete"' "$run_c/manifest.json" || fail "$(cat "$BATS_FILE_TMPDIR/run-c.log")"
  assert_queries_return_data "$run_c" "$(cells "$run_c" | head -n 1)" websocket_queries
}

@test "the variables list the run and exactly its cells" {
  influx_query "$URL_A" "SHOW TAG VALUES FROM \"ltsuite_cells\" WITH KEY = \"cell\" WHERE \"run_id\" = '$RUN_ID_A'" \
    | jq -r '.results[0].series[0].values[][1]' >"$BATS_TEST_TMPDIR/cells"
  run cat "$BATS_TEST_TMPDIR/cells"
  assert_output "$(cells "$RUN_A")"
  influx_query "$URL_A" 'SHOW TAG VALUES FROM "ltsuite_cells" WITH KEY = "run_id"' \
    | jq -e --arg r "$RUN_ID_A" '[.results[0].series[0].values[][1]] | index($r) != null'
}

@test "k6's requests in InfluxDB are the requests of each results row" {
  local cell stored
  for cell in $(cells "$RUN_A"); do
    stored="$(influx_query "$URL_A" "SELECT count(\"value\") FROM \"http_reqs\" WHERE \"run_id\" = '$RUN_ID_A' AND \"cell\" = '$cell' AND \"traffic\" = 'load'" \
      | jq '.results[0].series[0].values[0][1]')"
    [ "$stored" -eq "$(jq .http_reqs "$RUN_A/cells/$cell/row.json")" ] || fail "$cell: $stored requests stored"
  done
}

@test "failures by cause in InfluxDB add up to each row's failed requests" {
  local cell stored
  for cell in $(cells "$RUN_A"); do
    stored="$(influx_query "$URL_A" "SELECT sum(\"value\") FROM /^fail_/ WHERE \"run_id\" = '$RUN_ID_A' AND \"cell\" = '$cell'" \
      | jq '[.results[0].series[]?.values[0][1]] | add // 0')"
    [ "$stored" -eq "$(jq .failed_reqs "$RUN_A/cells/$cell/row.json")" ] || fail "$cell: $stored failures stored"
  done
}

@test "every sample, counter delta and row of a cell is stored with its tags" {
  local cell where
  for cell in $(cells "$RUN_A"); do
    where="WHERE \"run_id\" = '$RUN_ID_A' AND \"cell\" = '$cell' AND \"scenario\" = 'spike'"
    [ "$(influx_query "$URL_A" "SELECT count(\"server_estab\") FROM \"ltsuite_samples\" $where" | jq '.results[0].series[0].values[0][1]')" \
      -eq "$(($(wc -l <"$RUN_A/cells/$cell/samples.tsv") - 1))" ]
    [ "$(influx_query "$URL_A" "SELECT count(\"delta\") FROM \"ltsuite_counters\" $where" | jq '.results[0].series[0].values[0][1]')" \
      -eq "$(($(wc -l <"$RUN_A/cells/$cell/netstat-delta.tsv") - 1))" ]
    influx_query "$URL_A" "SELECT last(\"listen_overflows\"), last(\"tps\") FROM \"ltsuite_cells\" $where AND \"status\" = 'ok'" \
      | jq -e --argjson row "$(cat "$RUN_A/cells/$cell/row.json")" \
        '.results[0].series[0].values[0][1:] == [$row.listen_overflows, $row.tps]'
  done
}

@test "each cell has k6's HTML report with a snapshot per second" {
  local cell snapshots
  for cell in $(cells "$RUN_A"); do
    snapshots="$(python3 - "$RUN_A/cells/$cell/k6-report.html" <<'PY'
import base64, gzip, re, sys
page = open(sys.argv[1]).read()
data = re.search(r'<script id="data"[^>]*>(.*?)</script>', page, re.S).group(1)
print(gzip.decompress(base64.b64decode(data.strip())).decode().count('"event":"snapshot"'))
PY
)"
    [ "$snapshots" -ge 3 ] || fail "$cell: $snapshots snapshots in k6-report.html"
  done
}

@test "report.html shows the results table and links each cell's k6 report" {
  lt_source_libs results report
  report_render "$RUN_A"
  for cell in $(cells "$RUN_A"); do
    grep -q "<a href=\"#cell-$cell\">$cell</a>" "$RUN_A/report.html"
    grep -q "<a href=\"cells/$cell/k6-report.html\">k6 report</a>" "$RUN_A/report.html"
    [ -f "$RUN_A/cells/$cell/k6-report.html" ]
  done
}

@test "InfluxDB stopped after the first cell: every row is there, status ok, and the manifest warns" {
  [ "$(cat "$BATS_FILE_TMPDIR/run-b.status")" -eq 0 ]
  run lt_csv_column "$RUN_B/results.csv" status
  assert_output $'ok\nok'
  jq -e '.status == "complete" and .cells_done == 2' "$RUN_B/manifest.json"
  jq -e '[.warnings[] | select(test("not .fully. stored in InfluxDB"))] | length >= 1' "$RUN_B/manifest.json"
  grep -q "not stored in InfluxDB" "$BATS_FILE_TMPDIR/run-b.log"
}

@test "InfluxDB stopped after the first cell: each cell's files are complete" {
  local cell file
  for cell in $(cells "$RUN_B"); do
    for file in cell.env row.json summary.json samples.tsv netstat-delta.tsv k6-samples.json.gz k6-report.html; do
      [ -s "$RUN_B/cells/$cell/$file" ] || fail "$cell: $file missing or empty"
    done
    gzip -t "$RUN_B/cells/$cell/k6-samples.json.gz"
    jq -e '.status == "ok" and .http_reqs > 0' "$RUN_B/cells/$cell/row.json"
  done
}

@test "ship sends a run's files afterwards, with the same counts as a live run" {
  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" run "$LT_ROOT/scripts/monitoring.sh" ship "$RUN_B"
  assert_success
  local cell stored run_id
  run_id="$(basename "$RUN_B")"
  for cell in $(cells "$RUN_B"); do
    stored="$(influx_query "$URL_A" "SELECT count(\"value\") FROM \"http_reqs\" WHERE \"run_id\" = '$run_id' AND \"cell\" = '$cell' AND \"traffic\" = 'load'" \
      | jq '.results[0].series[0].values[0][1]')"
    [ "$stored" -eq "$(jq .http_reqs "$RUN_B/cells/$cell/row.json")" ]
  done
}

@test "monitoring.sh status answers for a running InfluxDB and up is idempotent" {
  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" run "$LT_ROOT/scripts/monitoring.sh" status
  assert_success
  assert_output --partial "native influxd: running, pid $(cat "$DATA_A/influxdb/influxd.pid")"
  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" run "$LT_ROOT/scripts/monitoring.sh" up --native
  assert_success
  assert_output --partial "InfluxDB already runs (pid $(cat "$DATA_A/influxdb/influxd.pid"))"
  grep -q 'reporting-disabled = true' "$DATA_A/influxdb/influxdb.conf"
  grep -q 'flux-enabled = true' "$DATA_A/influxdb/influxdb.conf"
  grep -q "bind-address = \"${URL_A#http://}\"" "$DATA_A/influxdb/influxdb.conf"
}

# fake_docker_without_registry: a docker command on PATH that plays an engine
# which answers, has a compose client, has no image in its store and reaches
# no registry (as on a machine without internet).
fake_docker_without_registry() {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/docker" <<'SH'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"${BASH_SOURCE[0]}.calls"
case "$1 ${2:-}" in
  "info "*) exit 0 ;;
  "compose version") echo "Docker Compose version v2.20.2"; exit 0 ;;
  "image inspect") echo "Error: No such image: $3" >&2; exit 1 ;;
  "pull "*) echo "Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: no such host" >&2; exit 1 ;;
esac
exit 64
SH
  chmod +x "$BATS_TEST_TMPDIR/bin/docker"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH"
}

@test "make up with a Docker engine but no registry falls back to the native InfluxDB and says why" {
  fake_docker_without_registry
  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" run "$LT_ROOT/scripts/monitoring.sh" up
  assert_success
  assert_output --partial "a Docker engine answers but image influxdb:1.8.10 is not in its store and cannot be pulled"
  assert_output --partial "no such host"
  assert_output --partial "starting InfluxDB natively, without Grafana"
  assert_output --partial "InfluxDB already runs (pid $(cat "$DATA_A/influxdb/influxd.pid"))"
  # Compose was never asked to start anything.
  run grep -c '^compose ' "$BATS_TEST_TMPDIR/bin/docker.calls"
  assert_output 1
  [ ! -e "$DATA_A/compose.started" ]
}

@test "MONITORING_STACK chooses: compose fails clearly without its images, native skips Docker, others are refused" {
  fake_docker_without_registry
  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" MONITORING_STACK=compose run "$LT_ROOT/scripts/monitoring.sh" up
  assert_failure
  assert_output --partial "image influxdb:1.8.10 is not in its store and cannot be pulled"
  assert_output --partial "MONITORING_STACK=native"
  [ ! -e "$DATA_A/compose.started" ]

  rm -f "$BATS_TEST_TMPDIR/bin/docker.calls"
  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" MONITORING_STACK=native run "$LT_ROOT/scripts/monitoring.sh" up
  assert_success
  assert_output --partial "InfluxDB already runs"
  [ ! -e "$BATS_TEST_TMPDIR/bin/docker.calls" ]

  LT_DATA_DIR="$DATA_A" INFLUXDB_URL="$URL_A" MONITORING_STACK=podman run "$LT_ROOT/scripts/monitoring.sh" up
  assert_failure
  assert_output --partial "MONITORING_STACK='podman': use native, compose, or leave it empty"
}

@test "monitoring.sh status fails for the stopped InfluxDB" {
  LT_DATA_DIR="$DATA_B" INFLUXDB_URL="$URL_B" run "$LT_ROOT/scripts/monitoring.sh" status
  assert_failure
  assert_output --partial "no InfluxDB answers at $URL_B"
}

@test "the compose file passes compose's own check, and not without a Grafana password" {
  local -a compose
  if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
  elif command -v docker-compose >/dev/null; then
    compose=(docker-compose)
  else
    skip "no compose client (scripts/setup/install-compose.sh installs one)"
  fi
  cd "$BATS_TEST_TMPDIR"
  GRAFANA_ADMIN_PASSWORD=checked run "${compose[@]}" -f "$LT_ROOT/compose/docker-compose.yml" \
    --profile target --profile k6 config
  assert_success
  assert_output --partial "grafana/grafana-oss:11.6.0"
  assert_output --partial "influxdb:1.8.10"
  assert_output --partial "127.0.0.1:8086:8086"
  refute_output --regexp 'published: "?(3000|8086)"?$'
  GRAFANA_ADMIN_PASSWORD="" run "${compose[@]}" -f "$LT_ROOT/compose/docker-compose.yml" config
  assert_failure
  assert_output --partial "GRAFANA_ADMIN_PASSWORD"
}
