#!/usr/bin/env bash
# Summary: compare two runs cell by cell: every figure of each cell in both, its change, marked beyond THRESHOLD_PCT (default 5); cells only in one run listed.
# Usage: scripts/compare.sh RUN_A RUN_B   (run ids under results/, or run directories)
#        writes results/compare-<A>-vs-<B>/compare.md and compare.html, prints the directory
set -euo pipefail

LT_PROG=compare
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/results.sh
source "$LT_ROOT/scripts/lib/results.sh"
# shellcheck source=scripts/lib/manifest.sh
source "$LT_ROOT/scripts/lib/manifest.sh"

readonly LT_RESULTS_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}"

main() {
  case "${1:-}" in
    -h | --help)
      print_summary "${BASH_SOURCE[0]}"
      return 0
      ;;
  esac
  [[ $# -eq 2 ]] || usage_error "two runs to compare (got $#): scripts/compare.sh RUN_A RUN_B"
  local threshold="${THRESHOLD_PCT:-5}" dir_a dir_b out
  [[ "$threshold" =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "THRESHOLD_PCT: '$threshold' is not a percentage (e.g. 5 or 2.5)"
  dir_a="$(run_dir "$1")"
  dir_b="$(run_dir "$2")"
  out="$LT_RESULTS_DIR/compare-$(basename "$dir_a")-vs-$(basename "$dir_b")"
  mkdir -p "$out"
  local model
  model="$(compare_model "$dir_a" "$dir_b" "$threshold")"
  jq -r --arg a "$(basename "$dir_a")" --arg b "$(basename "$dir_b")" -L "$LT_ROOT/scripts/report" -f "$LT_ROOT/scripts/report/compare-md.jq" <<<"$model" \
    | write_atomic "$out/compare.md"
  jq -r --arg a "$(basename "$dir_a")" --arg b "$(basename "$dir_b")" -L "$LT_ROOT/scripts/report" -f "$LT_ROOT/scripts/report/compare-html.jq" <<<"$model" \
    | write_atomic "$out/compare.html"
  say "$(jq -r '"\(.cells | length) cell(s) in both runs, \([.cells[] | select(.changed | length > 0)] | length) with a change beyond \(.threshold_pct) %; only in A: \(.only_a | length), only in B: \(.only_b | length)"' <<<"$model")"
  printf '%s\n' "$out"
}

# run_dir RUN: the directory of RUN (a run id under results/ or a path);
# aborts with a usage error when it holds no rows.
run_dir() {
  local dir="$1"
  [[ -d "$dir" ]] || dir="$LT_RESULTS_DIR/$1"
  [[ -d "$dir" ]] || usage_error "$1: no such run (neither a directory nor $LT_RESULTS_DIR/$1)"
  compgen -G "$dir/cells/*/row.json" >/dev/null || usage_error "$dir: no cell has a row (cells/*/row.json)"
  run_format_check "$dir"
  (cd "$dir" && pwd -P)
}

# compare_model DIR_A DIR_B THRESHOLD: the comparison as JSON
# (scripts/report/compare.jq), on the figures the columns' schema gives make
# compare (scripts/ltsuite/columns.py).
compare_model() {
  local columns
  columns="$(results_columns_json | jq -c '.compare')"
  jq -n -L "$LT_ROOT/scripts/lib" --slurpfile a <(results_rows "$1") --slurpfile b <(results_rows "$2") \
    --argjson columns "$columns" --argjson threshold "$3" -f "$LT_ROOT/scripts/report/compare.jq"
}

main "$@"
