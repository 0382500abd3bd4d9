#!/usr/bin/env bash
# Summary: how much can it take: the highest load (users, or an arrival rate) the file's settings hold within a goal, searched from the rules' limit with real cells.
# Usage: scripts/capacity.sh LOAD_FILE   (a matrix without axes, plus the goal: docs/advise.md)
#
# Writes results/capacity-<id>/capacity.md, capacity.json, capacity.svg and
# report.html (the curve drawn, each cell's run linked: scripts/lib/report.sh);
# exit 0 with a verified maximum, 2 for bad input, 3 when no load held.
#
# The file is checked as every matrix is (env/defaults.env's types), then as
# a search's input: one load (no axes), a scenario the model knows, a goal
# and a budget. scripts/ltsuite/capacity.py has the model and the search;
# the cells run through scripts/run-matrix.sh into results/capacity-<id>/runs/.
set -euo pipefail

LT_PROG=capacity
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix rundir netns target advise results report; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done
readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"
# Each cell is a run of its own: it queues behind another run on the host-wide
# lock (up to 15 minutes) instead of ending the search between two cells.
export LT_LOCK_WAIT="${LT_LOCK_WAIT:-900}"
# The scenarios the model knows and their load knob (scripts/ltsuite/capacity.py LOAD_KNOB).
declare -rA LOAD_KNOB=([burst]=VUS [spike]=VUS [keepalive]=VUS [spike-open]=RATE)

main() {
  advise_args "${BASH_SOURCE[0]}" "$@"
  local file="$1" out
  matrix_resolve "$file"
  capacity_check "$file"
  out="$(advise_dir capacity "$file")"
  advise_inputs "$out" "${LOAD_KNOB[${MATRIX_VALUE[SCENARIO]}]}"
  # Exit 3: no load verified (capacity.md says why); the page either way.
  local status=0
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.capacity run "$out/load.env" "$out/base.matrix" "$out" "$file" || status=$?
  report_render_capacity "$out"
  [[ ! -s "$out/report.html" ]] || say "report: $out/report.html"
  return "$status"
}

# capacity_check FILE: what the search needs beyond the knobs' types and the
# checks make advise shares (advise_check_shared): a scenario the model
# knows, one request a user in a burst, a target the suite starts.
capacity_check() {
  local file="$1" scenario="${MATRIX_VALUE[SCENARIO]}"
  advise_check_shared "$file" "the search is for one setting|the search chooses the loads" "the search runs each load once" \
    "the highest load held and the next one, failed"
  [[ -n "${LOAD_KNOB[$scenario]:-}" ]] \
    || advise_refuse SCENARIO "$file" "'$scenario': the model knows burst, spike and keepalive (users: VUS) and spike-open (a rate: RATE)"
  [[ "$scenario" != burst || "${MATRIX_VALUE[REQUESTS_PER_VU]}" == 1 ]] \
    || advise_refuse REQUESTS_PER_VU "$file" "'${MATRIX_VALUE[REQUESTS_PER_VU]}': the burst's model is one request a user (REQUESTS_PER_VU=1)"
  [[ -z "${MATRIX_VALUE[TARGET_URL]}" && -z "${MATRIX_VALUE[TARGET_CMD]}" ]] \
    || advise_refuse "$([[ -n "${MATRIX_VALUE[TARGET_URL]}" ]] && printf TARGET_URL || printf TARGET_CMD)" "$file" \
      "the model reads the target's Tomcat settings: the suite's own target or TARGET_JAR"
}

main "$@"
