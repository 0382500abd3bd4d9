#!/usr/bin/env bats
# make advise on a steady arrival rate against a service of one's own
# (tests/fixtures/advise-own-service.env: the greeting service at 100 ms, 15
# requests a second): one calibration cell measures the time from the access
# log, the model sizes the threads from it (Little's law), and one run of two
# cells verifies 2 threads and shows 1 thread missing the goal.
# shellcheck disable=SC2016 # SC2016: jq programs in single quotes on purpose

setup_file() {
  load '../test_helper'
  load '../advise_helper'
  advise_once tests/fixtures/advise-own-service.env
}

setup() {
  load '../test_helper'
  load '../advise_helper'
  bats_require_minimum_version 1.5.0
  lt_require_root
}

# advice_json: the advice's advice.json, after checking make advise succeeded.
advice_json() {
  local dir
  dir="$(advice_dir advise-own-service)" || return 1
  printf '%s\n' "$dir/advice.json"
}

@test "the endpoint's time is measured by a calibration cell's access log, not taken from DELAY_MS" {
  local json
  json="$(advice_json)"
  jq -e '.cells[0].purpose == "calibration" and .cells[0].http_reqs == 198' "$json"
  jq -e '.model.service_source | startswith("p90 of the application'"'"'s time (%D) over 198 requests of calibration cell")' "$json"
  # The greeting takes 100 ms: its %D is at least that and far from DELAY_MS's 1000.
  jq -e '.model.service_ms >= 100 and .model.service_ms < 150' "$json"
}

@test "2 threads are recommended and verified with every request sent; 1 thread misses the goal" {
  local json
  json="$(advice_json)"
  jq -e '.verified and .recommended.TOMCAT_MAX_THREADS == 2' "$json"
  jq -e '.cells[] | select(.purpose == "verification" and .settings.TOMCAT_MAX_THREADS == 2)
    | .passed and .not_as_asked == null and .dropped_iterations == 0 and (.http_reqs == 75 or .http_reqs == 76)' "$json"
  jq -e '.boundary[0].value == 1 and .boundary[0].predicted == "fail" and .boundary[0].passed == false
    and .boundary[0].lat_p99_ms > 500' "$json"
  jq -e '(.cells | length) <= .budget' "$json"
  run cat "$BATS_FILE_TMPDIR/advise.out"
  assert_line --partial "recommended (verified): TOMCAT_MAX_THREADS=2 TOMCAT_MAX_CONNECTIONS="
}

@test "a scenario the advice does not model is refused with its file, line and key" {
  local file="$BATS_TEST_TMPDIR/ws.env"
  printf 'SCENARIO=websocket\n' >"$file"
  LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" run -2 "$LT_ROOT/scripts/advise.sh" "$file"
  assert_output "advise: $file:1: SCENARIO: 'websocket': the advice's rules model a burst (burst: every user at one instant), steady loads (spike-open keepalive ramp) and a k6 script of one's own (a path)"
}
