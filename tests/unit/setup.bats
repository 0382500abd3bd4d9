#!/usr/bin/env bats
# The set-up scripts: one clear message for what the suite cannot install.

setup() {
  load '../test_helper'
}

@test "a missing Go is named, with what to install" {
  local bin="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$bin"
  # A PATH with the basic tools but no go.
  for tool in bash dirname cat sed printf; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
  PATH="$bin" run "$LT_ROOT/scripts/setup/require.sh" go
  assert_failure 1
  assert_output --partial "missing prerequisites: Go >= 1.22 (golang)"
  assert_output --partial "apt-get install"
}

@test "present prerequisites pass silently" {
  run "$LT_ROOT/scripts/setup/require.sh" go java mvn npm
  assert_success
  assert_output ""
}

@test "an unknown prerequisite is a usage error" {
  run "$LT_ROOT/scripts/setup/require.sh" cobol
  assert_failure 2
  assert_output --partial "unknown prerequisite 'cobol'"
}

@test "the Go installers ask the proxy only, without the direct fallback" {
  source "$LT_ROOT/scripts/lib/common.sh"
  # shellcheck disable=SC2317 # called by go_proxy_without_direct, in place of Go
  go() { printf 'https://proxy.example,direct\n'; }
  run go_proxy_without_direct
  assert_output "https://proxy.example"
  go() { printf 'direct\n'; }
  run go_proxy_without_direct
  assert_failure
}
