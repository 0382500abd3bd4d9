#!/usr/bin/env bats
# Monitoring hooks: line protocol from the cell's files, k6 outputs per cell,
# and what happens when InfluxDB is missing (no InfluxDB is started here).
# Each @test runs in its own subshell on purpose: state set in one never leaks.
# shellcheck disable=SC2030,SC2031

setup() {
  load '../test_helper'
  lt_source_libs results manifest sampler monitoring
  LT_PROG="test"
  LT_RUN_ID="run-1"
  RUN_DIR="$BATS_TEST_TMPDIR/run"
  mkdir -p "$RUN_DIR/cells/01_vus-4"
  CELL_DIR="$RUN_DIR/cells/01_vus-4"
  printf '{"run_id":"run-1","status":"running","warnings":[]}\n' >"$RUN_DIR/manifest.json"
  # Nothing listens on port 9 (discard) of the loopback: connections are refused at once.
  CLOSED_URL=http://127.0.0.1:9
}

@test "k6 CSV samples become points named after the metric, with the sample's tags" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'CSV'
metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata
http_reqs,1795317900357924169,1.000000,,,,true,,GET,hello,HTTP/1.1,spike,,200,,,http://198.18.0.1:8080/hello,run_id=run-1&cell=01_vus-4&traffic=load,
CSV
  assert_success
  assert_output 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,expected_response=true,method=GET,name=hello,status=200,traffic=load value=1.000000 1795317900357924169'
}

@test "tag values with spaces, commas or equals signs are escaped" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'CSV'
metric_name,timestamp,metric_value,check,error,error_code,expected_response,extra_tags
checks,1795317900357924169,1.000000,"status is 200, or 2=2",,,,
CSV
  assert_output 'checks,run_id=run-1,cell=01_vus-4,scenario=spike,check=status\ is\ 200\,\ or\ 2\=2 value=1.000000 1795317900357924169'
}

@test "the error text is left out; error_code stays a tag" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'CSV'
metric_name,timestamp,metric_value,error,error_code,expected_response,status,extra_tags
http_reqs,1795317900357924169,1.000000,"Get ""http://x"": dial: i/o timeout",1211,false,0,
CSV
  assert_output 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,error_code=1211,expected_response=false,status=0 value=1.000000 1795317900357924169'
}

@test "a sample line cut short by a killed k6 is skipped" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'CSV'
metric_name,timestamp,metric_value,status,extra_tags
vus,1795317900000000000,4.000000,,
http_reqs,17953179003579
CSV
  assert_success
  assert_output 'vus,run_id=run-1,cell=01_vus-4,scenario=spike value=4.000000 1795317900000000000'
}

@test "samples.tsv rows become ltsuite_samples points in nanoseconds, empty columns left out" {
  run monitoring_samples_lines run-1 01_vus-4 spike 10 2 <<<"$SAMPLES_HEADER"$'\n1795317479.272\t1\t1\t3\t0\t0\t3\t1\t\t2'
  assert_output 'ltsuite_samples,run_id=run-1,cell=01_vus-4,scenario=spike listen_recvq=1,listen_sendq=1,server_estab=3,server_syn_recv=0,server_time_wait=0,client_estab=3,client_time_wait=1,tomcat_connections=2,tomcat_threads_max=10,tomcat_connections_max=2 1795317479272000000'
}

@test "counter deltas become ltsuite_counters points at the cell's end" {
  run monitoring_counter_lines run-1 01_vus-4 spike 1795317490000000000 \
    <<<$'counter\tside\tdelta\nTcpExtListenOverflows\tserver\t121\nTcpExtTCPSynRetrans\tclient\t14'
  assert_line --index 0 'ltsuite_counters,run_id=run-1,cell=01_vus-4,scenario=spike,side=server,counter=TcpExtListenOverflows delta=121 1795317490000000000'
  assert_line --index 1 'ltsuite_counters,run_id=run-1,cell=01_vus-4,scenario=spike,side=client,counter=TcpExtTCPSynRetrans delta=14 1795317490000000000'
}

@test "a results row becomes one ltsuite_cells point: numbers as fields, status and axes as tags" {
  run monitoring_row_lines 1795317490000000000 <<'JSON'
{"run_id":"run-1","cell":"01_vus-4","scenario":"spike","status":"failed","axes":{"VUS":"4"},
 "tps":8.5,"http_reqs":28,"lat_p95_ms":null,"error":"k6 exited with status 107: \"x\""}
JSON
  assert_output 'ltsuite_cells,run_id=run-1,cell=01_vus-4,scenario=spike,status=failed,VUS=4 tps=8.5,http_reqs=28,error="k6 exited with status 107: \"x\"" 1795317490000000000'
}

@test "a cell gets k6's HTML report settings; without InfluxDB no k6 output is added" {
  local -A cell=([K6_HTML_REPORT]=1 [SCENARIO]=spike)
  MONITORING_ACTIVE=0
  monitoring_cell_start cell "$CELL_DIR"
  [ "${#K6_EXTRA_ARGS[@]}" -eq 0 ]
  [[ " ${K6_EXTRA_ENV[*]} " == *" K6_WEB_DASHBOARD=true "* ]]
  [[ " ${K6_EXTRA_ENV[*]} " == *" K6_WEB_DASHBOARD_EXPORT=$CELL_DIR/k6-report.html "* ]]
  [[ " ${K6_EXTRA_ENV[*]} " == *" K6_WEB_DASHBOARD_PERIOD=1s "* ]]
  [[ " ${K6_EXTRA_ENV[*]} " == *" K6_WEB_DASHBOARD_PORT=-1 "* ]]
}

@test "K6_HTML_REPORT=0 leaves the web dashboard off" {
  local -A cell=([K6_HTML_REPORT]=0 [SCENARIO]=spike)
  MONITORING_ACTIVE=0
  monitoring_cell_start cell "$CELL_DIR"
  [ "${#K6_EXTRA_ENV[@]}" -eq 0 ]
}

@test "a monitored cell has k6 write its samples to a compressed CSV in the cell" {
  local -A cell=([K6_HTML_REPORT]=0 [SCENARIO]=spike)
  MONITORING_ACTIVE=1
  MONITORING_K6_MODE="file"
  monitoring_cell_start cell "$CELL_DIR"
  [ "${K6_EXTRA_ARGS[*]}" = "--out csv=$CELL_DIR/k6-samples.csv.gz" ]
  [ "${K6_EXTRA_ENV[*]}" = "K6_CSV_TIME_FORMAT=unix_nano" ]
}

@test "MONITORING=off: nothing is sent and the manifest says so" {
  local -A run=([MONITORING]=off [INFLUXDB_URL]="$CLOSED_URL" [INFLUXDB_DB]=k6 [MONITORING_K6_OUTPUT]=file)
  monitoring_run_start "$RUN_DIR" run
  [ "$MONITORING_ACTIVE" -eq 0 ]
  jq -e '.monitoring.mode == "off" and .monitoring.active == false and .warnings == []' "$RUN_DIR/manifest.json"
}

@test "MONITORING=auto without an InfluxDB runs without it and without a warning" {
  local -A run=([MONITORING]=auto [INFLUXDB_URL]="$CLOSED_URL" [INFLUXDB_DB]=k6 [MONITORING_K6_OUTPUT]=file)
  run monitoring_run_start "$RUN_DIR" run
  assert_success
  assert_output --partial "no InfluxDB at $CLOSED_URL"
  jq -e '.monitoring.active == false and .warnings == []' "$RUN_DIR/manifest.json"
}

@test "MONITORING=on without an InfluxDB warns in the manifest and keeps the samples" {
  local -A run=([MONITORING]=on [INFLUXDB_URL]="$CLOSED_URL" [INFLUXDB_DB]=k6 [MONITORING_K6_OUTPUT]=file)
  monitoring_run_start "$RUN_DIR" run 2>/dev/null
  [ "$MONITORING_ACTIVE" -eq 1 ]
  jq -e '.monitoring.active == true and (.warnings | length) == 1' "$RUN_DIR/manifest.json"
  jq -e '.warnings[0] | test("no InfluxDB answered")' "$RUN_DIR/manifest.json"
}

@test "a cell that cannot be sent is a manifest warning, not a failure" {
  local -A run=([MONITORING]=on [INFLUXDB_URL]="$CLOSED_URL" [INFLUXDB_DB]=k6 [MONITORING_K6_OUTPUT]=file)
  local -A cell=([SCENARIO]=spike)
  monitoring_run_start "$RUN_DIR" run 2>/dev/null
  printf '{"run_id":"run-1","cell":"01_vus-4","scenario":"spike","status":"ok","axes":{},"tps":1}\n' >"$CELL_DIR/row.json"
  run monitoring_cell_done cell "$CELL_DIR"
  assert_success
  assert_output --partial "cell 01_vus-4 not stored in InfluxDB"
  jq -e '[.warnings[] | select(test("cell 01_vus-4 not .fully. stored"))] | length == 1' "$RUN_DIR/manifest.json"
}

@test "MONITORING=off makes the cell hooks do nothing" {
  local -A run=([MONITORING]=off)
  local -A cell=([K6_HTML_REPORT]=0 [SCENARIO]=spike)
  monitoring_run_start "$RUN_DIR" run
  monitoring_cell_start cell "$CELL_DIR"
  [ "${#K6_EXTRA_ARGS[@]}" -eq 0 ]
  run monitoring_cell_done cell "$CELL_DIR"
  assert_success
  assert_output ""
}
