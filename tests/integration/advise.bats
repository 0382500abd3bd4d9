#!/usr/bin/env bats
# make advise on a burst whose answer is computed by hand (env/advise/small-burst.env:
# 24 users, max-connections 12 fixed, somaxconn 4): somaxconn 11 recommended and
# verified, somaxconn 9 failing beside it, in one run of two cells. Bad input and
# a goal no setting can meet are answered before any cell runs.
# shellcheck disable=SC2016 # SC2016: jq programs in single quotes on purpose

setup_file() {
  load '../test_helper'
  load '../advise_helper'
  advise_once "$LT_ROOT/env/advise/small-burst.env"
}

setup() {
  load '../test_helper'
  load '../advise_helper'
  bats_require_minimum_version 1.5.0
}

# load_file NAME: a load file under the test's directory from stdin: the small
# burst's load with the lines given last (a key given replaces the burst's).
load_file() {
  local file="$BATS_TEST_TMPDIR/$1" extra
  extra="$(cat)"
  {
    grep -v -E "^($(printf '%s\n' "$extra" | cut -d= -f1 | paste -sd'|'))=" "$LT_ROOT/env/advise/small-burst.env"
    printf '%s\n' "$extra"
  } >"$file"
  printf '%s\n' "$file"
}

@test "the recommendation is the queue the capacity rule needs, and it prints with the advice's path" {
  lt_require_root
  local dir
  dir="$(advice_dir small-burst)"
  jq -e '.recommended == {"TOMCAT_ACCEPT_COUNT": 100, "SOMAXCONN": 11} and .verified == true' "$dir/advice.json"
  run cat "$BATS_FILE_TMPDIR/advise.out"
  assert_line "recommended (verified): TOMCAT_ACCEPT_COUNT=100 SOMAXCONN=11"
  assert_line "advice: $dir/advice.md"
}

@test "the verifying cell has no failure and the boundary cell, somaxconn 9, has failures" {
  lt_require_root
  local dir
  dir="$(advice_dir small-burst)"
  jq -e '.cells[] | select(.settings.SOMAXCONN == 11) | .failed_reqs == 0 and .http_reqs == 24 and .passed' "$dir/advice.json"
  jq -e '.boundary == [.boundary[0]] and .boundary[0].knob == "SOMAXCONN" and .boundary[0].value == 9
    and .boundary[0].failed_reqs > 0 and .boundary[0].passed == false' "$dir/advice.json"
  # The boundary's row is the run's own: 12 + 9 + 1 = 22 connections at most (one more by the kernel's slack).
  local row
  row="$dir/$(jq -r '.cells[] | select(.settings.SOMAXCONN == 9) | .row' "$dir/advice.json")"
  jq -e '.server_conns_peak >= 22 and .server_conns_peak <= 23 and .listen_backlog == 9' "$row"
}

@test "the cells are one run within the budget, and the advice links its report" {
  lt_require_root
  local dir
  dir="$(advice_dir small-burst)"
  jq -e '(.cells | length) == 2 and (.cells | length) <= .budget and ([.cells[].run] | unique | length) == 1' "$dir/advice.json"
  [ -f "$dir/$(jq -r '.cells[0].report' "$dir/advice.json")" ]
  run cat "$dir/advice.md"
  assert_line "- \`SOMAXCONN\`: capacity rule (rules.server_capacity): 24 users need max-connections 12 + a queue of 11 + 1; somaxconn caps accept-count: 100 asked, 4 granted"
  assert_line "net.core.somaxconn = 11"
  assert_line "server.tomcat.accept-count=100"
  assert_output --partial "](runs/$(jq -r '.cells[0].run' "$dir/advice.json")/report.html)"
}

@test "an axis in the load file is refused with its file, line and key before anything runs" {
  local file
  file="$(printf 'SOMAXCONN=4 8\n' | load_file axis.env)"
  LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output "advise: $file:$(wc -l <"$file"): SOMAXCONN: an advice is for one load: '4 8' is an axis (give one value; the advice chooses the cells)"
  [ ! -e "$BATS_TEST_TMPDIR/results" ]
}

@test "a knob the advice cannot tune and a rate that is no rate are refused" {
  local file
  file="$(printf 'TUNE=SOMAXCONN SERVER_HEAP\n' | load_file tune.env)"
  run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output "advise: $file:$(wc -l <"$file"): TUNE: 'SERVER_HEAP' is not a knob the advice tunes (one of: TOMCAT_MAX_THREADS TOMCAT_MAX_CONNECTIONS TOMCAT_ACCEPT_COUNT SOMAXCONN TCP_MAX_SYN_BACKLOG TOMCAT_VIRTUAL_THREADS)"
  file="$(printf 'GOAL_FAILED_RATE=1.5\n' | load_file rate.env)"
  run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output "advise: $file:$(wc -l <"$file"): GOAL_FAILED_RATE: '1.5' is not a rate from 0 to below 1 (e.g. 0.001)"
  file="$(printf 'GOAL_P99_MS=fast\n' | load_file p99.env)"
  run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output "advise: $file:$(wc -l <"$file"): GOAL_P99_MS: 'fast' is not a whole number > 0"
}

@test "a goal no setting can meet gets the 'cannot' answer, its reason, and no recommendation" {
  local file dir
  file="$(printf 'GOAL_P99_MS=3000\n' | load_file slow.env)"
  LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" run -3 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_line "cannot recommend: one request takes DELAY_MS 4000 ms (4500 ms with the margin), more than GOAL_P99_MS 3000: the endpoint, not a queue or a thread, is the limit"
  dir=("$BATS_TEST_TMPDIR"/results/advise-*-slow)
  jq -e '.verified == false and .recommended == {} and .cells == [] and (.cannot | startswith("one request takes"))' "${dir[0]}/advice.json"
  run cat "${dir[0]}/advice.md"
  assert_line --partial "**Cannot recommend a setting**: one request takes DELAY_MS 4000 ms"
  assert_line "Nothing is recommended that a run did not verify."
}
