#!/usr/bin/env bats
# report.html of a real run, opened in a real browser (Debian's chromium,
# driven by playwright-core): it draws every chart from the run's files,
# with no console error and no network. One run in setup_file.

setup_file() {
  load '../test_helper'
  lt_require_root
  lt_run_matrix_once "$LT_ROOT/tests/fixtures/report.matrix"
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  node "$LT_ROOT/scripts/report/open-report.js" "$RUN_DIR/report.html" --screenshot "$BATS_FILE_TMPDIR/report.png" \
    >"$BATS_FILE_TMPDIR/page.json" 2>"$BATS_FILE_TMPDIR/page.err" || true
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  PAGE="$BATS_FILE_TMPDIR/page.json"
}

@test "the run succeeds and every cell has its samples and k6's per-request samples" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/run.log")"
  for cell in "$RUN_DIR"/cells/*/; do
    [ -s "$cell/samples.tsv" ]
    gzip -dc "$cell/k6-samples.json.gz" | grep -q '"metric":"http_req_duration"'
  done
}

@test "the browser opens the page with no console error and no request but the file" {
  [ -s "$PAGE" ] || fail "open-report.js: $(cat "$BATS_FILE_TMPDIR/page.err")"
  run jq -c '.errors' "$PAGE"
  assert_output '[]'
  run jq -c '.requests' "$PAGE"
  assert_output '[]'
  [ -s "$BATS_FILE_TMPDIR/report.png" ]
}

@test "the page's headline and the manifest say how many cells ran as designed, as the terminal does" {
  local said n run_status
  said="$(grep -E '^[0-9]+ of 2 cell\(s\) ran as designed$' "$BATS_FILE_TMPDIR/run.log")"
  n="${said%% *}"
  run_status="$(jq -r .status "$RUN_DIR/manifest.json")"
  [ "$(jq .cells_as_designed "$RUN_DIR/manifest.json")" -eq "$n" ]
  run jq -r .headline "$PAGE"
  if [ "$n" -eq 2 ]; then
    assert_output "Run $(basename "$RUN_DIR"): $run_status, $said"
    [ "$(jq .first_design_reason "$RUN_DIR/manifest.json")" = null ]
  else
    # The terminal's first line under the count is the first reason.
    local first
    first="$(grep -A1 -F "$said" "$BATS_FILE_TMPDIR/run.log" | sed -n '2s/^  //p')"
    assert_output "Run $(basename "$RUN_DIR"): $run_status, $said
First reason: $first"
    [ "$(jq -r .first_design_reason "$RUN_DIR/manifest.json")" = "$first" ]
  fi
}

@test "every cell has its charts over time, and the page its charts across cells" {
  local cell name
  for cell in "$RUN_DIR"/cells/*/; do
    cell="$(basename "$cell")"
    for name in accept-queue connections threads syn-time-wait requests latency; do
      jq -e --arg id "chart-$cell-$name" 'any(.charts[]; .id == $id)' "$PAGE" >/dev/null \
        || fail "no chart $name for $cell"
    done
  done
  for name in failed_reqs failed_rate lat_p95_ms lat_max_ms server_conns_peak listen_overflows tps answered_tps; do
    jq -e --arg id "chart-across-$name" 'any(.charts[]; .id == $id)' "$PAGE" >/dev/null \
      || fail "no chart of $name across cells"
  done
}

@test "every chart drew data: points in a series and pixels of its colour on the canvas" {
  run jq -r '.charts[] | select(([.series[] | select(.points > 0 and .pixels > 0)] | length) == 0) | .id' "$PAGE"
  assert_output ''
  [ "$(jq '.charts | length' "$PAGE")" -ge 18 ]
}

@test "the accept-queue chart draws samples.tsv's numbers" {
  local cell cells=("$RUN_DIR"/cells/*/)
  cell="$(basename "${cells[0]}")"
  local tsv="$RUN_DIR/cells/$cell/samples.tsv"
  # samples.tsv, by header name: the queue length and the backlog.
  local want_queue want_backlog
  want_queue="$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "listen_recvq") c = i; next } { print $c }' "$tsv" | jq -cRn '[inputs | tonumber]')"
  want_backlog="$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "listen_sendq") c = i; next } { print $c }' "$tsv" | jq -cRn '[inputs | tonumber]')"
  run jq -c --arg id "chart-$cell-accept-queue" '.charts[] | select(.id == $id) | .data[1]' "$PAGE"
  assert_output "$want_queue"
  run jq -c --arg id "chart-$cell-accept-queue" '.charts[] | select(.id == $id) | .data[2]' "$PAGE"
  assert_output "$want_backlog"
  # The queue filled: the chart shows more than an empty queue.
  jq -e 'max > 0' <<<"$want_queue"
}

@test "the requests chart counts every load request of the cell, by cause" {
  local cell
  for cell in "$RUN_DIR"/cells/*/; do
    cell="$(basename "$cell")"
    local drawn total answered
    drawn="$(jq --arg id "chart-$cell-requests" '[.charts[] | select(.id == $id) | .data[1:][] | .[] | numbers] | add' "$PAGE")"
    answered="$(jq --arg id "chart-$cell-requests" '.charts[] | select(.id == $id) | .data[1] | add' "$PAGE")"
    total="$(jq '.http_reqs' "$RUN_DIR/cells/$cell/row.json")"
    [ "$drawn" -eq "$total" ] || fail "$cell: $drawn requests drawn, http_reqs $total"
    [ "$answered" -eq "$(jq '.http_reqs - .failed_reqs' "$RUN_DIR/cells/$cell/row.json")" ]
  done
}

@test "every answered request is a point of the latency chart, between the row's min and max" {
  local cell
  for cell in "$RUN_DIR"/cells/*/; do
    cell="$(basename "$cell")"
    local row="$RUN_DIR/cells/$cell/row.json"
    run jq --argjson row "$(cat "$row")" --arg id "chart-$cell-latency" \
      '.charts[] | select(.id == $id) | .data[1] | (length == ($row.http_reqs - $row.failed_reqs))
        and (min >= ($row.lat_min_ms - 0.1)) and (max <= ($row.lat_max_ms + 0.1))' "$PAGE"
    assert_output true
  done
}

@test "the predictions the rows carry are drawn beside the measured figures" {
  local figure predicted want
  for figure in server_conns_peak:predicted_server_conns_peak listen_overflows:predicted_listen_overflows \
    failed_users:predicted_failed_users answered_tps:predicted_tps lat_max_ms:predicted_lat_max_ms; do
    predicted="${figure#*:}"
    want="$(jq -s --arg k "$predicted" '[.[] | .[$k] | numbers] | length' "$RUN_DIR"/cells/*/row.json)"
    run jq -r --arg id "chart-across-${figure%%:*}" --arg k "$predicted" \
      '.charts[] | select(.id == $id) | .series[] | select(.label == $k) | "\(.points) \(.pixels > 0)"' "$PAGE"
    if [ "$want" -eq 0 ]; then
      assert_output ''
    else
      assert_output "$want true"
    fi
  done
  # This run's cells saturate, so the kernel's prediction of the peak exists.
  jq -e -s 'all(.[]; .predicted_server_conns_peak | type == "number")' "$RUN_DIR"/cells/*/row.json
  # The failed users are drawn from the column each row's check used, not
  # from failed_reqs.
  want="$(jq -s '[.[] | select(.predicted_failed_users_from != null) | .[.predicted_failed_users_from] | numbers] | length' "$RUN_DIR"/cells/*/row.json)"
  run jq -r '.charts[] | select(.id == "chart-across-failed_users") | .series[] | select(.label == "failed_users") | .points' "$PAGE"
  if [ "$want" -eq 0 ]; then assert_output ''; else assert_output "$want"; fi
}
