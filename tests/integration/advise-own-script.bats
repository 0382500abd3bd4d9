#!/usr/bin/env bats
# make advise on a k6 script of one's own (tests/fixtures/advise-own-script.env):
# its load is read from k6 inspect (a constant-arrival-rate executor: 15
# arrivals a second for 5 s) and sized on the suite's 100 ms endpoint: 15/s x
# 0.1 s = 1.5 in service, 2 threads with the headroom, verified with every
# iteration the executor asked for; 1 thread misses the goal. What is refused
# or "cannot" before any cell runs: tests/unit/capacity.bats.
# shellcheck disable=SC2016 # SC2016: jq programs in single quotes on purpose

setup_file() {
  load '../test_helper'
  [[ $EUID -eq 0 ]] || return 0
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  local status=0
  # The file's paths are relative to the directory the advice starts from.
  cd "$LT_ROOT" || return 1
  scripts/advise.sh tests/fixtures/advise-own-script.env >"$BATS_FILE_TMPDIR/advise.out" \
    2>"$BATS_FILE_TMPDIR/advise.log" || status=$?
  printf '%s\n' "$status" >"$BATS_FILE_TMPDIR/advise.status"
}

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  lt_require_root
}

# advice_json: the advice's advice.json, after checking make advise succeeded.
advice_json() {
  [ "$(cat "$BATS_FILE_TMPDIR/advise.status")" -eq 0 ] || fail "$(tail -n 30 "$BATS_FILE_TMPDIR/advise.log")"
  local dirs=("$BATS_FILE_TMPDIR"/results/advise-*-advise-own-script)
  printf '%s\n' "${dirs[0]}/advice.json"
}

@test "the script's executor is read from k6 inspect: 15 a second, 75 iterations asked for" {
  local json dirs
  json="$(advice_json)"
  dirs=("$BATS_FILE_TMPDIR"/results/advise-*-advise-own-script)
  jq -e '.scenarios.steady.executor == "constant-arrival-rate" and .scenarios.steady.rate == 15' "${dirs[0]}/k6-inspect.json"
  jq -e '.goal.rate_per_s == 15 and .goal.requests == 75' "$json"
  jq -e '.goal.script | startswith("'"'"'steady'"'"' (constant-arrival-rate): 15 per 1000 ms = 15/s for 5 s")' "$json"
}

@test "2 threads are recommended and verified running the script with every iteration sent; 1 thread misses the goal" {
  local json
  json="$(advice_json)"
  jq -e '.verified and .recommended.TOMCAT_MAX_THREADS == 2' "$json"
  jq -e '.cells[] | select(.settings.TOMCAT_MAX_THREADS == 2)
    | .passed and .not_as_asked == null and .dropped_iterations == 0 and (.http_reqs == 75 or .http_reqs == 76)' "$json"
  jq -e '.boundary[0].value == 1 and .boundary[0].predicted == "fail" and .boundary[0].passed == false' "$json"
  # The cells ran the script itself, not a shipped scenario.
  jq -e '[.cells[] | .row] | length == 2' "$json"
  local row
  row="$(dirname "$json")/$(jq -r '.cells[0].row' "$json")"
  jq -e '.scenario | endswith("tests/fixtures/own-script/advise/constant-arrival-rate.js")' "$row"
}
