#!/usr/bin/env bats
# scripts/ssm-instance.sh on its own: what a fan-out instance runs, with its
# settings in the environment, a stand-in for k6 that records its arguments,
# and (for the S3 case) a stand-in for the AWS CLI that copies a local file.
# Run with dash when the machine has it (an instance's /bin/sh may not be bash).
# Each @test runs in its own subshell on purpose: settings made in one never leak.
# shellcheck disable=SC2030,SC2031

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  SH="$(command -v dash || command -v sh)"
  mkdir -p "$BATS_TEST_TMPDIR/bin" "$BATS_TEST_TMPDIR/src/lib"
  printf 'export default function () {}\n' >"$BATS_TEST_TMPDIR/src/spike.js"
  printf 'export const x = 1;\n' >"$BATS_TEST_TMPDIR/src/lib/env.js"
  tar -czf "$BATS_TEST_TMPDIR/bundle.tar.gz" -C "$BATS_TEST_TMPDIR/src" spike.js lib
  # k6: its arguments, one a line, and the files it saw; a summary; exit status K6_STATUS.
  cat >"$BATS_TEST_TMPDIR/bin/k6" <<'SH'
#!/bin/sh
for arg in "$@"; do printf '%s\n' "$arg"; done >"$K6_ARGS_FILE"
ls >>"$K6_ARGS_FILE.files"
echo "k6 ran"
printf '{"metrics":{}}' >summary.json
exit "${K6_STATUS:-0}"
SH
  chmod +x "$BATS_TEST_TMPDIR/bin/k6"
  export K6_ARGS_FILE="$BATS_TEST_TMPDIR/k6-args"
  export LT_WORKDIR="$BATS_TEST_TMPDIR/work/run1/01/i-0abc"
  export LT_K6="$BATS_TEST_TMPDIR/bin/k6"
  export LT_BUNDLE_S3="" LT_AWS_ARGS=""
  LT_BUNDLE_B64="$(base64 -w0 "$BATS_TEST_TMPDIR/bundle.tar.gz")"
  LT_BUNDLE_SHA256="$(sha256sum "$BATS_TEST_TMPDIR/bundle.tar.gz" | cut -d' ' -f1)"
  export LT_BUNDLE_B64 LT_BUNDLE_SHA256
  export LT_CELL_ENV=$'SCENARIO=spike\nNOTE=it\'s "quoted" $HOME'
  export LT_START_AT=0
  export LT_SUMMARY_BEGIN='=== begin ===' LT_SUMMARY_END='=== end ==='
}

@test "it unpacks the files, keeps cell.env, runs k6 with its arguments as given and prints the summary" {
  run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run --tag 'name=a b' -e "NOTE=it's" spike.js
  assert_success
  assert_line "k6 ran"
  assert_line "=== begin ==="
  assert_line '{"metrics":{}}'
  assert_line "=== end ==="
  assert_line "k6-fanout exit status: 0"
  [ "$(cat "$K6_ARGS_FILE")" = $'run\n--tag\nname=a b\n-e\nNOTE=it\'s\nspike.js' ]
  grep -qx spike.js "$K6_ARGS_FILE.files"
  grep -qx lib "$K6_ARGS_FILE.files"
  [ "$(cat "$LT_WORKDIR/cell.env")" = "$LT_CELL_ENV" ]
}

@test "a crossed threshold (99) is a result; any other k6 status is the command's" {
  K6_STATUS=99 run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run spike.js
  assert_success
  assert_line "k6-fanout exit status: 99"
  K6_STATUS=107 run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run spike.js
  assert_failure 107
  assert_line "=== end ==="
}

@test "files that do not match their checksum stop it before k6 starts" {
  LT_BUNDLE_SHA256="$(printf '0%.0s' {1..64})" run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run spike.js
  assert_failure
  [ ! -e "$K6_ARGS_FILE" ]
}

@test "no k6 on the instance: status 127 and a message" {
  LT_K6=/nonexistent/k6 run -127 "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run spike.js
  assert_output --partial "k6-fanout: no k6 at /nonexistent/k6 on this instance"
}

@test "the files can come from S3: aws gets the global arguments one a line, then the copy" {
  cat >"$BATS_TEST_TMPDIR/bin/aws" <<SH
#!/bin/sh
for arg in "\$@"; do printf '%s\n' "\$arg"; done >"$BATS_TEST_TMPDIR/aws-args"
eval "last=\\\${\$#}"
cp "$BATS_TEST_TMPDIR/bundle.tar.gz" "\$last"
SH
  chmod +x "$BATS_TEST_TMPDIR/bin/aws"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" LT_BUNDLE_B64="" LT_BUNDLE_S3="s3://b/k/scenarios.tar.gz" \
    LT_AWS_ARGS=$'--region\neu west *\n--profile\np' run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run spike.js
  assert_success
  [ "$(cat "$BATS_TEST_TMPDIR/aws-args")" = $'--region\neu west *\n--profile\np\ns3\ncp\n--only-show-errors\ns3://b/k/scenarios.tar.gz\nscenarios.tar.gz' ]
  grep -qx spike.js "$K6_ARGS_FILE.files"
}

@test "every instance waits for the common start second" {
  LT_START_AT=$(($(date +%s) + 2))
  run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run spike.js
  assert_success
  [ "$(date -r "$K6_ARGS_FILE" +%s)" -ge "$LT_START_AT" ]
  [ "$LT_START_AT" -gt 2 ]
}
