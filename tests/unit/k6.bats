#!/usr/bin/env bats
# k6.sh: planned time, execution segments, and the merge of several k6
# instances' summaries into one.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test
# shellcheck disable=SC2030,SC2031 # SC2030/SC2031: k6_start sets K6_PIDS in the test's own shell, which waits on them

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

@test "the entry module gives an unchanged script's requests the suite's request id, not setup's nor one it set" {
  # Nothing listens on 127.0.0.1:1: every request is refused at once, and
  # k6 still writes its samples, with their metadata.
  cat >"$BATS_TEST_TMPDIR/user.js" <<'JS'
import http from 'k6/http';
export const options = { vus: 1, iterations: 2 };
export function setup() { http.get('http://127.0.0.1:1/setup'); }
export default function () {
  http.get('http://127.0.0.1:1/a');
  http.post('http://127.0.0.1:1/b', 'x', { headers: { 'X-Request-Id': 'mine' } });
  http.request('GET', 'http://127.0.0.1:1/c');
}
JS
  printf '{"scenarios": {"default": {"executor": "shared-iterations"}}}' >"$BATS_TEST_TMPDIR/inspected.json"
  k6_entry_module "$BATS_TEST_TMPDIR/user.js" "$BATS_TEST_TMPDIR/inspected.json" >"$BATS_TEST_TMPDIR/entry.js"
  run "$LT_K6" run -q --summary-mode=disabled --out "json=$BATS_TEST_TMPDIR/samples.json" "$BATS_TEST_TMPDIR/entry.js"
  assert_success
  run jq -r 'select(.metric == "http_reqs" and .type == "Point") | "\(.data.tags.name) \(.data.metadata.rid)"' \
    "$BATS_TEST_TMPDIR/samples.json"
  assert_output "$(printf '%s\n' 'http://127.0.0.1:1/setup null' 'http://127.0.0.1:1/a 1-0-1' 'http://127.0.0.1:1/b null' \
    'http://127.0.0.1:1/c 1-0-2' 'http://127.0.0.1:1/a 1-1-3' 'http://127.0.0.1:1/b null' 'http://127.0.0.1:1/c 1-1-4')"
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

@test "the trend statistics a script of one's own gets are the list of scenarios/lib/summary.js, read from it" {
  # A copy of the suite whose summary.js lists one statistic more: the command line follows it.
  local root="$BATS_TEST_TMPDIR/suite"
  mkdir -p "$root/scenarios/lib"
  sed "s/'max', 'count'\]/'max', 'count', 'p(99.9)']/" "$LT_ROOT/scenarios/lib/summary.js" >"$root/scenarios/lib/summary.js"
  LT_ROOT="$root" run k6_trend_stats
  assert_output 'min,avg,med,p(90),p(95),p(99),max,count,p(99.9)'
  # Without the line, a script of one's own is refused, naming the file, rather than run without p99.
  printf 'export const OTHER = 1;\n' >"$root/scenarios/lib/summary.js"
  printf '{}' >"$BATS_TEST_TMPDIR/inspected.json"
  LT_ROOT="$root" run k6_script_args /srv/my-test.js "$BATS_TEST_TMPDIR/inspected.json" r1 01_a-1
  assert_failure
  assert_output --partial "scenarios/lib/summary.js: no 'export const TREND_STATS = [...];' line"
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

# fake_k6 I N STATUS SUMMARY: a finished stand-in for instance I of N of a
# cell's k6 in $CELL_DIR, as k6_wait finds them: a process of the test's
# shell that exits with STATUS, its log with one error line, and its
# summary when SUMMARY is 1.
fake_k6() {
  local i="$1" n="$2" status="$3" summary="$4" log
  log="$(k6_instance_file "$CELL_DIR" "$i" "$n" log)"
  printf 'time="x" level=error msg="instance %s says goodbye"\n' "$((i + 1))" >"$log"
  if [[ "$summary" == 1 ]]; then
    mkdir -p "$CELL_DIR/k6-summaries"
    printf '{"state": {"testRunDurationMs": 1000}, "metrics": {"http_reqs": {"type": "counter", "contains": "default", "values": {"count": 10, "rate": 10}}}}\n' \
      >"$(k6_instance_file "$CELL_DIR" "$i" "$n" summary)"
  fi
  printf '%s\n' "$((4000 + i))" >"$(k6_instance_file "$CELL_DIR" "$i" "$n" pid)"
  sh -c "exit $status" &
  K6_PIDS+=("$!")
}

@test "k6_wait: one process at 99 and another killed fail the cell, naming the killed one" {
  CELL_DIR="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$CELL_DIR"
  K6_CELL_DIR="$CELL_DIR"
  K6_PIDS=()
  fake_k6 0 2 99 1
  fake_k6 1 2 137 0
  # Not under run: the processes are children of this shell.
  local waited=0
  k6_wait || waited=$?
  [ "$waited" -eq 137 ]
  run cat "$CELL_DIR/k6-exits.tsv"
  assert_output $'process\tpid\tstatus\tlog\tsummary\tsummary_written\n1\t4000\t99\tk6.log\tk6-summaries/0.json\t1\n2\t4001\t137\tk6-2.log\tk6-summaries/1.json\t0'
  run k6_failure "$CELL_DIR"
  assert_success
  assert_output 'k6 process 2 of 2 (pid 4001) exited with status 137 (killed by SIGKILL): k6-2.log: time="x" level=error msg="instance 2 says goodbye"'
  # The merge keeps what was measured and says what is missing.
  run jq -r '[.metrics.http_reqs.values.count, .merge_notes] | @tsv' "$CELL_DIR/summary.json"
  assert_output --partial $'10\tmerged from 1 k6 instances'
  assert_output --partial "only 1 of the 2 processes wrote a summary"
  # The pid files named running processes; they are gone.
  [ ! -e "$CELL_DIR/k6.pid" ] && [ ! -e "$CELL_DIR/k6-2.pid" ]
}

@test "k6_wait: 0 and 99 with every summary written is a result, status 99" {
  CELL_DIR="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$CELL_DIR"
  K6_CELL_DIR="$CELL_DIR"
  K6_PIDS=()
  fake_k6 0 3 0 1
  fake_k6 1 3 99 1
  fake_k6 2 3 0 1
  # Not under run: the processes are children of this shell.
  local waited=0
  k6_wait || waited=$?
  [ "$waited" -eq 99 ]
  run k6_failure "$CELL_DIR"
  assert_failure 1
  assert_output ""
  [ "$(jq .metrics.http_reqs.values.count "$CELL_DIR/summary.json")" -eq 30 ]
}

@test "k6_wait: a process that exited 0 without a summary fails the cell" {
  CELL_DIR="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$CELL_DIR"
  K6_CELL_DIR="$CELL_DIR"
  K6_PIDS=()
  fake_k6 0 2 0 1
  fake_k6 1 2 0 0
  # Not under run: the processes are children of this shell.
  local waited=0
  k6_wait || waited=$?
  [ "$waited" -eq 0 ]
  run k6_failure "$CELL_DIR"
  assert_success
  assert_output "k6 process 2 of 2 (pid 4001) wrote no summary (k6-summaries/1.json)"
}

@test "k6_wait: the worst status is returned whatever the order; one process keeps its old message" {
  CELL_DIR="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$CELL_DIR"
  K6_CELL_DIR="$CELL_DIR"
  K6_PIDS=()
  fake_k6 0 2 107 1
  fake_k6 1 2 99 1
  # Not under run: the processes are children of this shell.
  local waited=0
  k6_wait || waited=$?
  [ "$waited" -eq 107 ]
  run k6_failure "$CELL_DIR"
  assert_output 'k6 process 1 of 2 (pid 4000) exited with status 107: k6.log: time="x" level=error msg="instance 1 says goodbye"'

  rm -rf "$CELL_DIR" && mkdir -p "$CELL_DIR"
  K6_PIDS=()
  fake_k6 0 1 137 0
  # Not under run: the processes are children of this shell.
  local waited=0
  k6_wait || waited=$?
  [ "$waited" -eq 137 ]
  run k6_failure "$CELL_DIR"
  assert_output 'k6 exited with status 137: time="x" level=error msg="instance 1 says goodbye"'
}

@test "k6_outputs_check: an output k6 could not write is a warning with k6's reason; a written one is not" {
  CELL_DIR="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$CELL_DIR/k6-outputs" "$CELL_DIR/k6-outputs-2"
  printf '["summary2.json", "./data/summary.json", "gone.txt"]\n' | tee "$CELL_DIR/k6-outputs.json" >"$CELL_DIR/k6-outputs-2.json"
  printf '{}\n' >"$CELL_DIR/k6-outputs/summary2.json"
  printf '{}\n' >"$CELL_DIR/k6-outputs-2/summary2.json"
  printf '{}\n' >"$CELL_DIR/k6-outputs-2/gone.txt"
  # k6 1.8.1's own words when handleSummary names a file it cannot open.
  printf '%s\n' 'time="2026-11-24T10:07:51Z" level=error msg="failed to handle the end-of-test summary" error="Could not save some summary information:\n\t- could not open '\''./data/summary.json'\'': open ./data/summary.json: no such file or directory"' \
    | tee "$CELL_DIR/k6.log" >"$CELL_DIR/k6-2.log"
  k6_outputs_check "$CELL_DIR" 2
  run cat "$CELL_DIR/k6-warnings.txt"
  assert_output "k6 process 1 of 2: handleSummary's output './data/summary.json' was not written: open ./data/summary.json: no such file or directory
k6 process 1 of 2: handleSummary's output 'gone.txt' was not written: no file at k6-outputs/gone.txt after the run
k6 process 2 of 2: handleSummary's output './data/summary.json' was not written: open ./data/summary.json: no such file or directory"

  # Everything written: no warnings file at all.
  rm -rf "$CELL_DIR/k6-outputs-2.json"
  printf '["summary2.json"]\n' >"$CELL_DIR/k6-outputs.json"
  k6_outputs_check "$CELL_DIR" 1
  [ ! -e "$CELL_DIR/k6-warnings.txt" ]
}

@test "k6's open-file limit is K6_NOFILE, at most the hard limit, else the hard limit" {
  local -A cell=([K6_NOFILE]=300)
  run k6_nofile cell
  assert_output 300
  cell[K6_NOFILE]=""
  run k6_nofile cell
  assert_output "$(ulimit -Hn)"
  [[ "$(ulimit -Hn)" == unlimited ]] || {
    cell[K6_NOFILE]=$(($(ulimit -Hn) + 1))
    run k6_nofile cell
    assert_output "$(ulimit -Hn)"
  }
}

@test "file-limits.tsv: k6's limit, and the target's limit and open files from /proc" {
  TARGET_PID=""
  k6_file_limits "$BATS_TEST_TMPDIR" 300
  assert_equal "$(cat "$BATS_TEST_TMPDIR/file-limits.tsv")" "$(printf 'k6\t300')"
  # This test's own shell stands for the target (a process it may read).
  TARGET_PID=$$
  k6_file_limits "$BATS_TEST_TMPDIR" 300
  local soft fds
  soft="$(awk '/^Max open files/ { print $4 }' "/proc/$$/limits")"
  run awk -F '\t' '$1 == "target" { print $2 }' "$BATS_TEST_TMPDIR/file-limits.tsv"
  assert_output "$soft"
  fds="$(awk -F '\t' '$1 == "target" { print $3 }' "$BATS_TEST_TMPDIR/file-limits.tsv")"
  [ "$fds" -ge 3 ]
}

@test "a cell whose VUs need more memory than there is is refused before the run, with the numbers" {
  # shellcheck disable=SC2317 # SC2317: called by k6_check_cells, which this test runs
  matrix_cell_values() { printf '%s\n' SCENARIO=burst VUS=100000 K6_INSTANCES=auto; }
  # shellcheck disable=SC2317 # SC2317: called by k6_check_cells, which this test runs
  matrix_cell_id() { printf 'big\n'; }
  run k6_check_cells 1 '{"cpus": 2, "nofile": 20000, "mem_available_mb": 8000}'
  assert_failure 2
  assert_output --partial "cannot run as designed on this machine: cell big: 100000 VUs need at least 23438 MB in k6 (240-420 KB each, measured), more than the 8000 MB available"
  run k6_check_cells 1 '{"cpus": 2, "nofile": 20000, "mem_available_mb": 24000}'
  assert_success
}

@test "every cell's refusals come from one Python start, each named by its cell" {
  matrix_cell_values() { printf '%s\n' SCENARIO=burst "VUS=$((($1 + 1) * 50000))" K6_INSTANCES=auto; }
  matrix_cell_id() { printf 'cell%s\n' "$1"; }
  local real="$LT_PYTHON"
  printf '#!/bin/bash\necho start >>"%s"\nexec "%s" "$@"\n' "$BATS_TEST_TMPDIR/starts" "$real" >"$BATS_TEST_TMPDIR/python"
  chmod +x "$BATS_TEST_TMPDIR/python"
  LT_PYTHON="$BATS_TEST_TMPDIR/python" run k6_check_cells 3 '{"cpus": 2, "nofile": 20000, "mem_available_mb": 20000}'
  assert_failure 2
  assert_output --partial "cell cell1: 100000 VUs need at least 23438 MB"
  assert_output --partial "; cell cell2: 150000 VUs need"
  refute_output --partial "cell cell0"
  assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/starts")" 1
}

@test "k6 gets its environment (a password among it) in its environment, never on a command line" {
  local cell_dir="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$cell_dir"
  # A stand-in k6: records its own environment and its parent's (timeout's) arguments.
  cat >"$BATS_TEST_TMPDIR/k6" <<'SH'
#!/bin/sh
env >"$SUMMARY_FILE.env"
tr '\0' ' ' <"/proc/$PPID/cmdline" >"$SUMMARY_FILE.parent"
tr '\0' ' ' <"/proc/$$/cmdline" >"$SUMMARY_FILE.args"
SH
  chmod +x "$BATS_TEST_TMPDIR/k6"
  LT_K6="$BATS_TEST_TMPDIR/k6" NETNS_HOST_MODE=1 LT_RUN_ID=r
  export SECRET_OF_THE_CALLER=1
  local -A cell=([SCENARIO]=spike [VUS]=2)
  k6_start cell "$cell_dir" http://127.0.0.1:9 10 K6_INFLUXDB_PASSWORD=s3cret "--out=influxdb=http://127.0.0.1:9/k6"
  wait "${K6_PIDS[@]}"
  grep -qx K6_INFLUXDB_PASSWORD=s3cret "$cell_dir/summary.json.env"
  grep -qx VUS=2 "$cell_dir/summary.json.env"
  grep -qx TARGET_URL=http://127.0.0.1:9 "$cell_dir/summary.json.env"
  run grep -c SECRET_OF_THE_CALLER "$cell_dir/summary.json.env"
  assert_output 0
  run grep -l s3cret "$cell_dir/summary.json.parent" "$cell_dir/summary.json.args"
  assert_output ''
  grep -q -- "--out=influxdb=http://127.0.0.1:9/k6" "$cell_dir/summary.json.args"
}

@test "an exported LT_K6 and LT_RUN_ID still name the k6 that runs and the run it marks" {
  local cell_dir="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$cell_dir"
  cat >"$BATS_TEST_TMPDIR/k6" <<'SH'
#!/bin/sh
tr '\0' ' ' <"/proc/$$/cmdline" >"$SUMMARY_FILE.args"
SH
  chmod +x "$BATS_TEST_TMPDIR/k6"
  export LT_K6="$BATS_TEST_TMPDIR/k6" LT_RUN_ID=exported-run
  NETNS_HOST_MODE=1
  local -A cell=([SCENARIO]=spike [VUS]=2)
  k6_start cell "$cell_dir" http://127.0.0.1:9 10
  wait "${K6_PIDS[@]}"
  grep -q -- "-e LT_RUN_ID=exported-run " "$cell_dir/summary.json.args"
}

@test "k6_duration_seconds gives the shared table's durations in whole seconds, rounded up" {
  local value ms
  while IFS=$'\t' read -r value ms; do
    [ "$(k6_duration_seconds "$value")" = "$(((ms + 999) / 1000))" ] || fail "$value: $(k6_duration_seconds "$value") s"
  done < <(grep -v '^#' "$LT_ROOT/tests/fixtures/durations.tsv")
}

@test "in the client namespace k6's dashboard listens on a port outside the users' range, and setup() leaves the health check to the runner" {
  local cell_dir="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$cell_dir"
  cat >"$BATS_TEST_TMPDIR/k6" <<'SH'
#!/bin/sh
env >"$SUMMARY_FILE.env"
SH
  chmod +x "$BATS_TEST_TMPDIR/k6"
  LT_K6="$BATS_TEST_TMPDIR/k6" NETNS_HOST_MODE=0 LT_RUN_ID=r
  # The client namespace's range, and k6 run here instead of in it.
  # shellcheck disable=SC2317 # SC2317: called by k6_start, which this test runs
  netns_exec() {
    [[ "$1 $2 $3 $4" == "client sysctl -n net.ipv4.ip_local_port_range" ]] || return 1
    printf '32768\t60999\n'
  }
  # shellcheck disable=SC2317 # SC2317: called by k6_start, which this test runs
  netns_prefix() { :; }
  local -A cell=([SCENARIO]=burst [VUS]=2)
  k6_start cell "$cell_dir" http://127.0.0.1:9 10 K6_WEB_DASHBOARD=true K6_WEB_DASHBOARD_PORT=-1
  wait "${K6_PIDS[@]}"
  grep -qx K6_WEB_DASHBOARD_PORT=32767 "$cell_dir/summary.json.env"
  grep -qx TARGET_CHECKED=1 "$cell_dir/summary.json.env"
}

@test "k6_instance_file names several files of an instance in one call, in the order asked" {
  run k6_instance_file /c 1 3 summary log outputs outputs-list pid samples histogram
  assert_output "$(printf '%s\n' /c/k6-summaries/1.json /c/k6-2.log /c/k6-outputs-2 /c/k6-outputs-2.json /c/k6-2.pid \
    /c/k6-samples-2.json.gz /c/k6-histograms/1.json)"
  run k6_instance_file /c 0 1 summary
  assert_output /c/summary.json
}

# processes_of SCRIPT: run the bash SCRIPT (k6.sh and what it needs sourced,
# host mode, LT_K6 a stand-in that only writes $SUMMARY_FILE.done) as the
# first process of a PID namespace of its own, where every process started
# takes the next pid, so /proc/sys/kernel/ns_last_pid counts them.
# shellcheck disable=SC2016 # SC2016: expanded by the stand-in and the bash that run them
processes_of() {
  printf '#!/bin/sh\necho done >"$SUMMARY_FILE.done"\n' >"$BATS_TEST_TMPDIR/k6"
  chmod +x "$BATS_TEST_TMPDIR/k6"
  mkdir -p "$BATS_TEST_TMPDIR/cell"
  LT_ROOT="$LT_ROOT" LT_K6="$BATS_TEST_TMPDIR/k6" CELL_DIR="$BATS_TEST_TMPDIR/cell" \
    unshare --pid --fork --mount-proc bash -c '
      set -euo pipefail
      source "$LT_ROOT/scripts/lib/common.sh"
      for lib in results netns k6; do source "$LT_ROOT/scripts/lib/$lib.sh"; done
      NETNS_HOST_MODE=1 LT_RUN_ID=r TARGET_PID=$$
      declare -A cell=([SCENARIO]=spike [VUS]=2 [K6_INSTANCES]=1)
      # last: the last pid taken; after_k6: spin (no process) until the stand-in has run.
      last() { local n; read -r n </proc/sys/kernel/ns_last_pid; printf "%s\n" "$n"; }
      after_k6() { local t; for ((t = 0; t < 20000000; t++)); do [[ ! -e "$CELL_DIR/summary.json.done" ]] || return 0; done; return 1; }
      '"$1"
}

@test "k6's start and end start few processes of the runner's own: each costs ms as k6 starts (docs/performance.md)" {
  [[ $EUID -eq 0 ]] || skip "a PID namespace of its own needs root"
  # k6_pid_file polls beside k6's start for as long as the system takes: not counted.
  # shellcheck disable=SC2016 # SC2016: expanded by the bash that runs it
  run processes_of 'k6_pid_file() { :; }; before=$(last); k6_start cell "$CELL_DIR" http://127.0.0.1:9 10; after_k6
    started=$(last); k6_wait || true; waited=$(last)
    printf "%s %s\n" "$((started - before - 1))" "$((waited - started - 1))"'
  assert_success
  local start wait
  read -r start wait <<<"$output"
  # Before: 23 up to k6 (awk, find and wc for the target's open files, a
  # process for each file name, basename, ulimit), 15 after it.
  [ "$start" -le 11 ] || fail "k6_start started $start processes"
  [ "$wait" -le 6 ] || fail "k6_wait started $wait processes"
}

@test "the dashboard's port is asked of the client namespace while the rest of k6's start is made ready" {
  local cell_dir="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$cell_dir"
  # shellcheck disable=SC2016 # SC2016: expanded by the stand-in
  printf '#!/bin/sh\nenv >"$SUMMARY_FILE.env"\n' >"$BATS_TEST_TMPDIR/k6"
  chmod +x "$BATS_TEST_TMPDIR/k6"
  LT_K6="$BATS_TEST_TMPDIR/k6" NETNS_HOST_MODE=0 LT_RUN_ID=r
  # Both take 0.8 s: one after the other, k6 would start after 1.6 s.
  # shellcheck disable=SC2317 # SC2317: called by k6_start, which this test runs
  netns_exec() { sleep 0.8; printf '32768\t60999\n'; }
  # shellcheck disable=SC2317 # SC2317: called by k6_start, which this test runs
  netns_prefix() { :; }
  # shellcheck disable=SC2317 # SC2317: called by k6_start, which this test runs
  k6_cell_env() { sleep 0.8; printf '%s\n' "PATH=$PATH" VUS=2; }
  local -A cell=([SCENARIO]=spike [VUS]=2)
  local t0="${EPOCHREALTIME/[.,]/}"
  k6_start cell "$cell_dir" http://127.0.0.1:9 10 K6_WEB_DASHBOARD=true K6_WEB_DASHBOARD_PORT=-1
  local took_ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
  wait "${K6_PIDS[@]}"
  grep -qx K6_WEB_DASHBOARD_PORT=32767 "$cell_dir/summary.json.env"
  [ "$took_ms" -lt 1400 ] || fail "k6_start took $took_ms ms"
}

@test "k6_stop interrupts k6 once: the signal goes to k6, not to the timeout that would pass it to k6's whole group again" {
  local cell_dir="$BATS_TEST_TMPDIR/cell"
  mkdir -p "$cell_dir"
  # A stand-in k6 with a child of its own in its process group: the child
  # records a SIGINT that reaches the group, as a second SIGINT reaches k6
  # (and aborts it without its summary) when timeout passes it on to the group.
  cat >"$BATS_TEST_TMPDIR/k6" <<PY
#!$(command -v python3)
import os, signal, time
out = os.environ["SUMMARY_FILE"]
child = os.fork()
if child == 0:
    signal.signal(signal.SIGINT, lambda *_: open(out + ".group", "a").write("INT\n"))
    end = time.monotonic() + 20
    while time.monotonic() < end:
        time.sleep(0.05)
    os._exit(0)
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
open(out + ".ready", "w").write("ready\n")
end = time.monotonic() + 20
while not got and time.monotonic() < end:
    time.sleep(0.02)
time.sleep(0.5)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
open(out, "w").write("{}\n")
PY
  chmod +x "$BATS_TEST_TMPDIR/k6"
  LT_K6="$BATS_TEST_TMPDIR/k6" NETNS_HOST_MODE=1 LT_RUN_ID=r
  local -A cell=([SCENARIO]=spike [VUS]=2)
  k6_start cell "$cell_dir" http://127.0.0.1:9 60
  local tries
  for ((tries = 0; tries < 500; tries++)); do
    [[ ! -e "$cell_dir/summary.json.ready" ]] || break
    sleep 0.02
  done
  [ -e "$cell_dir/summary.json.ready" ] || fail "the stand-in k6 did not start"
  k6_stop
  [ -s "$cell_dir/summary.json" ] || fail "k6 ended without its summary"
  [ ! -e "$cell_dir/summary.json.group" ] || fail "k6's process group got SIGINT too: $(cat "$cell_dir/summary.json.group")"
}
