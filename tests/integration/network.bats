#!/usr/bin/env bats
# A round-trip time between the users and the service (NET_RTT_MS): the
# suite's delayer holds every packet of the client namespace half of it each
# way, so a new connection per request connects in one RTT (k6's own
# connecting time, and the split of each request from the access log) and 0
# without; the row records the RTT the delayer really applied. The delayer
# stops with its cell.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  # Two users, ten short requests each, each on a new connection.
  lt_run_settings_once network SCENARIO=keepalive VUS=2 REQUESTS_PER_VU=10 CONNECTION_REUSE=0 DELAY_MS=20 \
    DURATION=10s 'NET_RTT_MS=0 40' K6_HTML_REPORT=0 MONITORING=off
}

setup() {
  load '../test_helper'
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  NONE="$(lt_cells | head -n 1)"
  RTT="$(lt_cells | tail -n 1)"
}

@test "the run and both cells ended ok; a delayer late on a loaded machine is the only thing flagged" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ]
  [ "$(lt_cell_value "$NONE" NET_RTT_MS)" = 0 ]
  [ "$(lt_cell_value "$RTT" NET_RTT_MS)" = 40 ]
  [ "$(lt_row_value "$RTT" status)" = ok ]
  [ "$(lt_row_value "$RTT" failed_reqs)" -eq 0 ]
  [ "$(lt_row_value "$RTT" http_reqs)" -eq 20 ]
  if [ "$(lt_row_value "$RTT" as_designed)" != 1 ]; then
    run lt_row_value "$RTT" design_notes
    assert_output --regexp "^the delayer fell behind: its packets' 99th-percentile hold was [0-9.]+ ms where 20 ms was asked"
  fi
}

@test "with NET_RTT_MS=40 each new connection takes one RTT to connect; without, next to nothing" {
  local with without applied
  with="$(jq -r '.metrics.http_req_connecting.values.med' "$RUN_DIR/cells/$RTT/summary.json")"
  without="$(jq -r '.metrics.http_req_connecting.values.med' "$RUN_DIR/cells/$NONE/summary.json")"
  awk -v c="$with" 'BEGIN { exit !(c >= 40 && c <= 50) }' || fail "connect median $with ms with a 40 ms RTT"
  awk -v c="$without" 'BEGIN { exit !(c < 3) }' || fail "connect median $without ms without a delay"
  # The access log's split agrees, and the delayer's own account is the RTT asked.
  with="$(lt_row_value "$RTT" t_connect_med_ms)"
  awk -v c="$with" 'BEGIN { exit !(c >= 38 && c <= 52) }' || fail "t_connect_med_ms $with"
  applied="$(lt_row_value "$RTT" net_rtt_applied_ms)"
  awk -v c="$applied" 'BEGIN { exit !(c >= 40 && c <= 46) }' || fail "net_rtt_applied_ms $applied"
  [ "$(lt_row_value "$RTT" net_delayer_drops)" -eq 0 ]
  [ "$(lt_row_value "$RTT" net_packets_lost)" -eq 0 ]
  # Each request's round trip on top of the connect: the latency too is at least one RTT.
  with="$(lt_row_value "$RTT" lat_min_ms)"
  awk -v c="$with" 'BEGIN { exit !(c >= 40) }' || fail "lat_min_ms $with"
}

@test "without a delay the network columns are empty, not 0" {
  [ -z "$(lt_row_value "$NONE" net_rtt_applied_ms)" ]
  [ -z "$(lt_row_value "$NONE" net_delayer_drops)" ]
  jq -e 'has("net_rtt_applied_ms") and .net_rtt_applied_ms == null' "$RUN_DIR/cells/$NONE/row.json"
  [ ! -e "$RUN_DIR/cells/$NONE/netdelay.json" ]
}

@test "the delayer was stopped with its cell: it wrote its account and no delayer runs" {
  jq -e '.held > 0 and .kernel_queue_dropped == 0' "$RUN_DIR/cells/$RTT/netdelay.json"
  # (The namespaces' names are shared with every run on this host, so only the delayer is looked for.)
  run pgrep -f "ltsuite.netdelay"
  [ "$status" -eq 1 ]
}
