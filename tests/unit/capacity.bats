#!/usr/bin/env bats
# scripts/capacity.sh: the input a search needs, refused before anything
# runs (and make advise's, which shares its checks: scripts/lib/advise.sh),
# and a goal no load can meet answered without a cell.

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
}

# load_file BASE NAME: env/advise/BASE with stdin's lines in place of its own
# for the same keys, last, as NAME in the test's dir.
load_file() {
  local file="$BATS_TEST_TMPDIR/$2" extra
  extra="$(cat)"
  {
    grep -v -E "^($(cut -d= -f1 <<<"$extra" | paste -sd'|'))=" "$LT_ROOT/env/advise/$1"
    printf '%s\n' "$extra"
  } >"$file"
  printf '%s\n' "$file"
}

# assert_refused SCRIPT BASE LINES MESSAGE: scripts/SCRIPT.sh given
# env/advise/BASE with LINES (KEY=VALUE lines, \n between them; the last is
# the refused one) exits 2 with "SCRIPT: FILE:LINE: MESSAGE", LINE the file's
# last, before anything is written.
assert_refused() {
  local script="$1" base="$2" lines="$3" message="$4" file
  file="$(printf '%b\n' "$lines" | load_file "$base" "$script-${lines%%=*}.env")"
  run -2 "$LT_ROOT/scripts/$script.sh" "$file"
  assert_output "$script: $file:$(wc -l <"$file"): $message"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "an axis, a model the search or the advice does not have (HTTPS too), a budget of one cell are refused, naming file, line and key" {
  local script base lines message
  while IFS='|' read -r script base lines message; do
    assert_refused "$script" "$base" "$lines" "$message"
  done <<'TABLE'
capacity|seed003-capacity.env|TOMCAT_MAX_THREADS=10 20|TOMCAT_MAX_THREADS: the search is for one setting: '10 20' is an axis (give one value; the search chooses the loads)
capacity|seed003-capacity.env|SCENARIO=ramp|SCENARIO: 'ramp': the model knows burst, spike and keepalive (users: VUS) and spike-open (a rate: RATE)
capacity|seed003-capacity.env|ADVISE_MAX_CELLS=1|ADVISE_MAX_CELLS: '1': at least 2 (the highest load held and the next one, failed)
capacity|seed003-capacity.env|SCENARIO=burst\nREQUESTS_PER_VU=3|REQUESTS_PER_VU: '3': the burst's model is one request a user (REQUESTS_PER_VU=1)
advise|small-burst.env|TOMCAT_MAX_THREADS=10 20|TOMCAT_MAX_THREADS: an advice is for one load: '10 20' is an axis (give one value; the advice chooses the cells)
advise|small-burst.env|ADVISE_MAX_CELLS=1|ADVISE_MAX_CELLS: '1': at least 2 (a verifying cell and a boundary cell)
advise|small-burst.env|TARGET_TLS=1|TARGET_TLS: '1': the model has no TLS handshake (its waves are the thread pool's and its queues the kernel's; a burst's handshakes take the server's cores, and the suite does not yet predict them well enough to advise on: docs/tls.md); measure HTTPS with make run-matrix, whose rows predict and check a burst's handshakes
capacity|seed003-capacity.env|TARGET_TLS=1|TARGET_TLS: '1': the model has no TLS handshake (its waves are the thread pool's and its queues the kernel's; a burst's handshakes take the server's cores, and the suite does not yet predict them well enough to advise on: docs/tls.md); measure HTTPS with make run-matrix, whose rows predict and check a burst's handshakes
advise|small-burst.env|PROXY=nginx\nPROXY_TLS=1|PROXY_TLS: '1': the model has no TLS handshake (its waves are the thread pool's and its queues the kernel's; a burst's handshakes take the server's cores, and the suite does not yet predict them well enough to advise on: docs/tls.md); measure HTTPS with make run-matrix, whose rows predict and check a burst's handshakes
capacity|seed003-capacity.env|PROXY=nginx\nPROXY_TLS=1|PROXY_TLS: '1': the model has no TLS handshake (its waves are the thread pool's and its queues the kernel's; a burst's handshakes take the server's cores, and the suite does not yet predict them well enough to advise on: docs/tls.md); measure HTTPS with make run-matrix, whose rows predict and check a burst's handshakes
TABLE
}

@test "a goal shorter than one request: no load holds, no cell runs, exit 3 with the reason" {
  local file dir
  file="$(printf 'GOAL_P99_MS=4000\n' | load_file seed003-capacity.env slow.env)"
  run -3 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_line "no load verified: cannot: one request takes DELAY_MS 5000 ms, more than 4000 ms (the goal or REQUEST_TIMEOUT): no load holds"
  dir=("$LT_RESULTS_DIR"/capacity-*-slow)
  jq -e '.maximum == null and .cells == [] and .model.limit == null' "${dir[0]}/capacity.json"
  [ ! -e "${dir[0]}/runs" ]
  run cat "${dir[0]}/capacity.md"
  assert_line "**No load verified**"
  # Its page says so first, and has no cell to draw.
  run cat "${dir[0]}/report.html"
  assert_line "<h1>How much can it take: No load verified</h1>"
  assert_line "<p>No cell ran.</p>"
}

@test "make advise takes a fixed TOMCAT_VIRTUAL_THREADS=1 (not refused) and answers a goal no setting meets without a cell" {
  local file="$BATS_TEST_TMPDIR/advise-vt.env" dir
  # The small burst's 4 s endpoint with a p99 goal of 3 s: one request is longer, so no setting
  # holds and no cell runs; the model's answer is the one for virtual threads.
  { cat "$LT_ROOT/env/advise/small-burst.env"; printf 'TOMCAT_VIRTUAL_THREADS=1\nGOAL_P99_MS=3000\n'; } >"$file"
  run -3 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_line "cannot recommend: one request takes DELAY_MS 4000 ms (4500 ms with the margin), more than GOAL_P99_MS 3000: the endpoint, not a queue or a thread, is the limit"
  dir=("$LT_RESULTS_DIR"/advise-*-advise-vt)
  jq -e '.starting_from.TOMCAT_VIRTUAL_THREADS == 1 and .cells == []' "${dir[0]}/advice.json"
  [ ! -e "${dir[0]}/runs" ]
}

@test "make advise on a script of one's own the model cannot read: 'cannot' naming its scenarios and executors, no cell" {
  local file="$BATS_TEST_TMPDIR/two.env" dir script="$LT_ROOT/tests/fixtures/own-script/advise/two-scenarios.js"
  printf 'SCENARIO=%s\nTUNE=TOMCAT_MAX_THREADS\n' "$script" >"$file"
  run -3 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_line "cannot recommend: $script has 2 k6 scenarios ('browse' (constant-vus), 'buy' (constant-arrival-rate)): the model takes one load of one endpoint; advise each as a script of its own"
  dir=("$LT_RESULTS_DIR"/advise-*-two)
  # k6 inspect's answer is kept beside the advice; no cell ran.
  jq -e '.scenarios.buy.executor == "constant-arrival-rate"' "${dir[0]}/k6-inspect.json"
  jq -e '.cells == [] and .verified == false' "${dir[0]}/advice.json"
  [ ! -e "${dir[0]}/runs" ]
}

@test "make advise refuses a script of one's own k6 cannot load, or given with TARGET_JAR, naming file, line and key" {
  local file="$BATS_TEST_TMPDIR/bad.env" script="$BATS_TEST_TMPDIR/bad.js"
  printf 'export default function ( {\n' >"$script"
  printf 'TUNE=TOMCAT_MAX_THREADS\nSCENARIO=%s\n' "$script" >"$file"
  run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output --partial "advise: $file:2: SCENARIO: k6 cannot read '$script': "
  printf 'SCENARIO=%s\nTARGET_JAR=%s\n' "$LT_ROOT/tests/fixtures/own-script/spike-test.js" \
    "$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar" >"$file"
  run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output "advise: $file:2: TARGET_JAR: with a k6 script of one's own the advice cannot measure the endpoint's time (its calibration cell asks a shipped scenario's path): advise the script against the suite's target (DELAY_MS), or the service with a shipped scenario and TARGET_PATH"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "TARGET_HEALTH_PATH=/actuator/health is taken by make advise and make capacity as by make run-matrix; only PROXY=nginx refuses it" {
  local file dir
  # Taken: each answers a goal no setting meets (one request is longer) without a cell, past its input checks.
  file="$(printf 'TARGET_HEALTH_PATH=/actuator/health\nGOAL_P99_MS=3000\n' | load_file small-burst.env advise-actuator.env)"
  run -3 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_line --partial "cannot recommend: one request takes DELAY_MS 4000 ms"
  dir=("$LT_RESULTS_DIR"/advise-*-advise-actuator)
  grep -qx 'TARGET_HEALTH_PATH=/actuator/health' "${dir[0]}/base.matrix"
  file="$(printf 'TARGET_HEALTH_PATH=/actuator/health\nGOAL_P99_MS=4000\n' | load_file seed003-capacity.env capacity-actuator.env)"
  run -3 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_line --partial "no load verified: cannot: one request takes DELAY_MS 5000 ms"
  # Refused, naming file, line and key, before anything is written: nginx in front is checked on the users' port.
  rm -rf "$LT_RESULTS_DIR"
  local refused="TARGET_HEALTH_PATH: '/actuator/health' is on the actuator's own port, which nginx does not front (PROXY=nginx is checked through the users' port before its load); use a path the application answers on SERVER_PORT, e.g. /readyz (the readiness probe the suite turns on)"
  assert_refused advise small-burst.env 'PROXY=nginx\nTARGET_HEALTH_PATH=/actuator/health' "$refused"
  assert_refused capacity seed003-capacity.env 'PROXY=nginx\nTARGET_HEALTH_PATH=/actuator/health' "$refused"
}
