#!/usr/bin/env bats
# scripts/capacity.sh: the input a search needs, refused before anything
# runs, and a goal no load can meet answered without a cell.

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
}

# load_file NAME: the worked example's file with stdin's lines in place of
# its own for the same keys, last, in the test's dir.
load_file() {
  local file="$BATS_TEST_TMPDIR/$1" extra
  extra="$(cat)"
  {
    grep -v -E "^($(cut -d= -f1 <<<"$extra" | paste -sd'|'))=" "$LT_ROOT/env/advise/seed003-capacity.env"
    printf '%s\n' "$extra"
  } >"$file"
  printf '%s\n' "$file"
}

@test "an axis, a scenario the model does not know and a budget of one cell are refused, naming file, line and key" {
  local file
  file="$(printf 'TOMCAT_MAX_THREADS=10 20\n' | load_file axis.env)"
  run -2 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_output "capacity: $file:$(wc -l <"$file"): TOMCAT_MAX_THREADS: the search is for one setting: '10 20' is an axis (give one value; the search chooses the loads)"
  file="$(printf 'SCENARIO=ramp\n' | load_file ramp.env)"
  run -2 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_output "capacity: $file:$(wc -l <"$file"): SCENARIO: 'ramp': the model knows burst, spike and keepalive (users: VUS) and spike-open (a rate: RATE)"
  file="$(printf 'ADVISE_MAX_CELLS=1\n' | load_file budget.env)"
  run -2 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_output "capacity: $file:$(wc -l <"$file"): ADVISE_MAX_CELLS: '1': at least 2 (the highest load held and the next one, failed)"
  file="$(printf 'SCENARIO=burst\nREQUESTS_PER_VU=3\n' | load_file burst.env)"
  run -2 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_output "capacity: $file:$(wc -l <"$file"): REQUESTS_PER_VU: '3': the burst's model is one request a user (REQUESTS_PER_VU=1)"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "a goal shorter than one request: no load holds, no cell runs, exit 3 with the reason" {
  local file dir
  file="$(printf 'GOAL_P99_MS=4000\n' | load_file slow.env)"
  run -3 "$LT_ROOT/scripts/capacity.sh" "$file"
  assert_line "no load verified: cannot: one request takes DELAY_MS 5000 ms, more than 4000 ms (the goal or REQUEST_TIMEOUT): no load holds"
  dir=("$LT_RESULTS_DIR"/capacity-*-slow)
  jq -e '.maximum == null and .cells == [] and .model.limit == null' "${dir[0]}/capacity.json"
  [ ! -e "${dir[0]}/runs" ]
  run cat "${dir[0]}/capacity.md"
  assert_line "**No load verified**"
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
