#!/usr/bin/env bash
# Summary: print a k6-operator TestRun (k6.io/v1alpha1) and its ConfigMap for one matrix cell, split over N pods.
# Usage: scripts/k6-operator.sh [--cell N] [--run-id ID] --parallelism N MATRIX_FILE > testrun.yaml
# Usage: scripts/k6-operator.sh --collect testrun.yaml (--logs DIR | --kubectl)   (the row, from the pods' logs)
#
# The scenario and the modules it imports travel as a k6 archive (k6 archive)
# in the ConfigMap, with the instance-side script an SSM instance runs
# (ssm-instance.sh, started by k6-pod.sh, the `k6` on the runner pods' PATH),
# so each pod prints its summary and latency histogram to its log. The cell's
# values (TARGET_URL among them) go both into the archive and into the
# runners' environment; FANOUT_INFLUXDB_URL and the K8S_* settings come from
# env/fanout.env (or the environment), as for scripts/ssm-fanout.sh. k6-operator
# splits the load with the same execution segments as the SSM fan-out: N pods
# together run the configured VUs, not N times them. The documents and the
# collection are ltsuite.testrun's.
set -euo pipefail

LT_PROG=k6-operator
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix k6 results ssm; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

readonly LT_FANOUT_ENV="${LT_FANOUT_ENV:-$LT_ROOT/env/fanout.env}"

OPT_CELL=1
OPT_PARALLELISM=""
OPT_RUN_ID=""
OPT_MATRIX=""
OPT_COLLECT=""
declare -a OPT_SOURCE=()

main() {
  local work cell_id run_id name
  parse_args "$@"
  if [[ -n "$OPT_COLLECT" ]]; then
    collect
    return
  fi
  work="$(mktemp -d "${TMPDIR:-/tmp}/k6-operator.XXXXXX")"
  # shellcheck disable=SC2064 # the path is fixed now, on purpose
  trap "rm -rf '$work'" EXIT

  matrix_resolve "$OPT_MATRIX"
  fanout_config_load "$LT_FANOUT_ENV"
  cell_id="$(fanout_cell "$OPT_CELL" "$work")"
  # The manifest is made to be applied: its load goes where a run's would.
  fanout_use_cell_target "$work/cell.env" run
  run_id="${OPT_RUN_ID:-$(date +%Y%m%d-%H%M%S)-$(basename "$OPT_MATRIX" .matrix)-k8s}"
  name="$(k8s_name "k6-$run_id-$cell_id")"

  ssm_prepare_script "$work/cell.env" "${FANOUT[TARGET_URL]}" "$run_id" "$cell_id" "$work" || abort "$CELL_ERROR"
  k6_script_args "$(cell_env_get "$work/cell.env" SCENARIO)" "$work/k6-script.json" "$run_id" "$cell_id" >"$work/k6-args.txt"
  local -a own=()
  ! k6_own_script "$(cell_env_get "$work/cell.env" SCENARIO)" || own=(--own-script)
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.testrun manifest "$work" --name "$name" \
    --namespace "${FANOUT[K8S_NAMESPACE]}" --parallelism "$OPT_PARALLELISM" --run-id "$run_id" --cell "$cell_id" \
    --k6-image "${FANOUT[K8S_K6_IMAGE]}" --runner-image "${FANOUT[K8S_RUNNER_IMAGE]}" \
    --axis-keys "${AXIS_KEYS[*]}" --influxdb-url "${FANOUT[FANOUT_INFLUXDB_URL]}" "${own[@]}"
}

# collect: the pods' logs of a TestRun this script printed into results/<run-id>/
# (ltsuite.testrun collect, with the Python that has PyYAML: .tools/venv's if there).
collect() {
  local python="$LT_PYTHON"
  [[ ! -x "$LT_ROOT/.tools/venv/bin/python" ]] || python="$LT_ROOT/.tools/venv/bin/python"
  PYTHONPATH="$LT_ROOT/scripts" "$python" -m ltsuite.testrun collect "$OPT_COLLECT" "${OPT_SOURCE[@]}" \
    --results-dir "${LT_RESULTS_DIR:-$LT_ROOT/results}"
}

# parse_args ARGS...: options and the matrix file into OPT_*.
parse_args() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h | --help)
        print_summary "${BASH_SOURCE[0]}"
        exit 0
        ;;
      --parallelism)
        [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--parallelism needs a number of pods >= 1"
        OPT_PARALLELISM="$2"
        shift
        ;;
      --cell)
        [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--cell needs a cell number (1 = the first)"
        OPT_CELL="$2"
        shift
        ;;
      --collect)
        [[ $# -ge 2 && -f "$2" ]] || usage_error "--collect needs the TestRun file this script printed"
        OPT_COLLECT="$2"
        shift
        ;;
      --logs)
        [[ $# -ge 2 && -d "$2" ]] || usage_error "--logs needs a directory of the pods' logs (one file a pod, named after it)"
        OPT_SOURCE=(--logs "$2")
        shift
        ;;
      --kubectl) OPT_SOURCE=(--kubectl) ;;
      --run-id)
        [[ $# -ge 2 && "$2" =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "--run-id needs an id of letters, digits and ._-"
        OPT_RUN_ID="$2"
        shift
        ;;
      -*) usage_error "unknown option $1 (see --help)" ;;
      *)
        [[ -z "$OPT_MATRIX" ]] || usage_error "one matrix file at most (got $OPT_MATRIX and $1)"
        OPT_MATRIX="$1"
        ;;
    esac
    shift
  done
  if [[ -n "$OPT_COLLECT" ]]; then
    [[ ${#OPT_SOURCE[@]} -gt 0 ]] || usage_error "--collect needs --logs DIR or --kubectl"
    return
  fi
  [[ -n "$OPT_PARALLELISM" ]] || usage_error "--parallelism N is required (the number of k6 pods)"
  [[ -n "$OPT_MATRIX" ]] || usage_error "no matrix file given (e.g. env/matrices/default.matrix)"
  [[ -f "$OPT_MATRIX" ]] || usage_error "$OPT_MATRIX: no such matrix file"
}

# k8s_name TEXT: TEXT as a Kubernetes object name (lower case, digits and -,
# starting and ending with an alphanumeric), at most 48 characters: k6-operator
# names runner i's Service NAME-service-i, and a name holds at most 63.
k8s_name() {
  local name="${1,,}"
  name="${name//[^a-z0-9-]/-}"
  name="${name:0:48}"
  while [[ "$name" == *- ]]; do
    name="${name%-}"
  done
  printf '%s\n' "$name"
}

main "$@"
