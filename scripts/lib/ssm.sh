# shellcheck shell=bash
# Summary: fan one matrix cell out to k6 machines with AWS SSM: settings, the
# script's archive and bundle, rows. Each instance's command is built in
# Python (ltsuite.ssmcommand), and every AWS call is made by Python with boto3
# (ltsuite.awscalls, ltsuite.ssm, ltsuite.fanoutrun).
#
# Needs envfile.sh (settings), results.sh (write_atomic) and jq.

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

# fanout_cell NUMBER WORK_DIR: the cell both fan-outs (SSM, k6-operator)
# send: cell NUMBER (1-based) of the resolved matrix, its values with every
# knob left at auto given its value (ltsuite.cell resolve, as in a local run)
# in WORK_DIR/cell.env; prints the cell's id. Then fanout_use_cell_target
# takes its target, and ssm_prepare_script its script.
fanout_cell() {
  local number="$1" work="$2" total
  total="$(matrix_cell_count)"
  ((number <= total)) || usage_error "--cell $number: the matrix has $total cell(s)"
  matrix_cell_values $((number - 1)) | PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.cell resolve >"$work/cell.env"
  matrix_cell_id $((number - 1))
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
    [[ -n "$(PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.fanoutrow influx-db "${FANOUT[FANOUT_INFLUXDB_URL]}")" ]] \
      || usage_error "FANOUT_INFLUXDB_URL: '${FANOUT[FANOUT_INFLUXDB_URL]}' names no database (expected http://HOST:8086/DATABASE)"
  fi
  if [[ -n "${FANOUT[FANOUT_INFLUXDB_QUERY_URL]}" ]]; then
    fanout_check_url FANOUT_INFLUXDB_QUERY_URL "${FANOUT[FANOUT_INFLUXDB_QUERY_URL]}"
  fi
}

# ssm_check_instance_id ID: a plausible EC2 or managed-node id.
ssm_check_instance_id() {
  [[ "$1" =~ ^m?i-[A-Za-z0-9]+$ ]] || usage_error "'$1' is not an instance id (i-... or mi-...)"
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
  cell_error ""
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

# ssm_python: the Python with boto3 that makes every AWS call of the fan-out
# (ltsuite.ssm, ltsuite.fanoutrun).
ssm_python() {
  [[ -x "$LT_ROOT/.tools/venv/bin/python" ]] || abort "boto3 was not found in .tools/venv; run 'make aws-tools'"
  printf '%s\n' "$LT_ROOT/.tools/venv/bin/python"
}
