#!/usr/bin/env bats
# Grafana provisioning and dashboards: valid files, one datasource, and
# queries that pick a run and a cell. (That every query returns data is
# checked against a real InfluxDB in tests/integration/monitoring.bats.)
# shellcheck disable=SC2016 # SC2016: jq programs and literal backquotes in single quotes on purpose

setup() {
  load '../test_helper'
  GRAFANA="$LT_ROOT/grafana"
  DASHBOARDS=("$GRAFANA"/dashboards/*.json)
}

# yaml_json FILE: FILE parsed as YAML, printed as JSON (scalars as strings).
# Perl's core YAML reader: no parser to install.
yaml_json() {
  perl -MCPAN::Meta::YAML -MJSON::PP -e '
    local $/;
    my $docs = CPAN::Meta::YAML->read_string(<STDIN>) or die CPAN::Meta::YAML->errstr . "\n";
    print JSON::PP->new->canonical->encode($docs->[0]), "\n";
  ' <"$1"
}

# panel_queries DASHBOARD: every panel target's query, one per line (a row
# is a heading, not a panel with queries).
panel_queries() {
  jq -r '.panels[] | select(.type != "row") | .targets[] | .query' "$1"
}

@test "there are the two dashboards" {
  [ -f "$GRAFANA/dashboards/k6-results.json" ]
  [ -f "$GRAFANA/dashboards/connection-path.json" ]
}

@test "the datasource is InfluxDB 1.x with InfluxQL, its URL and database from the environment, the database for Grafana 9 and for 10-12" {
  run yaml_json "$GRAFANA/provisioning/datasources/influxdb.yaml"
  assert_success
  local json="$output"
  jq -e '.apiVersion == "1" and (.datasources | length) == 1' <<<"$json"
  jq -e '.datasources[0] | .type == "influxdb" and .uid == "ltsuite-influxdb" and .access == "proxy"' <<<"$json"
  jq -e '.datasources[0] | .url == "${INFLUXDB_URL}" and .jsonData.dbName == "${INFLUXDB_DB}"' <<<"$json"
  # Grafana 9 reads the top-level field, 10 and later jsonData.dbName.
  jq -e '.datasources[0].database == "${INFLUXDB_DB}"' <<<"$json"
  jq -e '.datasources[0].jsonData.version == "InfluxQL"' <<<"$json"
}

@test "the dashboard provider reads the folder compose mounts grafana/dashboards on" {
  run yaml_json "$GRAFANA/provisioning/dashboards/dashboards.yaml"
  assert_success
  local path
  path="$(jq -r '.providers[0].options.path' <<<"$output")"
  jq -e '.apiVersion == "1" and .providers[0].type == "file"' <<<"$output"
  grep -qF -- "- ../grafana/dashboards:$path:ro" "$LT_ROOT/compose/docker-compose.yml"
  grep -qF -- "- ../grafana/provisioning:/etc/grafana/provisioning:ro" "$LT_ROOT/compose/docker-compose.yml"
}

@test "Grafana's home dashboard in compose is one of the dashboards" {
  local home
  home="$(sed -n 's/^ *GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH: *//p' "$LT_ROOT/compose/docker-compose.yml")"
  [ -f "$GRAFANA/dashboards/$(basename "$home")" ]
}

@test "every dashboard is JSON with its own uid and title" {
  for dashboard in "${DASHBOARDS[@]}"; do
    jq -e '(.uid | type) == "string" and (.title | type) == "string" and (.panels | length) > 0' "$dashboard" >/dev/null \
      || fail "$dashboard: not a dashboard"
  done
  [ "$(jq -rs '[.[].uid] | unique | length' "${DASHBOARDS[@]}")" -eq "${#DASHBOARDS[@]}" ]
  [ "$(jq -rs '[.[].title] | unique | length' "${DASHBOARDS[@]}")" -eq "${#DASHBOARDS[@]}" ]
}

@test "every dashboard has run_id and cell variables from SHOW TAG VALUES, cell within the run" {
  for dashboard in "${DASHBOARDS[@]}"; do
    jq -e '.templating.list | map(.name) | index("run_id") != null and index("cell") != null' "$dashboard" >/dev/null \
      || fail "$dashboard: run_id or cell variable missing"
    jq -e '.templating.list[] | select(.name == "run_id") | .query | test("^SHOW TAG VALUES .* WITH KEY = \"run_id\"")' "$dashboard" >/dev/null \
      || fail "$dashboard: run_id is not a SHOW TAG VALUES query"
    jq -e '.templating.list[] | select(.name == "cell") | .query | test("^SHOW TAG VALUES .* WITH KEY = \"cell\" WHERE \"run_id\" = '"'"'\\$run_id'"'"'$")' "$dashboard" >/dev/null \
      || fail "$dashboard: cell does not list the cells of \$run_id"
    jq -e '.templating.list[] | select(.name == "cell") | .multi and .includeAll' "$dashboard" >/dev/null \
      || fail "$dashboard: cell should allow several cells and All"
  done
}

@test "every panel has raw InfluxQL targets that select by \$run_id and \$cell" {
  for dashboard in "${DASHBOARDS[@]}"; do
    jq -e '[.panels[] | select(.type != "row")] | all(.targets | length > 0)' "$dashboard" >/dev/null || fail "$dashboard: a panel without targets"
    jq -e '[.panels[] | select(.type != "row") | .targets[] | .rawQuery == true and (.query | type) == "string"] | all' "$dashboard" >/dev/null \
      || fail "$dashboard: a target that is not a raw query"
    while IFS= read -r query; do
      [[ "$query" == SELECT* ]] || fail "not a SELECT: $query"
      [[ "$query" == *"\"run_id\" = '\$run_id'"* ]] || fail "no \$run_id in: $query"
      [[ "$query" == *'"cell" =~ /^$cell$/'* ]] || fail "no \$cell in: $query"
    done < <(panel_queries "$dashboard")
  done
}

@test "queries of time series are bounded by \$timeFilter; per-cell totals are not" {
  for dashboard in "${DASHBOARDS[@]}"; do
    while IFS= read -r query; do
      if [[ "$query" == *'FROM "ltsuite_cells"'* ]]; then
        [[ "$query" != *'$timeFilter'* ]] || fail "a per-cell total should not depend on the time range: $query"
      else
        [[ "$query" == *'$timeFilter'* ]] || fail "no \$timeFilter in: $query"
      fi
    done < <(panel_queries "$dashboard")
  done
}

@test "every panel, target and variable uses the provisioned datasource" {
  for dashboard in "${DASHBOARDS[@]}"; do
    jq -e '[.panels[] | select(.type != "row") | .datasource.uid, .targets[].datasource.uid] + [.templating.list[].datasource.uid]
           | all(. == "ltsuite-influxdb")' "$dashboard" >/dev/null || fail "$dashboard: another datasource"
  done
}

@test "panel ids are unique and panels fit the 24-column grid" {
  for dashboard in "${DASHBOARDS[@]}"; do
    jq -e '[.panels[].id] | length == (unique | length)' "$dashboard" >/dev/null || fail "$dashboard: duplicate panel id"
    jq -e '.panels | all(.gridPos.x + .gridPos.w <= 24 and .gridPos.h > 0)' "$dashboard" >/dev/null \
      || fail "$dashboard: a panel outside the grid"
  done
}

@test "k6 results shows request rate, latency percentiles, failures by cause and VUs" {
  local queries
  queries="$(panel_queries "$GRAFANA/dashboards/k6-results.json")"
  grep -q 'FROM "http_reqs"' <<<"$queries"
  grep -q 'percentile("value", 95).* FROM "http_req_duration"' <<<"$queries"
  grep -q 'percentile("value", 99)' <<<"$queries"
  grep -q 'FROM /^fail_/' <<<"$queries"
  grep -q 'FROM "vus"' <<<"$queries"
}

@test "k6 results has a WebSocket row: sessions, failures by cause, close latency percentiles" {
  local dashboard="$GRAFANA/dashboards/k6-results.json" queries
  jq -e '[.panels[] | select(.type == "row") | .title] | any(test("WebSocket"))' "$dashboard"
  # The row's panels sit below its heading.
  jq -e '(.panels[] | select(.type == "row") | .gridPos.y) as $row
         | [.panels[] | select(.type != "row" and (.title | test("WebSocket"))) | .gridPos.y > $row] | length >= 2 and all' "$dashboard"
  queries="$(panel_queries "$dashboard")"
  grep -q 'FROM "ws_sessions"' <<<"$queries"
  grep -q 'FROM "ws_sessions_ok"' <<<"$queries"
  grep -q 'FROM /^ws_fail_/' <<<"$queries"
  grep -q 'percentile("value", 99).* FROM "ws_close"' <<<"$queries"
  # Every measurement it reads is a metric of the websocket scenario (or
  # k6's own ws_sessions).
  while IFS= read -r name; do
    [[ "$name" == ws_sessions ]] && continue
    grep -q "'$name'" "$LT_ROOT/scenarios/websocket.js" || fail "$name is not a metric of scenarios/websocket.js"
  done < <(grep -o 'FROM "ws_[a-z_]*"' <<<"$queries" | sed 's/FROM "\(.*\)"/\1/' | sort -u)
  while IFS= read -r name; do
    [[ "$name" =~ ^ws_fail_ ]] || fail "$name would not show in the sessions panel (FROM /^ws_fail_/)"
  done < <(grep -o "new Counter('ws_[a-z_]*')" "$LT_ROOT/scenarios/websocket.js" | sed "s/.*('\(.*\)')/\1/" | grep -v '^ws_sessions_ok$')
}

@test "the failures panel counts every failure counter of the scenarios and no other metric" {
  local regex file name count=0
  # The measurement regex of the panel's own query, e.g. ^fail_ from FROM /^fail_/.
  regex="$(jq -r '.panels[] | select(.title == "Failures by cause") | .targets[].query' \
    "$GRAFANA/dashboards/k6-results.json" | sed -n 's#.* FROM /\([^/]*\)/ .*#\1#p')"
  [ -n "$regex" ] || fail "no 'Failures by cause' panel reading FROM /regex/"
  # The failure counters are fail_<cause>, one a cause of the table (failures.js makes them).
  grep -q 'new Counter(`fail_${cause}`)' "$LT_ROOT/scenarios/lib/failures.js" \
    || fail "failures.js no longer names its counters fail_<cause>"
  while read -r name; do
    [[ "fail_$name" =~ $regex ]] || fail "fail_$name would not show in 'Failures by cause' (FROM /$regex/)"
    count=$((count + 1))
  done < <(PYTHONPATH="$LT_ROOT/scripts" python3 -c 'from ltsuite.causes import failure_causes; print(*failure_causes(), sep="\n")')
  # No other metric of the scenarios shows there.
  while IFS=: read -r file name; do
    name="${name#*(\'}"
    name="${name%\'*}"
    [[ ! "$name" =~ $regex ]] || fail "$name ($file) is not a failure cause but shows in 'Failures by cause'"
  done < <(grep -roE "new (Counter|Trend|Rate|Gauge)\('[^']*'" "$LT_ROOT/scenarios")
  [ "$count" -gt 0 ]
}

@test "connection path shows accept queue vs backlog, states, threads vs max, overflows per cell" {
  local queries
  queries="$(panel_queries "$GRAFANA/dashboards/connection-path.json")"
  grep -q '"listen_recvq".*"listen_sendq"' <<<"$queries"
  grep -q '"server_estab".*"server_syn_recv".*"server_time_wait"' <<<"$queries"
  grep -q '"tomcat_threads_busy".*"tomcat_threads_max"' <<<"$queries"
  grep -q '"listen_overflows".*"listen_drops".*GROUP BY "cell"' <<<"$queries"
}

@test "the fields the dashboards read are the sampler's columns and the results row's" {
  lt_source_libs sampler
  local queries field
  queries="$(jq -r '.panels[] | select(.type != "row") | .targets[].query' "${DASHBOARDS[@]}")"
  while IFS= read -r field; do
    # The cell's Tomcat limits are added to every sample by monitoring.sh.
    [[ "$field" == tomcat_threads_max || "$field" == tomcat_connections_max ]] && continue
    [[ $'\t'"$SAMPLES_HEADER"$'\t' == *$'\t'"$field"$'\t'* ]] || fail "$field is not a column of samples.tsv"
  done < <(grep 'FROM "ltsuite_samples"' <<<"$queries" | grep -o '("[a-z_]*")' | tr -d '()"' | sort -u)
  local fields
  fields="$(PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.columns --json | jq -r '.columns[].name')"
  while IFS= read -r field; do
    grep -qxF "$field" <<<"$fields" || fail "$field is not a column of the results row (scripts/ltsuite/columns.py)"
  done < <(grep 'FROM "ltsuite_cells"' <<<"$queries" | grep -o 'last("[a-z_0-9]*")' | sed 's/last("\(.*\)")/\1/' | sort -u)
}
