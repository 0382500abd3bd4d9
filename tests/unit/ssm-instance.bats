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
# --out json=FILE: recorded samples of a real k6 run (74 answered requests).
for arg in "$@"; do
  case "$arg" in json=*) cp "$K6_SAMPLES_FIXTURE" "${arg#json=}" ;; esac
done
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
  export LT_HISTOGRAM_BEGIN='=== histogram begin ===' LT_HISTOGRAM_END='=== histogram end ==='
  export K6_SAMPLES_FIXTURE="$LT_ROOT/tests/python/fixtures/tiny-spike/k6-samples.json.gz"
}

# bundle_with_modules: the bundle as ltsuite.fanoutsend.bundle makes it: the scenario files
# and the modules that reduce k6's samples.
bundle_with_modules() {
  PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.ssm instance-modules "$BATS_TEST_TMPDIR/src"
  tar -czf "$BATS_TEST_TMPDIR/bundle.tar.gz" -C "$BATS_TEST_TMPDIR/src" spike.js lib ltsuite
  LT_BUNDLE_B64="$(base64 -w0 "$BATS_TEST_TMPDIR/bundle.tar.gz")"
  LT_BUNDLE_SHA256="$(sha256sum "$BATS_TEST_TMPDIR/bundle.tar.gz" | cut -d' ' -f1)"
}

# printed_histogram: the JSON between the histogram markers of $output.
printed_histogram() {
  sed -n "/^$LT_HISTOGRAM_BEGIN\$/,/^$LT_HISTOGRAM_END\$/p" <<<"$output" | sed '1d;$d'
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

@test "k6's samples become the instance's latency histogram, printed after the summary; the samples go" {
  bundle_with_modules
  run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run --out json=samples.json.gz spike.js
  assert_success
  assert_line "=== histogram begin ==="
  assert_line "=== histogram end ==="
  # The 74 answered load requests of the recorded run, the extremes exact.
  run -0 jq -c "[.count, .accuracy, .max]" <<<"$(printed_histogram)"
  assert_output "[74,0.005,157.829025]"
  [ -s "$LT_WORKDIR/histogram.json" ]
  [ ! -e "$LT_WORKDIR/samples.json.gz" ]
  LT_KEEP_SAMPLES=1 run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run --out json=samples.json.gz spike.js
  assert_success
  [ -s "$LT_WORKDIR/samples.json.gz" ]
}

@test "an instance that cannot reduce its samples says why, prints no histogram, and still succeeds" {
  # The bundle of setup() has no ltsuite modules.
  run "$SH" "$LT_ROOT/scripts/ssm-instance.sh" run --out json=samples.json.gz spike.js
  assert_success
  assert_line --partial "k6-fanout: no latency histogram: "
  assert_output --partial "No module named 'ltsuite'"
  [ -z "$(printed_histogram)" ]
  assert_line '{"metrics":{}}'
  [ -s "$LT_WORKDIR/samples.json.gz" ]
}

@test "a k6-operator pod: k6-pod.sh hands k6 run to it with the samples added; files in place, no fetch, no wait" {
  # The pod's mount: the modules below LT_BUNDLE_DIR; nothing to fetch or check.
  PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.ssm instance-modules "$BATS_TEST_TMPDIR/mount"
  cp "$LT_ROOT/scripts/ssm-instance.sh" "$BATS_TEST_TMPDIR/mount/"
  export LT_BUNDLE_DIR="$BATS_TEST_TMPDIR/mount" LT_POD_NAME=k6-run-01-2 LT_WORKDIR="$BATS_TEST_TMPDIR/pods"
  LT_START_AT="" LT_BUNDLE_B64="" LT_BUNDLE_SHA256="" run timeout 60 "$SH" "$LT_ROOT/scripts/k6-pod.sh" \
    run --quiet /test/archive.tar --address=0.0.0.0:6565 --paused --tag instance_id=2
  assert_success
  [ "$(cat "$K6_ARGS_FILE")" = $'run\n--quiet\n/test/archive.tar\n--address=0.0.0.0:6565\n--paused\n--tag\ninstance_id=2\n--out\njson=samples.json.gz\n-e\nSUMMARY_FILE='"$BATS_TEST_TMPDIR/pods/k6-run-01-2/summary.json" ]
  [ "$(printed_histogram | jq .count)" -eq 74 ]
  assert_line "k6-fanout exit status: 0"
  # Any other k6 command (the initializer's archive and inspect) goes to k6 as it is.
  cd "$BATS_TEST_TMPDIR"
  run "$SH" "$LT_ROOT/scripts/k6-pod.sh" inspect /test/archive.tar
  assert_success
  [ "$(cat "$K6_ARGS_FILE")" = $'inspect\n/test/archive.tar' ]
}
