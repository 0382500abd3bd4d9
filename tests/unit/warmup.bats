#!/usr/bin/env bats
# The warm-up before a cell's measured load (WARMUP): the knob, its default
# by the kind of target, and the runner's pieces of scripts/lib/warmup.sh
# that need no namespace.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix netns target k6 cell warmup
  knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  matrix_init
  LT_PROG='test'
}

@test "WARMUP is a duration knob, none by default; 0s and a duration are taken, a bare number is refused" {
  [ "${KNOB_TYPE[WARMUP]}" = duration ]
  [ "${KNOB_DEFAULT[WARMUP]}" = 0s ]
  printf 'WARMUP=0s 5s 1m30s\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  [ "${MATRIX_VALUE[WARMUP]}" = "0s 5s 1m30s" ]
  printf 'WARMUP=5\n' | lt_write "$BATS_TEST_TMPDIR/bad.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/bad.matrix"
  assert_failure 2
  assert_output --partial "bad.matrix:1: WARMUP"
}

@test "the warm-up is the runner's, not a scenario a cell may choose" {
  printf 'SCENARIO=warmup\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: SCENARIO: 'warmup' is not one of: "
  refute_output --partial ', warmup'
}

@test "WARMUP=0s: no warm-up, no k6, no mark and no file" {
  local -A cell=([WARMUP]=0s)
  LT_K6=/nonexistent/k6
  mkdir -p "$BATS_TEST_TMPDIR/cell"
  run warmup_run cell "$BATS_TEST_TMPDIR/cell" http://198.18.0.1:8080 8080
  assert_success
  assert_output ''
  run ls -A "$BATS_TEST_TMPDIR/cell"
  assert_output ''
}

@test "the warm-up's sockets are told from the suite's own by the client's ephemeral range, on the users' port" {
  run warmup_ss_filter client 8090 32768 60999
  assert_output '( dport = :8090 and sport >= :32768 and sport <= :60999 )'
  run warmup_ss_filter server 8080 1024 65535
  assert_output '( sport = :8080 and dport >= :1024 and dport <= :65535 )'
  # nginx's to the target: either end, from the server namespace's range.
  run warmup_ss_filter upstream 8080 32768 60999
  assert_output '( ( sport = :8080 and dport >= :32768 and dport <= :60999 ) or ( dport = :8080 and sport >= :32768 and sport <= :60999 ) )'
}

@test "the warm-up's sockets: the client's and the server's; nginx's towards the target only with nginx in front" {
  # shellcheck disable=SC2317 # SC2317: called by warmup_sockets, which the test runs
  netns_exec() { [[ "$*" == *ip_local_port_range ]] && printf '%s\n' "${RANGE_OF[$1]}"; }
  # shellcheck disable=SC2317 # SC2317: called by warmup_sockets, which the test runs
  backend_has_server_side() { return 0; }
  local -A RANGE_OF=([client]="32768 60999" [server]="40000 50000")
  run warmup_sockets 8080 8080
  assert_output "$(printf '%s\n' 'client client ( dport = :8080 and sport >= :32768 and sport <= :60999 )' \
    'server server ( sport = :8080 and dport >= :32768 and dport <= :60999 )')"
  run warmup_sockets 8090 8080
  assert_line --index 1 'server server ( sport = :8090 and dport >= :32768 and dport <= :60999 )'
  assert_line --index 2 'upstream server ( ( sport = :8080 and dport >= :40000 and dport <= :50000 ) or ( dport = :8080 and sport >= :40000 and sport <= :50000 ) )'
  # No server side to see (an external target): the client's only.
  # shellcheck disable=SC2317 # SC2317: called by warmup_sockets, which the test runs
  backend_has_server_side() { return 1; }
  run warmup_sockets 8090 8080
  assert_output 'client client ( dport = :8090 and sport >= :32768 and sport <= :60999 )'
}
