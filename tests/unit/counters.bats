#!/usr/bin/env bats
# Counter deltas and sample peaks, from fixed nstat and ss output.

setup() {
  load '../test_helper'
  lt_source_libs counters sampler results
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

@test "peaks take the largest value of each series" {
  {
    printf '%s\n' "$SAMPLES_HEADER"
    printf '1.0\t0\t1\t2\t0\t0\t2\t5\t1\t3\t\t80\n'
    printf '2.0\t2\t1\t4\t1\t3\t4\t1\t2\t3\t95.0\t100\n'
    printf '3.0\t\t\t0\t0\t0\t0\t0\t\t\t85.0\t90\n'
  } >"$BATS_TEST_TMPDIR/samples.tsv"
  run results_samples_peaks "$BATS_TEST_TMPDIR/samples.tsv"
  assert_success
  [ "$(jq .server_estab <<<"$output")" -eq 4 ]
  [ "$(jq .listen_recvq <<<"$output")" -eq 2 ]
  # the peak of the sum (5), not the sum of the peaks (3 + 5)
  [ "$(jq .time_wait_total <<<"$output")" -eq 5 ]
  [ "$(jq .tomcat_threads_busy <<<"$output")" -eq 2 ]
  [ "$(jq .k6_rss_mb <<<"$output")" -eq 100 ]
  # The average CPU is over the samples that have a value: (95 + 85) / 2.
  [ "$(jq .k6_cpu_avg <<<"$output")" = 90 ]
}
