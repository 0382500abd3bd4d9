#!/usr/bin/env bats
# HTTPS at the target (TARGET_TLS, scripts/lib/tls.sh): a cell of a small
# matrix served over TLS gives a row whose handshake is measured, and k6
# really verifies the certificate: the run's own passes, any other fails.
# shellcheck disable=SC2016,SC2034 # SC2016: jq programs in single quotes on purpose; SC2034: LT_RUN_DIR is read by the library under test

setup() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
}

teardown() {
  lt_end "${TARGET_PID:-}"
}

# tls_cell MATRIX: one run of tests/fixtures/MATRIX (a cell of its own) into
# the test's results, which must succeed; its run in RUN_DIR, its row in ROW.
tls_cell() {
  run "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/tests/fixtures/$1"
  assert_success
  RUN_DIR="$(lt_latest)"
  ROW="$RUN_DIR/cells/01/row.json"
}

@test "a TARGET_TLS=1 cell: Tomcat serves HTTPS, every new connection's handshake is a measured part of the row" {
  tls_cell tls.matrix
  local run_dir="$RUN_DIR" row="$ROW"
  grep -q 'Tomcat started on port 8080 (https)' "$run_dir/cells/01/target.log"
  # The actuator's connector stays plain (the sampler read Tomcat's threads).
  grep -q 'Tomcat started on port 8081 (http)' "$run_dir/cells/01/target.log"
  run jq -c '{http_reqs, failed_reqs, fail_tls, t_connect_med_ms, t_handshake_med_ms, t_handshake_p99_ms, tls_handshakes, new_conns, tls_handshakes_per_s, decomposed_reqs, tomcat_threads_busy_peak}' "$row"
  echo "# $output" >&3
  # 40 requests, each on a connection of its own: 40 handshakes, each measured.
  jq -e '.status == "ok" and .http_reqs == 40 and .failed_reqs == 0 and .fail_tls == 0
         and .tls_handshakes == 40 and .new_conns == 40 and .tls_handshakes_per_s > 0
         and .t_handshake_med_ms > 0 and .t_handshake_p99_ms >= .t_handshake_med_ms
         and .decomposed_reqs == 40 and .tomcat_threads_busy_peak != null' "$row"
  # The key stayed in the run directory, readable by its owner only.
  [ "$(stat -c %a "$run_dir/tls/ec/keystore.p12")" = 600 ]
  [ "$(stat -c %a "$run_dir/tls/ec")" = 700 ]
}

@test "k6 verifies the target's certificate: the run's own is trusted, another key's fails as fail_tls" {
  lt_source_libs envfile matrix netns target k6
  LT_RUN_DIR="$BATS_TEST_TMPDIR/run"
  local port mgmt
  port="$(lt_free_port)"
  mgmt="$(lt_free_port)"
  local -A cell=([TARGET_TLS]=1 [TLS_KEY]=ec [SERVER_ADDR]=127.0.0.1 [SERVER_PORT]="$port" [MANAGEMENT_PORT]="$mgmt")
  tls_cell_prepare cell
  local right="$TLS_CERT_FILE"
  # Another key of the same kind and name: only its certificate differs.
  tls_make "$BATS_TEST_TMPDIR/other" ec 127.0.0.1
  local -a tls_env
  mapfile -t tls_env < <(tls_spring_env cell)
  env SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" MANAGEMENT_PORT="$mgmt" "${tls_env[@]}" \
    java -Xmx128m -jar "$LT_ROOT/server/target/loadtest-target.jar" >"$BATS_TEST_TMPDIR/target.log" 2>&1 3>&- &
  TARGET_PID=$!
  local deadline=$((SECONDS + 60))
  until curl -fsS --cacert "$right" -o /dev/null "https://127.0.0.1:$port/health" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "target did not start: $(tail -n 3 "$BATS_TEST_TMPDIR/target.log")"
    sleep 0.2
  done
  cat >"$BATS_TEST_TMPDIR/one.js" <<'JS'
import http from 'k6/http';
import { failureCause } from './causes.js';
export const options = { vus: 1, iterations: 1 };
export default function () {
  const res = http.get(`${__ENV.TARGET_URL}/health`);
  console.log(`result status=${res.status} error_code=${res.error_code} cause=${failureCause(res)} error=${res.error}`);
}
JS
  cp "$LT_ROOT/scenarios/lib/causes.js" "$LT_ROOT/scenarios/lib/causes-table.js" "$BATS_TEST_TMPDIR/"
  run env -i PATH="$PATH" HOME="$HOME" SSL_CERT_FILE="$right" TARGET_URL="https://127.0.0.1:$port" \
    "$LT_K6" run --quiet "$BATS_TEST_TMPDIR/one.js"
  assert_output --partial "result status=200 error_code=0 cause=null"
  run env -i PATH="$PATH" HOME="$HOME" SSL_CERT_FILE="$BATS_TEST_TMPDIR/other/cert.pem" TARGET_URL="https://127.0.0.1:$port" \
    "$LT_K6" run --quiet "$BATS_TEST_TMPDIR/one.js"
  echo "# ${output##*result }" >&3
  assert_output --regexp "result status=0 error_code=13[0-9][0-9] cause=tls error=.*(x509|certificate)"
}

@test "a PROXY_TLS=1 cell: nginx terminates TLS, Tomcat behind it stays plain, every handshake is measured" {
  tls_cell tls-proxy.matrix
  local run_dir="$RUN_DIR" row="$ROW"
  grep -q 'Tomcat started on port 8080 (http)' "$run_dir/cells/01/target.log"
  grep -q ' ssl backlog=' "$run_dir/cells/01/nginx.conf"
  run jq -c '{http_reqs, failed_reqs, fail_tls, proxy_reqs, t_handshake_med_ms, tls_handshakes, proxy_tls_handshakes, proxy_tls_resumed}' "$row"
  echo "# $output" >&3
  # nginx logged each of the 40 connections' handshake, with or without a resumed session
  # (its session cache and tickets on: TLS_SESSION_RESUMPTION=1).
  jq -e '.status == "ok" and .http_reqs == 40 and .failed_reqs == 0 and .proxy_reqs >= 40
         and .tls_handshakes == 40 and .t_handshake_med_ms > 0
         and .proxy_tls_handshakes >= 40 and .proxy_tls_resumed >= 0' "$row"
  grep -q 'ssl_session_cache shared:ltsuite:10m;' "$run_dir/cells/01/nginx.conf"
  [ "$(stat -c %a "$run_dir/tls/ec/key.pem")" = 600 ]
}

@test "a burst of new TLS connections: the row predicts its handshakes' end from this machine's calibration and checks it" {
  CALIBRATE_S=3 WARM_S=2 run "$LT_ROOT/scripts/tls-calibrate.sh" ec
  assert_success
  local cost client
  cost="$(awk -F'\t' '$1 == "ec" { print $6 }' "$LT_RESULTS_DIR"/tls-calibration-*/calibration.tsv)"
  client="$(awk -F'\t' '$1 == "ec" { print $9 }' "$LT_RESULTS_DIR"/tls-calibration-*/calibration.tsv)"
  [ -n "$cost" ] && [ -n "$client" ]
  tls_cell tls-burst.matrix
  local run_dir="$RUN_DIR" row="$ROW"
  grep -q "^# from .*/tls-calibration-.*/calibration.tsv" "$run_dir/cells/01/tls-calibration.tsv"
  run jq -c '{tls_handshakes, tls_handshakes_end_ms, tls_handshake_cpu_ms, tls_client_cpu_ms, predicted_tls_handshakes_end_ms,
              accept_queue_peak, predicted_tls_accept_queue_peak, predicted_tls_failed, tls_k6_cpu_ms_per_handshake,
              tls_target_cpu_ms_per_handshake, tls_machine_cpu_ms_per_handshake, prediction_check, prediction_notes}' "$row"
  echo "# $output" >&3
  # 100 handshakes of the calibrated server + k6 cost over the cores k6 and the target share (200
  # threads: the cores bound), to 0.1 ms; none past the 10 s timeout.
  local cores
  cores="$(nproc)"
  jq -e --argjson cost "$cost" --argjson client "$client" --argjson cores "$cores" '.status == "ok" and .tls_handshakes == 100
         and .tls_handshake_cpu_ms == ($cost * 1000 | round / 1000) and .tls_client_cpu_ms == ($client * 1000 | round / 1000)
         and (.predicted_tls_handshakes_end_ms - ([100 * $cost / ([$cores, 200] | min), 100 * ($cost + $client) / $cores] | max) | fabs) <= 0.051
         and .predicted_tls_accept_queue_peak == 0 and .predicted_tls_failed == 0 and .tls_handshakes_end_ms > 0
         and .prediction_check != null' "$row"
  # The sampler's trace split the burst's CPU: the target's JVM and k6 each used some, the machine at least both.
  jq -e '.tls_k6_cpu_ms_per_handshake > 0 and .tls_target_cpu_ms_per_handshake > 0
         and .tls_machine_cpu_ms_per_handshake >= .tls_target_cpu_ms_per_handshake' "$row"
  # Either within the rule's tolerance, or the mismatch says how long each handshake held the cores, and where the CPU went.
  jq -e '(.prediction_notes // "" | test("tls_handshakes_end_ms [0-9.]+ where") | not)
         or (.prediction_notes | test("times the calibrated [0-9.]+ ms of the server.s and [0-9.]+ ms of k6.s")
             and test("the target [0-9.]+ ms"))' "$row"
}
