#!/usr/bin/env bats
# The row of real cells (ltsuite.row): percentiles over every k6 process,
# an external target's unmeasured server side, a sampler that never sampled.

setup() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  MATRIX="$BATS_TEST_TMPDIR/one.matrix"
  printf '%s\n' VUS=4 DURATION=3s DELAY_MS=50 GRACEFUL_STOP=1s REQUEST_TIMEOUT=5s K6_HTML_REPORT=0 MONITORING=off >"$MATRIX"
}

teardown() {
  lt_end "${TARGET_PID:-}"
}

# cell_dir: the only cell of the latest run.
cell_dir() {
  printf '%s\n' "$(readlink -f "$LT_RESULTS_DIR/latest")/cells/01"
}

@test "two k6 processes: the latency percentiles are those of every sample of both, from their merged histograms" {
  K6_INSTANCES=2 run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  local dir answered count
  dir="$(cell_dir)"
  [ -s "$dir/k6-samples.json.gz" ]
  [ -s "$dir/k6-samples-2.json.gz" ]
  # Each process reduced its own samples to its histogram.
  [ "$(jq .count "$dir/k6-histograms/0.json")" -gt 0 ]
  [ "$(jq .count "$dir/k6-histograms/1.json")" -gt 0 ]
  jq -e '[.lat_med_ms, .lat_p90_ms, .lat_p95_ms, .lat_p99_ms] | all(type == "number" and . >= 50)' "$dir/row.json"
  jq -e '.lat_min_ms <= .lat_med_ms and .lat_p99_ms <= .lat_max_ms' "$dir/row.json"
  # Every answered request of both processes, and only those.
  answered="$(jq '.metrics."http_req_duration{traffic:load,expected_response:true}".values.count' "$dir/summary.json")"
  [ "$answered" -gt 20 ]
  [ "$(jq -s 'map(.count) | add' "$dir"/k6-histograms/*.json)" -eq "$answered" ]
  run jq -r .notes "$dir/row.json"
  assert_output --partial "latency percentiles from the merged histograms of 2 k6 processes ($answered answered requests; within 0.5% of those of the raw samples)"
  # The percentiles of all raw samples of both files.
  count="$(lt_assert_raw_percentiles "$dir/row.json" "$dir/k6-samples.json.gz" "$dir/k6-samples-2.json.gz")"
  [ "$count" -eq "$answered" ]
}

@test "an external target: the server's figures are empty, not 0, and the client watches the URL's port" {
  local port mgmt
  port="$(lt_free_port)"
  mgmt="$(lt_free_port)"
  env SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" MANAGEMENT_PORT="$mgmt" \
    java -Xmx128m -jar "$LT_ROOT/server/target/loadtest-target.jar" >"$BATS_TEST_TMPDIR/target.log" 2>&1 3>&- 9>&- &
  TARGET_PID=$!
  local deadline=$((SECONDS + 60))
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "target did not start: $(tail -n 3 "$BATS_TEST_TMPDIR/target.log")"
    sleep 0.2
  done
  TARGET_URL="http://127.0.0.1:$port" run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  local dir
  dir="$(cell_dir)"
  run jq -c '[.server_accepts, .listen_overflows, .listen_drops, .syn_cookies_sent, .syn_recv_peak,
              .server_conns_peak, .accept_queue_peak, .listen_backlog, .server_time_wait_peak, .queue_capacity]' "$dir/row.json"
  assert_output '[null,null,null,null,null,null,null,null,null,null]'
  # The client's side is measured: its connects, and its sockets to the URL's port.
  jq -e '.client_connects >= 4 and (.client_time_wait_peak | type == "number")' "$dir/row.json"
  [ "$(awk -F'\t' 'NR > 1 && $7 > peak { peak = $7 } END { print peak + 0 }' "$dir/samples.tsv")" -ge 4 ]
  run jq -r .notes "$dir/row.json"
  assert_output --partial "an external target (TARGET_URL): the server's counters, connections and queues are not measured and stay empty"
}

@test "a sampler that never sampled: the checks that need it say so, and nothing passes" {
  LT_SAMPLER=off run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_success
  local dir
  dir="$(cell_dir)"
  [ "$(wc -l <"$dir/samples.tsv")" -eq 1 ]
  run jq -c '[.as_designed, .generator_bound, .k6_cpu_saturated_s, .server_conns_peak, .time_wait_peak, .prediction_check]' "$dir/row.json"
  assert_output '[0,null,null,null,null,null]'
  run jq -r .design_notes "$dir/row.json"
  assert_output "the sampler took no sample (samples.tsv has no row): k6's CPU, the connection peak and the queues were not measured, so whether the generator kept up was not checked"
}

@test "python3 is a required tool: a run without it is refused before anything starts" {
  # Every command of this machine but python3.
  local bin="$BATS_TEST_TMPDIR/bin" tool
  mkdir -p "$bin"
  for tool in /usr/local/sbin/* /usr/local/bin/* /usr/sbin/* /usr/bin/* /sbin/* /bin/*; do
    [[ -x "$tool" && ! -e "$bin/${tool##*/}" && "${tool##*/}" != python3* ]] || continue
    ln -s "$tool" "$bin/${tool##*/}"
  done
  PATH="$bin" run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure
  assert_output --partial "python3 not found; run 'make tools' (or install it: apt-get install iproute2 curl jq python3 openjdk-17-jre-headless)"
  [ ! -e "$LT_RESULTS_DIR" ]
}
