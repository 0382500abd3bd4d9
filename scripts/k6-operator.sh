#!/usr/bin/env bash
# Summary: print a k6-operator TestRun (k6.io/v1alpha1) and its ConfigMap for one matrix cell, split over N pods.
# Usage: scripts/k6-operator.sh [--cell N] [--run-id ID] --parallelism N MATRIX_FILE > testrun.yaml
#
# The scenario and the modules it imports travel as a k6 archive (k6 archive)
# in the ConfigMap, since ConfigMap keys cannot hold the lib/ directory the
# scenario imports from. The cell's values (TARGET_URL among them) go both
# into the archive and into the runners' environment; FANOUT_INFLUXDB_URL
# comes from env/fanout.env (or the environment), as for scripts/ssm-fanout.sh.
# k6-operator splits the load with the same execution segments as the SSM
# fan-out: N pods together run the configured VUs, not N times them.
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

main() {
  local work cell_id run_id name
  parse_args "$@"
  work="$(mktemp -d "${TMPDIR:-/tmp}/k6-operator.XXXXXX")"
  # shellcheck disable=SC2064 # the path is fixed now, on purpose
  trap "rm -rf '$work'" EXIT

  matrix_resolve "$OPT_MATRIX"
  fanout_config_load "$LT_FANOUT_ENV"
  (( OPT_CELL <= $(matrix_cell_count) )) || usage_error "--cell $OPT_CELL: the matrix has $(matrix_cell_count) cell(s)"
  cell_id="$(matrix_cell_id $((OPT_CELL - 1)))"
  # A knob left at auto gets its value here (k6_resolve_autos), as in a local run.
  matrix_cell_values $((OPT_CELL - 1)) | k6_resolve_autos "" >"$work/cell.env"
  # The manifest is made to be applied: its load goes where a run's would.
  fanout_use_cell_target "$work/cell.env" run
  run_id="${OPT_RUN_ID:-$(date +%Y%m%d-%H%M%S)-$(basename "$OPT_MATRIX" .matrix)-k8s}"
  name="$(k8s_name "k6-$run_id-$cell_id")"

  run_env "$work/cell.env" "$run_id" "$cell_id" >"$work/run.env"
  make_archive "$work/cell.env" "$run_id" "$cell_id" "$work"
  print_manifest "$name" "$run_id" "$cell_id" "$work"
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
  [[ -n "$OPT_PARALLELISM" ]] || usage_error "--parallelism N is required (the number of k6 pods)"
  [[ -n "$OPT_MATRIX" ]] || usage_error "no matrix file given (e.g. env/matrices/default.matrix)"
  [[ -f "$OPT_MATRIX" ]] || usage_error "$OPT_MATRIX: no such matrix file"
}

# k8s_name TEXT: TEXT as a Kubernetes object name (lower case, digits and -,
# at most 63 characters, starting and ending with an alphanumeric).
k8s_name() {
  local name="${1,,}"
  name="${name//[^a-z0-9-]/-}"
  name="${name:0:63}"
  while [[ "$name" == *- ]]; do
    name="${name%-}"
  done
  printf '%s\n' "$name"
}

# run_env CELL_ENV RUN_ID CELL_ID: every KEY=VALUE k6 gets: the cell's knobs
# (TARGET_URL among them) and the run's identity.
run_env() {
  grep -vE '^(RUN_ID|CELL_ID)=' "$1"
  printf 'RUN_ID=%s\nCELL_ID=%s\n' "$2" "$3"
}

# make_archive CELL_ENV RUN_ID CELL_ID DIR: the scenario (a shipped one or a
# script of one's own, in its entry module) and its imports as a k6 archive,
# DIR/script.tar, with its inspection DIR/k6-script.json (k6_archive).
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
make_archive() {
  local -A cell=()
  [[ -x "$LT_K6" ]] || abort "k6 not found at $LT_K6; run 'make tools'"
  load_cell_env "$1" cell
  cell[RUN_ID]="$2"
  cell[CELL_ID]="$3"
  CELL_ERROR=""
  k6_archive cell "${FANOUT[TARGET_URL]}" "$4" || abort "$CELL_ERROR"
}

# k6_arguments CELL_ENV RUN_ID CELL_ID DIR: the runners' k6 arguments, one
# line: the script's (k6_script_args: k6's --tag replaces the script's own
# tags, and the operator adds its own), and the InfluxDB output when one is
# set. k6-operator splits the line at every space (TestRun.spec.arguments
# is one string), so no word may hold one. A tag of a script of one's own
# whose value has a space stays off the line: the entry module gives the
# script's own tags to every VU itself (scenarios/lib/own-script.js). Any
# other word with a space is refused, naming it.
k6_arguments() {
  local scenario i word
  local -a args=() kept=()
  scenario="$(cell_env_get "$1" SCENARIO)"
  mapfile -t args < <(k6_script_args "$scenario" "$4/k6-script.json" "$2" "$3")
  [[ -z "${FANOUT[FANOUT_INFLUXDB_URL]}" ]] || args+=(--out "influxdb=${FANOUT[FANOUT_INFLUXDB_URL]}")
  for ((i = 0; i < ${#args[@]}; i++)); do
    word="${args[i]}"
    if [[ "$word" == --tag && "${args[i + 1]:-}" =~ [[:space:]] ]] && k6_own_script "$scenario"; then
      i=$((i + 1))
      continue
    fi
    [[ ! "$word" =~ [[:space:]] ]] \
      || usage_error "k6 argument '$word' has a space in it; k6-operator splits its arguments at spaces, so it cannot pass it (a tag of the script's own options.tags can have one only in a script of one's own)"
    kept+=("$word")
  done
  printf '%s\n' "${kept[*]}"
}

# print_manifest NAME RUN_ID CELL_ID WORK_DIR: the ConfigMap and the TestRun
# as YAML. Every scalar is written as a JSON string, which YAML reads as is.
print_manifest() {
  local name="$1" run_id="$2" cell_id="$3" work="$4" arguments
  arguments="$(k6_arguments "$work/cell.env" "$run_id" "$cell_id" "$work")"
  printf '# k6-operator TestRun: run %s, cell %s, %s pod(s) splitting the load with execution segments.\n' \
    "$run_id" "$cell_id" "$OPT_PARALLELISM"
  printf '# Apply with: kubectl apply -f FILE (needs k6-operator installed in the cluster).\n'
  cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: $(jq -n --arg v "$name" '$v')
  namespace: $(jq -n --arg v "${FANOUT[K8S_NAMESPACE]}" '$v')
  labels:
    app.kubernetes.io/part-of: "loadtest-suite"
binaryData:
  archive.tar: "$(base64 -w0 "$work/script.tar")"
---
apiVersion: k6.io/v1alpha1
kind: TestRun
metadata:
  name: $(jq -n --arg v "$name" '$v')
  namespace: $(jq -n --arg v "${FANOUT[K8S_NAMESPACE]}" '$v')
  labels:
    app.kubernetes.io/part-of: "loadtest-suite"
spec:
  parallelism: $OPT_PARALLELISM
  script:
    configMap:
      name: $(jq -n --arg v "$name" '$v')
      file: "archive.tar"
  arguments: $(jq -n --arg v "$arguments" '$v')
  runner:
    image: $(jq -n --arg v "${FANOUT[K8S_K6_IMAGE]}" '$v')
    env:
EOF
  jq -Rr 'capture("^(?<name>[A-Z0-9_]+)=(?<value>.*)$")
          | "      - name: \(.name | @json)\n        value: \(.value | @json)"' <"$work/run.env"
}

main "$@"
