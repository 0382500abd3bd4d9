#!/usr/bin/env bash
# Summary: write a run's report.html again from its files (the runner writes it at the end of every run).
# Usage: scripts/report.sh RUN   (a run id under results/, "latest", a run directory or a make capacity directory); prints the page's path
set -euo pipefail

LT_PROG=report
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in results report manifest; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"

main() {
  case "${1:-}" in
    -h | --help | "")
      print_summary "${BASH_SOURCE[0]}"
      [[ $# -eq 1 ]] && return 0
      usage_error "which run? scripts/report.sh RUN"
      ;;
  esac
  [[ $# -eq 1 ]] || usage_error "one run at a time (got $#)"
  local dir="$1"
  [[ -d "$dir" ]] || dir="$LT_RESULTS_DIR/$1"
  if [[ -f "$dir/capacity.json" ]]; then
    # A make capacity search (results/capacity-<id>/): its curve and cells.
    report_render_capacity "$dir"
  else
    [[ -f "$dir/manifest.json" ]] || usage_error "$1: no such run (no manifest.json in $dir)"
    run_format_check "$dir"
    report_render "$dir"
  fi
  printf '%s\n' "$(cd "$dir" && pwd -P)/report.html"
}

main "$@"
