#!/usr/bin/env bats
# make compare / scripts/compare.sh: two runs, cell by cell.
# shellcheck disable=SC2016 # SC2016: jq programs and literal backquotes in single quotes on purpose

setup() {
  load '../test_helper'
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  row() { # RUN CELL JSON
    lt_write "$LT_RESULTS_DIR/$1/cells/$2/row.json" <<<"{\"run_id\": \"$1\", \"cell\": \"$2\", \"status\": \"ok\", $3}"
  }
  row run-a 01_x '"tps": 100, "lat_p95_ms": 50, "failed_reqs": 0, "listen_overflows": 10, "extra": {"wr_admitted": 20}'
  row run-a 02_y '"tps": 10'
  row run-a 03_only_a '"tps": 1'
  row run-b 01_x '"tps": 104, "lat_p95_ms": 60, "failed_reqs": 3, "listen_overflows": 10, "extra": {"wr_admitted": 10}'
  row run-b 02_y '"tps": 10'
  row run-b 04_only_b '"tps": 1'
  OUT="$LT_RESULTS_DIR/compare-run-a-vs-run-b"
}

@test "a change beyond the threshold is marked, one within it is not" {
  run "$LT_ROOT/scripts/compare.sh" run-a run-b
  assert_success
  assert_output --partial "$OUT"
  run cat "$OUT/compare.md"
  assert_line '| lat_p95_ms | 50 | 60 | +20 % | **!** |'
  assert_line '| tps | 100 | 104 | +4 % |  |'
  assert_line '| listen_overflows | 10 | 10 | 0 % |  |'
  # From zero: no percentage, always marked.
  assert_line '| failed_reqs | 0 | 3 | new | **!** |'
  # The scenarios' own figures are compared too.
  assert_line '| wr_admitted | 20 | 10 | -50 % | **!** |'
  assert_line '| 01_x | ok | ok | 1 / 1 | lat_p95_ms, failed_reqs, wr_admitted |'
  assert_line '| 02_y | ok | ok | 1 / 1 | none |'
}

@test "THRESHOLD_PCT moves the mark" {
  THRESHOLD_PCT=3 run "$LT_ROOT/scripts/compare.sh" run-a run-b
  assert_success
  grep -qxF '| tps | 100 | 104 | +4 % | **!** |' "$OUT/compare.md"
  THRESHOLD_PCT=25 run "$LT_ROOT/scripts/compare.sh" run-a run-b
  grep -qxF '| lat_p95_ms | 50 | 60 | +20 % |  |' "$OUT/compare.md"
}

@test "cells in only one run are listed, not compared" {
  run "$LT_ROOT/scripts/compare.sh" run-a run-b
  run cat "$OUT/compare.md"
  assert_line 'Cells only in A: `03_only_a`'
  assert_line 'Cells only in B: `04_only_b`'
  refute_output --partial '## 03_only_a'
}

@test "compare.html shows the same, with the marked rows highlighted" {
  run "$LT_ROOT/scripts/compare.sh" run-a run-b
  run cat "$OUT/compare.html"
  assert_output --partial '<tr class="marked"><td>lat_p95_ms</td><td class="n">50</td><td class="n">60</td><td class="n">+20 %</td></tr>'
  assert_output --partial '<tr><td>tps</td><td class="n">100</td><td class="n">104</td><td class="n">+4 %</td></tr>'
  assert_output --partial 'Cells only in B: <code>04_only_b</code>'
}

@test "repeated cells: medians with their ranges; a change within both runs' spread is noise, not marked" {
  rep() { # RUN K TPS P95
    lt_write "$LT_RESULTS_DIR/$1/cells/01_x_rep-$2/row.json" \
      <<<"{\"run_id\": \"$1\", \"cell\": \"01_x_rep-$2\", \"repeat_of\": \"01_x\", \"repeat\": $2, \"status\": \"ok\", \"tps\": $3, \"lat_p95_ms\": $4}"
  }
  # tps: medians 100 and 110 (+10 %), ranges 90..120 and 105..115 overlap.
  # lat_p95_ms: medians 50 and 80 (+60 %), ranges 48..52 and 75..90 do not.
  rep rep-a 1 90 50; rep rep-a 2 100 48; rep rep-a 3 120 52
  rep rep-b 1 110 80; rep rep-b 2 105 75; rep rep-b 3 115 90
  run "$LT_ROOT/scripts/compare.sh" rep-a rep-b
  assert_success
  run cat "$LT_RESULTS_DIR/compare-rep-a-vs-rep-b/compare.md"
  assert_line '| 01_x | ok | ok | 3 / 3 | lat_p95_ms |'
  assert_line '| tps | 100 (90..120) | 110 (105..115) | +10 % | ~ |'
  assert_line '| lat_p95_ms | 50 (48..52) | 80 (75..90) | +60 % | **!** |'
  refute_output --partial '_rep-'
  grep -q '<tr class="noise"><td>tps</td><td class="n">100 (90..120)</td>' "$LT_RESULTS_DIR/compare-rep-a-vs-rep-b/compare.html"
  # One repetition against three: no spread on one side, so the threshold alone decides.
  rm -r "$LT_RESULTS_DIR/rep-b/cells/01_x_rep-2" "$LT_RESULTS_DIR/rep-b/cells/01_x_rep-3"
  run "$LT_ROOT/scripts/compare.sh" rep-a rep-b
  run cat "$LT_RESULTS_DIR/compare-rep-a-vs-rep-b/compare.md"
  assert_line '| tps | 100 (90..120) | 110 | +10 % | **!** |'
  grep -q '<tr class="noise"><td>tps</td>' "$LT_RESULTS_DIR/compare-rep-a-vs-rep-b/compare.html" && fail "one repetition is not a spread"
  true
}

@test "bad input stops with a usage error naming it" {
  run "$LT_ROOT/scripts/compare.sh" run-a
  assert_failure 2
  run "$LT_ROOT/scripts/compare.sh" run-a no-such-run
  assert_failure 2
  assert_output --partial 'no-such-run: no such run'
  THRESHOLD_PCT=five run "$LT_ROOT/scripts/compare.sh" run-a run-b
  assert_failure 2
  assert_output --partial "THRESHOLD_PCT: 'five'"
}

@test "make compare needs A and B" {
  run make -s -C "$LT_ROOT" compare A=run-a
  assert_failure
  assert_output --partial 'make compare A=<run-id> B=<run-id>'
}

@test "a failed row's figures are left out of the medians and the comparison, and the page says so" {
  rep() { # RUN K STATUS TPS
    lt_write "$LT_RESULTS_DIR/$1/cells/01_x_rep-$2/row.json" \
      <<<"{\"run_id\": \"$1\", \"cell\": \"01_x_rep-$2\", \"repeat_of\": \"01_x\", \"repeat\": $2, \"status\": \"$3\", \"tps\": $4, \"fail_connect\": 0}"
  }
  # rep-a's third repetition never started its target: its 0s are not measurements.
  rep fa-a 1 ok 100; rep fa-a 2 ok 102; rep fa-a 3 failed 0
  rep fa-b 1 ok 100; rep fa-b 2 ok 102; rep fa-b 3 ok 101
  run "$LT_ROOT/scripts/compare.sh" fa-a fa-b
  assert_success
  run cat "$LT_RESULTS_DIR/compare-fa-a-vs-fa-b/compare.md"
  assert_line '| tps | 101 (100..102) | 101 (100..102) | 0 % |  |'
  assert_line '| 01_x | failed/ok | ok | 3 / 3 | none |'
  assert_output --partial "failed rows and empty figures are left out"
}

@test "a run whose rows are in another format is refused by name, before anything is compared" {
  lt_write "$LT_RESULTS_DIR/run-b/cells/02_y/row.json" <<<'{"format": 99, "run_id": "run-b", "cell": "02_y", "tps": 10}'
  run "$LT_ROOT/scripts/compare.sh" run-a run-b
  assert_failure 2
  assert_output --partial "$(cd "$LT_RESULTS_DIR/run-b" && pwd -P)/cells/02_y/row.json: format 99, but this suite reads format 1 (scripts/formats.env)"
  [ ! -e "$OUT" ]
  # Format 1, or no format at all (written before the key), is read.
  lt_write "$LT_RESULTS_DIR/run-b/cells/02_y/row.json" <<<'{"format": 1, "run_id": "run-b", "cell": "02_y", "status": "ok", "tps": 10}'
  run "$LT_ROOT/scripts/compare.sh" run-a run-b
  assert_success
}
