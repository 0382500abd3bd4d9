#!/usr/bin/env bats
# TARGET_PATH: the shipped keepalive scenario pointed at a path of a service
# the suite did not write (tests/fixtures/ownapp, 100 ms a greeting), one
# small real cell: every request asks the path as written, without the
# suite's delayMs, and carries its request id, so the access log's figures
# and each request's split into its parts still join k6's. Its health path
# is the one Spring Boot users set, /actuator/health, with the shipped
# scenario (as make advise's calibration runs it).

setup_file() {
  load '../test_helper'
  lt_run_settings_once target-path \
    "TARGET_JAR=$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar" \
    "TARGET_ENV_FILE=$LT_ROOT/tests/fixtures/ownapp/greeting-100ms.env" \
    'TARGET_PATH=/hello?name=path' TARGET_HEALTH_PATH=/actuator/health SCENARIO=keepalive VUS=2 REQUESTS_PER_VU=5 CONNECTION_REUSE=1 \
    DURATION=10s GRACEFUL_STOP=5s REQUEST_TIMEOUT=5s DELAY_MS=100 K6_HTML_REPORT=0 MONITORING=off
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  CELL="$(lt_cells)"
}

@test "every load request asks TARGET_PATH as written, without delayMs" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/run.log")"
  [ "$(lt_row_value "$CELL" status)" = ok ]
  [ "$(lt_row_value "$CELL" as_designed)" -eq 1 ]
  [ "$(lt_row_value "$CELL" http_reqs)" -eq 10 ]
  [ "$(lt_row_value "$CELL" failed_reqs)" -eq 0 ]
  run bash -c "gzip -dc '$RUN_DIR/cells/$CELL/k6-samples.json.gz' \
    | jq -r 'select(.metric == \"http_req_duration\" and .data.tags.traffic == \"load\") | .data.tags.name' \
    | sort | uniq -c"
  # k6 names a request by its URL when the script gives no name (the suite keeps no url tag).
  assert_output "     10 http://198.18.0.1:8080/hello?name=path"
}

@test "the usual /actuator/health with a shipped scenario: the runner waits for it on the actuator's port, and the cell runs" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/run.log")"
  [ "$(lt_cell_value "$CELL" TARGET_HEALTH_PATH)" = /actuator/health ]
  [ "$(lt_row_value "$CELL" status)" = ok ]
  # Asked on the actuator's own connector, never on the port under test.
  run grep -c ' /actuator/health ' "$RUN_DIR/cells/$CELL/tomcat-access.log"
  assert_output 0
}

@test "the access log has each request by its id, and each request is split into its parts" {
  # Ten greetings with the suite's request ids (the health checks have none).
  run awk '$5 != "-" && $7 == "/hello"' "$RUN_DIR/cells/$CELL/tomcat-access.log"
  [ "${#lines[@]}" -eq 10 ]
  [ "$(lt_row_value "$CELL" decomposed_reqs)" -eq 10 ]
  # The greeting's 100 ms, as the application measured it.
  run jq -e '.app_lat_med_ms >= 100 and .app_lat_med_ms < 500' "$RUN_DIR/cells/$CELL/row.json"
  assert_success
}
