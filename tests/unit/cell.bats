#!/usr/bin/env bats
# Small pieces of the cell engine (scripts/lib/cell.sh).

setup() {
  load '../test_helper'
  lt_source_libs cell
}

@test "cell_url_port: the port a target URL names, else its scheme's" {
  run cell_url_port http://127.0.0.1:18080/path?x=1
  assert_output 18080
  run cell_url_port https://user:pw@example.test:8443
  assert_output 8443
  run cell_url_port http://127.0.0.1/
  assert_output 80
  run cell_url_port 'https://[::1]/health'
  assert_output 443
  run cell_url_port 'http://[::1]:9090/'
  assert_output 9090
}

@test "seconds_since_us: the seconds since a time of bash's clock, to the hundredth" {
  local now="${EPOCHREALTIME/[.,]/}"
  run seconds_since_us "$((now - 2345000))"
  assert_output --regexp '^2\.(3[5-9]|[4-9][0-9])$'
  run seconds_since_us "$((now - 4000))"
  assert_output --regexp '^0\.[0-9][0-9]$'
}
