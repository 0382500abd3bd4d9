#!/usr/bin/env bats
# Who holds TIME-WAIT behind nginx (seed 004): one user keeping its connection
# to nginx sends 200 requests one after another (20 ms apart, so the sampler's
# once-a-second rows see them), nginx without upstream keep-alive (a new
# HTTP/1.0 connection to the target per request) versus a pool of 8. The
# sampler counts TIME-WAIT per end in the server namespace, where nginx runs
# beside the target: the target's ends (server_time_wait_peak), nginx's towards
# the target (proxy_upstream_time_wait_peak) and nginx's towards the users
# (proxy_client_time_wait_peak). A TIME-WAIT lasts 60 s, longer than the cell,
# so each peak is every TIME-WAIT of that end up to the last row. Measured
# (run 20261127-081527-proxy-time-wait, under contention): without the pool
# 201 requests, 164 of them before the last row, left 137 TIME-WAITs on nginx's
# ends towards the target and 31 on the target's, 1 on nginx's towards the
# user; with the pool 0, 1 and 1.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_run_settings_once proxy-time-wait SCENARIO=keepalive VUS=1 REQUESTS_PER_VU=200 THINK_TIME_MS=20 \
    CONNECTION_REUSE=1 DELAY_MS=0 DURATION=30s PROXY=nginx "PROXY_UPSTREAM_KEEPALIVE=0 8" \
    K6_HTML_REPORT=0 MONITORING=off
}

setup() {
  load '../test_helper'
  # shellcheck disable=SC2034 # SC2034: RUN_DIR is read by test_helper's lt_row_value
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
}

# pool_cell POOL: the cell with PROXY_UPSTREAM_KEEPALIVE=POOL.
pool_cell() {
  local cell
  for cell in $(lt_cells); do
    [[ "$(lt_cell_value "$cell" PROXY_UPSTREAM_KEEPALIVE)" != "$1" ]] || { printf '%s\n' "$cell"; return 0; }
  done
  fail "no cell with PROXY_UPSTREAM_KEEPALIVE=$1"
}

# proxied_before_last_row CELL: the load's requests nginx had answered (its
# access log's $msec, from the cell's k6_start mark: the warm-up's came
# before it, and their TIME-WAITs were removed) 0.1 s before the sampler's
# last row: those whose upstream connection had closed by then.
proxied_before_last_row() {
  local dir="$RUN_DIR/cells/$1" last start
  last="$(tail -n 1 "$dir/samples.tsv" | cut -f 1)"
  start="$(awk -F'\t' '$1 == "k6_start" { printf "%.3f\n", $2 / 1000 }' "$dir/phases.tsv" | tail -n 1)"
  awk -F'\t' -v last="$last" -v start="$start" '$1 >= start && $1 + 0.1 <= last { n++ } END { print n + 0 }' \
    "$dir/nginx-access.log"
}

@test "without upstream keep-alive each request leaves one TIME-WAIT on the upstream end that closed first" {
  local cell reqs seen server upstream users
  cell="$(pool_cell 0)"
  [ "$(lt_row_value "$cell" status)" = ok ]
  reqs="$(lt_row_value "$cell" proxy_reqs)"
  seen="$(proxied_before_last_row "$cell")"
  server="$(lt_row_value "$cell" server_time_wait_peak)"
  upstream="$(lt_row_value "$cell" proxy_upstream_time_wait_peak)"
  users="$(lt_row_value "$cell" proxy_client_time_wait_peak)"
  printf '%s: requests %s (%s before the last row): target %s, nginx upstream %s, nginx users %s\n' \
    "$(basename "$RUN_DIR")" "$reqs" "$seen" "$server" "$upstream" "$users" >&3
  [ "$seen" -ge 100 ] || fail "only $seen of $reqs requests before the sampler's last row"
  # One TIME-WAIT per request on its upstream connection, on one end only (not both).
  [ "$((server + upstream))" -ge "$((seen * 9 / 10))" ] || fail "target $server + nginx $upstream < 90 % of $seen"
  [ "$((server + upstream))" -le "$((reqs + 3))" ] || fail "target $server + nginx $upstream > $reqs requests"
  # Which end: both close as the answer ends (HTTP/1.0, "Connection: close") and race; nginx,
  # which closes as soon as it has read the answer's length, sends its FIN first most of the
  # time (seed 004's run: 76-82 % of 10,000 a cell), Tomcat only after it has finished the request.
  [ "$upstream" -gt "$server" ] || fail "nginx's ends $upstream, the target's $server"
  # The user keeps its connection to nginx: nginx's end towards it holds none.
  [ "$users" -le 2 ] || fail "nginx's ends towards the user: $users"
}

@test "with an upstream keep-alive pool almost no TIME-WAIT is left on either end" {
  local cell
  cell="$(pool_cell 8)"
  [ "$(lt_row_value "$cell" status)" = ok ]
  printf 'requests %s: target %s, nginx upstream %s, nginx users %s\n' "$(lt_row_value "$cell" proxy_reqs)" \
    "$(lt_row_value "$cell" server_time_wait_peak)" "$(lt_row_value "$cell" proxy_upstream_time_wait_peak)" \
    "$(lt_row_value "$cell" proxy_client_time_wait_peak)" >&3
  [ "$(lt_row_value "$cell" proxy_reqs)" -ge 200 ]
  [ "$(lt_row_value "$cell" server_time_wait_peak)" -le 3 ]
  [ "$(lt_row_value "$cell" proxy_upstream_time_wait_peak)" -le 3 ]
  [ "$(lt_row_value "$cell" proxy_client_time_wait_peak)" -le 2 ]
}

@test "the report draws nginx's two ends beside the target's and the users' TIME-WAIT" {
  local cell
  cell="$(pool_cell 0)"
  node "$LT_ROOT/scripts/report/open-report.js" "$RUN_DIR/report.html" >"$BATS_TEST_TMPDIR/page.json"
  run jq -c '.errors' "$BATS_TEST_TMPDIR/page.json"
  assert_output '[]'
  # Without the pool nginx's ends towards the target hold TIME-WAITs: their line is drawn.
  run jq -r --arg id "chart-$cell-syn-time-wait" \
    '.charts[] | select(.id == $id) | .series[] | select(.label == "TIME-WAIT (nginx to Tomcat)") | .pixels > 0' \
    "$BATS_TEST_TMPDIR/page.json"
  assert_output true
  run jq -r --arg id "chart-$cell-syn-time-wait" \
    '[.charts[] | select(.id == $id) | .series[].label] | index("TIME-WAIT (nginx to users)") != null' \
    "$BATS_TEST_TMPDIR/page.json"
  assert_output true
}
