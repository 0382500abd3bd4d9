#!/usr/bin/env bats
# WARMUP: a service the suite did not write (tests/fixtures/ownapp, 100 ms a
# greeting) under the shipped keepalive scenario, 20 ms of round trip away
# (the delayer), once without a warm-up and once after WARMUP=3s, in one run:
# the warmed cell's row has the warm-up's figures, its requests are in
# neither the load's figures, the kernel's deltas nor the delayer's, and it
# leaves no TIME-WAIT socket behind; left at its default, a jar of one's own
# warms up until the application's time settled, and the row says so.

setup_file() {
  load '../test_helper'
  lt_run_settings_once warmup \
    "TARGET_JAR=$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar" \
    "TARGET_ENV_FILE=$LT_ROOT/tests/fixtures/ownapp/greeting-100ms.env" \
    'TARGET_PATH=/hello?name=warm' SCENARIO=keepalive VUS=2 REQUESTS_PER_VU=5 CONNECTION_REUSE=1 \
    DURATION=10s GRACEFUL_STOP=5s REQUEST_TIMEOUT=5s DELAY_MS=100 'WARMUP=0s 3s' NET_RTT_MS=20 K6_HTML_REPORT=0 MONITORING=off
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  COLD=01_warmup-0s WARM=02_warmup-3s
}

# mark CELL NAME: the epoch ms of a phase mark of CELL.
mark() {
  awk -F'\t' -v m="$2" '$1 == m { t = $2 } END { print t }' "$RUN_DIR/cells/$1/phases.tsv"
}

# ports_between CELL FROM TO: the client ports of the greetings Tomcat began
# from FROM to before TO (epoch ms), one a line, each once.
ports_between() {
  awk -v from="$2" -v to="$3" '$7 == "/hello" && $1 >= from && $1 < to { print $4 }' \
    "$RUN_DIR/cells/$1/tomcat-access.log" | sort -u
}

@test "the warmed cell's row has the warm-up's figures; the cell without one has them empty" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/run.log")"
  [ "$(lt_row_value "$WARM" status)" = ok ]
  # As designed, or not only for a delayer that fell behind on a busy machine.
  local cell notes
  for cell in "$COLD" "$WARM"; do
    notes="$(lt_row_value "$cell" design_notes)"
    [[ "$(lt_row_value "$cell" as_designed)" == 1 || ("$notes" == "the delayer fell behind:"* && "$notes" != *"; "*) ]] \
      || fail "$cell: $notes"
  done
  run jq -e '.warmup_s >= 3 and .warmup_path == "/hello?name=warm" and .warmup_reqs > 0
    and .warmup_failed_reqs == 0 and .warmup_first_ms > 0 and .warmup_last_ms > 0' "$RUN_DIR/cells/$WARM/row.json"
  assert_success
  run jq -c '[.warmup_s, .warmup_path, .warmup_reqs, .warmup_failed_reqs, .warmup_first_ms, .warmup_last_ms,
    .warmup_ended_by, .warmup_settled_ms]' "$RUN_DIR/cells/$COLD/row.json"
  assert_output '[null,null,null,null,null,null,null,null]'
  # WARMUP set in the matrix: ended by time, as WARMUP_UNTIL's default says.
  run jq -c '[.warmup_ended_by, .warmup_settled_ms]' "$RUN_DIR/cells/$WARM/row.json"
  assert_output '["time",null]'
  [ ! -e "$RUN_DIR/cells/$COLD/warmup-summary.json" ]
  # In results.csv too, empty for the cold cell.
  run lt_csv_column "$RUN_DIR/results.csv" warmup_reqs
  assert_output "$(printf '\n%s' "$(lt_row_value "$WARM" warmup_reqs)")"
}

@test "the warm-up's requests came before the load, and are not the load's: not in http_reqs, app_reqs or k6's samples" {
  local start end k6
  start="$(mark "$WARM" warmup_start)" end="$(mark "$WARM" warmup_end)" k6="$(mark "$WARM" k6_start)"
  [ "$(mark "$WARM" joined)" -le "$start" ]
  [ "$end" -le "$k6" ]
  # The application logged each of the warm-up's requests, in its window.
  run awk -v from="$start" -v to="$end" '$7 == "/hello" && $1 >= from && $1 < to' "$RUN_DIR/cells/$WARM/tomcat-access.log"
  [ "${#lines[@]}" -eq "$(lt_row_value "$WARM" warmup_reqs)" ]
  # The load's own figures are the same in both cells: 2 users x 5 requests.
  local cell
  for cell in "$COLD" "$WARM"; do
    [ "$(lt_row_value "$cell" http_reqs)" -eq 10 ]
    [ "$(lt_row_value "$cell" app_reqs)" -eq 10 ]
    run bash -c "gzip -dc '$RUN_DIR/cells/$cell/k6-samples.json.gz' | jq -r 'select(.type == \"Point\" and .metric == \"http_reqs\") | .data.tags.traffic' | sort | uniq -c"
    assert_output "     10 load"
  done
}

@test "one kept-alive connection a warm-up VU, and the kernel's deltas count only the load's connections" {
  local start end k6 vus
  start="$(mark "$WARM" warmup_start)" end="$(mark "$WARM" warmup_end)" k6="$(mark "$WARM" k6_start)"
  vus="$(jq -r .warmup.vus "$RUN_DIR/cells/$WARM/warmup-summary.json")"
  [ "$vus" -eq 4 ]
  run ports_between "$WARM" "$start" "$end"
  [ "${#lines[@]}" -eq "$vus" ]
  # The load's two users, on a connection each, in both cells.
  run ports_between "$WARM" "$k6" 99999999999999
  [ "${#lines[@]}" -eq 2 ]
  for cell in "$COLD" "$WARM"; do
    [ "$(lt_row_value "$cell" client_connects)" -eq 2 ] || fail "$cell: client_connects $(lt_row_value "$cell" client_connects)"
  done
  # The server's deltas too (its accepts also count the sampler's actuator connection).
  [ "$(lt_row_value "$WARM" server_accepts)" -eq "$(lt_row_value "$COLD" server_accepts)" ]
  [ "$(lt_row_value "$WARM" server_accepts)" -lt "$((2 + vus))" ]
}

# (The runner's health checks leave TIME-WAITs of their own, from ports below
# the range, one for each answer before the target was ready, a number that
# differs from cell to cell: the cells' client TIME-WAIT peaks are not compared.)
@test "the warm-up leaves no TIME-WAIT socket behind" {
  run cat "$RUN_DIR/cells/$WARM/warmup.tsv"
  assert_output "$(printf 'side\ttime_wait_removed\ttime_wait_left\nclient\t4\t0\nserver\t0\t0')"
  [ -z "$(lt_row_value "$WARM" notes)" ] || fail "notes: $(lt_row_value "$WARM" notes)"
}

@test "the delayer counts the load's packets only: as many in the warmed cell as in the cold one" {
  local cold warm
  cold="$(jq .held "$RUN_DIR/cells/$COLD/netdelay.json")" warm="$(jq .held "$RUN_DIR/cells/$WARM/netdelay.json")"
  echo "packets held: $cold without a warm-up, $warm after it ($(lt_row_value "$WARM" warmup_reqs) warm-up requests)"
  [ "$cold" -gt 0 ]
  [ "$warm" -le "$((cold + 4))" ]
  [ "$warm" -ge "$((cold - 4))" ]
  [ "$(lt_row_value "$WARM" net_rtt_applied_ms | cut -d. -f1)" -ge 20 ]
}

@test "behind nginx: the warm-up passes it, and neither nginx's figures nor its TIME-WAIT sockets keep it" {
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  printf '%s\n' "TARGET_JAR=$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar" \
    "TARGET_ENV_FILE=$LT_ROOT/tests/fixtures/ownapp/greeting-100ms.env" 'TARGET_PATH=/hello?name=proxy' \
    SCENARIO=keepalive VUS=2 REQUESTS_PER_VU=5 CONNECTION_REUSE=1 DURATION=10s GRACEFUL_STOP=5s \
    REQUEST_TIMEOUT=5s DELAY_MS=100 'WARMUP=0s 3s' PROXY=nginx K6_HTML_REPORT=0 MONITORING=off >"$BATS_TEST_TMPDIR/proxy.matrix"
  run "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/proxy.matrix"
  assert_success
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  # The warm-up went through nginx: its requests are in nginx's log ...
  [ "$(wc -l <"$RUN_DIR/cells/$WARM/nginx-access.log")" -gt "$(lt_row_value "$WARM" warmup_reqs)" ]
  # ... but not in its figures, nor in the kernel's.
  local column
  for column in proxy_reqs client_connects server_accepts; do
    [ "$(lt_row_value "$WARM" "$column")" -eq "$(lt_row_value "$COLD" "$column")" ] \
      || fail "$column: $(lt_row_value "$WARM" "$column") after the warm-up, $(lt_row_value "$COLD" "$column") without"
  done
  # Its TIME-WAIT sockets between nginx and the target (one a request without upstream keep-alive)
  # were removed. (The load's own, sampled each second, differ from cell to cell: not compared.)
  run awk -F'\t' '$1 == "upstream" { print ($2 >= '"$(lt_row_value "$WARM" warmup_reqs)"') " " $3 }' "$RUN_DIR/cells/$WARM/warmup.tsv"
  assert_output '1 0'
}

@test "left at its default, a jar of one's own warms up until the application's time settled, and the row says so" {
  local results="$BATS_TEST_TMPDIR/settle-results" name cell RUN_DIR
  # No WARMUP: a jar of one's own gets 60s at most, ended when settled. The greeting's 100 ms
  # is flat from its first requests: it settles as early as the rule allows (8 s of requests).
  printf '%s\n' "TARGET_JAR=$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar" \
    "TARGET_ENV_FILE=$LT_ROOT/tests/fixtures/ownapp/greeting-100ms.env" 'TARGET_PATH=/hello?name=settle' \
    SCENARIO=keepalive VUS=2 REQUESTS_PER_VU=5 CONNECTION_REUSE=1 DURATION=10s GRACEFUL_STOP=5s \
    REQUEST_TIMEOUT=5s DELAY_MS=100 K6_HTML_REPORT=0 MONITORING=off >"$BATS_TEST_TMPDIR/settle.matrix"
  # Every program the run starts, as the kernel reports it.
  lt_execwatch_start "$BATS_TEST_TMPDIR/execs.log"
  run env LT_RESULTS_DIR="$results" LT_LIVE_EVERY=2 "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/settle.matrix"
  lt_execwatch_stop "$BATS_TEST_TMPDIR/execs.log"
  assert_success
  RUN_DIR="$(readlink -f "$results/latest")"
  name="$(ls "$RUN_DIR/cells")"
  cell="$RUN_DIR/cells/$name"
  # The rule was watched by the cell's live process, given the load's line to show next (this
  # load of 10 requests ends before its first): the cell started Python three times (the
  # sampler, that one, its finish), no watch of its own.
  lt_execwatch_whole "$BATS_TEST_TMPDIR/execs.log"
  local from to
  from="$(awk -F'\t' '$1 == "cell_start" { print $2 }' "$cell/phases.tsv")"
  to="$(awk -F'\t' '$1 == "tables" { print $2 }' "$cell/phases.tsv")"
  lt_python_starts <"$BATS_TEST_TMPDIR/execs.log" \
    | awk -F'\t' -v from="$from" -v to="$to" '$1 >= from && $1 <= to { print $2 }' >"$BATS_TEST_TMPDIR/python-starts"
  run cat "$BATS_TEST_TMPDIR/python-starts"
  [ "${#lines[@]}" -eq 3 ] || fail "$(printf 'Python started %s times in the cell:\n%s' "${#lines[@]}" "$output")"
  assert_line --regexp 'sampler[.]py run'
  assert_line --regexp 'ltsuite[.]live --warmup-cell .* --samples '
  assert_line --regexp 'ltsuite[.]cell finish'

  grep -qx 'WARMUP=60s' "$cell/cell.env"
  grep -qx 'WARMUP_UNTIL=settled' "$cell/cell.env"
  [ "$(lt_row_value "$name" status)" = ok ] || fail "$(lt_row_value "$name" error)"
  [ "$(lt_row_value "$name" warmup_ended_by)" = settled ]
  run jq -e '.warmup_s < 30 and .warmup_settled_ms >= 95 and .warmup_settled_ms < 150 and .warmup_failed_reqs == 0
    and .http_reqs == 10 and .app_reqs == 10' "$cell/row.json"
  assert_success
  # What it saw: its last check, the second it settled, each window 100 ms or so.
  run jq -e '.ended_by == "settled" and .settled_second == .checks[-1].second
    and (.checks[-1] | .early_med_ms >= 95 and .late_med_ms >= 95)' "$cell/warmup-settle.json"
  assert_success
  # k6 ended on the runner's SIGINT and still wrote the warm-up's summary.
  [ "$(jq .metrics.http_reqs.values.count "$cell/warmup-summary.json")" -eq "$(lt_row_value "$name" warmup_reqs)" ]
}
