#!/usr/bin/env bats
# Counter deltas from fixed nstat output (the sampler's peaks: tests/python).

setup() {
  load '../test_helper'
  lt_source_libs counters
  cat >"$BATS_TEST_TMPDIR/before" <<'NSTAT'
#kernel
TcpActiveOpens                  10                 0.0
TcpCurrEstab                    5                  0.0
TcpExtListenOverflows           3                  0.0
TcpExtListenDrops               3                  0.0
TcpExtTCPTimeouts               0                  0.0
NSTAT
  cat >"$BATS_TEST_TMPDIR/after" <<'NSTAT'
#kernel
TcpActiveOpens                  25                 0.0
TcpCurrEstab                    1                  0.0
TcpExtListenOverflows           10                 0.0
TcpExtListenDrops               10                 0.0
TcpExtTCPTimeouts               0                  0.0
TcpExtTCPSynRetrans             4                  0.0
NSTAT
}

@test "deltas list only the counters that changed" {
  run counters_delta server "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
  assert_success
  assert_line $'TcpActiveOpens\tserver\t15'
  assert_line $'TcpExtListenOverflows\tserver\t7'
  refute_line --partial "TCPTimeouts"
}

@test "a counter that first appears counts from zero" {
  run counters_delta client "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
  assert_line $'TcpExtTCPSynRetrans\tclient\t4'
}

@test "the TcpCurrEstab gauge is not a counter and is left out" {
  run counters_delta server "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
  refute_line --partial "TcpCurrEstab"
}

@test "counters_value reads one delta, 0 when absent" {
  counters_delta server "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after" >"$BATS_TEST_TMPDIR/delta"
  [ "$(counters_value "$BATS_TEST_TMPDIR/delta" server TcpExtListenDrops)" -eq 7 ]
  [ "$(counters_value "$BATS_TEST_TMPDIR/delta" client TcpExtListenDrops)" -eq 0 ]
}

@test "deltas past 2^31 and 2^53 keep every digit, through counters_value too" {
  printf '#kernel\nIpExtInOctets 1000 0.0\nIpExtOutOctets 9007199254740993 0.0\n' >"$BATS_TEST_TMPDIR/b"
  printf '#kernel\nIpExtInOctets 5000001000 0.0\nIpExtOutOctets 18014398509481987 0.0\n' >"$BATS_TEST_TMPDIR/a"
  run counters_delta server "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/a"
  assert_output $'IpExtInOctets\tserver\t5000000000\nIpExtOutOctets\tserver\t9007199254740994'
  printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/delta"
  [ "$(counters_value "$BATS_TEST_TMPDIR/delta" server IpExtInOctets)" = 5000000000 ]
  [ "$(counters_value "$BATS_TEST_TMPDIR/delta" server IpExtOutOctets)" = 9007199254740994 ]
}
