# shellcheck shell=bash
# Summary: fan one matrix cell out to k6 machines with AWS SSM: settings,
# execution segments, per-instance commands, rows. Every AWS call is made
# by Python with boto3 (ltsuite.awscalls, ltsuite.ssm, ltsuite.fanoutrun).
#
# Needs envfile.sh (settings), results.sh (write_atomic) and jq.

# The per-instance command prints its k6 summary between these lines; the
# collector cuts it out of the full stdout that SSM stores in S3 (the same
# lines as ltsuite.ssm.SUMMARY_BEGIN/END).
readonly SSM_SUMMARY_BEGIN='=== k6-fanout summary begin ==='
readonly SSM_SUMMARY_END='=== k6-fanout summary end ==='
# And its latency histogram between these (ltsuite.ssm.HISTOGRAM_BEGIN/END).
readonly SSM_HISTOGRAM_BEGIN='=== k6-fanout histogram begin ==='
readonly SSM_HISTOGRAM_END='=== k6-fanout histogram end ==='
# Filled by fanout_config_load: key -> value, and the keys in file order.
declare -gA FANOUT=()
declare -ga FANOUT_KEYS=()
declare -gA _FANOUT_TYPE=()

# --- Settings ------------------------------------------------------------------------

# fanout_config_load FILE: read env/fanout.env, then let every key that is
# exported in the environment override it (as knobs do for a local run).
fanout_config_load() {
  local file="$1" key why
  local -A exported=()
  envfile_load_typed "$file" FANOUT_KEYS _FANOUT_TYPE FANOUT
  envfile_exported exported
  for key in "${FANOUT_KEYS[@]}"; do
    [[ -n "${exported[$key]:-}" ]] || continue
    if ! why="$(envfile_check_type "${_FANOUT_TYPE[$key]}" "${!key}")"; then
      usage_error "command line: $key: $why"
    fi
    FANOUT[$key]="${!key}"
  done
}

# fanout_check_url NAME URL: URL is http(s) and carries no user or password
# (it is written into commands and results; credentials belong on the hosts).
fanout_check_url() {
  local name="$1" url="$2"
  [[ "$url" =~ ^https?://[^/]+ ]] || usage_error "$name: '$url' is not an http:// or https:// URL"
  if [[ "$url" =~ ^https?://[^/]*@ ]]; then
    usage_error "$name: the URL has a user or password in it; it would be written into the commands and the results. Give credentials to the k6 machines another way (K6_INFLUXDB_USERNAME/K6_INFLUXDB_PASSWORD in their environment)"
  fi
}

# fanout_use_cell_target CELL_ENV MODE: take TARGET_URL and ALLOW_REMOTE_TARGET
# from the cell (they are knobs), and check them and the InfluxDB URLs. MODE
# "run" (a fan-out, or a k6-operator manifest that someone will apply): a
# target off 127.0.0.0/8 needs ALLOW_REMOTE_TARGET=1, as for a local run
# (run-matrix.sh check_target_url); "dry-run": only a warning, nothing is
# sent.
fanout_use_cell_target() {
  local cell_env="$1" mode="$2" host
  FANOUT[TARGET_URL]="$(cell_env_get "$cell_env" TARGET_URL)"
  [[ -n "${FANOUT[TARGET_URL]}" ]] \
    || usage_error "TARGET_URL is empty: set it (in the matrix, or TARGET_URL=http://HOST:PORT) to the address at which the k6 machines reach the target"
  [[ "${FANOUT[TARGET_URL]}" != *" "* ]] || usage_error "TARGET_URL: one target per run, not an axis"
  fanout_check_url TARGET_URL "${FANOUT[TARGET_URL]}"
  host="${FANOUT[TARGET_URL]#*://}"
  host="${host%%[/?#]*}"
  # Drop a port, but not the colons of a bracketed IPv6 address.
  [[ "$host" =~ ^(\[[^]]*\]|[^:]*)(:[0-9]+)?$ ]] && host="${BASH_REMATCH[1]}"
  if [[ ! "$host" =~ ^(127\.[0-9.]+|localhost|\[::1\])$
    && "$(cell_env_get "$cell_env" ALLOW_REMOTE_TARGET)" != 1 ]]; then
    [[ "$mode" == dry-run ]] \
      || usage_error "TARGET_URL: $host is not loopback; set ALLOW_REMOTE_TARGET=1 to send load there"
    warn "TARGET_URL: $host is not loopback; the real run needs ALLOW_REMOTE_TARGET=1"
  fi
  if [[ -n "${FANOUT[FANOUT_INFLUXDB_URL]}" ]]; then
    fanout_check_url FANOUT_INFLUXDB_URL "${FANOUT[FANOUT_INFLUXDB_URL]}"
    [[ -n "$(ssm_influx_db "${FANOUT[FANOUT_INFLUXDB_URL]}")" ]] \
      || usage_error "FANOUT_INFLUXDB_URL: '${FANOUT[FANOUT_INFLUXDB_URL]}' names no database (expected http://HOST:8086/DATABASE)"
  fi
  if [[ -n "${FANOUT[FANOUT_INFLUXDB_QUERY_URL]}" ]]; then
    fanout_check_url FANOUT_INFLUXDB_QUERY_URL "${FANOUT[FANOUT_INFLUXDB_QUERY_URL]}"
  fi
}

# --- Shell words -----------------------------------------------------------------------

# sh_quote WORD: WORD as one POSIX shell word (single-quoted unless it is
# made only of characters no shell treats specially).
sh_quote() {
  local word="$1"
  if [[ "$word" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
    printf '%s' "$word"
  else
    printf "'%s'" "${word//\'/\'\\\'\'}"
  fi
}

# sh_quote_line WORD...: the words as one command line a shell reads back
# into the same words.
sh_quote_line() {
  local word sep=""
  for word in "$@"; do
    printf '%s%s' "$sep" "$(sh_quote "$word")"
    sep=" "
  done
  printf '\n'
}

# ssm_instance_aws_args: the AWS CLI's global arguments an instance gets for
# its own calls (the S3 copy of the scenario files), one word a line: the
# region only. The operator's profile names credentials on the operator's
# machine; an instance has its own role, and `--profile` of a name it does
# not know makes its aws fail ("The config profile (...) could not be found").
ssm_instance_aws_args() {
  [[ -z "${FANOUT[FANOUT_REGION]:-}" ]] || printf '%s\n' --region "${FANOUT[FANOUT_REGION]}"
}

# ssm_check_instance_id ID: a plausible EC2 or managed-node id.
ssm_check_instance_id() {
  [[ "$1" =~ ^m?i-[A-Za-z0-9]+$ ]] || usage_error "'$1' is not an instance id (i-... or mi-...)"
}

# --- Segments ---------------------------------------------------------------

# The fan-out's execution segments (ltsuite.fanout segments, the plan a
# k6-operator TestRun shares): SSM_SEGMENTS[INDEX] of instance INDEX
# (0-based), and the sequence every instance gets, for SSM_SEGMENT_COUNT
# instances (ssm_plan_segments).
declare -ga SSM_SEGMENTS=()
SSM_SEQUENCE=""
SSM_SEGMENT_COUNT=0

# ssm_plan_segments COUNT: SSM_SEGMENTS and SSM_SEQUENCE for COUNT instances,
# one Python call for them all.
ssm_plan_segments() {
  local segment sequence
  SSM_SEGMENTS=()
  while IFS=$'\t' read -r segment sequence; do
    SSM_SEGMENTS+=("$segment")
    SSM_SEQUENCE="$sequence"
  done < <(PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.fanout segments "$1")
  [[ ${#SSM_SEGMENTS[@]} -eq "$1" ]] || abort "ltsuite.fanout segments $1 gave ${#SSM_SEGMENTS[@]} segment(s)"
  SSM_SEGMENT_COUNT="$1"
}

# ssm_segment INDEX COUNT: the execution segment of instance INDEX (0-based)
# of COUNT: "INDEX/COUNT:(INDEX+1)/COUNT" (planned first if not yet for COUNT).
ssm_segment() {
  ((SSM_SEGMENT_COUNT == $2)) || ssm_plan_segments "$2"
  printf '%s\n' "${SSM_SEGMENTS[$1]}"
}

# ssm_segment_sequence COUNT: "0,1/COUNT,...,1". Every instance gets the same
# sequence, so k6 hands out VUs and iterations consistently: the segments
# together run exactly the configured load, not COUNT times it.
ssm_segment_sequence() {
  ((SSM_SEGMENT_COUNT == $1)) || ssm_plan_segments "$1"
  printf '%s\n' "$SSM_SEQUENCE"
}

# --- What each instance runs -----------------------------------------------------------------

# ssm_prepare_script CELL_ENV TARGET_URL RUN_ID CELL_ID DIR: the cell's
# script as the instances get it: a k6 archive of it and every module it
# imports (k6_archive: DIR/script.tar, with DIR/k6-script.json, its
# inspection). A shipped scenario and a script of one's own travel alike; the
# latter inside its entry module (scenarios/lib/own-script.js), so its row
# has the same columns as a local run's. Making the archive also proves the
# script loads with the cell's values before anything is sent. On failure
# the reason is in CELL_ERROR.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
ssm_prepare_script() {
  local cell_env="$1" target_url="$2" run_id="$3" cell_id="$4" dir="$5"
  local -A cell=()
  [[ -x "$LT_K6" ]] || abort "k6 not found at $LT_K6; run 'make tools' (the scenario is checked with it before anything is sent)"
  load_cell_env "$cell_env" cell
  cell[RUN_ID]="$run_id"
  cell[CELL_ID]="$cell_id"
  k6_archive cell "$target_url" "$dir"
}

# ssm_bundle DIR OUT: the script's archive (DIR/script.tar, ssm_prepare_script)
# and the modules that reduce k6's samples to the instance's latency
# histogram (DIR/ltsuite/, ltsuite.ssm instance-modules) as the tar.gz an
# instance unpacks.
ssm_bundle() {
  local dir="$1" out_file="$2"
  rm -rf "$dir/ltsuite"
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.ssm instance-modules "$dir"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=u=rw,go=r \
    -C "$dir" -cf - script.tar ltsuite | gzip -n -9 >"$out_file"
}

# ssm_instance_command CELL_ENV INSTANCE INDEX COUNT: the command instance
# INDEX (0-based) of COUNT runs: its settings as shell assignments and k6's
# arguments as `set --`, then scripts/ssm-instance.sh as it is in the repo
# (all the logic; POSIX sh). Reads SSM_RUN_ID, SSM_CELL_ID, SSM_START_AT
# (epoch seconds), SSM_BUNDLE_FILE, SSM_BUNDLE_S3_URI (empty: the bundle goes
# inline) and SSM_K6_ARGS (k6_script_args: the script's tags and options).
ssm_instance_command() {
  local cell_env="$1" instance="$2" index="$3" count="$4"
  local workdir="${FANOUT[FANOUT_WORKDIR]%/}/$SSM_RUN_ID/$SSM_CELL_ID/$instance"
  local segment line bundle_b64="" aws_args="" i
  segment="$(ssm_segment "$index" "$count")"
  # One element per line of the k6 call: an option with its value.
  local -a k6_lines=(
    "$(sh_quote_line run --no-usage-report --address "" --include-system-env-vars=false)"
    "$(sh_quote_line --execution-segment "$segment")"
    "$(sh_quote_line --execution-segment-sequence "$(ssm_segment_sequence "$count")")"
  )
  # The script's arguments, a --tag with its value on one line; then this instance's tag.
  local -a script_args=("${SSM_K6_ARGS[@]}" --tag "instance=$instance")
  for ((i = 0; i < ${#script_args[@]}; i++)); do
    if [[ "${script_args[i]}" == --tag ]]; then
      k6_lines+=("$(sh_quote_line --tag "${script_args[i + 1]}")")
      i=$((i + 1))
    else
      k6_lines+=("$(sh_quote_line "${script_args[i]}")")
    fi
  done
  # Every request's samples, which the instance reduces to its latency histogram.
  k6_lines+=("$(sh_quote_line --out json=samples.json.gz)")
  [[ -z "${FANOUT[FANOUT_INFLUXDB_URL]}" ]] || k6_lines+=("$(sh_quote_line --out "influxdb=${FANOUT[FANOUT_INFLUXDB_URL]}")")
  # The cell's knobs, but for the values this command sets itself below.
  while IFS= read -r line; do
    [[ -z "$line" || "$line" =~ ^(TARGET_URL|BASE_URL|SUMMARY_FILE|RUN_ID|CELL_ID)= ]] || k6_lines+=("$(sh_quote_line -e "$line")")
  done <"$cell_env"
  k6_lines+=(
    "$(sh_quote_line -e "TARGET_URL=${FANOUT[TARGET_URL]}")"
    "$(sh_quote_line -e "BASE_URL=${FANOUT[TARGET_URL]}")"
    "$(sh_quote_line -e "SUMMARY_FILE=$workdir/summary.json")"
    "$(sh_quote_line -e "RUN_ID=$SSM_RUN_ID")"
    "$(sh_quote_line -e "CELL_ID=$SSM_CELL_ID")"
  )
  k6_lines+=("$(sh_quote_line script.tar)")
  if [[ -n "$SSM_BUNDLE_S3_URI" ]]; then
    aws_args="$(ssm_instance_aws_args)"
  else
    bundle_b64="$(base64 -w0 "$SSM_BUNDLE_FILE")"
  fi

  printf '# k6 fan-out: run %s, cell %s, instance %d of %d (%s), segment %s\n' \
    "$SSM_RUN_ID" "$SSM_CELL_ID" $((index + 1)) "$count" "$instance" "$segment"
  ssm_assign LT_WORKDIR "$workdir"
  ssm_assign LT_K6 "${FANOUT[FANOUT_K6_PATH]}"
  ssm_assign LT_BUNDLE_B64 "$bundle_b64"
  ssm_assign LT_BUNDLE_S3 "$SSM_BUNDLE_S3_URI"
  ssm_assign LT_AWS_ARGS "$aws_args"
  ssm_assign LT_BUNDLE_SHA256 "$(sha256sum "$SSM_BUNDLE_FILE" | cut -d' ' -f1)"
  ssm_assign LT_CELL_ENV "$(cat "$cell_env")"
  ssm_assign LT_START_AT "$SSM_START_AT"
  ssm_assign LT_SUMMARY_BEGIN "$SSM_SUMMARY_BEGIN"
  ssm_assign LT_SUMMARY_END "$SSM_SUMMARY_END"
  ssm_assign LT_HISTOGRAM_BEGIN "$SSM_HISTOGRAM_BEGIN"
  ssm_assign LT_HISTOGRAM_END "$SSM_HISTOGRAM_END"
  ssm_assign LT_KEEP_SAMPLES "${FANOUT[FANOUT_KEEP_SAMPLES]:-0}"
  printf 'set --'
  for line in "${k6_lines[@]}"; do
    printf ' \\\n  %s' "$line"
  done
  printf '\n'
  cat "$LT_ROOT/scripts/ssm-instance.sh"
}

# ssm_assign NAME VALUE: a shell assignment of VALUE, quoted for any sh.
ssm_assign() {
  if [[ -z "$2" ]]; then
    printf "%s=''\n" "$1"
  else
    printf '%s=%s\n' "$1" "$(sh_quote "$2")"
  fi
}

# ssm_params_json COMMAND_FILE TIMEOUT_S: the --parameters of the send: the
# script as AWS-RunShellScript's list of lines, and its execution timeout.
ssm_params_json() {
  jq -Rn --arg timeout "$2" '{commands: [inputs], executionTimeout: [$timeout]}' <"$1"
}

# ssm_python: the Python with boto3 that makes every AWS call of the fan-out
# (ltsuite.ssm, ltsuite.fanoutrun).
ssm_python() {
  [[ -x "$LT_ROOT/.tools/venv/bin/python" ]] || abort "boto3 was not found in .tools/venv; run 'make aws-tools'"
  printf '%s\n' "$LT_ROOT/.tools/venv/bin/python"
}

# --- Rows ----------------------------------------------------------------------------------------

# ssm_instance_row INSTANCE_DIR RUN_ID CELL_ID AXES_JSON: INSTANCE_DIR/row.json,
# the results row of one instance built as for a local cell from its
# summary.json and cell.env, with only the fields k6's summary gives
# (ltsuite.fanout instance-row, which a k6-operator pod's row uses too).
ssm_instance_row() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.fanout instance-row "$1" --run-id "$2" --cell "$3" --axes "$4"
}

# --- InfluxDB -------------------------------------------------------------------------------------

# ssm_influx_db URL: the database named by the path of an InfluxDB v1 URL.
ssm_influx_db() {
  local rest="${1#*://}"
  [[ "$rest" == */* ]] || return 0
  rest="${rest#*/}"
  printf '%s' "${rest%%[/?]*}"
}

# ssm_influx_percentiles INFLUXDB_URL QUERY_URL RUN_ID CELL_ID: the latency
# percentiles of answered load requests over every instance's raw samples, as
# {"lat_med_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "samples"}. QUERY_URL
# (may be empty) is where this machine reaches the same InfluxDB. Fails with
# the reason on stdout.
ssm_influx_percentiles() {
  local url="$1" query_url="${2:-$1}" run_id="$3" cell_id="$4" db base query answer
  db="$(ssm_influx_db "$url")"
  base="$(sed -E 's#^(https?://[^/]+).*#\1#' <<<"$query_url")"
  # The ids go into the query text: allow only what run and cell ids are made of.
  if [[ ! "$run_id$cell_id" =~ ^[A-Za-z0-9._:-]+$ ]]; then
    printf 'run or cell id with unexpected characters: %s %s' "$run_id" "$cell_id"
    return 1
  fi
  query="SELECT PERCENTILE(\"value\", 50) AS p50, PERCENTILE(\"value\", 90) AS p90,"
  query+=" PERCENTILE(\"value\", 95) AS p95, PERCENTILE(\"value\", 99) AS p99, COUNT(\"value\") AS samples"
  query+=" FROM \"http_req_duration\" WHERE \"run_id\" = '$run_id' AND \"cell\" = '$cell_id'"
  query+=" AND \"traffic\" = 'load' AND \"expected_response\" = 'true'"
  if ! answer="$(curl -fsS --max-time 60 -G "$base/query" --data-urlencode "db=$db" \
    --data-urlencode "q=$query" 2>&1)"; then
    printf 'query to %s failed: %s' "$base" "$(head -c 200 <<<"$answer")"
    return 1
  fi
  jq -ce '.results[0].series[0] // empty
          | (.columns) as $c | (.values[0]) as $v
          | [range(0; $c | length) | {($c[.]): $v[.]}] | add
          | def num: if . == null then null else (. * 1000 | round) / 1000 end;
            {lat_med_ms: (.p50 | num), lat_p90_ms: (.p90 | num), lat_p95_ms: (.p95 | num),
             lat_p99_ms: (.p99 | num), samples: .samples}' <<<"$answer" \
    || { printf 'InfluxDB has no http_req_duration samples for run %s, cell %s' "$run_id" "$cell_id"; return 1; }
}
