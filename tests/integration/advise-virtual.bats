#!/usr/bin/env bats
# make advise with virtual threads in TUNE (tests/fixtures/advise-virtual.env:
# the greeting service of one's own at 100 ms, 30 requests a second, one
# thread): one calibration cell measures the time, the model finds that
# platform threads need a pool of 4 and virtual threads none, and one run of
# two cells verifies virtual threads on a JDK 21 or later and shows platform
# threads at 1 missing the goal. About 45 s, 3 cells.
# shellcheck disable=SC2016 # SC2016: jq programs in single quotes on purpose

setup_file() {
  load '../test_helper'
  load '../advise_helper'
  advise_once tests/fixtures/advise-virtual.env
}

setup() {
  load '../test_helper'
  load '../advise_helper'
  bats_require_minimum_version 1.5.0
  lt_require_root
}

@test "virtual threads are proposed for fewer resources and verified by a cell on a JDK 21 or later" {
  local dir cell
  dir="$(advice_dir advise-virtual)"
  jq -e '.verified and .recommended.TOMCAT_VIRTUAL_THREADS == 1 and .recommended.TOMCAT_MAX_THREADS == 1' "$dir/advice.json"
  jq -e '.reasons.TOMCAT_VIRTUAL_THREADS | startswith("proposed, for the same goal with fewer resources: platform threads need a pool of 4 threads")' "$dir/advice.json"
  jq -e '.model.virtual_threads and .model.workers == 8192' "$dir/advice.json"
  cell="$(jq -r '.cells[] | select(.purpose == "verification" and .settings.TOMCAT_VIRTUAL_THREADS == 1)
    | select(.passed and .not_as_asked == null and .dropped_iterations == 0) | .row' "$dir/advice.json")"
  [ -n "$cell" ]
  jq -e '(.target_java | test("^(2[1-9]|[3-9][0-9])\\.")) and .tomcat_threads_busy_peak == null' "$dir/$cell"
  run cat "$dir/advice.md"
  assert_line "spring.threads.virtual.enabled=true"
  run cat "$BATS_FILE_TMPDIR/advise.out"
  assert_line --partial "recommended (verified): TOMCAT_VIRTUAL_THREADS=1 TOMCAT_MAX_THREADS=1 TOMCAT_MAX_CONNECTIONS="
}

@test "the boundary is platform threads at the file's one thread, and it misses the goal" {
  local dir
  dir="$(advice_dir advise-virtual)"
  jq -e '.boundary | length == 1' "$dir/advice.json"
  jq -e '.boundary[0] | .knob == "TOMCAT_VIRTUAL_THREADS" and .value == 0 and .predicted == "fail"
    and .passed == false and .lat_p99_ms > 500' "$dir/advice.json"
  jq -e '(.cells | length) <= .budget' "$dir/advice.json"
}
