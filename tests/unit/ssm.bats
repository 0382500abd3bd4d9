#!/usr/bin/env bats
# The fan-out's pieces without AWS: segments, quoting, settings, the
# per-instance command, summary extraction, the aggregated row, and the
# k6-operator manifest.
# Each @test runs in its own subshell on purpose: settings made in one never leak.
# shellcheck disable=SC2016,SC2034 # SC2016: jq programs and literal backquotes in single quotes on purpose; SC2034: assigned through a nameref, or read by the sourced library under test
# shellcheck disable=SC2030,SC2031

setup_file() {
  load '../test_helper'
  # PyYAML (to read the k6-operator manifest back) lives in the project's venv.
  "$LT_ROOT/scripts/setup/install-aws-tools.sh"
}

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix k6 results
  LT_PROG="test"
  PYTHON="$LT_ROOT/.tools/venv/bin/python"
  MATRIX="$BATS_TEST_TMPDIR/small.matrix"
  printf 'VUS=4\nDURATION=2s\nDELAY_MS=10 20\n' | lt_write "$MATRIX"
  # No setting of the caller's shell may leak into these tests.
  unset TARGET_URL ALLOW_REMOTE_TARGET FANOUT_INFLUXDB_URL FANOUT_INFLUXDB_QUERY_URL FANOUT_S3_BUCKET \
    FANOUT_REGION FANOUT_PROFILE
}

# The segments, the quoting of the commands' words and the tag filter:
# tests/python/test_fanout.py, test_ssmcommand.py and test_awscalls.py.

@test "fanout.env: a key in the environment overrides the file" {
  export FANOUT_POLL_INTERVAL=9 FANOUT_S3_BUCKET=my-results
  run "$LT_ROOT/scripts/fanout-cell.sh" cell "$MATRIX" 1 "$BATS_TEST_TMPDIR"
  assert_success
  run cat "$BATS_TEST_TMPDIR/settings.env"
  assert_line FANOUT_POLL_INTERVAL=9
  assert_line FANOUT_S3_BUCKET=my-results
  assert_line "FANOUT_TAG_FILTER=Name=k6-*"
  run cat "$BATS_TEST_TMPDIR/cell-info.env"
  assert_line CELL_ID=01_delay_ms-10
  assert_line CELLS_TOTAL=2
  assert_line AXES=DELAY_MS
}

@test "fanout.env: a bad value from the environment is a usage error, before anything is sent" {
  FANOUT_POLL_INTERVAL=soon TARGET_URL=http://127.0.0.1:9 FANOUT_S3_BUCKET=b \
    run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "ssm-fanout: command line: FANOUT_POLL_INTERVAL"
  refute_output --partial "Dry run"
}

@test "fanout.env holds no credentials and is never sourced" {
  run grep -iE 'secret|password|token|access_key' "$LT_ROOT/env/fanout.env"
  refute_output --regexp '^[A-Z_]*(SECRET|PASSWORD|TOKEN|ACCESS_KEY)[A-Z_]*='
  run grep -nE '(source|\.)[[:space:]]+[^ ]*fanout\.env' "$LT_ROOT/scripts/ssm-fanout.sh" "$LT_ROOT/scripts/fanout-cell.sh" "$LT_ROOT/scripts/lib/fanout.sh" "$LT_ROOT/scripts/k6-operator.sh"
  assert_failure
}

@test "a URL with a user or password in it is refused" {
  FANOUT_INFLUXDB_URL=http://k6:s3cret@10.0.0.5:8086/k6 TARGET_URL=http://127.0.0.1:9 FANOUT_S3_BUCKET=b \
    run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "FANOUT_INFLUXDB_URL: the URL has a user or password"
  refute_output --partial "s3cret@10"
  TARGET_URL=ftp://x FANOUT_S3_BUCKET=b run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "TARGET_URL: 'ftp://x' is not an http"
}

# The tag filter as DescribeInstances' filters: tests/python/test_awscalls.py.
@test "ssm-fanout: a tag filter without KEY=PATTERN is a usage error, before any AWS call" {
  FANOUT_TAG_FILTER=k6 TARGET_URL=http://127.0.0.1:9 FANOUT_S3_BUCKET=b AWS_ENDPOINT_URL="http://127.0.0.1:$(lt_free_port)" \
    TMPDIR="$BATS_TEST_TMPDIR" run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run "$MATRIX"
  assert_failure 2
  assert_output "ssm-fanout: FANOUT_TAG_FILTER: 'k6' is not KEY=PATTERN (e.g. Name=k6-*)"
}

# The InfluxDB database of a URL: tests/python/test_fanoutrow.py.

# build_command [WITH_INFLUXDB]: the command of one instance (i-0abc, the
# second of 3) for the small matrix, as a dry run writes it (the real run
# builds it with the same functions); with an argument, it writes to
# InfluxDB. MAX_BYTES (FANOUT_MAX_COMMAND_BYTES) small: the scenario files go
# through S3, not inline. PLAN_DIR is the dry run's directory.
# shellcheck disable=SC2120 # the argument comes through bats' run, which shellcheck does not follow
build_command() {
  local -a influx=()
  [[ -z "${1:-}" ]] || influx=(FANOUT_INFLUXDB_URL=http://10.0.0.5:8086/k6)
  env "${influx[@]}" TARGET_URL=http://10.9.8.7:8080 FANOUT_S3_BUCKET=lt-bucket FANOUT_S3_PREFIX=prefix \
    FANOUT_MAX_COMMAND_BYTES="${MAX_BYTES:-40000}" TMPDIR="$BATS_TEST_TMPDIR" \
    "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-0abc,i-0bbb,i-0aaa "$MATRIX" >"$BATS_TEST_TMPDIR/plan.txt"
  PLAN_DIR="$(echo "$BATS_TEST_TMPDIR"/ssm-fanout-dry-run.*)"
  cat "$PLAN_DIR/command-i-0abc.sh"
}

# run_id_of_plan: the run id the dry run planned (its manifest's).
run_id_of_plan() {
  jq -r .run_id "$(echo "$BATS_TEST_TMPDIR"/ssm-fanout-dry-run.*)/manifest.json"
}

@test "an instance's command: its segment, the tags, the cell's env, POSIX sh" {
  build_command >"$BATS_TEST_TMPDIR/command.sh"
  run cat "$BATS_TEST_TMPDIR/command.sh"
  assert_line --partial "--execution-segment 1/3:2/3"
  assert_line --partial "--execution-segment-sequence 0,1/3,2/3,1"
  assert_line --partial "--tag instance=i-0abc"
  assert_line --partial "--tag run_id=$(run_id_of_plan)"
  assert_line --partial "--tag cell=01_delay_ms-10"
  assert_line --partial "-e VUS=4"
  assert_line --partial "-e DELAY_MS=10"
  assert_line --partial "-e TARGET_URL=http://10.9.8.7:8080"
  assert_line --partial "--address ''"
  refute_output --partial "influxdb="
  assert_line "LT_SUMMARY_BEGIN='=== k6-fanout summary begin ==='"
  # k6 writes every request's samples, which the instance reduces to its histogram.
  assert_line --partial "--out json=samples.json.gz"
  assert_line "LT_HISTOGRAM_BEGIN='=== k6-fanout histogram begin ==='"
  assert_line "LT_KEEP_SAMPLES=0"
  # The logic is the repo's instance script, as it is.
  [ "$(tail -n "$(wc -l <"$LT_ROOT/scripts/ssm-instance.sh")" "$BATS_TEST_TMPDIR/command.sh")" = "$(cat "$LT_ROOT/scripts/ssm-instance.sh")" ]
  sh -n "$BATS_TEST_TMPDIR/command.sh"
  if command -v dash >/dev/null; then dash -n "$BATS_TEST_TMPDIR/command.sh"; fi
}

@test "an instance's command has the operator's region but never the operator's --profile" {
  export FANOUT_PROFILE=ops-admin FANOUT_REGION=eu-west-1
  MAX_BYTES=15000 build_command >"$BATS_TEST_TMPDIR/command.sh"
  run cat "$BATS_TEST_TMPDIR/command.sh"
  # The instance's aws copies the scenario files in the region, with its own role.
  assert_line "LT_AWS_ARGS='--region"
  assert_line "eu-west-1'"
  assert_line "LT_BUNDLE_S3=s3://lt-bucket/prefix/$(run_id_of_plan)/01_delay_ms-10/scenarios.tar.gz"
  refute_output --partial "ops-admin"
  refute_output --partial "--profile"
  # The operator's own calls (boto3's) keep it.
  TARGET_URL=http://127.0.0.1:9 FANOUT_S3_BUCKET=lt-bucket TMPDIR="$BATS_TEST_TMPDIR" \
    run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-0abc "$MATRIX"
  assert_success
  assert_line "# Every AWS call goes through boto3 (region eu-west-1, profile ops-admin), one a line: client.operation(parameters)."
}

@test "an instance's command writes to InfluxDB when FANOUT_INFLUXDB_URL is set" {
  run build_command with-influxdb
  assert_line --partial "--out influxdb=http://10.0.0.5:8086/k6"
}

@test "the scenario shipped inline is a k6 archive of it and its lib/, which k6 runs as sent" {
  build_command >"$BATS_TEST_TMPDIR/command.sh"
  local b64
  b64="$(sed -n "s/^LT_BUNDLE_B64=\([A-Za-z0-9+/=]*\)$/\1/p" "$BATS_TEST_TMPDIR/command.sh")"
  [ -n "$b64" ]
  mkdir "$BATS_TEST_TMPDIR/instance"
  base64 -d <<<"$b64" | tar -xzf - -C "$BATS_TEST_TMPDIR/instance"
  run ls "$BATS_TEST_TMPDIR/instance"
  assert_output $'ltsuite\nscript.tar'
  # With the modules that reduce k6's samples to the latency histogram: the
  # repo's code without its docstrings, which reduces exactly as the repo's.
  run ls "$BATS_TEST_TMPDIR/instance/ltsuite"
  assert_output $'histogram.py\nlatency.py'
  [ "$(wc -c <"$BATS_TEST_TMPDIR/instance/ltsuite/histogram.py")" -lt "$(wc -c <"$LT_ROOT/scripts/ltsuite/histogram.py")" ]
  local fixture="$LT_ROOT/tests/python/fixtures/tiny-spike/k6-samples.json.gz" shipped trends
  # As ssm-instance.sh asks it: the trends the columns name (LT_TRENDS), as the modules shipped
  # have no ltsuite.columns.
  trends="$(grep -o 'LT_TRENDS=[^ ;]*' "$BATS_TEST_TMPDIR/command.sh" | head -n 1 | cut -d= -f2- | tr -d "'\"")"
  [ "$trends" = "$(PYTHONPATH="$LT_ROOT/scripts" python3 -c 'from ltsuite.columns import trend_metrics; print(",".join(trend_metrics()))')" ]
  shipped="$(cd "$BATS_TEST_TMPDIR/instance" && env -i PATH="$PATH" PYTHONPATH=. python3 -m ltsuite.histogram reduce --trends "$trends" "$fixture")"
  [ "$(jq .count <<<"$shipped")" -eq 74 ]
  [ "$shipped" = "$(PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.histogram reduce "$fixture")" ]
  run tar -tf "$BATS_TEST_TMPDIR/instance/script.tar"
  assert_line "file$LT_ROOT/scenarios/spike.js"
  assert_line "file$LT_ROOT/scenarios/lib/env.js"
  # k6 reads it without the repository: the options are the cell's.
  run "$LT_K6" inspect "$BATS_TEST_TMPDIR/instance/script.tar"
  assert_success
  [ "$(jq -r .scenarios.spike.vus <<<"$output")" = 4 ]
  grep -qx "  script.tar" "$BATS_TEST_TMPDIR/command.sh"
}

@test "a script of one's own ships in its entry module, with the suite's tags and trend statistics" {
  mkdir -p "$BATS_TEST_TMPDIR/mine/helpers"
  printf 'export const path = "/hello";\n' >"$BATS_TEST_TMPDIR/mine/helpers/paths.js"
  printf '%s\n' "import http from 'k6/http';" "import { path } from './helpers/paths.js';" \
    "export const options = { vus: 3, duration: '2s', tags: { team: 'pay' } };" \
    "export default function () { http.get(__ENV.BASE_URL + path); }" >"$BATS_TEST_TMPDIR/mine/test.js"
  printf 'SCENARIO=%s\n' "$BATS_TEST_TMPDIR/mine/test.js" | lt_write "$MATRIX"
  build_command >"$BATS_TEST_TMPDIR/command.sh"
  run cat "$BATS_TEST_TMPDIR/command.sh"
  assert_line --partial "--tag team=pay"
  assert_line --partial "--summary-trend-stats="
  assert_line --partial "-e BASE_URL=http://10.9.8.7:8080"
  tar -xzf "$PLAN_DIR/scenarios.tar.gz" -C "$BATS_TEST_TMPDIR" script.tar
  run tar -tf "$BATS_TEST_TMPDIR/script.tar"
  assert_line --regexp "^file$BATS_TEST_TMPDIR/ssm-fanout\.[A-Za-z0-9_]+/k6-entry\.js\$"
  assert_line "file$BATS_TEST_TMPDIR/mine/test.js"
  assert_line "file$BATS_TEST_TMPDIR/mine/helpers/paths.js"
  assert_line "file$LT_ROOT/scenarios/lib/own-script.js"
  # The script's own tags, then the suite's, in that order.
  run grep -o -- "--tag [^ ']*" "$BATS_TEST_TMPDIR/command.sh"
  assert_output "$(printf -- '--tag %s\n' team=pay "run_id=$(run_id_of_plan)" cell=01 traffic=load instance=i-0abc)"
}

@test "ssm-fanout: no S3 bucket is a usage error that says why" {
  TARGET_URL=http://127.0.0.1:9 run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "FANOUT_S3_BUCKET is empty"
}

@test "ssm-fanout: no TARGET_URL is a usage error" {
  FANOUT_S3_BUCKET=b run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "TARGET_URL is empty"
}

@test "ssm-fanout: a target off loopback needs ALLOW_REMOTE_TARGET=1; a dry run only warns" {
  export FANOUT_S3_BUCKET=b TARGET_URL=http://10.9.8.7:8080
  run "$LT_ROOT/scripts/ssm-fanout.sh" --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "10.9.8.7 is not loopback; set ALLOW_REMOTE_TARGET=1"
  TMPDIR="$BATS_TEST_TMPDIR" run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-1 "$MATRIX"
  assert_success
  assert_output --partial "the real run needs ALLOW_REMOTE_TARGET=1"
}

@test "ssm-fanout: a cell past the matrix and a bad instance id are usage errors" {
  export TARGET_URL=http://127.0.0.1:9 FANOUT_S3_BUCKET=b
  run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --cell 3 --instances i-1 "$MATRIX"
  assert_failure 2
  assert_output --partial "the matrix has 2 cell(s)"
  run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances 'i-1;reboot' "$MATRIX"
  assert_failure 2
}

# operator_manifest ARGS...: the manifest as JSON (one array of documents),
# read back with a real YAML parser.
operator_manifest() {
  TARGET_URL=http://10.9.8.7:8080 ALLOW_REMOTE_TARGET=1 "$LT_ROOT/scripts/k6-operator.sh" "$@" >"$BATS_TEST_TMPDIR/testrun.yaml"
  "$PYTHON" -c 'import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))' \
    "$BATS_TEST_TMPDIR/testrun.yaml"
}

@test "k6-operator: a valid YAML ConfigMap and TestRun with the given parallelism" {
  run operator_manifest --parallelism 4 --run-id r42 "$MATRIX"
  assert_success
  local docs="$output"
  [ "$(jq -r '[.[].kind] | join(",")' <<<"$docs")" = "ConfigMap,TestRun" ]
  [ "$(jq -r '.[1].apiVersion' <<<"$docs")" = "k6.io/v1alpha1" ]
  [ "$(jq -r '.[1].spec.parallelism' <<<"$docs")" = 4 ]
  [ "$(jq -r '.[1].spec.script.configMap.name == .[0].metadata.name' <<<"$docs")" = true ]
  [ "$(jq -r '.[1].spec.script.configMap.file as $f | .[0].binaryData | has($f)' <<<"$docs")" = true ]
}

@test "k6-operator: env from the cell, run and cell tags in the arguments" {
  run operator_manifest --parallelism 2 --run-id r42 --cell 2 "$MATRIX"
  local docs="$output"
  run jq -r '.[1].spec.runner.env[] | "\(.name)=\(.value)"' <<<"$docs"
  assert_line VUS=4
  assert_line DELAY_MS=20
  assert_line TARGET_URL=http://10.9.8.7:8080
  assert_line RUN_ID=r42
  assert_line CELL_ID=02_delay_ms-20
  run jq -r '.[1].spec.arguments' <<<"$docs"
  assert_output --partial "--tag run_id=r42"
  assert_output --partial "--tag cell=02_delay_ms-20"
}

@test "k6-operator: the ConfigMap's archive is a k6 archive of the scenario that k6 can load" {
  operator_manifest --parallelism 2 --run-id r42 "$MATRIX" \
    | jq -r '.[0].binaryData["archive.tar"]' | base64 -d >"$BATS_TEST_TMPDIR/archive.tar"
  run tar -tf "$BATS_TEST_TMPDIR/archive.tar"
  assert_line metadata.json
  assert_line --regexp 'scenarios/lib/env\.js$'
  run "$LT_K6" inspect "$BATS_TEST_TMPDIR/archive.tar"
  assert_success
  [ "$(jq -r '.tags.run_id' <<<"$output")" = r42 ]
  [ "$(jq -r '.scenarios.spike.vus' <<<"$output")" = 4 ]
}

@test "k6-operator: a script of one's own goes in its entry module, with the suite's tags" {
  printf 'SCENARIO=%s\n' "$LT_ROOT/tests/fixtures/own-script/spike-test.js" | lt_write "$MATRIX"
  run operator_manifest --parallelism 2 --run-id r42 "$MATRIX"
  assert_success
  local docs="$output"
  run jq -r '.[1].spec.arguments' <<<"$docs"
  assert_output --partial "--tag run_id=r42"
  assert_output --partial "--tag traffic=load"
  assert_output --partial "--summary-trend-stats="
  jq -r '.[0].binaryData["archive.tar"]' <<<"$docs" | base64 -d >"$BATS_TEST_TMPDIR/archive.tar"
  run tar -tf "$BATS_TEST_TMPDIR/archive.tar"
  assert_line --regexp '/k6-entry\.js$'
  assert_line "file$LT_ROOT/tests/fixtures/own-script/spike-test.js"
  run "$LT_K6" inspect "$BATS_TEST_TMPDIR/archive.tar"
  assert_success
  [ "$(jq -r '.vus' <<<"$output")" = 16 ]
}

@test "k6-operator: a target off loopback is refused without ALLOW_REMOTE_TARGET=1, as for a local run" {
  TARGET_URL=http://10.9.8.7:8080 run "$LT_ROOT/scripts/k6-operator.sh" --parallelism 2 "$MATRIX"
  assert_failure 2
  assert_output "k6-operator: TARGET_URL: 10.9.8.7 is not loopback; set ALLOW_REMOTE_TARGET=1 to send load there"
  TARGET_URL='http://[2001:db8::5]:8080' run "$LT_ROOT/scripts/k6-operator.sh" --parallelism 2 "$MATRIX"
  assert_failure 2
  assert_output --partial "TARGET_URL: [2001:db8::5] is not loopback"
  # Loopback needs nothing more.
  TARGET_URL=http://127.0.0.1:8080 run "$LT_ROOT/scripts/k6-operator.sh" --parallelism 2 "$MATRIX"
  assert_success
  assert_output --partial 'kind: "TestRun"'
}

@test "k6-operator: a tag value with a space survives the operator's split of the arguments" {
  printf 'SCENARIO=%s\n' "$LT_ROOT/tests/fixtures/own-script/tagged.js" | lt_write "$MATRIX"
  run operator_manifest --parallelism 2 --run-id r42 "$MATRIX"
  assert_success
  local docs="$output" arguments
  arguments="$(jq -r '.[1].spec.arguments' <<<"$docs")"
  [[ "$arguments" != *team* ]]
  [[ "$arguments" == *"--tag service=checkout"* ]]
  jq -r '.[0].binaryData["archive.tar"]' <<<"$docs" | base64 -d >"$BATS_TEST_TMPDIR/archive.tar"
  # What a runner pod does (k6-operator's runner job): the arguments split at
  # spaces, its own tags after them, the runner's env; the first segment of two.
  local -a words env_args
  read -r -a words <<<"$arguments"
  mapfile -t env_args < <(jq -r '.[1].spec.runner.env[] | "\(.name)=\(.value)"' <<<"$docs")
  run env -i PATH="$PATH" HOME="$BATS_TEST_TMPDIR" "${env_args[@]}" "$LT_K6" run --quiet --no-usage-report --address "" \
    --execution-segment 0:1/2 --execution-segment-sequence 0,1/2,1 "${words[@]}" \
    --tag instance_id=0 --tag testrun_name=k6-r42 --out "json=$BATS_TEST_TMPDIR/points.json" "$BATS_TEST_TMPDIR/archive.tar"
  assert_success
  run jq -c 'select(.type == "Point" and .metric == "iterations") | .data.tags
             | {team, service, run_id, cell, instance_id, traffic}' "$BATS_TEST_TMPDIR/points.json"
  assert_output '{"team":"load test","service":"checkout","run_id":"r42","cell":"01","instance_id":"0","traffic":"load"}'
}

@test "k6-operator: --parallelism is required" {
  TARGET_URL=http://10.9.8.7:8080 run "$LT_ROOT/scripts/k6-operator.sh" "$MATRIX"
  assert_failure 2
  assert_output --partial "--parallelism"
}
