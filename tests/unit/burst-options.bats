#!/usr/bin/env bats
# The burst scenario's k6 options for the users a VU carries (k6 inspect
# runs its init code; nothing is sent): VUs for the users, one iteration a
# VU when it carries several, and connection reuse off when they make one
# request each, so each request waits for its own connection.
# shellcheck disable=SC2154 # SC2154: output is set by bats' run

setup() {
  load '../test_helper'
}

# burst_options USERS_PER_VU REQUESTS_PER_VU: k6's options for 300 users.
burst_options() {
  "$LT_ROOT/.tools/bin/k6" inspect --include-system-env-vars=false -e TARGET_URL=http://127.0.0.1:9 -e VUS=300 \
    -e "USERS_PER_VU=$1" -e "REQUESTS_PER_VU=$2" -e DURATION=3s -e BURST_LEAD_MS=1000 -e REQUEST_TIMEOUT=4s \
    -e GRACEFUL_STOP=1s -e DELAY_MS=0 "$LT_ROOT/scenarios/burst.js" \
    | jq -c '{vus: .scenarios.burst.vus, iterations: .scenarios.burst.iterations, reuse_off: (.noConnectionReuse // false)}'
}

@test "users of one request each in a VU of several: a VU per 30 users, one iteration, no connection reuse" {
  run burst_options 30 1
  [ "$status" -eq 0 ]
  [ "$output" = '{"vus":10,"iterations":1,"reuse_off":true}' ]
}

@test "a VU per user, or users of several requests, keep k6's connection reuse" {
  run burst_options 1 1
  [ "$output" = '{"vus":300,"iterations":1,"reuse_off":false}' ]
  run burst_options 1 3
  [ "$output" = '{"vus":300,"iterations":3,"reuse_off":false}' ]
  run burst_options 30 2
  [ "$output" = '{"vus":10,"iterations":1,"reuse_off":false}' ]
}
