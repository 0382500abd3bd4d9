#!/usr/bin/env bats
# The prediction rules of scripts/lib/rules.jq: SYN retransmission times,
# the accept queue's capacity, thread-pool waves.
# shellcheck disable=SC2016 # SC2016: jq programs and literal backquotes in single quotes on purpose

setup() {
  load '../test_helper'
}

# rule EXPR: evaluate a jq expression with rules.jq included; compact output.
rule() {
  jq -nc -L "$LT_ROOT/scripts/lib" "include \"rules\"; $1"
}

@test "classic backoff (linear timeouts 0): SYNs at 0, 1, 3, 7, ... s, give-up at 2^(retries+1) - 1 s" {
  run rule '[range(2; 7) as $r | [$r, syn_send_times($r; 0), syn_give_up_s($r; 0)]]'
  assert_output '[[2,[0,1,3],7],[3,[0,1,3,7],15],[4,[0,1,3,7,15],31],[5,[0,1,3,7,15,31],63],[6,[0,1,3,7,15,31,63],127]]'
}

@test "linear timeouts 4 (the 6.x default): 1 s steps first, then doubling, give-up at the first timer past the classic time" {
  run rule '[range(2; 7) as $r | [$r, syn_send_times($r; 4), syn_give_up_s($r; 4)]]'
  assert_output '[[2,[0,1,2,3,4,5],7],[3,[0,1,2,3,4,5,7,11],19],[4,[0,1,2,3,4,5,7,11,19],35],[5,[0,1,2,3,4,5,7,11,19,35],67],[6,[0,1,2,3,4,5,7,11,19,35,67],131]]'
}

@test "the schedules measured on this kernel (retries 3, linear 2)" {
  run rule '[syn_send_times(3; 2), syn_give_up_s(3; 2)]'
  assert_output '[[0,1,2,3,5,9],17]'
}

@test "past 6 retries the model adds 120 s per retry and the RTO stops at 120 s" {
  run rule '[syn_send_times(8; 0), syn_give_up_s(8; 0)]'
  assert_output '[[0,1,3,7,15,31,63,127,247],367]'
}

@test "SYNs before the request timeout: 5, 10 and 60 s windows cut the schedule" {
  run rule '[(5, 10, 60) as $w | [syns_within(4; 0; $w), syns_within(4; 4; $w), syns_within(6; 4; $w), syns_within(2; 0; $w)]]'
  # linear 0, retries 4: 0 1 3 | 7 | 15; linear 4: 0..4 | 5 7 | 11 19;
  # retries 2 give up at 7 s whatever the window.
  assert_output '[[3,5,5,3],[4,7,7,3],[5,9,10,3]]'
}

@test "the listen backlog is accept-count capped at somaxconn" {
  run rule '[listen_backlog(100; 4096), listen_backlog(10000; 128), listen_backlog(5; 5)]'
  assert_output '[100,128,5]'
}

@test "capacity is max-connections + backlog + 1 (seed 003: 8192 + 100 + 1)" {
  run rule '[server_capacity(8192; 100; 4096), server_capacity(2; 1; 4096), server_capacity(3000; 10000; 128), server_capacity(2; 5; 2)]'
  assert_output '[8293,4,3129,5]'
}

@test "the queue race allows CPUs - 1 more" {
  run rule '[capacity_slack(1), capacity_slack(2), capacity_slack(8)]'
  assert_output '[0,1,7]'
}

@test "latency comes in waves: seed 003's 3000 users on 200 threads at 5 s end after 75 s" {
  run rule '[waves_ms(3000; 200; 5000), waves_ms(201; 200; 1000), waves_ms(200; 200; 1000), waves_ms(0; 200; 1000)]'
  assert_output '[75000,2000,1000,null]'
}

@test "closed-model throughput: the thread pool limits it once users exceed it" {
  run rule '[closed_tps(1000; 200; 5000; 0), closed_tps(10; 200; 100; 0), closed_tps(10; 200; 100; 400), closed_tps(10; 200; 0; 0)]'
  assert_output '[40,100,20,null]'
}

@test "k6 durations in milliseconds" {
  run rule '["500ms", "10s", "1m30s", "1h"] | map(duration_ms)'
  assert_output '[500,10000,90000,3600000]'
}
