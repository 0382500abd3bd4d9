#!/usr/bin/env bats
# The fan-out against moto's AWS stand-in on 127.0.0.1, with the real AWS CLI,
# the real target on loopback and real k6.
# Each @test runs in its own subshell on purpose: what one sources or sets never leaks.
# shellcheck disable=SC2030,SC2031
#
# What was sent is read from moto's request recording (MOTO_ENABLE_RECORDING):
# its ListCommands lists every instance of the region for a command sent to
# one, and it has no ListCommandInvocations.
#
# moto records what is sent but runs nothing, and reports every invocation as
# Success at once. So the tests play the instances themselves: they run each
# sent command locally (against the target on 127.0.0.1) and put its stdout
# where SSM would, in the S3 output location. An instance that never answers
# is one whose command id moto never issued (unanswered): its state is never
# terminal. What else moto cannot give (Failed, TimedOut, Cancelled, a
# throttled API) the poller's tests give with botocore's Stubber
# (tests/python/test_ssm.py).

setup_file() {
  load '../test_helper'
  "$LT_ROOT/scripts/setup/install-aws-tools.sh"
  export VENV="$LT_ROOT/.tools/venv"
  export AWS="$VENV/bin/aws"
  # A secret that must never show up in a command, a result or a dry run.
  export CREDENTIAL_MARKER="lt-secret-$RANDOM$RANDOM"
  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY="$CREDENTIAL_MARKER"
  export AWS_SESSION_TOKEN="token-$CREDENTIAL_MARKER" AWS_DEFAULT_REGION=us-east-1
  # The machine's own AWS configuration stays out of the tests; and an
  # operation moto lacks (cancel-command) fails at once instead of retrying.
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_MAX_ATTEMPTS=1
  unset AWS_PROFILE AWS_REGION

  start_moto
  start_target
  start_influxd
  make_fleet

  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  export FANOUT_S3_BUCKET=lt-fanout-test FANOUT_K6_PATH="${LT_K6:-$LT_ROOT/.tools/bin/k6}"
  export FANOUT_WORKDIR="$BATS_FILE_TMPDIR/on-instances" FANOUT_START_DELAY=2 FANOUT_POLL_INTERVAL=1
  # The instances keep k6's raw samples, to check the percentiles against them.
  export FANOUT_KEEP_SAMPLES=1
  export MATRIX="$BATS_FILE_TMPDIR/spike.matrix"
  # 6 VUs for 3 s against /hello?delayMs=100: bounded, about 180 requests.
  printf 'VUS=6\nDURATION=3s\nDELAY_MS=100\nREQUEST_TIMEOUT=2s\nGRACEFUL_STOP=2s\nTHINK_TIME_MS=0\n' >"$MATRIX"

  # The expensive fixture: one fan-out sent, played by the "instances" at
  # once against the real target, then collected.
  "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$MATRIX" >"$BATS_FILE_TMPDIR/send.log" 2>&1
  SENT_RUN="$(readlink -f "$LT_RESULTS_DIR/latest")"
  export SENT_RUN
  play_instances "$SENT_RUN"
  set +e
  "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$SENT_RUN" >"$BATS_FILE_TMPDIR/collect.log" 2>&1
  echo "$?" >"$BATS_FILE_TMPDIR/collect.status"
  set -e

  # The same load from one instance alone (segment 0:1), for comparison.
  run_single_instance >"$BATS_FILE_TMPDIR/single.out"
}

teardown_file() {
  local name
  for name in moto target influxd; do
    if [[ -f "$BATS_FILE_TMPDIR/$name.pid" ]]; then
      kill "$(cat "$BATS_FILE_TMPDIR/$name.pid")" 2>/dev/null || true
    fi
  done
}

setup() {
  load '../test_helper'
  unset FANOUT_TAG_FILTER FANOUT_TIMEOUT FANOUT_MAX_COMMAND_BYTES
}

# --- Fixtures -----------------------------------------------------------------------------

# wait_for URL SECONDS: until URL answers (any HTTP status) or time runs out.
wait_for() {
  local deadline=$((SECONDS + $2))
  until curl -s -o /dev/null --max-time 1 "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

start_moto() {
  local port
  port="$(lt_free_port)"
  MOTO_ENABLE_RECORDING=true MOTO_RECORDER_FILEPATH="$BATS_FILE_TMPDIR/moto-recording.jsonl" \
    "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$BATS_FILE_TMPDIR/moto.log" 2>&1 3>&- &
  echo "$!" >"$BATS_FILE_TMPDIR/moto.pid"
  export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
  wait_for "$AWS_ENDPOINT_URL/moto-api/" 30 || { cat "$BATS_FILE_TMPDIR/moto.log" >&2; return 1; }
}

start_target() {
  local port management jar="$LT_ROOT/server/target/loadtest-target.jar"
  [[ -f "$jar" ]] || (cd "$LT_ROOT" && make -s "${jar#"$LT_ROOT"/}")
  port="$(lt_free_port)"
  management="$(lt_free_port)"
  env -i PATH="$PATH" HOME="${HOME:-/root}" SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" \
    MANAGEMENT_ADDRESS=127.0.0.1 MANAGEMENT_PORT="$management" \
    java -Xmx256m -jar "$jar" >"$BATS_FILE_TMPDIR/target.log" 2>&1 3>&- &
  echo "$!" >"$BATS_FILE_TMPDIR/target.pid"
  export TARGET_URL="http://127.0.0.1:$port"
  wait_for "$TARGET_URL/health" 60 || { tail -n 20 "$BATS_FILE_TMPDIR/target.log" >&2; return 1; }
}

# start_influxd: a throwaway InfluxDB on loopback when the project's influxd
# is built (make tools builds it); without it the percentile test skips.
start_influxd() {
  local http rpc dir="$BATS_FILE_TMPDIR/influxdb" bin="$LT_ROOT/.tools/bin/influxd"
  [[ -x "$bin" ]] || return 0
  http="$(lt_free_port)"
  rpc="$(lt_free_port)"
  mkdir -p "$dir"
  cat >"$dir/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc"
[meta]
  dir = "$dir/meta"
[data]
  dir = "$dir/data"
  wal-dir = "$dir/wal"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:$http"
  log-enabled = false
[monitor]
  store-enabled = false
EOF
  "$bin" run -config "$dir/influxdb.conf" >"$dir/influxd.log" 2>&1 3>&- &
  echo "$!" >"$BATS_FILE_TMPDIR/influxd.pid"
  wait_for "http://127.0.0.1:$http/ping" 60 || { tail -n 20 "$dir/influxd.log" >&2; return 1; }
  export FANOUT_INFLUXDB_URL="http://127.0.0.1:$http/k6"
}

# make_fleet: two running k6 instances, one instance with another tag, and
# the output bucket.
make_fleet() {
  local ami
  ami="$("$AWS" ec2 describe-images --query 'Images[0].ImageId' --output text)"
  "$AWS" ec2 run-instances --image-id "$ami" --count 2 --instance-type t3.micro \
    --tag-specifications 'ResourceType=instance,Tags=[{Key=Name,Value=k6-load}]' \
    --query 'Instances[].InstanceId' --output text | tr '\t' '\n' | sort >"$BATS_FILE_TMPDIR/k6-instances"
  "$AWS" ec2 run-instances --image-id "$ami" --count 1 --instance-type t3.micro \
    --tag-specifications 'ResourceType=instance,Tags=[{Key=Name,Value=web-server}]' \
    --query 'Instances[].InstanceId' --output text >"$BATS_FILE_TMPDIR/other-instance"
  "$AWS" s3api create-bucket --bucket lt-fanout-test >/dev/null
}

# play_instances RUN_DIR [ID...]: do what SSM and the instances would: run
# each instance's command (all at once), and store its stdout in the S3
# output location. Without IDs, every instance of the run.
play_instances() {
  local run_dir="$1" id prefix command_id cell pid
  shift
  local -a ids=("$@") pids=()
  [[ ${#ids[@]} -gt 0 ]] || mapfile -t ids < <(jq -r '.instances[].instance_id' "$run_dir/manifest.json")
  cell="$(jq -r .cell.id "$run_dir/manifest.json")"
  prefix="$(jq -r .fanout.s3_key_prefix "$run_dir/manifest.json")"
  for id in "${ids[@]}"; do
    timeout 60 sh "$run_dir/cells/$cell/instances/$id/command.sh" >"$BATS_FILE_TMPDIR/stdout-$id" 2>&1 3>&- &
    pids+=("$!")
  done
  # Only these: moto, the target and InfluxDB run in the background too.
  for pid in "${pids[@]}"; do
    wait "$pid" || true
  done
  for id in "${ids[@]}"; do
    command_id="$(jq -r --arg id "$id" '.instances[] | select(.instance_id == $id) | .command_id' "$run_dir/manifest.json")"
    "$AWS" s3 cp --only-show-errors "$BATS_FILE_TMPDIR/stdout-$id" \
      "s3://lt-fanout-test/$prefix/$command_id/$id/awsrunShellScript/0.awsrunShellScript/stdout"
  done
}

# run_single_instance: the command one instance alone would get (from a dry
# run), run locally; prints its stdout.
run_single_instance() {
  local plan_dir
  TMPDIR="$BATS_FILE_TMPDIR" "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-0single "$MATRIX" \
    >"$BATS_FILE_TMPDIR/single-plan.txt"
  plan_dir="$(sed -n 's/^# The files named below are kept in //p' "$BATS_FILE_TMPDIR/single-plan.txt")"
  jq -r '.commands | join("\n")' "$plan_dir/params-i-0single.json" | sh 2>&1
}

# --- Helpers for the assertions ------------------------------------------------------------

# recorded ACTION: one JSON object per request for AmazonSSM.ACTION that moto received.
recorded() {
  jq -c --arg target "AmazonSSM.$1" 'select(.headers["X-Amz-Target"] == $target)
         | (if .body_encoded then (.body | @base64d) else .body end) | fromjson' \
    "$BATS_FILE_TMPDIR/moto-recording.jsonl"
}

# sent_commands: one JSON object per SendCommand request moto received.
sent_commands() {
  recorded SendCommand
}

# sent_count: how many SendCommand requests moto has received so far.
sent_count() {
  sent_commands | wc -l
}

# sent_for_run RUN_ID: the SendCommand requests of one run (by its comment).
sent_for_run() {
  sent_commands | jq -c --arg r "$1" 'select(.Comment | contains($r))'
}

# summary_value STDOUT_FILE JQ: a value of the k6 summary in an instance's stdout.
summary_value() {
  PYTHONPATH="$LT_ROOT/scripts" "$VENV/bin/python" -c \
    'import json, sys; from ltsuite.ssm import extract_summary; print(json.dumps(extract_summary(open(sys.argv[1]).read())))' \
    "$1" | jq -r "$2"
}

# cell_dir RUN_DIR: the directory of the run's one cell.
cell_dir() {
  printf '%s/cells/%s\n' "$1" "$(jq -r .cell.id "$1/manifest.json")"
}

# --- Sending -------------------------------------------------------------------------------------

@test "the send goes to exactly the tagged running instances, one AWS-RunShellScript each" {
  local sent
  sent="$(sent_for_run "$(jq -r .run_id "$SENT_RUN/manifest.json")")"
  [ "$(wc -l <<<"$sent")" -eq 2 ]
  [ "$(jq -r .DocumentName <<<"$sent" | sort -u)" = AWS-RunShellScript ]
  [ "$(jq -r '.InstanceIds | length' <<<"$sent" | sort -u)" = 1 ]
  [ "$(jq -r '.InstanceIds[0]' <<<"$sent" | sort)" = "$(cat "$BATS_FILE_TMPDIR/k6-instances")" ]
  run jq -r '.InstanceIds[]' <<<"$sent"
  refute_output --partial "$(cat "$BATS_FILE_TMPDIR/other-instance")"
}

@test "the commands' execution segments cover 0..1 exactly once, without overlap" {
  sent_for_run "$(jq -r .run_id "$SENT_RUN/manifest.json")" >"$BATS_TEST_TMPDIR/sent.jsonl"
  run python3 - "$BATS_TEST_TMPDIR/sent.jsonl" <<'PY'
import json, re, sys
from fractions import Fraction as F
spans, sequences = [], set()
for line in open(sys.argv[1]):
    text = "\n".join(json.loads(line)["Parameters"]["commands"])
    segment = re.findall(r"--execution-segment (\S+)", text)
    sequences.update(re.findall(r"--execution-segment-sequence (\S+)", text))
    assert len(segment) == 1, segment
    lo, hi = (F(x) for x in segment[0].split(":"))
    spans.append((lo, hi))
spans.sort()
at = F(0)
for lo, hi in spans:
    assert lo == at and hi > lo, f"gap or overlap at {lo}:{hi}"
    at = hi
assert at == 1, f"ends at {at}"
assert sequences == {"0,1/2,1"}, sequences
print("tiled", len(spans))
PY
  assert_success
  assert_output "tiled 2"
}

@test "every command carries the cell's env, the target and the run's tags" {
  local run_id id text
  run_id="$(jq -r .run_id "$SENT_RUN/manifest.json")"
  while IFS= read -r id; do
    text="$(sent_for_run "$run_id" | jq -r --arg id "$id" 'select(.InstanceIds[0] == $id) | .Parameters.commands | join("\n")')"
    [[ "$text" == *"-e VUS=6 "* ]] || fail "no VUS=6 in the command for $id"
    [[ "$text" == *"-e DURATION=3s "* ]] || fail "no DURATION=3s for $id"
    [[ "$text" == *"-e TARGET_URL=$TARGET_URL "* ]] || fail "no TARGET_URL for $id"
    [[ "$text" == *"--tag instance=$id "* ]] || fail "no instance tag for $id"
    [[ "$text" == *"--tag run_id=$run_id "* ]] || fail "no run_id tag for $id"
    [[ "$text" == *"--address ''"* ]] || fail "no --address '' for $id"
  done <"$BATS_FILE_TMPDIR/k6-instances"
}

@test "the output goes to the S3 bucket under the run's prefix" {
  local run_id
  run_id="$(jq -r .run_id "$SENT_RUN/manifest.json")"
  run jq -r '"\(.OutputS3BucketName) \(.OutputS3KeyPrefix)"' <<<"$(sent_for_run "$run_id")"
  assert_line "lt-fanout-test k6-fanout/$run_id/$(jq -r .cell.id "$SENT_RUN/manifest.json")"
}

@test "no credential reaches the commands, the results or a dry run" {
  # (moto's recording also holds the request headers, where the CLI signs
  # with the key; only what the fan-out sends and writes is checked.)
  [ "$(sent_commands | grep -c -- "$CREDENTIAL_MARKER" || true)" -eq 0 ]
  [ "$(sent_commands | wc -l)" -gt 0 ]
  run grep -rl -- "$CREDENTIAL_MARKER" "$LT_RESULTS_DIR" "$BATS_FILE_TMPDIR/single-plan.txt" \
    "$BATS_FILE_TMPDIR"/ssm-fanout-dry-run.*
  assert_failure 1
  assert_output ""
}

# --- The instances' load adds up ------------------------------------------------------------

@test "the two halves (0:1/2 and 1/2:1) together run the VUs of the whole" {
  local a b
  a="$(head -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  b="$(tail -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  [ "$(summary_value "$BATS_FILE_TMPDIR/stdout-$a" '.metrics.vus_max.values.max')" -eq 3 ]
  [ "$(summary_value "$BATS_FILE_TMPDIR/stdout-$b" '.metrics.vus_max.values.max')" -eq 3 ]
  [ "$(summary_value "$BATS_FILE_TMPDIR/single.out" '.metrics.vus_max.values.max')" -eq 6 ]
}

@test "the two halves' iterations add up to a single run's, within 15%" {
  local a b half_a half_b whole
  a="$(head -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  b="$(tail -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  half_a="$(summary_value "$BATS_FILE_TMPDIR/stdout-$a" '.metrics.iterations.values.count')"
  half_b="$(summary_value "$BATS_FILE_TMPDIR/stdout-$b" '.metrics.iterations.values.count')"
  whole="$(summary_value "$BATS_FILE_TMPDIR/single.out" '.metrics.iterations.values.count')"
  echo "halves $half_a + $half_b, whole $whole" >&3
  ((whole > 60)) || fail "the single run made only $whole iterations"
  (((half_a + half_b) * 100 >= whole * 85 && (half_a + half_b) * 100 <= whole * 115)) \
    || fail "halves $half_a + $half_b vs whole $whole"
}

# --- Collecting ---------------------------------------------------------------------------------

@test "collect writes the run like a local one: manifest, instances, one row" {
  [ "$(cat "$BATS_FILE_TMPDIR/collect.status")" -eq 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/collect.log")"
  run jq -r '[.backend, .status, (.instances | length), ([.instances[].status] | unique | join(","))] | @tsv' "$SENT_RUN/manifest.json"
  assert_output $'ssm\tcomplete\t2\tSuccess'
  local id
  while IFS= read -r id; do
    [ -s "$(cell_dir "$SENT_RUN")/instances/$id/summary.json" ]
    [ -s "$(cell_dir "$SENT_RUN")/instances/$id/stdout.txt" ]
  done <"$BATS_FILE_TMPDIR/k6-instances"
  [ "$(wc -l <"$SENT_RUN/results.csv")" -eq 2 ]
  run lt_csv_column "$SENT_RUN/results.csv" status
  assert_output ok
}

@test "the row adds up the instances' counters and VUs" {
  local dir
  dir="$(cell_dir "$SENT_RUN")"
  [ "$(lt_csv_column "$SENT_RUN/results.csv" vus_max)" -eq 6 ]
  [ "$(lt_csv_column "$SENT_RUN/results.csv" http_reqs)" -eq "$(jq -s 'map(.http_reqs) | add' "$dir"/instances/*/row.json)" ]
  [ "$(lt_csv_column "$SENT_RUN/results.csv" iterations)" -eq "$(jq -s 'map(.iterations) | add' "$dir"/instances/*/row.json)" ]
  [ "$(lt_csv_column "$SENT_RUN/results.csv" failed_reqs)" -eq 0 ]
}

@test "percentiles: from the instances' merged histograms, those of all their raw samples within 0.5 %" {
  local dir count id
  local -a samples=()
  dir="$(cell_dir "$SENT_RUN")"
  while IFS= read -r id; do
    [ "$(jq .count "$dir/instances/$id/histogram.json")" -eq "$(jq .lat_count "$dir/instances/$id/row.json")" ]
    samples+=("$FANOUT_WORKDIR/$(basename "$SENT_RUN")/$(jq -r .cell.id "$SENT_RUN/manifest.json")/$id/samples.json.gz")
  done <"$BATS_FILE_TMPDIR/k6-instances"
  # Every raw sample of both instances.
  count="$(lt_assert_raw_percentiles "$dir/row.json" "${samples[@]}")"
  [ "$count" -eq "$(jq -s 'map(.lat_count) | add' "$dir"/instances/*/row.json)" ]
  run jq -r .notes "$dir/row.json"
  assert_output "latency percentiles from the merged histograms of 2 instances ($count answered requests; within 0.5% of those of the raw samples)"
  # The manifest says the same.
  [ "$(jq -r .notes "$SENT_RUN/manifest.json")" = "$output" ]
}

# without_histogram ID: the fixture's stdout of instance ID as if it had
# shipped no histogram (an instance without python3).
without_histogram() {
  sed -i '/^=== k6-fanout histogram begin ===$/,/^=== k6-fanout histogram end ===$/d' "$BATS_FILE_TMPDIR/stdout-$1"
}

@test "an instance that shipped no histogram: percentiles from InfluxDB's raw samples if set, else empty, and it is named" {
  local run_dir id
  id="$(tail -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  cp "$BATS_FILE_TMPDIR/stdout-$id" "$BATS_FILE_TMPDIR/stdout-$id.full"
  without_histogram "$id"
  FANOUT_INFLUXDB_URL="" run "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$MATRIX"
  assert_success
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  copy_outputs "$run_dir"
  run "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$run_dir"
  assert_success
  [ -z "$(lt_csv_column "$run_dir/results.csv" lat_p95_ms)" ]
  [ -z "$(lt_csv_column "$run_dir/results.csv" lat_med_ms)" ]
  [ -n "$(lt_csv_column "$run_dir/results.csv" lat_max_ms)" ]
  run jq -r .notes "$(cell_dir "$run_dir")/row.json"
  assert_output --partial "no latency histogram from $id"
  assert_output --partial "percentiles not mergeable"
  if [[ -n "${FANOUT_INFLUXDB_URL:-}" ]]; then
    # The fixture run's instances wrote their raw samples to InfluxDB too.
    echo "# InfluxDB at $FANOUT_INFLUXDB_URL" >&3
    local sent got dir
    dir="$(cell_dir "$SENT_RUN")"
    # The fixture run itself, collected again with that instance's output as
    # if it had shipped no histogram; then put back as it was.
    copy_outputs "$SENT_RUN" "$id"
    "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$SENT_RUN" >/dev/null 2>&1 || fail "collect failed"
    cp "$dir/row.json" "$BATS_FILE_TMPDIR/row-influx.json"
    cp "$BATS_FILE_TMPDIR/stdout-$id.full" "$BATS_FILE_TMPDIR/stdout-$id"
    copy_outputs "$SENT_RUN" "$id"
    "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$SENT_RUN" >/dev/null 2>&1 || fail "collect failed"
    [ -s "$dir/instances/$id/histogram.json" ]
    # Every instance's samples, less at most 1 in 100: InfluxDB keeps one point of
    # two with the same series and time (k6 writes vu and iter as fields, not
    # tags), and 6 users in lockstep against one 100 ms endpoint can end two
    # requests at one instant (seen once: 173 where 174 were sent).
    sent="$(jq -s 'map(.lat_count) | add' "$dir"/instances/*/row.json)"
    got="$(jq -r '.notes | capture("percentiles from InfluxDB over (?<n>[0-9]+) raw samples of every instance").n' "$BATS_FILE_TMPDIR/row-influx.json")"
    [[ "$got" =~ ^[0-9]+$ ]] || fail "no sample count in the notes: $(jq -r .notes "$BATS_FILE_TMPDIR/row-influx.json")"
    ((got <= sent && got * 100 >= sent * 99)) || fail "InfluxDB had $got samples where the instances sent $sent"
    jq -e '.lat_p95_ms | type == "number"' "$BATS_FILE_TMPDIR/row-influx.json"
  fi
  mv "$BATS_FILE_TMPDIR/stdout-$id.full" "$BATS_FILE_TMPDIR/stdout-$id"
}

# copy_outputs RUN_DIR [ID...]: store the fixture run's stdouts (already
# played) as the outputs of another run's invocations, without rerunning k6.
copy_outputs() {
  local run_dir="$1" id prefix command_id
  shift
  local -a ids=("$@")
  [[ ${#ids[@]} -gt 0 ]] || mapfile -t ids <"$BATS_FILE_TMPDIR/k6-instances"
  prefix="$(jq -r .fanout.s3_key_prefix "$run_dir/manifest.json")"
  for id in "${ids[@]}"; do
    command_id="$(jq -r --arg id "$id" '.instances[] | select(.instance_id == $id) | .command_id' "$run_dir/manifest.json")"
    "$AWS" s3 cp --only-show-errors "$BATS_FILE_TMPDIR/stdout-$id" \
      "s3://lt-fanout-test/$prefix/$command_id/$id/awsrunShellScript/0.awsrunShellScript/stdout"
  done
}

# --- Failures ----------------------------------------------------------------------------------

@test "zero instances found: a clear error, nothing sent, a non-zero exit" {
  local before
  before="$(sent_count)"
  FANOUT_TAG_FILTER='Name=no-such-k6-*' run "$LT_ROOT/scripts/ssm-fanout.sh" "$MATRIX"
  assert_failure 1
  assert_output --partial "no running instance has the tag Name=no-such-k6-*"
  [ "$(sent_count)" -eq "$before" ]
}

# unanswered RUN_DIR ID...: those instances' invocations get a new command id
# moto never issued, so polling them never ends: instances that never answer.
unanswered() {
  local run_dir="$1" id
  shift
  for id in "$@"; do
    jq --arg id "$id" --arg c "$(cat /proc/sys/kernel/random/uuid)" \
      '(.instances[] | select(.instance_id == $id) | .command_id) = $c' \
      "$run_dir/manifest.json" >"$BATS_TEST_TMPDIR/manifest.json"
    mv "$BATS_TEST_TMPDIR/manifest.json" "$run_dir/manifest.json"
  done
}

# ended_as RUN_DIR ID STATUS DETAILS: record the invocation as ended in STATUS,
# as an earlier poll that saw it would have.
ended_as() {
  jq --arg id "$2" --arg s "$3" --arg d "$4" \
    '(.instances[] | select(.instance_id == $id)) |= (.status = $s | .status_details = $d)' \
    "$1/manifest.json" >"$BATS_TEST_TMPDIR/manifest.json"
  mv "$BATS_TEST_TMPDIR/manifest.json" "$1/manifest.json"
}

@test "a failed invocation is named, the other instance's results kept, the exit non-zero" {
  local run_dir good bad
  good="$(head -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  bad="$(tail -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  FANOUT_INFLUXDB_URL="" run "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$MATRIX"
  assert_success
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  copy_outputs "$run_dir" "$good"
  ended_as "$run_dir" "$bad" Failed "Failed (exit code 107)"
  run "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$run_dir"
  assert_failure 1
  assert_output --partial "instance $bad:"
  assert_output --partial "1 of 2 instance(s) failed"
  refute_output --partial "instance $good:"
  [ -s "$(cell_dir "$run_dir")/instances/$good/summary.json" ]
  [ "$(jq -r .status "$run_dir/manifest.json")" = failed ]
  [ "$(jq -r --arg id "$bad" '.instances[] | select(.instance_id == $id) | .status' "$run_dir/manifest.json")" = Failed ]
  [ "$(lt_csv_column "$run_dir/results.csv" status)" = failed ]
  [ "$(lt_csv_column "$run_dir/results.csv" vus_max)" -eq 3 ]
  run lt_csv_column "$run_dir/results.csv" error
  assert_output --partial "instance $bad"
}

@test "an invocation still running at the timeout is named as timed out, the exit non-zero" {
  local run_dir good slow
  good="$(head -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  slow="$(tail -n 1 "$BATS_FILE_TMPDIR/k6-instances")"
  FANOUT_INFLUXDB_URL="" FANOUT_TIMEOUT=3 run "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$MATRIX"
  assert_success
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  copy_outputs "$run_dir" "$good"
  unanswered "$run_dir" "$slow"
  SECONDS=0
  run "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$run_dir"
  assert_failure 1
  assert_output --partial "instance $slow: timed out"
  ((SECONDS < 30)) || fail "the poller took ${SECONDS}s with a 3 s timeout"
  # It tried to stop the load (moto lacks CancelCommand, so the try fails and is reported).
  [ "$(recorded CancelCommand | jq -r --arg id "$slow" 'select(.InstanceIds == [$id]) | .CommandId' | wc -l)" -ge 1 ]
  assert_output --partial "the cancel failed"
  [ -s "$(cell_dir "$run_dir")/instances/$good/summary.json" ]
  [ "$(jq -r --arg id "$slow" '.instances[] | select(.instance_id == $id) | .status' "$run_dir/manifest.json")" = TimedOut ]
}

# start_fanout_stuck LOG: a fan-out sent, then collected in the background
# while its two invocations never end (unanswered); FANOUT_PID is its pid.
# Returns once it polls. It starts with SIGINT at its default (a background job of
# a script would ignore it from the start, and bash cannot trap a signal
# ignored at entry).
start_fanout_stuck() {
  local run_dir deadline=$((SECONDS + 120))
  local -a ids
  FANOUT_INFLUXDB_URL="" "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$MATRIX" >"$1" 2>&1
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  mapfile -t ids <"$BATS_FILE_TMPDIR/k6-instances"
  unanswered "$run_dir" "${ids[@]}"
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$run_dir" >>"$1" 2>&1 3>&- &
  FANOUT_PID=$!
  until grep -q "waiting for 2 of 2" "$1"; do
    ((SECONDS < deadline)) || fail "the fan-out never polled: $(cat "$1")"
    sleep 0.2
  done
}

# assert_cancelled_and_recorded RUN_DIR STATUS WHY: the manifest is
# finished with STATUS, says WHY after the sends, and every sent command had
# a CancelCommand for its instance (moto lacks the operation: the failed
# cancel is named in the instance's error).
assert_cancelled_and_recorded() {
  local run_dir="$1" id command_id
  [ "$(jq -r .status "$run_dir/manifest.json")" = "$2" ]
  [ "$(jq -r .ended_at "$run_dir/manifest.json")" != null ]
  jq -e --arg w "the fan-out was $3 after the commands were sent: 0 invocation(s) cancelled; the cancel failed on " \
    '.warnings | any(startswith($w))' "$run_dir/manifest.json"
  while IFS= read -r id; do
    command_id="$(jq -r --arg id "$id" '.instances[] | select(.instance_id == $id) | .command_id' "$run_dir/manifest.json")"
    [ -n "$command_id" ]
    [ "$(recorded CancelCommand | jq -r --arg id "$id" --arg c "$command_id" 'select(.InstanceIds == [$id] and .CommandId == $c) | .CommandId' | wc -l)" -eq 1 ]
    [ "$(jq -r --arg id "$id" '.instances[] | select(.instance_id == $id) | .error' "$run_dir/manifest.json")" \
      = "instance $id: the fan-out was $3 before the invocation ended, and the cancel failed: check the instance" ]
  done <"$BATS_FILE_TMPDIR/k6-instances"
}

@test "a SIGHUP after the commands were sent cancels them and records the run as interrupted" {
  local status=0 run_dir
  start_fanout_stuck "$BATS_TEST_TMPDIR/fanout.log"
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  kill -HUP "$FANOUT_PID"
  wait "$FANOUT_PID" || status=$?
  [ "$status" -eq 129 ]
  assert_cancelled_and_recorded "$run_dir" interrupted "interrupted by SIGHUP"
  grep -q "the fan-out was interrupted by SIGHUP; " "$BATS_TEST_TMPDIR/fanout.log"
}

@test "a SIGTERM or a SIGINT after the commands were sent does the same" {
  local signal status run_dir
  for signal in TERM INT; do
    status=0
    start_fanout_stuck "$BATS_TEST_TMPDIR/fanout-$signal.log"
    run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
    kill -"$signal" "$FANOUT_PID"
    wait "$FANOUT_PID" || status=$?
    [ "$status" -eq $((128 + $(kill -l "$signal"))) ]
    assert_cancelled_and_recorded "$run_dir" interrupted "interrupted by SIG$signal"
  done
}

@test "an error after the commands were sent cancels them and records the run as failed" {
  local status=0 run_dir poller
  # The poller dies midway: an error after the sends.
  start_fanout_stuck "$BATS_TEST_TMPDIR/fanout.log"
  poller="$(ps -o pid= --ppid "$FANOUT_PID" | head -n 1 | tr -d ' ')"
  [ -n "$poller" ]
  kill -KILL "$poller"
  wait "$FANOUT_PID" || status=$?
  [ "$status" -eq 1 ]
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  assert_cancelled_and_recorded "$run_dir" failed "stopped by an error (exit status 1)"
}

@test "a missing S3 output is an error naming each instance" {
  FANOUT_INFLUXDB_URL="" run "$LT_ROOT/scripts/ssm-fanout.sh" "$MATRIX"
  assert_failure 1
  local id
  while IFS= read -r id; do
    assert_output --partial "instance $id: Success, but no output at s3://lt-fanout-test/"
  done <"$BATS_FILE_TMPDIR/k6-instances"
  assert_output --partial "2 of 2 instance(s) failed"
}

@test "a command too large to go inline ships the scenario files through S3" {
  local run_dir cell uri sha inline_size
  # Smaller than the fixture's inline command, larger than one without the files.
  inline_size="$(wc -c <"$(cell_dir "$SENT_RUN")/instances/$(head -n 1 "$BATS_FILE_TMPDIR/k6-instances")/command.sh")"
  FANOUT_MAX_COMMAND_BYTES="$inline_size" run "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$MATRIX"
  assert_success
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  cell="$(jq -r .cell.id "$run_dir/manifest.json")"
  [ "$(jq -r .fanout.scenario_files "$run_dir/manifest.json")" = s3 ]
  uri="s3://lt-fanout-test/k6-fanout/$(jq -r .run_id "$run_dir/manifest.json")/$cell/scenarios.tar.gz"
  run cat "$run_dir/cells/$cell/instances/$(head -n 1 "$BATS_FILE_TMPDIR/k6-instances")/command.sh"
  assert_line "LT_BUNDLE_S3=$uri"
  assert_line "LT_BUNDLE_B64=''"
  sha="$(sed -n "s/^LT_BUNDLE_SHA256=\([0-9a-f]*\)$/\1/p" <<<"$output")"
  "$AWS" s3 cp --only-show-errors "$uri" "$BATS_TEST_TMPDIR/bundle.tar.gz"
  [ "$(sha256sum "$BATS_TEST_TMPDIR/bundle.tar.gz" | cut -d' ' -f1)" = "$sha" ]
}

@test "a script of one's own ships in a k6 archive, runs unchanged on the instances, and its row is complete" {
  local run_dir dir id
  printf 'SCENARIO=%s\n' "$LT_ROOT/tests/fixtures/own-script/spike-test.js" >"$BATS_TEST_TMPDIR/own.matrix"
  FANOUT_INFLUXDB_URL="" run "$LT_ROOT/scripts/ssm-fanout.sh" --no-wait "$BATS_TEST_TMPDIR/own.matrix"
  assert_success
  run_dir="$(readlink -f "$LT_RESULTS_DIR/latest")"
  dir="$(cell_dir "$run_dir")"
  # The entry module that wraps it is kept with the run, as for a local one.
  grep -qF "import * as script from \"$LT_ROOT/tests/fixtures/own-script/spike-test.js\"" "$dir/k6-entry.js"
  play_instances "$run_dir"
  run "$LT_ROOT/scripts/ssm-fanout.sh" --collect "$run_dir"
  assert_success
  [ "$(lt_csv_column "$run_dir/results.csv" status)" = ok ]
  # The script's own 16 VUs, split over the two instances.
  [ "$(lt_csv_column "$run_dir/results.csv" vus_max)" -eq 16 ]
  [ "$(jq -s 'map(.vus_max) | add' "$dir"/instances/*/row.json)" -eq 16 ]
  [ "$(lt_csv_column "$run_dir/results.csv" http_reqs)" -gt 0 ]
  [ "$(lt_csv_column "$run_dir/results.csv" http_reqs)" -eq "$(jq -s 'map(.http_reqs) | add' "$dir"/instances/*/row.json)" ]
  # Its percentiles too, from the instances' histograms (its load is tagged from the command line).
  [ -n "$(lt_csv_column "$run_dir/results.csv" lat_p95_ms)" ]
  # Each instance counted its load with the suite's tags from the command
  # line (the script sets none) and split its failures by cause.
  while IFS= read -r id; do
    run jq -r '.metrics | [has("http_reqs{traffic:load}"), has("fail_connect"), has("fail_other")] | join(" ")' \
      "$dir/instances/$id/summary.json"
    assert_output "true true true"
  done <"$BATS_FILE_TMPDIR/k6-instances"
  run jq -r '[.failed_reqs, ([.fail_connect, .fail_reset, .fail_timeout, .fail_http_4xx, .fail_http_5xx, .fail_other] | add)] | join(" ")' "$dir/row.json"
  [ "${output% *}" = "${output#* }" ]
}

# --- Dry run ------------------------------------------------------------------------------------

@test "a dry run prints the boto3 calls and each command, and sends nothing" {
  local before id
  before="$(sent_count)"
  TMPDIR="$BATS_TEST_TMPDIR" run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run "$MATRIX"
  assert_success
  assert_output --partial "# Dry run: nothing is sent."
  assert_line --regexp '^ec2\.describe_instances\(Filters=\[\{"Name": "tag:Name", "Values": \["k6-\*"\]\}'
  while IFS= read -r id; do
    assert_line --regexp "^ssm\.send_command\(DocumentName=\"AWS-RunShellScript\", InstanceIds=\[\"$id\"\], .*Parameters=<json file .*/params-$id\.json>\)\$"
    assert_line --partial "--tag instance=$id"
  done <"$BATS_FILE_TMPDIR/k6-instances"
  refute_output --partial "$(cat "$BATS_FILE_TMPDIR/other-instance")"
  assert_line --partial "--execution-segment 0:1/2"
  assert_line --partial "--execution-segment 1/2:1"
  [ "$(sent_count)" -eq "$before" ]
}

@test "a dry run with no AWS reachable still prints the plan for --instances" {
  AWS_ENDPOINT_URL="http://127.0.0.1:$(lt_free_port)" TMPDIR="$BATS_TEST_TMPDIR" \
    run "$LT_ROOT/scripts/ssm-fanout.sh" --dry-run --instances i-0aaa,i-0bbb "$MATRIX"
  assert_success
  assert_output --partial "(skipped: --instances given)"
  assert_line --regexp '^ssm\.send_command\(.*InstanceIds=\["i-0aaa"\]'
  assert_line --regexp '^ssm\.send_command\(.*InstanceIds=\["i-0bbb"\]'
}

@test "DRY_RUN=1 make ssm-run prints the plan" {
  local before
  before="$(sent_count)"
  TMPDIR="$BATS_TEST_TMPDIR" run make -s -C "$LT_ROOT" ssm-run DRY_RUN=1 MATRIX="$MATRIX"
  assert_success
  assert_output --partial "# Dry run: nothing is sent."
  assert_line --regexp '^ssm\.send_command\(DocumentName="AWS-RunShellScript"'
  [ "$(sent_count)" -eq "$before" ]
}
