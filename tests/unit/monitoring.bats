#!/usr/bin/env bats
# Monitoring hooks: line protocol from the cell's files, k6 outputs per cell,
# and what happens when InfluxDB is missing (no InfluxDB is started here).
# Each @test runs in its own subshell on purpose: state set in one never leaks.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test
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

@test "k6 samples become points named after the metric, with the sample's tags" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'JSON'
{"type":"Metric","data":{"name":"http_reqs","type":"counter","contains":"default","thresholds":[],"submetrics":null},"metric":"http_reqs"}
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28.21802871Z","value":1,"tags":{"cell":"01_vus-4","expected_response":"true","group":"","method":"GET","name":"hello","proto":"HTTP/1.1","run_id":"run-1","scenario":"spike","status":"200","traffic":"load","url":"http://198.18.0.1:8080/hello"}}}
JSON
  assert_success
  assert_output 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,expected_response=true,method=GET,name=hello,status=200,traffic=load value=1 1795320088218028710'
}

@test "times with an offset, without a fraction, and small values are read right" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'JSON'
{"metric":"http_req_connecting","type":"Point","data":{"time":"2024-02-29T23:59:59+01:00","value":1.5e-07,"tags":{}}}
{"metric":"vus","type":"Point","data":{"time":"2024-03-01T00:00:00.5Z","value":4,"tags":{"a":"b"},"metadata":{"vu":"1"}}}
JSON
  assert_line --index 0 "http_req_connecting,run_id=run-1,cell=01_vus-4,scenario=spike value=1.5e-07 $(date -d 2024-02-29T23:59:59+01:00 +%s)000000000"
  assert_line --index 1 "vus,run_id=run-1,cell=01_vus-4,scenario=spike,a=b value=4 $(date -d 2024-03-01T00:00:00Z +%s)500000000"
}

@test "tag values with quotes, spaces, commas or equals signs are decoded and escaped" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'JSON'
{"metric":"checks","type":"Point","data":{"time":"2026-11-22T04:01:28Z","value":1,"tags":{"check":"say \"hi\", 2=2 \u0026 c\\d"}}}
JSON
  assert_output 'checks,run_id=run-1,cell=01_vus-4,scenario=spike,check=say\ "hi"\,\ 2\=2\ &\ c\\d value=1 1795320088000000000'
}

@test "keys in any order, awkward tag keys and values: a JSON parser reads them, tags come out sorted" {
  run monitoring_k6_lines 'run 1' 'c,1' 'a=b' <<'JSON'
{"data":{"tags":{"status":"200","b key":"x,y=z","name":"a \"q\" b\\","z":"","url":"http://x/y"},"value":2.5,"time":"2026-11-22T04:01:28.5Z"},"type":"Point","metric":"http_req_duration"}
{"data":{"time":"2026-11-22T04:01:29Z","value":true,"tags":{}},"type":"Point","metric":"not_a_number"}
{"type":"Point","metric":"tabs","data":{"value":-3,"tags":{"t":"a\tb\u00e9"},"time":"2026-11-22T04:01:29Z"}}
JSON
  assert_success
  assert_line --index 0 'http_req_duration,run_id=run\ 1,cell=c\,1,scenario=a\=b,b\ key=x\,y\=z,name=a\ "q"\ b\\,status=200 value=2.5 1795320088500000000'
  assert_line --index 1 'tabs,run_id=run\ 1,cell=c\,1,scenario=a\=b,t=a\ bé value=-3 1795320089000000000'
  [ "${#lines[@]}" -eq 2 ]
}

@test "the error text is left out; error_code stays a tag" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'JSON'
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28Z","value":1,"tags":{"error":"dial: i/o timeout","error_code":"1211","expected_response":"false","status":"0"}}}
JSON
  assert_output 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,error_code=1211,expected_response=false,status=0 value=1 1795320088000000000'
}

@test "a sample line cut short by a killed k6 is skipped" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'JSON'
{"metric":"vus","type":"Point","data":{"time":"2026-11-22T04:01:28Z","value":4,"tags":{}}}
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28Z","value":1,"tags":{"status":"2
JSON
  assert_success
  assert_output 'vus,run_id=run-1,cell=01_vus-4,scenario=spike value=4 1795320088000000000'
}

@test "two requests at the same nanosecond with the same tags stay two points" {
  run monitoring_k6_lines run-1 01_vus-4 spike <<'JSON'
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28.000000009Z","value":1,"tags":{"status":"200"}}}
{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-22T04:01:28.000000009Z","value":5,"tags":{"status":"200"}}}
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28.000000009Z","value":1,"tags":{"status":"200"}}}
{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-22T04:01:28.000000009Z","value":7,"tags":{"status":"200"}}}
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28.000000010Z","value":1,"tags":{"status":"200"}}}
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-22T04:01:28.000000009Z","value":1,"tags":{"status":"503"}}}
JSON
  assert_line --index 0 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,status=200 value=1 1795320088000000009'
  assert_line --index 1 'http_req_duration,run_id=run-1,cell=01_vus-4,scenario=spike,status=200 value=5 1795320088000000009'
  assert_line --index 2 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,status=200 value=1 1795320088000000010'
  assert_line --index 3 'http_req_duration,run_id=run-1,cell=01_vus-4,scenario=spike,status=200 value=7 1795320088000000010'
  # The next one's own time is taken now: it moves on too.
  assert_line --index 4 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,status=200 value=1 1795320088000000011'
  # Another series may share the time.
  assert_line --index 5 'http_reqs,run_id=run-1,cell=01_vus-4,scenario=spike,status=503 value=1 1795320088000000009'
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

# k6_options CELL_ASSOC: the cell's k6 options into the array "options".
k6_options() {
  monitoring_cell_start "$1" "$CELL_DIR"
  mapfile -t options < <(monitoring_k6_options "$1" "$CELL_DIR")
}

@test "a cell gets k6's HTML report settings; without InfluxDB and with K6_SAMPLES=0 no k6 output is added" {
  local -A cell=([K6_HTML_REPORT]=1 [K6_SAMPLES]=0 [SCENARIO]=spike)
  local -a options
  MONITORING_ACTIVE=0
  k6_options cell
  [ "${options[*]}" = "K6_WEB_DASHBOARD=true K6_WEB_DASHBOARD_EXPORT=$CELL_DIR/k6-report.html K6_WEB_DASHBOARD_PERIOD=1s K6_WEB_DASHBOARD_PORT=-1" ]
  run monitoring_sampler_hook
  assert_output ""
}

@test "K6_HTML_REPORT=0 leaves the web dashboard off" {
  local -A cell=([K6_HTML_REPORT]=0 [K6_SAMPLES]=0 [SCENARIO]=spike)
  local -a options
  MONITORING_ACTIVE=0
  k6_options cell
  [ "${#options[@]}" -eq 0 ]
}

@test "K6_SAMPLES=1 has k6 write its samples file without InfluxDB, for the report" {
  local -A cell=([K6_HTML_REPORT]=0 [K6_SAMPLES]=1 [SCENARIO]=spike)
  local -a options
  MONITORING_ACTIVE=0
  k6_options cell
  [ "${options[*]}" = "--out=json=$CELL_DIR/k6-samples.json.gz K6_SYSTEM_TAGS=status,error_code,expected_response,name,scenario,check" ]
}

@test "a monitored cell has k6 write its samples to compressed JSON in the cell, with the tags in use" {
  local -A cell=([K6_HTML_REPORT]=0 [K6_SAMPLES]=0 [SCENARIO]=spike)
  local -a options
  MONITORING_ACTIVE=1
  MONITORING_K6_MODE="file"
  k6_options cell
  [ "${options[0]}" = "--out=json=$CELL_DIR/k6-samples.json.gz" ]
  [[ "${options[1]}" == K6_SYSTEM_TAGS=* ]]
  run monitoring_sampler_hook
  assert_output monitoring_send_sample
  # Every tag the dashboards filter or group by is kept (traffic is the
  # scenarios' own tag, not a system one).
  local tag
  for tag in $(grep -o '\\"[a-z_]*\\" [=!]~\? \|GROUP BY [^"]*\\"[a-z_]*\\"' "$LT_ROOT"/grafana/dashboards/*.json \
    | grep -o '\\"[a-z_]*\\"' | tr -d '\\"' | sort -u); do
    case "$tag" in run_id | cell | traffic) continue ;; esac
    [[ ",${options[1]#K6_SYSTEM_TAGS=}," == *",$tag,"* ]] || fail "dashboards use $tag, which k6 no longer writes"
  done
}

@test "a monitored cell sends each samples row as it is taken" {
  # A stand-in for InfluxDB's /write that records when each body came (30 s at most).
  python3 -c '
import http.server, sys, time
class Write(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        with open(sys.argv[1], "a") as log:
            log.write("%.3f %s %s" % (time.time(), self.path, body))
        self.send_response(204); self.end_headers()
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Write)
print(server.server_address[1], flush=True)
server.timeout = 0.2
end = time.time() + 30
while time.time() < end: server.handle_request()
' "$BATS_TEST_TMPDIR/writes" >"$BATS_TEST_TMPDIR/port" &
  local server=$! i
  for ((i = 0; i < 50; i++)); do [[ -s "$BATS_TEST_TMPDIR/port" ]] && break; sleep 0.1; done
  local -A cell=([K6_HTML_REPORT]=0 [SCENARIO]=spike [TOMCAT_MAX_THREADS]=200 [TOMCAT_MAX_CONNECTIONS]=8192)
  MONITORING_ACTIVE=1
  MONITORING_URL="http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")"
  MONITORING_DB=k6
  NETNS_HOST_MODE=1
  monitoring_cell_start cell "$CELL_DIR"
  sampler_start "$CELL_DIR/samples.tsv" 9 "" 1 3 "$(monitoring_sampler_hook)"
  wait "$SAMPLER_PID"
  SAMPLER_PID=""
  sleep 0.5
  kill "$server"
  wait "$server" || true
  # One write per row; the first arrived while the sampler still ran (before
  # its last row), not after the cell.
  [ "$(grep -c '^[0-9.]* /write?db=k6&precision=ns ltsuite_samples,run_id=run-1,cell=01_vus-4,scenario=spike ' "$BATS_TEST_TMPDIR/writes")" -eq 3 ]
  grep -q 'tomcat_threads_max=200,tomcat_connections_max=8192 ' "$BATS_TEST_TMPDIR/writes"
  local sent_first last_row
  sent_first="$(head -n 1 "$BATS_TEST_TMPDIR/writes" | cut -d' ' -f1)"
  last_row="$(tail -n 1 "$CELL_DIR/samples.tsv" | cut -f1)"
  awk -v a="$sent_first" -v b="$last_row" 'BEGIN { exit !(a < b) }'
  # Without monitoring the cell has no hook and nothing is sent.
  MONITORING_ACTIVE=0
  monitoring_cell_start cell "$CELL_DIR"
  [ -z "$(monitoring_sampler_hook)" ]
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

@test "MONITORING=off makes the cell hooks do nothing (with K6_SAMPLES=0)" {
  local -A run=([MONITORING]=off)
  local -A cell=([K6_HTML_REPORT]=0 [K6_SAMPLES]=0 [SCENARIO]=spike)
  monitoring_run_start "$RUN_DIR" run
  local -a options
  k6_options cell
  [ "${#options[@]}" -eq 0 ]
  run monitoring_cell_done cell "$CELL_DIR"
  assert_success
  assert_output ""
}

@test "an INFLUXDB_URL with a user and password: none of it in messages, the manifest, a cell's settings or k6's arguments" {
  export INFLUXDB_URL="http://ltuser:s3cret@127.0.0.1:9"
  source "$LT_ROOT/scripts/lib/envfile.sh"
  source "$LT_ROOT/scripts/lib/matrix.sh"
  printf 'VUS=2\n' >"$BATS_TEST_TMPDIR/m.matrix"
  lt_untraced matrix_resolve "$BATS_TEST_TMPDIR/m.matrix"
  monitoring_take_credentials MATRIX_VALUE
  [ "$MONITORING_CREDENTIALS" = "ltuser:s3cret" ]
  run matrix_overrides
  assert_output "INFLUXDB_URL=http://127.0.0.1:9"
  run matrix_cell_values 0
  refute_output --partial s3cr
  MATRIX_VALUE[MONITORING]=on
  run monitoring_run_start "$RUN_DIR" MATRIX_VALUE
  refute_output --partial s3cr
  refute_output --partial ltuser
  run grep -c s3cr "$RUN_DIR/manifest.json"
  assert_output 0
  jq -e '.monitoring.influxdb_url == "http://127.0.0.1:9"' "$RUN_DIR/manifest.json"
  # k6: the URL without them on its command line, they in its environment.
  MONITORING_K6_MODE=live MONITORING_CELL_K6=live MONITORING_DB=k6 MONITORING_URL=http://127.0.0.1:9
  local -A cell=([K6_HTML_REPORT]=0)
  run monitoring_k6_options cell "$CELL_DIR"
  assert_line "--out=influxdb=http://127.0.0.1:9/k6"
  assert_line "K6_INFLUXDB_USERNAME=ltuser"
  assert_line "K6_INFLUXDB_PASSWORD=s3cret"
  refute_output --partial "ltuser:"
}

@test "curl sends InfluxDB's user and password from a pipe, not from its command line" {
  # A stand-in for InfluxDB's /ping that records the Authorization header.
  python3 -c '
import http.server, sys
class Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[1], "a") as log:
            log.write("%s\n" % self.headers.get("Authorization"))
        self.send_response(204); self.end_headers()
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Ping)
print(server.server_address[1], flush=True)
server.timeout = 10
server.handle_request()
' "$BATS_TEST_TMPDIR/auth" >"$BATS_TEST_TMPDIR/port" &
  local server=$! i
  for ((i = 0; i < 50; i++)); do [[ -s "$BATS_TEST_TMPDIR/port" ]] && break; sleep 0.1; done
  MONITORING_CREDENTIALS='ltuser:s3cr%22t'
  monitoring_ping "http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")"
  wait "$server"
  [ "$(cat "$BATS_TEST_TMPDIR/auth")" = "Basic $(printf 'ltuser:s3cr"t' | base64)" ]
}
