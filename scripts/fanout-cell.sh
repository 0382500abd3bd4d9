#!/usr/bin/env bash
# Summary: the shell half of preparing the one cell a fan-out sends (SSM or k6-operator): the matrix, the settings and the k6 archive.
# Usage: scripts/fanout-cell.sh cell MATRIX NUMBER DIR     (DIR/settings.env, cell.env, cell-info.env, overrides.txt)
# Usage: scripts/fanout-cell.sh script DIR TARGET_URL RUN_ID CELL_ID   (DIR/script.tar, k6-script.json, k6-args.txt, script-info.env)
#
# Started by ltsuite.fanoutplan, which makes every decision; this script only
# runs what lives in the suite's shell libraries: the matrix resolved as for a
# local run (defaults < matrix < environment), env/fanout.env read by its
# typed reader (a key exported in the environment overrides the file), and
# the cell's script made into a k6 archive (k6_archive), which also proves it
# loads with the cell's values. A script that does not load: exit 3, the
# reason in DIR/script-error.
set -euo pipefail

LT_PROG="${LT_PROG:-fanout-cell}"
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix k6 results manifest; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

readonly LT_FANOUT_ENV="${LT_FANOUT_ENV:-$LT_ROOT/env/fanout.env}"

# settings DIR: env/fanout.env, each key exported in the environment
# overriding it after the check of its type, as DIR/settings.env.
settings() {
  local key why
  local -a fan_keys=()
  local -A fan_types=() fan_values=() fan_exported=()
  envfile_load_typed "$LT_FANOUT_ENV" fan_keys fan_types fan_values
  envfile_exported fan_exported
  for key in "${fan_keys[@]}"; do
    if [[ -n "${fan_exported[$key]:-}" ]]; then
      why="$(envfile_check_type "${fan_types[$key]}" "${!key}")" || usage_error "command line: $key: $why"
      fan_values[$key]="${!key}"
    fi
    printf '%s=%s\n' "$key" "${fan_values[$key]}"
  done >"$1/settings.env"
}

# cell MATRIX NUMBER DIR: cell NUMBER (1-based) of the resolved matrix, with
# every knob left at auto given its value (ltsuite.cell resolve), as
# DIR/cell.env; its id, the matrix's cell count and axes, and the suite's
# commit (manifest_git_commit) in DIR/cell-info.env;
# the knobs set on the command line in DIR/overrides.txt.
cell() {
  local matrix="$1" number="$2" dir="$3" total
  matrix_resolve "$matrix"
  settings "$dir"
  total="$(matrix_cell_count)"
  ((number <= total)) || usage_error "--cell $number: the matrix has $total cell(s)"
  matrix_cell_values $((number - 1)) | PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.cell resolve >"$dir/cell.env"
  matrix_overrides >"$dir/overrides.txt"
  printf 'CELL_ID=%s\nCELLS_TOTAL=%s\nAXES=%s\nGIT_COMMIT=%s\n' "$(matrix_cell_id $((number - 1)))" "$total" \
    "${AXIS_KEYS[*]}" "$(manifest_git_commit)" >"$dir/cell-info.env"
}

# script DIR TARGET_URL RUN_ID CELL_ID: the cell's script as the instances
# get it (k6_archive: DIR/script.tar and DIR/k6-script.json, its inspection;
# a script of one's own inside its entry module), its tags and options
# (DIR/k6-args.txt, one word a line), and DIR/script-info.env: the longest it
# can run (PLANNED_SECONDS) and whether it is a script of one's own.
# shellcheck disable=SC2034 # SC2034: cell's RUN_ID and CELL_ID are read by k6_archive through a nameref
script() {
  local dir="$1" target_url="$2" scenario own=0
  local -A cell=()
  [[ -x "$LT_K6" ]] || abort "k6 not found at $LT_K6; run 'make tools' (the scenario is checked with it before anything is sent)"
  load_cell_env "$dir/cell.env" cell
  cell[RUN_ID]="$3"
  cell[CELL_ID]="$4"
  cell_error ""
  if ! k6_archive cell "$target_url" "$dir"; then
    printf '%s\n' "$CELL_ERROR" >"$dir/script-error"
    exit 3
  fi
  scenario="$(cell_env_get "$dir/cell.env" SCENARIO)"
  k6_script_args "$scenario" "$dir/k6-script.json" "$3" "$4" >"$dir/k6-args.txt"
  ! k6_own_script "$scenario" || own=1
  printf 'PLANNED_SECONDS=%s\nOWN_SCRIPT=%s\n' "$(k6_planned_seconds cell "$dir")" "$own" >"$dir/script-info.env"
}

case "${1:-}" in
  cell) [[ $# -eq 4 ]] || usage_error "usage: cell MATRIX NUMBER DIR" ;;
  script) [[ $# -eq 5 ]] || usage_error "usage: script DIR TARGET_URL RUN_ID CELL_ID" ;;
  *) usage_error "usage: $0 cell|script ... (see the header)" ;;
esac
"$@"
