#!/usr/bin/env bats
# k6.sh: planned time, execution segments, and the merge of several k6
# instances' summaries into one.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  lt_source_libs results netns k6
}

@test "the segment sequence of N instances" {
  run k6_segment_sequence 2
  assert_output "0,1/2,1"
  run k6_segment_sequence 4
  assert_output "0,1/4,2/4,3/4,1"
}

@test "a burst is bounded by its lead time, its duration and the graceful stop" {
  local -A cell=([SCENARIO]=burst [DURATION]=20s [GRACEFUL_STOP]=5s [BURST_LEAD_MS]=2500)
  run k6_planned_seconds cell
  assert_output 28
}

@test "merged summaries: counts add up, min and max are exact, percentiles are left out" {
  mkdir -p "$BATS_TEST_TMPDIR/s"
  cat >"$BATS_TEST_TMPDIR/s/0.json" <<'JSON'
{"state": {"testRunDurationMs": 2000}, "metrics": {
 "http_reqs{traffic:load}": {"type": "counter", "contains": "default", "values": {"count": 10, "rate": 5}},
 "http_req_failed{traffic:load}": {"type": "rate", "contains": "default", "values": {"passes": 2, "fails": 8, "rate": 0.2}},
 "http_req_duration{traffic:load,expected_response:true}": {"type": "trend", "contains": "time", "values": {"min": 5, "max": 50, "avg": 10, "count": 8, "p(95)": 40}},
 "lt_vu_first_request": {"type": "trend", "contains": "default", "values": {"min": 1000, "max": 1200, "avg": 1100, "count": 5}},
 "lt_request_end": {"type": "gauge", "contains": "default", "values": {"min": 1010, "max": 3000, "value": 3000}},
 "vus_max": {"type": "gauge", "contains": "default", "values": {"min": 5, "max": 5, "value": 5}}}}
JSON
  cat >"$BATS_TEST_TMPDIR/s/1.json" <<'JSON'
{"state": {"testRunDurationMs": 2100}, "metrics": {
 "http_reqs{traffic:load}": {"type": "counter", "contains": "default", "values": {"count": 30, "rate": 15}},
 "http_req_failed{traffic:load}": {"type": "rate", "contains": "default", "values": {"passes": 0, "fails": 30, "rate": 0}},
 "http_req_duration{traffic:load,expected_response:true}": {"type": "trend", "contains": "time", "values": {"min": 2, "max": 30, "avg": 20, "count": 32, "p(95)": 25}},
 "lt_vu_first_request": {"type": "trend", "contains": "default", "values": {"min": 990, "max": 1100, "avg": 1050, "count": 5}},
 "lt_request_end": {"type": "gauge", "contains": "default", "values": {"min": 1000, "max": 3500, "value": 2000}},
 "vus_max": {"type": "gauge", "contains": "default", "values": {"min": 5, "max": 5, "value": 5}}}}
JSON
  run k6_merge_summaries "$BATS_TEST_TMPDIR/s"
  assert_success
  local merged="$output"
  run jq -c '.metrics | [."http_reqs{traffic:load}".values.count, ."http_req_failed{traffic:load}".values.passes,
     ."http_req_failed{traffic:load}".values.rate, (."http_req_duration{traffic:load,expected_response:true}".values | [.min, .max, .avg, .count, ."p(95)"]),
     (.lt_vu_first_request.values | [.min, .max, .count]), .lt_request_end.values.max, .vus_max.values.max]' <<<"$merged"
  assert_output '[40,2,0.05,[2,50,18,40,null],[990,1200,10],3500,10]'
  run jq -r '[.state.testRunDurationMs, .merge_notes] | @tsv' <<<"$merged"
  assert_output --partial $'2100\tmerged from 2 k6 instances'
}

@test "a script of one's own is a path; a shipped one a name" {
  run k6_script_path spike
  assert_output "$LT_ROOT/scenarios/spike.js"
  run k6_script_path /srv/tests/spike-test.js
  assert_output /srv/tests/spike-test.js
  k6_own_script ./mine.js
  run ! k6_own_script burst
}

@test "the entry module re-exports the script and wraps every function a scenario executes" {
  printf '{"scenarios": {"a": {"executor": "constant-vus", "exec": "browse"}, "b": {"executor": "constant-vus", "exec": null}}}' \
    >"$BATS_TEST_TMPDIR/inspected.json"
  run k6_entry_module /srv/my-test.js "$BATS_TEST_TMPDIR/inspected.json"
  assert_line 'import * as script from "/srv/my-test.js";'
  assert_line 'export * from "/srv/my-test.js";'
  assert_line 'export default own.iteration(script.default);'
  assert_line 'export const browse = own.iteration(script.browse);'
  assert_line 'export const handleSummary = own.summary(script.handleSummary);'
}

@test "a script's own tags are given again on the command line, with the suite's" {
  printf '{"tags": {"team": "payments"}}' >"$BATS_TEST_TMPDIR/inspected.json"
  run k6_run_tags /srv/my-test.js "$BATS_TEST_TMPDIR/inspected.json" r1 01_a-1
  assert_output "$(printf '%s\n' team=payments run_id=r1 cell=01_a-1 traffic=load)"
  # A shipped scenario sets the suite's tags itself: only its own come back.
  printf '{"tags": {"run_id": "r1", "cell": "01_a-1"}}' >"$BATS_TEST_TMPDIR/inspected.json"
  run k6_run_tags spike "$BATS_TEST_TMPDIR/inspected.json" r1 01_a-1
  assert_output "$(printf '%s\n' run_id=r1 cell=01_a-1)"
  # As k6's words: a --tag each, and p99 for a script of one's own only.
  run k6_script_args spike "$BATS_TEST_TMPDIR/inspected.json" r1 01_a-1
  assert_output "$(printf '%s\n' --tag run_id=r1 --tag cell=01_a-1)"
  printf '{"tags": {"team": "payments"}}' >"$BATS_TEST_TMPDIR/inspected.json"
  run k6_script_args /srv/my-test.js "$BATS_TEST_TMPDIR/inspected.json" r1 01_a-1
  assert_output "$(printf '%s\n' --tag team=payments --tag run_id=r1 --tag cell=01_a-1 --tag traffic=load \
    '--summary-trend-stats=min,avg,med,p(90),p(95),p(99),max,count')"
}

@test "a script of one's own is bounded by its own total duration" {
  mkdir -p "$BATS_TEST_TMPDIR/cell"
  printf '{"totalDuration": "1m5s"}' >"$BATS_TEST_TMPDIR/cell/k6-script.json"
  local -A cell=([SCENARIO]=/srv/my-test.js)
  run k6_planned_seconds cell "$BATS_TEST_TMPDIR/cell"
  assert_output 65
}

@test "planned time: the load time plus the graceful stop" {
  local -A cell=([SCENARIO]=spike [DURATION]=1m30s [GRACEFUL_STOP]=5s [SAMPLE_INTERVAL]=1)
  [ "$(k6_planned_seconds cell)" -eq 95 ]
  cell=([SCENARIO]=ramp [STAGES]="5s:10,10s:10,500ms:0" [DURATION]=1s [GRACEFUL_STOP]=2s [SAMPLE_INTERVAL]=1)
  [ "$(k6_planned_seconds cell)" -eq 18 ]
}

@test "planned time of websocket counts its teardown wait of two sample intervals" {
  local -A cell=([SCENARIO]=websocket [DURATION]=30s [GRACEFUL_STOP]=5s [SAMPLE_INTERVAL]=3)
  [ "$(k6_planned_seconds cell)" -eq 41 ]
  grep -q 'sleep(2 \* config.sampleIntervalS)' "$LT_ROOT/scenarios/websocket.js"
}
