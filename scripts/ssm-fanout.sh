#!/usr/bin/env bash
# Summary: run one matrix cell on every tagged k6 instance via AWS SSM, split with k6 execution segments, and write results/<run-id>/.
# Usage: scripts/ssm-fanout.sh [--dry-run] [--cell N] [--instances ID,ID...] [--no-wait] MATRIX_FILE
# Usage: scripts/ssm-fanout.sh --collect RESULTS_DIR   (finish a run sent with --no-wait)
#
# The load is the cell's, the target is the knob TARGET_URL (both as for a
# local run); the fan-out's own settings are in env/fanout.env
# (FANOUT_S3_BUCKET, FANOUT_TAG_FILTER, ...). Any of them can be set in the
# environment. See docs/fanout.md.
# --dry-run prints the AWS calls (the boto3 calls the run would make) and
# each instance's command and sends nothing; its only AWS call is the
# read-only instance lookup, skipped when --instances is given. Every AWS
# call is made by Python with boto3 (ltsuite.awscalls); the instances' state
# lives in the manifest (ltsuite.ssm.Invocation), which this script reads.
#
# Steps: cell resolved -> scenario checked with k6 inspect -> instances found
# -> one command per instance (its segment, tags, env, the scenario files) ->
# one send per instance -> poll until every invocation ends or the timeout
# -> full stdout from S3 -> each instance's summary -> one aggregated row.
set -euo pipefail

LT_PROG=ssm-fanout
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix k6 results manifest design rundir ssm; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"
readonly LT_FANOUT_ENV="${LT_FANOUT_ENV:-$LT_ROOT/env/fanout.env}"

OPT_DRY_RUN=0
OPT_NO_WAIT=0
OPT_CELL=1
OPT_INSTANCES=""
OPT_COLLECT=""
OPT_MATRIX=""

WORK_DIR=""
# Why the script could not be prepared (k6_archive says it here).
cell_error ""
RUN_ID=""
RUN_DIR=""
CELL_ID=""
LT_OVERRIDES=""
FINISHED=0
# How the instances were found, for the dry run's report.
LOOKUP_NOTE="read-only; this call did run"
# The signal that ended the run (SIGHUP, SIGINT, SIGTERM), for on_exit.
ENDED_BY=""
# ltsuite.ssm running in the background (run_python), while it runs.
PYTHON_PID=""
# The instances' ids, in segment order. Their state (command id, status,
# error) is in the manifest only, written and read by ltsuite.ssm.
declare -a INSTANCES=()
# What the commands use (ltsuite.ssmcommand): the epoch second every
# instance starts at, the script's tags and options (k6_script_args), and
# how the scenario files travel (inline or s3; build_commands).
START_AT=0
declare -a K6_ARGS=()
SCENARIO_FILES=""

# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
main() {
  parse_args "$@"
  # Whatever ends the run (a signal, an error, the end) goes through
  # on_exit: nothing sent is left running unattended, the manifest never
  # stays "running".
  trap on_exit EXIT
  trap 'on_signal HUP' HUP
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM
  WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ssm-fanout.XXXXXX")"
  if [[ -n "$OPT_COLLECT" ]]; then
    collect_run "$OPT_COLLECT"
    return
  fi

  resolve_matrix "$OPT_MATRIX"
  fanout_config_load "$LT_FANOUT_ENV"
  CELL_ID="$(fanout_cell "$OPT_CELL" "$WORK_DIR")"
  fanout_use_cell_target "$WORK_DIR/cell.env" "$([[ $OPT_DRY_RUN -eq 1 ]] && echo dry-run || echo run)"
  [[ -n "${FANOUT[FANOUT_S3_BUCKET]}" ]] \
    || usage_error "FANOUT_S3_BUCKET is empty: SSM needs an S3 output location to return each instance's full output (its API gives only 24,000 characters); set it in env/fanout.env or as FANOUT_S3_BUCKET=NAME"
  RUN_ID="$(new_run_id "$OPT_MATRIX")"
  find_targets
  [[ $OPT_DRY_RUN -eq 1 ]] || fanout_create_run_dir
  if ! ssm_prepare_script "$WORK_DIR/cell.env" "${FANOUT[TARGET_URL]}" "$RUN_ID" "$CELL_ID" "$WORK_DIR"; then
    [[ -z "$RUN_DIR" ]] || finish_failed "the scenario does not load with this cell's values: $CELL_ERROR; nothing was sent"
    abort "the scenario does not load with this cell's values: $CELL_ERROR"
  fi
  # What the instances run, kept with the run (the entry module only for a
  # script of one's own).
  [[ -z "$RUN_DIR" ]] || cp "$WORK_DIR"/k6-script.json "$WORK_DIR"/k6-entry.js* "$RUN_DIR/cells/$CELL_ID/" 2>/dev/null || true
  mapfile -t K6_ARGS < <(k6_script_args "$(cell_env_get "$WORK_DIR/cell.env" SCENARIO)" "$WORK_DIR/k6-script.json" "$RUN_ID" "$CELL_ID")
  START_AT=$(($(date +%s) + FANOUT[FANOUT_START_DELAY]))

  if [[ $OPT_DRY_RUN -eq 1 ]]; then
    print_plan
    return
  fi
  send_run
  if [[ $OPT_NO_WAIT -eq 1 ]]; then
    manifest_update "$RUN_DIR" '.status = "sent"'
    say "sent; collect the results with: scripts/ssm-fanout.sh --collect ${RUN_DIR#"$LT_ROOT"/}"
    FINISHED=1
    return
  fi
  collect_run "$RUN_DIR"
}

# parse_args ARGS...: options and the matrix file into OPT_*.
parse_args() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h | --help)
        print_summary "${BASH_SOURCE[0]}"
        exit 0
        ;;
      --dry-run) OPT_DRY_RUN=1 ;;
      --no-wait) OPT_NO_WAIT=1 ;;
      --cell)
        [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--cell needs a cell number (1 = the first)"
        OPT_CELL="$2"
        shift
        ;;
      --instances)
        [[ $# -ge 2 && -n "$2" ]] || usage_error "--instances needs ID[,ID...]"
        OPT_INSTANCES="$2"
        shift
        ;;
      --collect)
        [[ $# -ge 2 ]] || usage_error "--collect needs a results directory"
        OPT_COLLECT="$2"
        shift
        ;;
      -*) usage_error "unknown option $1 (see --help)" ;;
      *)
        [[ -z "$OPT_MATRIX" ]] || usage_error "one matrix file at most (got $OPT_MATRIX and $1); set knobs as VAR=value"
        OPT_MATRIX="$1"
        ;;
    esac
    shift
  done
  if [[ -n "$OPT_COLLECT" ]]; then
    [[ -z "$OPT_MATRIX" && $OPT_DRY_RUN -eq 0 ]] || usage_error "--collect takes only the results directory"
    [[ -f "$OPT_COLLECT/manifest.json" ]] || usage_error "$OPT_COLLECT: no manifest.json there"
    return
  fi
  [[ -n "$OPT_MATRIX" ]] || usage_error "no matrix file given (e.g. env/matrices/default.matrix)"
  [[ -f "$OPT_MATRIX" ]] || usage_error "$OPT_MATRIX: no such matrix file"
  OPT_MATRIX="$(cd "$(dirname "$OPT_MATRIX")" && pwd)/$(basename "$OPT_MATRIX")"
}

# resolve_matrix FILE: defaults < matrix < environment, as for a local run.
resolve_matrix() {
  matrix_resolve "$1"
  LT_OVERRIDES="$(matrix_overrides)"
}

# new_run_id MATRIX: a run id such as 20250101-120000-default-ssm.
new_run_id() {
  printf '%s-%s-ssm\n' "$(date +%Y%m%d-%H%M%S)" "$(basename "$1" .matrix)"
}

# find_targets: INSTANCES from --instances or from the tag lookup. A dry run
# whose lookup fails (no AWS reachable) goes on with placeholders.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
find_targets() {
  local id found why
  if [[ -n "$OPT_INSTANCES" ]]; then
    IFS=',' read -r -a INSTANCES <<<"$OPT_INSTANCES"
    for id in "${INSTANCES[@]}"; do
      ssm_check_instance_id "$id"
    done
    mapfile -t INSTANCES < <(printf '%s\n' "${INSTANCES[@]}" | sort -u)
    LOOKUP_NOTE="skipped: --instances given"
    return
  fi
  local status=0
  local -a quick=()
  # A dry run must answer quickly even where AWS cannot be reached.
  [[ $OPT_DRY_RUN -eq 0 ]] || quick=(--quick)
  found="$(AWS_MAX_ATTEMPTS="${AWS_MAX_ATTEMPTS:-$((OPT_DRY_RUN ? 1 : 3))}" fanoutrun find \
    --tag-filter "${FANOUT[FANOUT_TAG_FILTER]}" --region "${FANOUT[FANOUT_REGION]}" \
    --profile "${FANOUT[FANOUT_PROFILE]}" "${quick[@]}" 2>"$WORK_DIR/describe.err")" || status=$?
  if ((status == 2)); then
    cat "$WORK_DIR/describe.err" >&2
    exit 2
  elif ((status != 0)); then
    why="$(grep -v '^[[:space:]]*$' "$WORK_DIR/describe.err" | tail -n 1 | cut -c1-300)"
    [[ $OPT_DRY_RUN -eq 1 ]] || abort "the instance lookup (ec2.describe_instances) failed: $why"
    warn "the instance lookup failed ($why); showing the plan for 2 placeholder instances (give --instances ID,ID for your fleet)"
    INSTANCES=(i-placeholder1 i-placeholder2)
    LOOKUP_NOTE="this call ran and failed: $why"
    return
  fi
  mapfile -t INSTANCES < <(grep -v '^$' <<<"$found" || true)
  if [[ ${#INSTANCES[@]} -eq 0 ]]; then
    abort "no running instance has the tag ${FANOUT[FANOUT_TAG_FILTER]}${FANOUT[FANOUT_REGION]:+ in ${FANOUT[FANOUT_REGION]}}; start the k6 machines (or set FANOUT_TAG_FILTER / FANOUT_REGION)"
  fi
}

# key_prefix: the S3 key prefix of this run's output (and of the bundle).
key_prefix() {
  printf '%s/%s/%s\n' "${FANOUT[FANOUT_S3_PREFIX]%/}" "$RUN_ID" "$CELL_ID"
}

# run_timeout: seconds to wait for every invocation, counted from the send.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
run_timeout() {
  local planned
  if [[ -n "${FANOUT[FANOUT_TIMEOUT]}" ]]; then
    printf '%s\n' "${FANOUT[FANOUT_TIMEOUT]}"
    return
  fi
  local -A cell=()
  load_cell_env "$WORK_DIR/cell.env" cell
  planned="$(k6_planned_seconds cell "$WORK_DIR")"
  printf '%s\n' $((FANOUT[FANOUT_START_DELAY] + planned + 120))
}

# delivery_timeout: seconds SSM may take to hand a command to an instance;
# one delivered later than the common start would start late.
delivery_timeout() {
  local seconds=$((FANOUT[FANOUT_START_DELAY] + 30))
  printf '%s\n' $((seconds < 30 ? 30 : seconds))
}

# build_commands DIR: every instance's command-<id>.sh and params-<id>.json,
# and instances.json (ids and segments), in DIR (ltsuite.ssmcommand). The
# scenario files go inline unless a command would be larger than
# FANOUT_MAX_COMMAND_BYTES; then through S3 (SCENARIO_FILES says which).
build_commands() {
  local dir="$1" ids
  ssm_bundle "$WORK_DIR" "$dir/scenarios.tar.gz"
  printf '%s\n' "${K6_ARGS[@]}" >"$WORK_DIR/k6-args"
  ids="$(IFS=,; printf '%s' "${INSTANCES[*]}")"
  SCENARIO_FILES="$(PYTHONPATH="$LT_ROOT/scripts" LT_PROG="$LT_PROG" "$LT_PYTHON" -m ltsuite.ssmcommand "$dir" \
    --instances "$ids" --run-id "$RUN_ID" --cell-id "$CELL_ID" --start-at "$START_AT" \
    --cell-env "$WORK_DIR/cell.env" --k6-args "$WORK_DIR/k6-args" --bundle "$dir/scenarios.tar.gz" \
    --target-url "${FANOUT[TARGET_URL]}" --timeout "$(run_timeout)" --max-bytes "${FANOUT[FANOUT_MAX_COMMAND_BYTES]}" \
    --bucket "${FANOUT[FANOUT_S3_BUCKET]}" --key-prefix "$(key_prefix)" --workdir "${FANOUT[FANOUT_WORKDIR]}" \
    --k6-path "${FANOUT[FANOUT_K6_PATH]}" --influxdb-url "${FANOUT[FANOUT_INFLUXDB_URL]}" \
    --keep-samples "${FANOUT[FANOUT_KEEP_SAMPLES]:-0}" --region "${FANOUT[FANOUT_REGION]}")" || exit 1
}

# print_plan: the dry run: the commands and a manifest as the real run
# writes them, in a directory of their own; the report (ltsuite.fanoutrun
# plan) prints from them the boto3 calls the run would make and the commands.
print_plan() {
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/ssm-fanout-dry-run.XXXXXX")"
  build_commands "$dir"
  write_manifest "$dir"
  record_commands "$dir"
  record_instances "$dir" "$dir"
  fanoutrun plan "$dir/manifest.json" "$dir" --lookup "$LOOKUP_NOTE" --delivery-timeout "$(delivery_timeout)" \
    --run-timeout "$(run_timeout)" --cells-total "$(matrix_cell_count)"
}

# fanoutrun ARGS...: python -m ltsuite.fanoutrun ARGS (the instance lookup,
# the dry run's report, the end of a run that stopped midway).
fanoutrun() {
  PYTHONPATH="$LT_ROOT/scripts" LT_PROG="$LT_PROG" "$(ssm_python)" -m ltsuite.fanoutrun "$@"
}

# --- A real run ------------------------------------------------------------------------------

# send_run: the commands, the bucket check, one send per instance; what was
# sent goes into the manifest.
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
send_run() {
  local id count="${#INSTANCES[@]}"
  build_commands "$WORK_DIR"
  record_commands "$RUN_DIR"
  for id in "${INSTANCES[@]}"; do
    mkdir -p "$RUN_DIR/cells/$CELL_ID/instances/$id"
    cp "$WORK_DIR/command-$id.sh" "$RUN_DIR/cells/$CELL_ID/instances/$id/command.sh"
  done
  say "run $RUN_ID: cell $CELL_ID on $count instance(s), start at $(date -u -d "@$START_AT" +%H:%M:%SZ); results in ${RUN_DIR#"$LT_ROOT"/}"
  record_instances "$RUN_DIR" "$WORK_DIR"
  # The bucket's check, the scenario files' upload if they go through S3,
  # then one send per instance (ltsuite.ssm send; exit 3: nothing was sent).
  run_python send "$RUN_DIR/manifest.json" "$WORK_DIR" --delivery-timeout "$(delivery_timeout)"
  if (($(date +%s) > START_AT)); then
    warn "the sends took longer than FANOUT_START_DELAY=${FANOUT[FANOUT_START_DELAY]}s: some instances start late (raise it)"
    manifest_warn "$RUN_DIR" "sends ended after the common start time; the segments did not all start together"
  fi
  manifest_update "$RUN_DIR" '.fanout.deadline_epoch = $d' --argjson d $(($(date +%s) + $(run_timeout)))
}

# fanout_create_run_dir: results/<run-id>/ (never an existing one), its manifest and the cell's env.
fanout_create_run_dir() {
  RUN_ID="$(rundir_new "$RUN_ID")"
  RUN_DIR="$LT_RESULTS_DIR/$RUN_ID"
  mkdir -p "$RUN_DIR/cells/$CELL_ID"
  cp "$WORK_DIR/cell.env" "$RUN_DIR/cells/$CELL_ID/cell.env"
  write_manifest "$RUN_DIR"
  ln -sfn "$RUN_ID" "$LT_RESULTS_DIR/latest"
}

# write_manifest DIR: DIR/manifest.json of a new fan-out run. It records
# where things went, never how AWS was authenticated.
write_manifest() {
  local commit axes_json
  commit="$(manifest_git_commit)"
  axes_json="$(printf '%s\n' "${AXIS_KEYS[@]}" | jq -Rn '[inputs | select(length > 0)]')"
  jq -n --argjson format "$(run_format)" \
    --arg run_id "$RUN_ID" --arg matrix "${OPT_MATRIX#"$LT_ROOT"/}" \
    --arg sha "$(sha256sum "$OPT_MATRIX" | cut -d' ' -f1)" --arg commit "$commit" \
    --arg started "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson axes "$axes_json" \
    --arg cell "$CELL_ID" --argjson cell_number "$OPT_CELL" --argjson matrix_cells "$(matrix_cell_count)" \
    --arg overrides "$LT_OVERRIDES" \
    --arg region "${FANOUT[FANOUT_REGION]}" --arg profile "${FANOUT[FANOUT_PROFILE]}" \
    --arg tag_filter "${FANOUT[FANOUT_TAG_FILTER]}" --arg bucket "${FANOUT[FANOUT_S3_BUCKET]}" \
    --arg key_prefix "$(key_prefix)" --arg target_url "${FANOUT[TARGET_URL]}" \
    --arg influxdb_url "${FANOUT[FANOUT_INFLUXDB_URL]}" --arg influxdb_query_url "${FANOUT[FANOUT_INFLUXDB_QUERY_URL]}" \
    --argjson poll "${FANOUT[FANOUT_POLL_INTERVAL]}" \
    '{format: $format, run_id: $run_id, matrix: $matrix, matrix_sha256: $sha, git_commit: $commit,
      backend: "ssm", started_at: $started, ended_at: null, status: "running",
      axes: $axes, cells_total: 1, cells_done: 0, cells_failed: 0,
      cell: {id: $cell, number: $cell_number, of: $matrix_cells},
      overrides: ($overrides | split("\n") | map(select(length > 0))),
      fanout: {region: $region, profile: $profile, tag_filter: $tag_filter,
               s3_bucket: $bucket, s3_key_prefix: $key_prefix, target_url: $target_url,
               influxdb_url: $influxdb_url, influxdb_query_url: $influxdb_query_url,
               poll_interval_s: $poll, start_at_epoch: null, scenario_files: null,
               deadline_epoch: null},
      instances: [], warnings: []}' \
    | write_atomic "$1/manifest.json"
}

# record_commands DIR: when the instances start and how the scenario files
# travel (inline, or s3 when a command would be too large), into DIR's manifest.
# shellcheck disable=SC2016 # SC2016: jq programs are in single quotes on purpose: their $names are theirs
record_commands() {
  manifest_update "$1" '.fanout.start_at_epoch = $s | .fanout.scenario_files = $f' \
    --argjson s "$START_AT" --arg f "$SCENARIO_FILES"
}

# record_instances DIR COMMANDS_DIR: the instances and their segments
# (COMMANDS_DIR/instances.json, build_commands) into DIR's manifest.
# shellcheck disable=SC2016 # SC2016: jq programs are in single quotes on purpose: their $names are theirs
record_instances() {
  manifest_update "$1" '.instances = $i[0]' --slurpfile i "$2/instances.json"
}

# --- Collecting (also a run sent with --no-wait) --------------------------------------------------

# collect_run RUN_DIR: poll, fetch every output, write the row, report.
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
collect_run() {
  local failed error
  load_run "$1"
  poll_invocations
  collect_outputs
  write_row
  failed="$(jq '[.instances[] | select(.error != "")] | length' "$RUN_DIR/manifest.json")"
  manifest_update "$RUN_DIR" '.cells_done = 1 | .cells_failed = $f' --argjson f $((failed > 0 ? 1 : 0))
  manifest_finish "$RUN_DIR" "$([[ $failed -eq 0 ]] && echo complete || echo failed)"
  results_render "$RUN_DIR"
  FINISHED=1
  printf '\n'
  cat "$RUN_DIR/results.md"
  printf '\nresults: %s\n' "${RUN_DIR#"$LT_ROOT"/}"
  if [[ $failed -gt 0 ]]; then
    while IFS= read -r error; do
      say "  $error"
    done < <(instance_errors)
    abort "$failed of ${#INSTANCES[@]} instance(s) failed$([[ $failed -lt ${#INSTANCES[@]} ]] && echo "; the row adds up the other instances only"); see ${RUN_DIR#"$LT_ROOT"/}"
  fi
}

# load_run RUN_DIR: the run's identity, settings and instances from its manifest.
load_run() {
  local manifest="$1/manifest.json"
  RUN_DIR="$(cd "$1" && pwd)"
  RUN_ID="$(jq -r .run_id "$manifest")"
  CELL_ID="$(jq -r .cell.id "$manifest")"
  [[ "$(jq -r .backend "$manifest")" == ssm ]] || usage_error "$1 is not a fan-out run (backend is not ssm)"
  FANOUT=()
  FANOUT[FANOUT_REGION]="$(jq -r .fanout.region "$manifest")"
  FANOUT[FANOUT_PROFILE]="$(jq -r .fanout.profile "$manifest")"
  FANOUT[FANOUT_S3_BUCKET]="$(jq -r .fanout.s3_bucket "$manifest")"
  FANOUT[KEY_PREFIX]="$(jq -r .fanout.s3_key_prefix "$manifest")"
  FANOUT[FANOUT_POLL_INTERVAL]="$(jq -r .fanout.poll_interval_s "$manifest")"
  FANOUT[DEADLINE]="$(jq -r '.fanout.deadline_epoch // 0' "$manifest")"
  FANOUT[FANOUT_INFLUXDB_URL]="$(jq -r .fanout.influxdb_url "$manifest")"
  FANOUT[FANOUT_INFLUXDB_QUERY_URL]="$(jq -r .fanout.influxdb_query_url "$manifest")"
  mapfile -t INSTANCES < <(jq -r '.instances[].instance_id' "$manifest")
  [[ ${#INSTANCES[@]} -gt 0 ]] || abort "$1: the manifest lists no instance"
}

# instance_errors: the errors of the instances that failed, one a line.
instance_errors() {
  jq -r '.instances[] | select(.error != "") | .error | gsub("\n"; " ")' "$RUN_DIR/manifest.json"
}

# poll_invocations: the invocations' states until every one has ended or the
# deadline passes (ltsuite.ssm: those still going then are cancelled and
# marked timed out).
poll_invocations() {
  run_python poll "$RUN_DIR/manifest.json"
}

# run_python COMMAND ARGS...: ltsuite.ssm COMMAND (send, poll, collect), which
# writes the instances' state into the manifest. It runs in the background
# so that a signal reaches on_signal at once. Exit 3 of send: nothing was
# sent, for the reason it printed.
run_python() {
  local status=0 python
  python="$(ssm_python)"
  PYTHONPATH="$LT_ROOT/scripts" LT_PROG="$LT_PROG" "$python" -m ltsuite.ssm "$@" >"$WORK_DIR/python.out" &
  PYTHON_PID=$!
  wait "$PYTHON_PID" || status=$?
  PYTHON_PID=""
  ((status != 3)) || finish_failed "$(cat "$WORK_DIR/python.out")"
  ((status == 0)) || abort "ltsuite.ssm $1 failed (exit status $status)"
}

# collect_outputs: every invocation's full output from S3 into its
# instance's directory, its summary, and its error if it failed (ltsuite.ssm).
collect_outputs() {
  run_python collect "$RUN_DIR/manifest.json" "$RUN_DIR/cells/$CELL_ID" --root "$LT_ROOT"
}

# write_row: each good instance's row, then the cell's aggregated row, its
# percentiles from the instances' merged histograms (else InfluxDB's raw
# samples, if set); the manifest gets its notes (ltsuite.fanoutrow).
write_row() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.fanoutrow "$RUN_DIR"
}

# finish_failed MESSAGE: end a run that failed before anything was sent.
finish_failed() {
  manifest_warn "$RUN_DIR" "$1"
  manifest_finish "$RUN_DIR" failed
  FINISHED=1
  abort "$1"
}

# on_signal NAME: a signal (HUP: the terminal closed; INT; TERM) ends the
# run; on_exit cancels and records. Exit status 128 + the signal's number.
on_signal() {
  trap - HUP INT TERM
  ENDED_BY="SIG$1"
  say ""
  exit $((128 + $(kill -l "$1")))
}

# on_exit: the EXIT trap. A run that has not finished (a signal, an error
# after the sends, an abort) cancels the invocations that have not ended
# and records how it ended (fanout_record_end); the work directory goes.
# Keeps the exit status.
on_exit() {
  local status=$?
  trap - EXIT HUP INT TERM
  if [[ -n "$PYTHON_PID" ]]; then
    # What it sent or saw so far is in the manifest.
    end_child "$PYTHON_PID" TERM 30 || true
  fi
  if [[ -n "$RUN_DIR" && $FINISHED -eq 0 ]]; then
    fanout_record_end "$status" || warn "could not record the end of the run in $RUN_DIR/manifest.json"
  fi
  [[ -z "$WORK_DIR" ]] || rm -rf "$WORK_DIR"
  exit "$status"
}

# fanout_record_end STATUS: the run ended before it finished, with exit
# STATUS (by ENDED_BY if a signal): every invocation sent that has not ended
# is cancelled and named in its instance's error (ltsuite.fanoutrun end, which
# prints the manifest's warning), and the manifest is finished "interrupted"
# (a signal) or "failed" (an error).
fanout_record_end() {
  local status="$1" why warning
  if [[ -n "$ENDED_BY" ]]; then
    why="interrupted by $ENDED_BY"
  else
    why="stopped by an error (exit status $status)"
  fi
  warning="$(fanoutrun end "$RUN_DIR/manifest.json" --why "$why")" \
    || warning="the fan-out was $why, and the cancel of what was sent could not run: check the instances"
  manifest_warn "$RUN_DIR" "$warning"
  manifest_finish "$RUN_DIR" "$([[ -n "$ENDED_BY" ]] && echo interrupted || echo failed)"
  say "the fan-out was $why; ${RUN_DIR#"$LT_ROOT"/} records it"
}

main "$@"
