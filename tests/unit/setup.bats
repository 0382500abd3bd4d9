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

@test "install-k6 refuses a K6_VERSION that is not a release, before building anything" {
  # shellcheck disable=SC2031 # SC2031: LT_ROOT is the helper's; another test's source of common.sh ran in its own process
  run env LT_K6="$BATS_TEST_TMPDIR/k6" K6_VERSION=v2 "$LT_ROOT/scripts/setup/install-k6.sh"
  assert_failure 2
  assert_output --partial "K6_VERSION=v2: not a k6 release such as v1.8.1 or v2.2.0"
  [ ! -e "$BATS_TEST_TMPDIR/k6" ]
}

@test "install-k6 keeps a k6 of the pinned version and rebuilds another" {
  printf '#!/bin/sh\necho "k6 v2.2.0 (go1.26.8, linux/amd64)"\n' >"$BATS_TEST_TMPDIR/k6"
  chmod +x "$BATS_TEST_TMPDIR/k6"
  # shellcheck disable=SC2031 # SC2031: LT_ROOT is the helper's; another test's source of common.sh ran in its own process
  run env LT_K6="$BATS_TEST_TMPDIR/k6" K6_VERSION=v2.2.0 "$LT_ROOT/scripts/setup/install-k6.sh"
  assert_success
  assert_output ""
  # A version that only starts like the pinned one is another version.
  printf '#!/bin/sh\necho "k6 v2.2.01 (go1.26.8, linux/amd64)"\n' >"$BATS_TEST_TMPDIR/k6"
  # shellcheck disable=SC2031 # SC2031: LT_ROOT is the helper's; another test's source of common.sh ran in its own process
  run env GOPROXY=off LT_K6="$BATS_TEST_TMPDIR/k6" K6_VERSION=v2.2.0 "$LT_ROOT/scripts/setup/install-k6.sh"
  assert_failure
  assert_output --partial "building k6 v2.2.0 (go.k6.io/k6/v2)"
}

@test "LT_PYTHON: python3 in PATH as it is when a program (no Python started to ask), the interpreter a script there runs" {
  local real bin="$BATS_TEST_TMPDIR/bin" log="$BATS_TEST_TMPDIR/asked"
  real="$(python3 -c 'import sys; print(sys.executable)')"
  mkdir -p "$bin"
  printf '#!/bin/sh\necho asked >>"%s"\nexec "%s" "$@"\n' "$log" "$real" >"$bin/python3"
  chmod +x "$bin/python3"
  run env -u LT_PYTHON PATH="$bin:$PATH" bash "$BATS_TEST_DIRNAME/../fixtures/print-lt-python.bash"
  [ "$status" -eq 0 ]
  [ "$output" = "$real" ]
  [ "$(wc -l <"$log")" -eq 1 ]
  ln -sf "$real" "$bin/python3"
  rm -f "$log"
  run env -u LT_PYTHON PATH="$bin:$PATH" bash "$BATS_TEST_DIRNAME/../fixtures/print-lt-python.bash"
  [ "$output" = "$bin/python3" ]
  [ ! -e "$log" ]
}
