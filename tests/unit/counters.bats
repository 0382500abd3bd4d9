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

# fake_nstat STDERR STATUS [STDOUT]: netns_exec runs a stand-in for nstat
# that writes STDOUT, says STDERR and exits with STATUS.
fake_nstat() {
  FAKE_ERR="$1" FAKE_STATUS="$2" FAKE_OUT="${3:-}"
  # shellcheck disable=SC2317 # SC2317: called by counters_snapshot, which the tests run
  netns_exec() { [[ -z "$FAKE_OUT" ]] || printf '%s\n' "$FAKE_OUT"; printf '%b' "$FAKE_ERR" >&2; return "$FAKE_STATUS"; }
}

@test "a snapshot that fails gives the last line it said as the cell's reason" {
  fake_nstat 'nstat: history is stale, ignoring it.\n  Cannot open network namespace "ltsuite-srv": No such file or directory  \n\n' 1
  cell_error ""
  status=0
  counters_snapshot server "$BATS_TEST_TMPDIR/nstat-server-after.txt" || status=$?
  [ "$status" -eq 1 ]
  [ "$CELL_ERROR" = "cannot read the server namespace's counters (nstat): Cannot open network namespace \"ltsuite-srv\": No such file or directory" ]
  [ ! -e "$BATS_TEST_TMPDIR/nstat-server-after.txt" ] && [ ! -e "$BATS_TEST_TMPDIR/nstat-server-after.txt.tmp" ]
}

@test "a snapshot with no output fails, saying so, and a long message is cut to 200 characters" {
  fake_nstat "" 0
  cell_error ""
  status=0
  counters_snapshot client "$BATS_TEST_TMPDIR/snap" || status=$?
  [ "$status" -eq 1 ]
  [ "$CELL_ERROR" = "cannot read the client namespace's counters (nstat): it printed nothing" ]
  fake_nstat "nstat: $(printf 'x%.0s' {1..300})" 255 '#kernel'
  status=0
  counters_snapshot client "$BATS_TEST_TMPDIR/snap" || status=$?
  [ "$status" -eq 1 ]
  [ "$CELL_ERROR" = "cannot read the client namespace's counters (nstat): nstat: $(printf 'x%.0s' {1..193})" ]
  [ ! -e "$BATS_TEST_TMPDIR/snap" ]
}

@test "snapshots read no history file: two at once both succeed, with NSTAT_HISTORY unwritable" {
  command -v nstat >/dev/null || fail "nstat (iproute2) is not installed"
  source "$LT_ROOT/scripts/lib/netns.sh"
  NETNS_HOST_MODE=1
  # A history file nstat would have to create fails it ("open history file").
  export NSTAT_HISTORY="$BATS_TEST_TMPDIR/no-such-dir/history"
  run nstat -sz
  assert_failure
  assert_output --partial "history file"
  local i
  for i in 1 2 3 4; do
    counters_snapshot client "$BATS_TEST_TMPDIR/snap-$i" &
  done
  for i in 1 2 3 4; do wait -n; done
  for i in 1 2 3 4; do grep -q '^TcpActiveOpens ' "$BATS_TEST_TMPDIR/snap-$i"; done
  [ ! -e "$BATS_TEST_TMPDIR/no-such-dir" ]
}
