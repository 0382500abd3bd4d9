#!/usr/bin/env bats
# Bad input: exit 2, file:line: message, nothing started, no run directory.

setup() {
  load '../test_helper'
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  MATRIX="$BATS_TEST_TMPDIR/bad.matrix"
}

# refused LINE... -- MESSAGE: the matrix made of LINEs is refused with MESSAGE.
refused() {
  local lines=() message
  while [[ "$1" != -- ]]; do lines+=("$1"); shift; done
  message="$2"
  printf '%s\n' "${lines[@]}" >"$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 2
  assert_output --partial "$message"
  [ ! -e "$LT_RESULTS_DIR" ] || fail "a run directory was created"
  # Namespaces may belong to another run on this host (they hold the run
  # lock while they exist): only with the lock free must there be none.
  if flock -n "${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}" true; then
    run ip netns list
    refute_output --partial ltsuite
  fi
}

@test "a malformed line" {
  refused 'VUS=4' 'DURATION 10s' -- "bad.matrix:2: malformed line (expected KEY=VALUE): DURATION 10s"
}

@test "an unknown key" {
  refused '# comment' 'VUZ=4' -- "bad.matrix:2: VUZ: unknown key"
}

@test "a wrong type" {
  refused 'DURATION=ten seconds' -- "bad.matrix:1: DURATION: 'ten' is not a duration"
}

@test "a zero count" {
  refused 'TOMCAT_MAX_THREADS=0' -- "bad.matrix:1: TOMCAT_MAX_THREADS: '0' is not a whole number > 0"
}

@test "a negative number" {
  refused 'TOMCAT_MIN_SPARE_THREADS=-1' -- "bad.matrix:1: TOMCAT_MIN_SPARE_THREADS: '-1' is not a whole number >= 0"
}

@test "an unknown scenario" {
  refused 'SCENARIO=soak' -- "bad.matrix:1: SCENARIO: 'soak' is not one of: burst, keepalive, ramp, spike, spike-open, waiting-room"
}

@test "a k6 script of one's own that does not exist" {
  refused 'VUS=2' 'SCENARIO=/nonexistent/my-test.js' -- "bad.matrix:2: SCENARIO: '/nonexistent/my-test.js' does not exist"
}

@test "a k6 script k6 cannot load" {
  printf 'export default function ( {\n' >"$BATS_TEST_TMPDIR/broken.js"
  refused "SCENARIO=$BATS_TEST_TMPDIR/broken.js" -- "bad.matrix:1: SCENARIO: k6 cannot load $BATS_TEST_TMPDIR/broken.js"
}

@test "a target jar that does not exist" {
  refused 'TARGET_JAR=/nonexistent/app.jar' -- "bad.matrix:1: TARGET_JAR: '/nonexistent/app.jar' does not exist"
}

@test "TARGET_CMD with a Tomcat knob" {
  refused 'TARGET_CMD=python3 -m http.server {SERVER_PORT}' 'TOMCAT_ACCEPT_COUNT=5' \
    -- "bad.matrix:2: TOMCAT_ACCEPT_COUNT: a setting of a Spring Boot target, but TARGET_CMD starts a server that is not one"
}

@test "a jar of one's own with TOMCAT_SO_LINGER, which no Spring Boot property carries" {
  refused "TARGET_JAR=$LT_ROOT/env/defaults.env" 'TOMCAT_SO_LINGER=0' \
    -- "bad.matrix:2: TOMCAT_SO_LINGER: only the suite's own target sets SO_LINGER"
}

@test "BACKEND=compose with TARGET_CMD" {
  refused 'BACKEND=compose' 'TARGET_CMD=python3 -m http.server {SERVER_PORT}' \
    -- "bad.matrix:2: TARGET_CMD: BACKEND=compose runs a Spring Boot jar in a container"
}

@test "an application env file that sets the connector itself" {
  printf '# mine\nGREETING_WORKMS=10\nSERVER_TOMCAT_ACCEPTCOUNT=3\n' >"$BATS_TEST_TMPDIR/app.env"
  refused "TARGET_ENV_FILE=$BATS_TEST_TMPDIR/app.env" \
    -- "$BATS_TEST_TMPDIR/app.env:3: SERVER_TOMCAT_ACCEPTCOUNT: the Tomcat connector is set by the cell's TOMCAT_* knobs"
}

@test "TARGET_ARGS that set what the cell sets" {
  refused 'TARGET_ARGS=--spring.profiles.active=x --server.port=9000' \
    -- "bad.matrix:1: TARGET_ARGS: '--server.port=9000' is set by the suite"
}

@test "a health path that is not a path" {
  refused 'TARGET_HEALTH_PATH=health' -- "bad.matrix:1: TARGET_HEALTH_PATH: 'health' is not a path"
}

@test "a sysctl outside the whitelist" {
  refused 'NET_IPV4_TCP_RMEM=4096' -- "bad.matrix:1: NET_IPV4_TCP_RMEM: unknown key"
}

@test "a global-only sysctl, with why" {
  refused 'NETDEV_MAX_BACKLOG=10000' -- "bad.matrix:1: NETDEV_MAX_BACKLOG: net.core.netdev_max_backlog is global to the host, not per network namespace"
}

@test "REPEAT as an axis" {
  refused 'VUS=4' 'REPEAT=2 3' -- "bad.matrix:2: REPEAT: one value per run, not an axis (got 2 3)"
}

@test "an axis with no values" {
  refused 'VUS=' -- "bad.matrix:1: VUS: no value given"
}

@test "a bad value on the command line" {
  printf 'VUS=4\n' >"$MATRIX"
  VUS=many run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 2
  assert_output --partial "command line: VUS: 'many' is not a whole number > 0"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "a missing matrix file" {
  run "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/nope.matrix"
  assert_failure 2
  assert_output --partial "nope.matrix: no such matrix file"
}

@test "a command substitution stays a literal string and is never run" {
  local marker="$BATS_TEST_TMPDIR/pwned"
  # ${IFS} keeps each value one word (a space would make it an axis).
  refused "SERVER_HEAP=\$(touch\${IFS}$marker)" -- "SERVER_HEAP: '\$(touch\${IFS}$marker)' is not a size"
  [ ! -e "$marker" ]
  refused "DURATION=\`touch\${IFS}$marker\`" -- "DURATION: '\`touch\${IFS}$marker\`' is not a duration"
  [ ! -e "$marker" ]
}

@test "a port above 65535 on the command line" {
  printf 'VUS=4\n' >"$MATRIX"
  SERVER_PORT=70000 run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 2
  assert_output "run-matrix: command line: SERVER_PORT: '70000' is not a port (1-65535)"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "an IPv4 address with a number above 255" {
  refused 'VUS=4' 'SERVER_ADDR=999.1.1.1' -- "bad.matrix:2: SERVER_ADDR: '999.1.1.1' is not an IPv4 address (four numbers of 0-255)"
}

@test "DELAY_MS above what the target accepts" {
  refused 'DELAY_MS=1000 700000' -- "bad.matrix:1: DELAY_MS: '700000' is above 60000, the most it can be"
}

@test "SERVER_PORT equal to MANAGEMENT_PORT" {
  refused 'VUS=4' 'SERVER_PORT=8081' -- "bad.matrix:2: SERVER_PORT: 8081 is MANAGEMENT_PORT too (defaults); the actuator needs a port of its own"
}

@test "a SERVER_ADDR off the client's /24" {
  refused 'SERVER_ADDR=198.18.1.1' -- "bad.matrix:1: SERVER_ADDR: SERVER_ADDR 198.18.1.1 is not on the /24 of CLIENT_ADDR 198.18.0.2 (CLIENT_ADDR is set in defaults); the namespaces share one /24 link: use 198.18.0.x for both"
}

@test "a target that passes every check and exits at start says why: its exit status and its output's end" {
  lt_require_root
  lt_write "$BATS_TEST_TMPDIR/server.sh" <<'SH'
#!/bin/sh
echo "listening on $SERVER_ADDR:$SERVER_PORT"
echo "fatal: the license file is missing" >&2
echo
exit 3
SH
  chmod +x "$BATS_TEST_TMPDIR/server.sh"
  printf 'TARGET_CMD=%s\nTARGET_HEALTH_PATH=/\nVUS=1\nDURATION=1s\n' "$BATS_TEST_TMPDIR/server.sh" >"$MATRIX"
  run "$LT_ROOT/scripts/run-matrix.sh" "$MATRIX"
  assert_failure 1
  local row
  row="$(find "$LT_RESULTS_DIR" -name row.json | head -n 1)"
  run jq -r .error "$row"
  assert_output "target exited during start-up: exit status 3; its output ends: listening on 198.18.0.1:8080 | fatal: the license file is missing"
}

@test "a network loss of 1, a round trip above 10 s or a jitter above half the round trip: where, and which key" {
  refused 'VUS=2' 'NET_LOSS=0.01 1' -- "bad.matrix:2: NET_LOSS: '1' is not a rate at least 0 and below 1, such as 0.01"
  refused 'NET_LOSS=nan' -- "bad.matrix:1: NET_LOSS: 'nan' is not a rate at least 0 and below 1"
  refused 'NET_RTT_MS=10001' -- "bad.matrix:1: NET_RTT_MS: '10001' is above 10000, the most it can be"
  refused 'NET_RTT_MS=40 10' 'NET_JITTER_MS=6' -- "bad.matrix:2: NET_JITTER_MS: 6 is more than half NET_RTT_MS=10 ($MATRIX:1)"
}

@test "nginx's knobs without PROXY=nginx in any cell" {
  refused 'VUS=2' 'PROXY_READ_TIMEOUT=5s' -- "bad.matrix:2: PROXY_READ_TIMEOUT: a setting of nginx in front, but PROXY is none (defaults) in every cell; set PROXY=nginx or remove PROXY_READ_TIMEOUT"
  refused 'PROXY=none' 'PROXY_BACKLOG=16' -- "bad.matrix:2: PROXY_BACKLOG: a setting of nginx in front, but PROXY is none ($MATRIX:1) in every cell"
  refused 'PROXY=nginx' 'PROXY_WORKER_CONNECTIONS=0' -- "bad.matrix:2: PROXY_WORKER_CONNECTIONS: '0' is not a whole number > 0"
}

@test "TARGET_TLS with TARGET_CMD" {
  refused 'TARGET_CMD=python3 -m http.server {SERVER_PORT}' 'TARGET_TLS=1' \
    -- "bad.matrix:2: TARGET_TLS: HTTPS is set up as Spring Boot's server.ssl.* properties, but TARGET_CMD ($MATRIX:1) starts a server that is not Spring Boot"
}

@test "a TLS key type the suite does not make" {
  refused 'TARGET_TLS=1' 'TLS_KEY=dsa' -- "bad.matrix:2: TLS_KEY: 'dsa' is not one of: ec, rsa"
}

@test "TLS session resumption off at Tomcat, which Spring Boot cannot turn off" {
  refused 'TARGET_TLS=1' 'TLS_SESSION_RESUMPTION=0' \
    -- "bad.matrix:2: TLS_SESSION_RESUMPTION: '0' with TARGET_TLS=1 ($MATRIX:1): Spring Boot's server.ssl.* has no property that turns Tomcat's session cache or tickets off"
}
