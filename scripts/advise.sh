#!/usr/bin/env bash
# Summary: from a burst and a goal to Tomcat and kernel settings: the rules' cheapest setting, verified by real cells.
# Usage: scripts/advise.sh LOAD_FILE   (a matrix without axes, plus the goal: docs/advise.md)
#
# Writes results/advise-<id>/advice.md and advice.json; exit 0 with a verified
# setting, 2 for bad input, 3 when no setting of TUNE is verified.
#
# The file is checked as every matrix is (env/defaults.env's types), then as an
# advice's input: one load (no axes), a burst of one request a user, a steady load or a k6 script of one's own (read by k6 inspect), a goal and
# knobs the advice may tune. scripts/ltsuite/advise.py has the model; the cells
# run through scripts/run-matrix.sh into results/advise-<id>/runs/.
set -euo pipefail

LT_PROG=advise
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix rundir netns target advise k6; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done
readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"
# Each verify or bisection cell is a run of its own: it queues behind another
# run on the host-wide lock (up to 15 minutes), as make capacity's do,
# instead of ending the advice between two cells.
export LT_LOCK_WAIT="${LT_LOCK_WAIT:-900}"
# The steady loads the advice models (scripts/ltsuite/steady.py): an arrival rate, kept-alive users.
readonly STEADY_SCENARIOS="spike-open keepalive ramp"
# The knobs the advice knows how to tune (scripts/ltsuite/advise.py TUNABLE).
readonly TUNABLE_KNOBS="TOMCAT_MAX_THREADS TOMCAT_MAX_CONNECTIONS TOMCAT_ACCEPT_COUNT SOMAXCONN TCP_MAX_SYN_BACKLOG TOMCAT_VIRTUAL_THREADS"

main() {
  advise_args "${BASH_SOURCE[0]}" "$@"
  local file="$1" out
  matrix_resolve "$file"
  advise_check "$file"
  local inspected=""
  ! k6_own_script "${MATRIX_VALUE[SCENARIO]}" || inspected="$(advise_inspect "$file")"
  out="$(advise_dir advise "$file")"
  advise_inputs "$out" "$TUNABLE_KNOBS"
  [[ -z "$inspected" ]] || printf '%s\n' "$inspected" >"$out/k6-inspect.json"
  # Exit 3: no setting verified (the advice says why).
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.advise run "$out/load.env" "$out/base.matrix" "$out" "$file"
}

# advise_check FILE: what an advice needs beyond the knobs' types and the
# checks make capacity shares (advise_check_shared): a burst of one request a
# user or a steady load, a pool to size, the suite's namespaces, tunable knobs.
advise_check() {
  local file="$1" knob
  advise_check_shared "$file" "an advice is for one load|the advice chooses the cells" "an advice runs each cell once" \
    "a verifying cell and a boundary cell"
  [[ " burst $STEADY_SCENARIOS " == *" ${MATRIX_VALUE[SCENARIO]} "* ]] || k6_own_script "${MATRIX_VALUE[SCENARIO]}" \
    || advise_refuse SCENARIO "$file" "'${MATRIX_VALUE[SCENARIO]}': the advice's rules model a burst (burst: every user at one instant), steady loads ($STEADY_SCENARIOS) and a k6 script of one's own (a path)"
  ! k6_own_script "${MATRIX_VALUE[SCENARIO]}" || [[ -z "${MATRIX_VALUE[TARGET_JAR]}" ]] \
    || advise_refuse TARGET_JAR "$file" "with a k6 script of one's own the advice cannot measure the endpoint's time (its calibration cell asks a shipped scenario's path): advise the script against the suite's target (DELAY_MS), or the service with a shipped scenario and TARGET_PATH"
  [[ "${MATRIX_VALUE[REQUESTS_PER_VU]}" == 1 || "${MATRIX_VALUE[SCENARIO]}" != burst ]] \
    || advise_refuse REQUESTS_PER_VU "$file" "'${MATRIX_VALUE[REQUESTS_PER_VU]}': the advice's rules model one request a user (REQUESTS_PER_VU=1)"
  [[ "${MATRIX_VALUE[BACKEND]}" == netns && -z "${MATRIX_VALUE[TARGET_URL]}" ]] \
    || advise_refuse BACKEND "$file" "the advice sets the target's sysctls and restarts it: BACKEND=netns without TARGET_URL"
  local -a tune=()
  read -r -a tune <<<"${MATRIX_VALUE[TUNE]}"
  [[ ${#tune[@]} -gt 0 ]] || advise_refuse TUNE "$file" "no knob to tune (one or more of: $TUNABLE_KNOBS)"
  for knob in "${tune[@]}"; do
    [[ " $TUNABLE_KNOBS " == *" $knob "* ]] \
      || advise_refuse TUNE "$file" "'$knob' is not a knob the advice tunes (one of: $TUNABLE_KNOBS)"
  done
}

# advise_inspect FILE: `k6 inspect --execution-requirements` of the file's
# script of one's own, with the file's knobs as its environment (the
# executors the model reads: scripts/ltsuite/ownscript.py), on stdout; a
# script k6 cannot read is bad input.
advise_inspect() {
  local file="$1" inspected
  if ! inspected="$(k6_inspect MATRIX_VALUE "${MATRIX_VALUE[TARGET_URL]}")" || ! jq -e .scenarios <<<"$inspected" >/dev/null 2>&1; then
    advise_refuse SCENARIO "$file" "k6 cannot read '${MATRIX_VALUE[SCENARIO]}': $(grep -m1 -iE 'error' <<<"$inspected" | cut -c1-200)"
  fi
  jq . <<<"$inspected"
}

main "$@"
