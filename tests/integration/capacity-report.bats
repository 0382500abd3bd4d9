#!/usr/bin/env bats
# report.html of a make capacity search, from a recorded one
# (tests/fixtures/capacity-run/capacity.json: seed 003's search of
# docs/capacity.md, 10 and 11 users held, 13 and 12 failed, its cells' rows
# replayed through ltsuite.capacity), rendered by scripts/report.sh and
# opened in a real browser (Debian's chromium, driven by playwright-core):
# the answer in words, throughput and p99 against the load, the knee marked.
# No run: a few seconds.

setup_file() {
  load '../test_helper'
  DIR="$BATS_FILE_TMPDIR/capacity-recorded"
  mkdir -p "$DIR"
  cp "$LT_ROOT/tests/fixtures/capacity-run/capacity.json" "$DIR/"
  "$LT_ROOT/scripts/report.sh" "$DIR" >"$BATS_FILE_TMPDIR/report.out"
  node "$LT_ROOT/scripts/report/open-report.js" "$DIR/report.html" >"$BATS_FILE_TMPDIR/page.json" \
    2>"$BATS_FILE_TMPDIR/page.err" || true
}

setup() {
  load '../test_helper'
  JSON="$LT_ROOT/tests/fixtures/capacity-run/capacity.json"
  PAGE="$BATS_FILE_TMPDIR/page.json"
}

@test "the page opens with no console error and no request; its headline is the verified maximum and the first failing load" {
  [ -s "$PAGE" ] || fail "open-report.js: $(cat "$BATS_FILE_TMPDIR/page.err")"
  [ "$(cat "$BATS_FILE_TMPDIR/report.out")" = "$(cd "$BATS_FILE_TMPDIR/capacity-recorded" && pwd -P)/report.html" ]
  run jq -c '[.errors, .requests]' "$PAGE"
  assert_output '[[],[]]'
  run jq -r .headline "$PAGE"
  assert_output "$(jq -r '"How much can it take: Verified maximum: \(.knob)=\(.maximum) \(.unit); the first load above it that fails: \(.knob)=\(.first_failing)"' "$JSON")"
}

@test "throughput and p99 are drawn against the load, a point a judged cell, the failed ones circled, the knee a line at the maximum" {
  local id key
  for id in chart-capacity-tps chart-capacity-p99; do
    key="$([ "$id" = chart-capacity-tps ] && echo tps || echo lat_p99_ms)"
    # x: the loads the search judged, in order; y: each cell's figure.
    run jq -c --arg id "$id" '.charts[] | select(.id == $id) | .data[0:2]' "$PAGE"
    assert_output "$(jq -c --arg k "$key" '[.cells | map(select(.passed != null)) | sort_by(.load) | (map(.load), map(.[$k]))]' "$JSON")"
    run jq -e --arg id "$id" --argjson failed "$(jq '[.cells[] | select(.passed == false)] | length' "$JSON")" \
      '.charts[] | select(.id == $id) | .series[0].pixels > 0 and .series[1].points == $failed and .series[1].pixels > 0' "$PAGE"
    assert_success
    run jq -e --arg id "$id" --argjson knee "$(jq .knee "$JSON")" \
      '.charts[] | select(.id == $id) | .marks == [.marks[0]] and .marks[0].x == $knee and .marks[0].pixels > 0' "$PAGE"
    assert_success
  done
  # The goal's p99 is drawn on the p99 chart.
  run jq -r '.charts[] | select(.id == "chart-capacity-p99") | .series[2].label' "$PAGE"
  assert_output "goal $(jq .goal.p99_ms "$JSON") ms"
}

@test "every cell is a line of the page linked to its run's own page, and the files of the search are linked" {
  local html="$BATS_FILE_TMPDIR/capacity-recorded/report.html" run cell
  [ "$(grep -c '^<tr.*<td class="n">[0-9]*</td><td class="n">' "$html")" -eq "$(jq '.cells | length' "$JSON")" ]
  while read -r run cell; do
    grep -qF "<a href=\"runs/$run/report.html#cell-$cell\">$run/$cell</a>" "$html"
  done < <(jq -r '.cells[] | "\(.run) \(.cell)"' "$JSON")
  grep -qF '<a href="capacity.md">capacity.md</a>' "$html"
}
