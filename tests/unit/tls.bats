#!/usr/bin/env bats
# tls.sh: HTTPS at the target (TARGET_TLS): the knobs it refuses before
# anything starts, the run's key made by keytool in the run directory only
# (mode 600), and the Spring Boot properties that serve it.
# shellcheck disable=SC2034,SC2030,SC2031 # SC2034: read through a nameref by the library under test; SC2030,SC2031: each test is its own subshell

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix netns results target k6 backend
  LT_PROG='test'
  LT_RUN_DIR="$BATS_TEST_TMPDIR/run"
  mkdir -p "$LT_RUN_DIR"
}

@test "tls_knob_problems: TARGET_TLS=1 with TARGET_CMD is refused where TARGET_TLS was set, naming TARGET_CMD's place" {
  local -A origin=([TARGET_TLS]=m.matrix:3 [TARGET_CMD]=m.matrix:1 [TLS_KEY]=defaults)
  local -A value=([TARGET_TLS]=1 [TARGET_CMD]='python3 -m http.server {SERVER_PORT}' [TLS_KEY]=ec)
  run tls_knob_problems origin value
  assert_output --partial "m.matrix:3: TARGET_TLS: HTTPS is set up as Spring Boot's server.ssl.* properties, but TARGET_CMD (m.matrix:1)"
  # An axis that has a TLS cell is refused too; without one, nothing.
  value[TARGET_TLS]="0 1"
  run tls_knob_problems origin value
  assert_output --partial "m.matrix:3: TARGET_TLS:"
  value[TARGET_TLS]=0
  run tls_knob_problems origin value
  assert_output ''
}

@test "tls_knob_problems: a TLS_KEY the suite makes no key for is refused with its place; ec and rsa pass" {
  local -A origin=([TARGET_TLS]=defaults [TLS_KEY]=m.matrix:2)
  local -A value=([TARGET_TLS]=1 [TLS_KEY]="ec dsa")
  run tls_knob_problems origin value
  assert_output "m.matrix:2: TLS_KEY: 'dsa' is not a key type the suite makes (ec or rsa)"
  value[TLS_KEY]="ec rsa"
  run tls_knob_problems origin value
  assert_output ''
}

@test "tls_knob_problems: TARGET_TLS with TARGET_URL, BACKEND=compose or nginx in front is refused" {
  local -A origin=([TARGET_TLS]=m.matrix:1 [PROXY]=m.matrix:2)
  local -A value=([TARGET_TLS]=1 [TARGET_URL]=http://127.0.0.1:8080)
  run tls_knob_problems origin value
  assert_output --partial "m.matrix:1: TARGET_TLS: the suite starts no target when TARGET_URL names a running one"
  value[TARGET_URL]="" value[BACKEND]=compose
  run tls_knob_problems origin value
  assert_output --partial "m.matrix:1: TARGET_TLS: BACKEND=compose"
  value[BACKEND]=netns value[PROXY]="none nginx"
  run tls_knob_problems origin value
  assert_output --partial "m.matrix:1: TARGET_TLS: nginx in front (PROXY=nginx, m.matrix:2)"
}

@test "tls_cell_prepare: a key of each type, made once per run in its directory, mode 600, certificate for the server's address" {
  local -A cell=([TARGET_TLS]=1 [TLS_KEY]=ec [SERVER_ADDR]=198.18.0.1)
  tls_cell_prepare cell
  [ "$TLS_CERT_FILE" = "$LT_RUN_DIR/tls/ec/cert.pem" ]
  [ "$CURL_CA_BUNDLE" = "$TLS_CERT_FILE" ]
  local file
  for file in keystore.p12 cert.pem password; do
    [ "$(stat -c %a "$LT_RUN_DIR/tls/ec/$file")" = 600 ] || fail "$file is mode $(stat -c %a "$LT_RUN_DIR/tls/ec/$file")"
  done
  [ "$(stat -c %a "$LT_RUN_DIR/tls/ec")" = 700 ]
  run openssl x509 -in "$TLS_CERT_FILE" -noout -text
  assert_output --partial "IP Address:198.18.0.1"
  assert_output --partial "id-ecPublicKey"
  # The same run's next cell takes the same key.
  local before
  before="$(sha256sum <"$LT_RUN_DIR/tls/ec/keystore.p12")"
  tls_cell_prepare cell
  [ "$(sha256sum <"$LT_RUN_DIR/tls/ec/keystore.p12")" = "$before" ]
  cell[TLS_KEY]=rsa
  tls_cell_prepare cell
  run openssl x509 -in "$LT_RUN_DIR/tls/rsa/cert.pem" -noout -text
  assert_output --partial "rsaEncryption"
  assert_output --partial "Public-Key: (2048 bit)"
  # A plain cell trusts nothing of it.
  cell[TARGET_TLS]=0
  tls_cell_prepare cell
  [ -z "$TLS_CERT_FILE" ]
  [ -z "${CURL_CA_BUNDLE:-}" ]
}

@test "a TLS cell's Spring Boot properties: HTTPS on the port under test with the run's keystore, the actuator's port plain" {
  local -A cell=([TARGET_TLS]=1 [TLS_KEY]=ec [SERVER_ADDR]=198.18.0.1 [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081)
  tls_cell_prepare cell
  run target_spring_env cell 198.18.0.1
  assert_line SERVER_SSL_ENABLED=true
  assert_line "SERVER_SSL_KEYSTORE=file:$LT_RUN_DIR/tls/ec/keystore.p12"
  assert_line "SERVER_SSL_KEYSTOREPASSWORD=$(cat "$LT_RUN_DIR/tls/ec/password")"
  assert_line MANAGEMENT_SERVER_SSL_ENABLED=false
  run netns_backend_url cell
  assert_output https://198.18.0.1:8080
  run k6_cell_env cell https://198.18.0.1:8080
  assert_line "SSL_CERT_FILE=$LT_RUN_DIR/tls/ec/cert.pem"
  cell[TARGET_TLS]=0
  tls_cell_prepare cell
  run target_spring_env cell 198.18.0.1
  refute_line --partial SERVER_SSL
  run netns_backend_url cell
  assert_output http://198.18.0.1:8080
  run k6_cell_env cell http://198.18.0.1:8080
  refute_line --partial SSL_CERT_FILE
}

@test "PROXY_TLS=1: nginx's users load https, the run's key has a PEM key for nginx, refused without nginx" {
  local -A cell=([PROXY]=nginx [PROXY_TLS]=1 [TARGET_TLS]=0 [TLS_KEY]=ec [SERVER_ADDR]=198.18.0.1 [PROXY_PORT]=8090)
  run proxy_url cell http://198.18.0.1:8080
  assert_output https://198.18.0.1:8090
  tls_cell_prepare cell
  [ "$TLS_CERT_FILE" = "$LT_RUN_DIR/tls/ec/cert.pem" ]
  [ "$(stat -c %a "$LT_RUN_DIR/tls/ec/key.pem")" = 600 ]
  run openssl pkey -in "$LT_RUN_DIR/tls/ec/key.pem" -noout -text
  assert_output --partial "NIST CURVE: P-256"
  # Tomcat itself stays plain behind it.
  run target_spring_env cell 198.18.0.1
  refute_line --partial SERVER_SSL
  cell[PROXY_TLS]=0
  run proxy_url cell http://198.18.0.1:8080
  assert_output http://198.18.0.1:8090
  local -A origin=([PROXY]=defaults [PROXY_TLS]=m.matrix:4)
  local -A value=([PROXY]=none [PROXY_TLS]=1)
  run proxy_knob_problems origin value
  assert_output --partial "m.matrix:4: PROXY_TLS: a setting of nginx in front, but PROXY is none"
}

@test "tls_cell_prepare with a cell directory: the newest calibration is copied into a TARGET_TLS or PROXY_TLS cell, naming its source" {
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  mkdir -p "$LT_RESULTS_DIR/tls-calibration-20261129-010000" "$LT_RESULTS_DIR/tls-calibration-20261129-020000" \
    "$BATS_TEST_TMPDIR/cell" "$BATS_TEST_TMPDIR/plain" "$BATS_TEST_TMPDIR/nginx"
  printf 'key\tserver_cpu_ms_per_handshake\nec\t9.000\n' >"$LT_RESULTS_DIR/tls-calibration-20261129-010000/calibration.tsv"
  printf 'key\tserver_cpu_ms_per_handshake\nec\t3.443\n' >"$LT_RESULTS_DIR/tls-calibration-20261129-020000/calibration.tsv"
  local -A cell=([TARGET_TLS]=1 [TLS_KEY]=ec [SERVER_ADDR]=127.0.0.1)
  tls_cell_prepare cell "$BATS_TEST_TMPDIR/cell"
  run cat "$BATS_TEST_TMPDIR/cell/tls-calibration.tsv"
  assert_output "# from $LT_RESULTS_DIR/tls-calibration-20261129-020000/calibration.tsv
key	server_cpu_ms_per_handshake
ec	3.443"
  # The row reads it (ltsuite.tlsburst).
  run env PYTHONPATH="$LT_ROOT/scripts" python3 -c 'import sys; from pathlib import Path; from ltsuite import tlsburst
print(tlsburst.read_calibration(Path(sys.argv[1])).cpu_ms)' "$BATS_TEST_TMPDIR/cell/tls-calibration.tsv"
  assert_output "{'ec': 3.443}"
  # LT_TLS_CALIBRATION names another; nginx's TLS gets it too (nginx's cost is in it), a plain cell none.
  LT_TLS_CALIBRATION="$LT_RESULTS_DIR/tls-calibration-20261129-010000/calibration.tsv" \
    tls_cell_prepare cell "$BATS_TEST_TMPDIR/cell"
  grep -q '^ec	9.000$' "$BATS_TEST_TMPDIR/cell/tls-calibration.tsv"
  local -A plain=([TARGET_TLS]=0 [SERVER_ADDR]=127.0.0.1)
  tls_cell_prepare plain "$BATS_TEST_TMPDIR/plain"
  local -A nginx=([TARGET_TLS]=0 [PROXY]=nginx [PROXY_TLS]=1 [TLS_KEY]=ec [SERVER_ADDR]=127.0.0.1)
  tls_cell_prepare nginx "$BATS_TEST_TMPDIR/nginx"
  [ ! -e "$BATS_TEST_TMPDIR/plain/tls-calibration.tsv" ]
  grep -q '^ec	3.443$' "$BATS_TEST_TMPDIR/nginx/tls-calibration.tsv"
}

@test "tls_knob_problems: TLS_SESSION_RESUMPTION=0 with TARGET_TLS=1 is refused where it was set (Spring Boot cannot turn JSSE's off); with nginx's TLS it passes" {
  local -A origin=([TARGET_TLS]=m.matrix:1 [TLS_SESSION_RESUMPTION]=m.matrix:4)
  local -A value=([TARGET_TLS]=1 [TLS_SESSION_RESUMPTION]="1 0")
  run tls_knob_problems origin value
  assert_output "m.matrix:4: TLS_SESSION_RESUMPTION: '0' with TARGET_TLS=1 (m.matrix:1): Spring Boot's server.ssl.* has no property that turns Tomcat's session cache or tickets off (JSSE keeps both on), so the suite cannot honour it without code; use 1, or nginx in front (PROXY=nginx PROXY_TLS=1), where it is ssl_session_cache and ssl_session_tickets"
  value[TLS_SESSION_RESUMPTION]=1
  run tls_knob_problems origin value
  assert_output ''
  local -A value=([TARGET_TLS]=0 [PROXY]=nginx [PROXY_TLS]=1 [TLS_SESSION_RESUMPTION]=0)
  run tls_knob_problems origin value
  assert_output ''
}

@test "tls-calibrate refuses a key type it cannot make and client counts that cannot give a difference, before anything starts" {
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  run "$LT_ROOT/scripts/tls-calibrate.sh" dsa
  assert_failure 2
  assert_output --partial "'dsa' is not a key type the suite makes (ec or rsa)"
  CLIENT_FEW=1200 CLIENT_MANY=200 run "$LT_ROOT/scripts/tls-calibrate.sh" ec
  assert_failure 2
  assert_output --partial "CLIENT_MANY (200) must be above CLIENT_FEW (1200)"
  CLIENT_VUS=x run "$LT_ROOT/scripts/tls-calibrate.sh" ec
  assert_failure 2
  assert_output --partial "CLIENT_VUS=x: a count of 1 or more"
  # Nothing started: no calibration directory was made.
  [ ! -e "$LT_RESULTS_DIR" ] || [ -z "$(ls -A "$LT_RESULTS_DIR")" ]
}
