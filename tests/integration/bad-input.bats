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
  run ip netns list
  refute_output --partial ltsuite
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
  refused 'TOMCAT_ACCEPT_COUNT=-1' -- "bad.matrix:1: TOMCAT_ACCEPT_COUNT: '-1' is not a whole number >= 0"
}

@test "an unknown scenario" {
  refused 'SCENARIO=soak' -- "bad.matrix:1: SCENARIO: 'soak' is not one of: spike, spike-open, ramp, waiting-room, keepalive"
}

@test "a sysctl outside the whitelist" {
  refused 'NET_IPV4_TCP_RMEM=4096' -- "bad.matrix:1: NET_IPV4_TCP_RMEM: unknown key"
}

@test "a global-only sysctl, with why" {
  refused 'NETDEV_MAX_BACKLOG=10000' -- "bad.matrix:1: NETDEV_MAX_BACKLOG: net.core.netdev_max_backlog is global to the host, not per network namespace"
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
