#!/usr/bin/env bats
# Env files are data: parsed line by line, checked by type, never executed.
# shellcheck disable=SC2016,SC2034 # SC2016: jq programs and literal backquotes in single quotes on purpose; SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix
  lt_untraced knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  matrix_init
  LT_PROG="test"
}

@test "every knob in defaults.env has a type and a valid default" {
  [ "${#KNOB_ORDER[@]}" -gt 20 ]
  for key in "${KNOB_ORDER[@]}"; do
    run envfile_check_type "${KNOB_TYPE[$key]}" "${KNOB_DEFAULT[$key]}"
    assert_success
  done
}

@test "a matrix value replaces the default" {
  printf 'VUS=42\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  [ "${MATRIX_VALUE[VUS]}" = 42 ]
}

@test "comments, blank lines, CRLF endings and quotes are accepted" {
  printf '# a comment\n\n  VUS = "7"\r\nDURATION='"'"'3s'"'"'\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  [ "${MATRIX_VALUE[VUS]}" = 7 ]
  [ "${MATRIX_VALUE[DURATION]}" = 3s ]
}

@test "a malformed line stops with file:line and status 2" {
  printf 'VUS=4\nthis is not an assignment\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:2: malformed line"
}

@test "an unknown key is refused with its name and line" {
  printf '# x\nVUS=4\nNOT_A_KNOB=1\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:3: NOT_A_KNOB: unknown key"
}

@test "a non-number where a number is expected is refused" {
  printf 'TOMCAT_ACCEPT_COUNT=10 ten\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: TOMCAT_ACCEPT_COUNT: 'ten' is not a whole number"
}

@test "zero VUs is refused: a count must be positive" {
  printf 'VUS=0\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "VUS: '0' is not a whole number > 0"
}

@test "accept-count 0 is refused with file:line: Spring Boot would run Tomcat's default of 100" {
  printf 'SOMAXCONN=4096\nTOMCAT_ACCEPT_COUNT=5 0\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:2: TOMCAT_ACCEPT_COUNT: '0' is not a whole number > 0"
}

@test "a negative count is refused" {
  printf 'TOMCAT_MAX_THREADS=-5\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "TOMCAT_MAX_THREADS: '-5'"
}

@test "an axis with no values is refused" {
  printf 'VUS=\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: VUS: no value given"
}

@test "an empty sysctl means the namespace default" {
  printf 'SOMAXCONN=\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  [ "${MATRIX_VALUE[SOMAXCONN]}" = "" ]
}

@test "a global-only sysctl is refused with the reason" {
  printf 'NETDEV_MAX_BACKLOG=5000\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: NETDEV_MAX_BACKLOG: net.core.netdev_max_backlog is global to the host"
}

@test "export lines are refused: env files are not shell" {
  printf 'export VUS=4\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "'export' is not supported"
}

@test "a key set twice is refused with both lines" {
  printf 'VUS=1\nVUS=2\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:2: VUS: set twice (first on line 1)"
}

@test "an unterminated quote is refused" {
  printf 'DURATION="10s\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: DURATION: unterminated quote"
}

@test "a command substitution in a value is never executed" {
  local marker="$BATS_TEST_TMPDIR/executed"
  printf 'SERVER_HEAP=$(touch %s)\nDURATION=`touch %s`\n' "$marker" "$marker" \
    | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "SERVER_HEAP: '\$(touch"
  [ ! -e "$marker" ]
}

@test "a value outside an enum lists the choices" {
  printf 'SCENARIO=nosuch\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "SCENARIO: 'nosuch' is not one of: burst, keepalive"
}

@test "types: durations, port ranges and stage lists" {
  run envfile_check_type duration 1m30s
  assert_success
  run envfile_check_type duration 10
  assert_failure
  run envfile_check_type portrange 32768-60999
  assert_success
  run envfile_check_type portrange 6000-5000
  assert_failure
  run envfile_check_type stages 5s:100,20s:200,5s:0
  assert_success
  run envfile_check_type stages 5s:100,oops
  assert_failure
  assert_output --partial "stage 'oops'"
}

@test "types: linger is off or whole seconds" {
  run envfile_check_type linger off
  assert_success
  run envfile_check_type linger 0
  assert_success
  run envfile_check_type linger 5
  assert_success
  run envfile_check_type linger 5s
  assert_failure
  assert_output "'5s' is not off or a whole number of seconds >= 0"
  run envfile_check_type linger ''
  assert_failure
}

@test "types: an IPv4 address has four numbers of 0-255" {
  run envfile_check_type ipv4 198.18.0.255
  assert_success
  run envfile_check_type ipv4 999.1.1.1
  assert_failure
  assert_output "'999.1.1.1' is not an IPv4 address (four numbers of 0-255)"
  run envfile_check_type ipv4 198.18.0.256
  assert_failure
  assert_output "'198.18.0.256' is not an IPv4 address (four numbers of 0-255)"
  run envfile_check_type ipv4 198.18.0
  assert_failure
}

@test "types: a port is 1-65535" {
  run envfile_check_type port 65535
  assert_success
  run envfile_check_type port 70000
  assert_failure
  assert_output "'70000' is not a port (1-65535)"
  run envfile_check_type port 0
  assert_failure
  assert_output "'0' is not a port (1-65535)"
  run envfile_check_type port 99999999999999999999999
  assert_failure
  # Digits with a leading zero are refused, as every number is (bash reads them as octal).
  run envfile_check_type port 08080
  assert_failure
  assert_output "'08080' is not a port (1-65535) (a leading zero reads as octal: write 8080)"
}

@test "types: a rate is a decimal number at least 0 and below 1" {
  local value
  for value in 0 0.0 0.01 .5 0.999 00.25; do
    envfile_check_type rate "$value" || fail "rate '$value' refused"
  done
  for value in 1 1.0 -0.1 0.5.1 nan 1e-3 '' . 5%; do
    run envfile_check_type rate "$value"
    assert_failure
    assert_output "'$value' is not a rate at least 0 and below 1, such as 0.01"
  done
}

@test "types: a whole number with a most it can be" {
  run envfile_check_type 'uint<=60000' 60000
  assert_success
  run envfile_check_type 'uint<=60000' 700000
  assert_failure
  assert_output "'700000' is above 60000, the most it can be"
  run envfile_check_type 'uint<=60000' 99999999999999999999999
  assert_failure
  assert_output "'99999999999999999999999' is above 60000, the most it can be"
  run envfile_check_type 'uint<=60000' -1
  assert_failure
  assert_output "'-1' is not a whole number >= 0"
}

@test "ports above 65535, an address out of range and DELAY_MS above the target's limit are refused with file:line" {
  printf 'SERVER_PORT=70000\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: SERVER_PORT: '70000' is not a port (1-65535)"
  printf '# x\nMANAGEMENT_PORT=8081 65536\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:2: MANAGEMENT_PORT: '65536' is not a port (1-65535)"
  printf 'SERVER_ADDR=999.1.1.1\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: SERVER_ADDR: '999.1.1.1' is not an IPv4 address (four numbers of 0-255)"
  printf 'DELAY_MS=700000\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: DELAY_MS: '700000' is above 60000, the most it can be"
}

@test "DELAY_MS's limit is the target's own (HelloController.MAX_DELAY_MS)" {
  run grep -oE 'MAX_DELAY_MS = [0-9_]+' "$LT_ROOT/server/src/main/java/loadtest/target/HelloController.java"
  assert_output 'MAX_DELAY_MS = 60_000'
  [ "${KNOB_TYPE[DELAY_MS]}" = 'uint<=60000' ]
}

@test "K6_INSTANCES takes auto or a count" {
  run envfile_check_type auto-or-count auto
  assert_success
  run envfile_check_type auto-or-count 3
  assert_success
  run envfile_check_type auto-or-count 0
  assert_failure
  assert_output "'0' is not auto or a whole number > 0"
  run envfile_check_type auto-or-count many
  assert_output "'many' is not auto or a whole number > 0"
  [ "${KNOB_TYPE[K6_INSTANCES]}" = auto-or-count ]
  [ "${KNOB_DEFAULT[K6_INSTANCES]}" = auto ]
}

# knob_type_cases: "type value ok|refused" of every line of the shared table.
knob_type_cases() {
  grep -v '^#' "$LT_ROOT/tests/fixtures/knob-types.tsv" | tr '\t' ' '
}

@test "the shell's type checker gives every verdict of the shared table" {
  local type value want got
  [ "$(knob_type_cases | wc -l)" -gt 20 ]
  while read -r type value want; do
    got=refused
    envfile_check_type "$type" "$value" >/dev/null && got=ok
    [ "$got" = "$want" ] || fail "$type '$value': $got, the table says $want"
  done < <(knob_type_cases)
}

@test "scenarios/lib/env.js gives every verdict and duration of the shared tables" {
  cd "$LT_ROOT/tests/fixtures"
  bats_require_minimum_version 1.5.0
  run --separate-stderr "${LT_K6:-$LT_ROOT/.tools/bin/k6}" --log-format raw inspect env-js-check.js
  assert_success
  # shellcheck disable=SC2154 # SC2154: run --separate-stderr sets $stderr
  diff <(jq -r '.types[]' <<<"$stderr") <(knob_type_cases)
  diff <(jq -r '.durations[]' <<<"$stderr") <(grep -v '^#' "$LT_ROOT/tests/fixtures/durations.tsv" | tr '\t' ' ')
}

@test "a leading zero is refused with file:line and the number it would have meant" {
  printf 'CLIENT_ADDRESSES=010\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: CLIENT_ADDRESSES: '010' is not a whole number > 0 (a leading zero reads as octal: write 10)"
  printf '# x\nTOMCAT_MIN_SPARE_THREADS=10 08\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:2: TOMCAT_MIN_SPARE_THREADS: '08' is not a whole number >= 0 (a leading zero reads as octal: write 8)"
}

@test "a TARGET_PATH that is not a path on the target is refused with file:line; by default it is empty (the suite's /hello)" {
  printf '# x\nTARGET_PATH=owners?lastName=\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:2: TARGET_PATH: 'owners?lastName=' is not a path on the target (it starts with /, has no space or #), such as /owners?lastName="
  assert_equal "${MATRIX_VALUE[TARGET_PATH]}" ""
  printf 'TARGET_PATH=/owners?lastName=Davis\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_equal "${MATRIX_VALUE[TARGET_PATH]}" "/owners?lastName=Davis"
}

@test "a zero DURATION, REQUEST_TIMEOUT or TIME_UNIT is refused with file:line" {
  local key
  for key in DURATION REQUEST_TIMEOUT TIME_UNIT; do
    printf '# x\n%s=0s\n' "$key" | lt_write "$BATS_TEST_TMPDIR/m.matrix"
    run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
    assert_failure 2
    assert_output --partial "m.matrix:2: $key: '0s' is zero: it must be a duration > 0 such as 1s"
  done
  # A graceful stop of zero is one: k6 stops at once.
  printf 'GRACEFUL_STOP=0s\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
}

@test "reading env/defaults.env and a matrix starts no process: a fork a value was 0.1 s before a run's first check" {
  [[ $EUID -eq 0 ]] || skip "a PID namespace of its own needs root"
  printf 'VUS=1 2\nDURATION=3s\nTOMCAT_ACCEPT_COUNT=70 71\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  # The first process of a PID namespace of its own: every process started
  # takes the next pid, so /proc/sys/kernel/ns_last_pid counts them.
  run env LT_ROOT="$LT_ROOT" LT_PYTHON="$LT_PYTHON" MATRIX="$BATS_TEST_TMPDIR/m.matrix" \
    unshare --pid --fork --mount-proc bash -c '
      set -euo pipefail
      source "$LT_ROOT/scripts/lib/common.sh"
      for lib in envfile matrix; do source "$LT_ROOT/scripts/lib/$lib.sh"; done
      read -r before </proc/sys/kernel/ns_last_pid
      knobs_load "$LT_ROOT/env/defaults.env"
      sysctls_load "$LT_ROOT/env/sysctls.tsv"
      matrix_init
      matrix_load "$MATRIX"
      read -r after </proc/sys/kernel/ns_last_pid
      printf "%s %s\n" "$((after - before))" "${#KNOB_ORDER[@]}"'
  assert_success
  local started knobs
  read -r started knobs <<<"$output"
  [ "$knobs" -gt 100 ]
  # Before: one for each of the knobs' values (the type's check in a command substitution).
  [ "$started" -eq 0 ] || fail "$started processes started"
}

@test "a value that does not fit its type still says why, with the file, line and key" {
  printf 'VUS=2\nDURATION=3 parsecs\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output "test: $BATS_TEST_TMPDIR/m.matrix:2: DURATION: '3' is not a duration such as 500ms, 10s, 1m30s"
}
