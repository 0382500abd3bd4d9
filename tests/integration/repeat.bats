#!/usr/bin/env bats
# REPEAT=N: every cell N times in a shuffled order, each repetition in its own
# directory, and the tables' medians with min..max. One run in setup_file.

setup_file() {
  load '../test_helper'
  lt_require_root
  lt_run_matrix_once "$LT_ROOT/tests/fixtures/repeat.matrix"
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  MANIFEST="$RUN_DIR/manifest.json"
}

@test "the run is complete with every repetition of every cell, and the manifest has the plan" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || fail "$(tail -n 20 "$BATS_FILE_TMPDIR/run.log")"
  jq -e '.status == "complete" and .cells_total == 6 and .cells_done == 6' "$MANIFEST"
  jq -e '.repeat == {n: 3, seed: "7"}' "$MANIFEST"
  run jq -r '.plan[] | "\(.index) \(.repeat) \(.cell)"' "$MANIFEST"
  assert_equal "$(sort <<<"$output")" "$(printf '%s\n' '0 1 01_vus-2_rep-1' '0 2 01_vus-2_rep-2' '0 3 01_vus-2_rep-3' \
    '1 1 02_vus-4_rep-1' '1 2 02_vus-4_rep-2' '1 3 02_vus-4_rep-3')"
  # Shuffled: not the matrix order.
  [ "$output" != "$(sort <<<"$output")" ]
}

@test "the cells ran in the plan's order, as the progress said" {
  local plan started progress
  plan="$(jq -r '.plan[].cell' "$MANIFEST")"
  # When each cell started (its first phase mark), in start order.
  started="$(for d in "$RUN_DIR"/cells/*/; do
    printf '%s %s\n' "$(head -n 1 "$d/phases.tsv" | cut -f2)" "$(basename "$d")"
  done | sort -n | cut -d' ' -f2)"
  assert_equal "$started" "$plan"
  progress="$(grep -oE '^[^ ]* ?cell [0-9]+/6 [^ :]+$' "$BATS_FILE_TMPDIR/run.log" | awk '{ print $NF }')"
  assert_equal "$progress" "$plan"
}

@test "each row names the matrix cell it repeats and keeps its axes" {
  local d
  for d in "$RUN_DIR"/cells/*/; do
    jq -e --arg name "$(basename "$d")" '
      ($name | capture("^(?<of>.*)_rep-(?<k>[0-9]+)$")) as $m
      | .cell == $name and .repeat_of == $m.of and .repeat == ($m.k | tonumber)
        and .status == "ok" and .axes.VUS == ($m.of | sub("^0[12]_vus-"; ""))' "$d/row.json"
  done
  run lt_csv_column "$RUN_DIR/results.csv" repeat_of
  assert_equal "$(sort -u <<<"$output")" $'01_vus-2\n02_vus-4'
}

@test "results.md shows each cell's median (min..max) over its repetitions, computed from the rows" {
  grep -q "^Each matrix cell's figures: the median (min..max) of its repetitions" "$RUN_DIR/results.md"
  local cell expected line
  for cell in 01_vus-2 02_vus-4; do
    expected="$(jq -rs --arg c "$cell" '[.[] | select(.repeat_of == $c) | .http_reqs] | sort
      | if .[0] == .[2] then "\(.[1])" else "\(.[1]) (\(.[0])..\(.[2]))" end' "$RUN_DIR"/cells/*/row.json)"
    line="$(grep "^| $cell | 3 | 3 |" "$RUN_DIR/results.md")" || fail "no summary line for $cell"
    # http_reqs is the 9th field: after cell, repetitions, ok, as_designed, the axis and three figures.
    assert_equal "$(awk -F' [|] ' '{ print $9 }' <<<"$line")" "$expected"
  done
  # Every repetition has its own line below.
  [ "$(grep -c '^| 0[12]_vus-[24]_rep-[123] | ok |' "$RUN_DIR/results.md")" -eq 6 ]
}

@test "report.html has the repetitions table" {
  grep -q '<table id="repeats">' "$RUN_DIR/report.html"
  grep -q '<td>01_vus-2</td><td class="n">3</td><td class="n">3</td>' "$RUN_DIR/report.html"
}

@test "report.html of the repeated run opens in the browser with no error and a bar for every repetition" {
  node "$LT_ROOT/scripts/report/open-report.js" "$RUN_DIR/report.html" >"$BATS_TEST_TMPDIR/page.json"
  run jq -c '.errors' "$BATS_TEST_TMPDIR/page.json"
  assert_output '[]'
  run jq -r '.charts[] | select(.id == "chart-across-tps") | .series[0].points' "$BATS_TEST_TMPDIR/page.json"
  assert_output 6
}
