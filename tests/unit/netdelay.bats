#!/usr/bin/env bats
# When a cell starts the delayer (scripts/lib/netdelay.sh).
# shellcheck disable=SC2034 # SC2034: the cells are read through netdelay_wanted's nameref

setup() {
  load '../test_helper'
  lt_source_libs netns
}

# wanted RTT JITTER LOSS: netdelay_wanted's answer for these knobs.
wanted() {
  local -A cell=([NET_RTT_MS]="$1" [NET_JITTER_MS]="$2" [NET_LOSS]="$3")
  netdelay_wanted cell
}

@test "netdelay_wanted: a round trip, a jitter or a loss above 0 starts the delayer" {
  wanted 40 0 0
  wanted 0 2 0
  wanted 0 0 0.01
  wanted 0 0 .5
  wanted 08 0 0
}

@test "netdelay_wanted: zeros, however written, and unset knobs start nothing" {
  run wanted 0 0 0
  assert_failure
  run wanted 00 0 0.000
  assert_failure
  run wanted '' '' ''
  assert_failure
  local -A none=()
  run netdelay_wanted none
  assert_failure
}

@test "netdelay_knob_problems: every pair of jitter and round trip is a cell; one with a jitter above half its RTT is named" {
  local -A origin=([NET_RTT_MS]=m.matrix:1 [NET_JITTER_MS]=m.matrix:2)
  local -A value=([NET_RTT_MS]="20 40" [NET_JITTER_MS]="4 10")
  run netdelay_knob_problems origin value
  assert_output ''
  value[NET_RTT_MS]="40 08"
  run netdelay_knob_problems origin value
  assert_output "m.matrix:2: NET_JITTER_MS: 10 is more than half NET_RTT_MS=08 (m.matrix:1): a hold would go below 0"
}

@test "a delayer whose queue the kernel refuses (another's bind: EPERM) says so and is never ready" {
  lt_require_root
  local ns="ltsuite-ndbind-$$" first second
  ip netns add "$ns"
  # Two delayers on one queue in a namespace of the test's own: the kernel gives it to the first.
  coproc FIRST { NET_RTT_MS=10 PYTHONPATH="$LT_ROOT/scripts" exec ip netns exec "$ns" python3 -S -m ltsuite.netdelay \
    31 "$BATS_TEST_TMPDIR/first.json" 2>"$BATS_TEST_TMPDIR/first.log"; }
  first="$(timeout 10 head -n 1 <&"${FIRST[0]}")" || true
  second="$(NET_RTT_MS=10 PYTHONPATH="$LT_ROOT/scripts" timeout 10 ip netns exec "$ns" python3 -S -m ltsuite.netdelay \
    31 "$BATS_TEST_TMPDIR/second.json" 2>"$BATS_TEST_TMPDIR/second.log")" && status=0 || status=$?
  lt_end "$FIRST_PID"
  ip netns del "$ns"
  [ "$first" = ready ] || fail "the first delayer: '$first' $(cat "$BATS_TEST_TMPDIR/first.log")"
  [ "$status" -eq 1 ] || fail "the second delayer: exit $status, said '$second'"
  [ -z "$second" ] || fail "the second delayer said '$second' on a queue it did not get"
  run cat "$BATS_TEST_TMPDIR/second.log"
  assert_output "netdelay: queue 31: the kernel refused the delayer's configuration: Operation not permitted"
}

@test "netdelay_restart: the delayer is told to count again and says so; one that does not answer fails the cell" {
  mkdir -p "$BATS_TEST_TMPDIR/cell"
  NETDELAY_PID=""
  run netdelay_restart "$BATS_TEST_TMPDIR/cell"
  assert_success
  # A stand-in delayer: "restarted" on SIGUSR1, as ltsuite.netdelay answers.
  coproc NETDELAY_IO { trap 'echo restarted' USR1; echo ready; while :; do sleep 0.05; done; }
  NETDELAY_PID="$NETDELAY_IO_PID"
  read -r _ <&"${NETDELAY_IO[0]}"
  netdelay_restart "$BATS_TEST_TMPDIR/cell"
  kill "$NETDELAY_PID"
  wait "$NETDELAY_PID" || true
  # One that ignores it.
  coproc NETDELAY_IO { trap '' USR1; echo ready; while :; do sleep 0.05; done; }
  NETDELAY_PID="$NETDELAY_IO_PID"
  read -r _ <&"${NETDELAY_IO[0]}"
  echo "netdelay: stuck" >"$BATS_TEST_TMPDIR/cell/netdelay.log"
  cell_error ""
  netdelay_restart "$BATS_TEST_TMPDIR/cell" || status=$?
  kill "$NETDELAY_PID"
  wait "$NETDELAY_PID" || true
  [ "${status:-0}" -eq 1 ]
  [ "$CELL_ERROR" = "the delayer did not start its count again after the warm-up (netdelay: stuck)" ]
}
