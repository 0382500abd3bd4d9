# shellcheck shell=bash
# Summary: one results row per cell (row.json), and the run's tables built from them.
#
# Every file is written to a temporary name and renamed, so a reader (or an
# interrupted run) never sees half a file.

# The columns of results.csv, their order and the tables that show them are
# defined once, in scripts/ltsuite/columns.py.

# write_atomic FILE: copy stdin to FILE through a temporary file and a rename.
# Empty input (a failed producer in the pipeline) leaves FILE as it was and
# fails: no result file is ever replaced by nothing.
write_atomic() {
  local file="$1"
  if ! cat >"$file.tmp.$$" || [[ ! -s "$file.tmp.$$" ]]; then
    rm -f "$file.tmp.$$"
    return 1
  fi
  mv -f "$file.tmp.$$" "$file"
}

# results_row CELL_DIR STATUS ERROR AXES_JSON [WALL_S] [REPEAT_JSON] [K6_EXIT]:
# write CELL_DIR/row.json (ltsuite.row: k6's summary, the sampler's peaks,
# the counter deltas, the design checks and the kernel's predictions).
# REPEAT_JSON ({"of": CELL_ID, "k": K}) names the repetition a cell
# directory holds when the run has REPEAT > 1; K6_EXIT is k6's exit status.
# A summary that is missing or unreadable makes the cell failed with that
# reason; if the row itself cannot be built, a failed row says why and this
# fails, so a cell never ends without one.
results_row() {
  local cell_dir="$1" status="$2" error="$3" axes_json="$4" wall_s="${5:-}" repeat_json="${6:-null}"
  local k6_exit="${7-${CELL_K6_EXIT:-}}"
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.row "$cell_dir" --run-id "$LT_RUN_ID" \
    --status "$status" --error "$error" --axes "$axes_json" --wall-s "$wall_s" \
    --repeat "$repeat_json" --k6-exit "$k6_exit"
}

# results_rows RUN_DIR: every non-empty cells/*/row.json of RUN_DIR, one
# after another on stdout, in cell order (for jq -s or inputs). The names go
# through a pipe, never on one command line: a run of 20,000 cells would
# pass the kernel's limit on arguments (ARG_MAX).
results_rows() {
  [[ -d "$1/cells" ]] || return 0
  find "$1/cells" -mindepth 2 -maxdepth 2 -name row.json -type f -size +0 -print0 \
    | LC_ALL=C sort -z | xargs -0 -r cat
}

# results_env_json ENV_FILE: a cell.env as a JSON object of strings.
results_env_json() {
  local -A env_pairs=()
  local key
  load_cell_env "$1" env_pairs || return 1
  for key in "${!env_pairs[@]}"; do
    printf '%s\t%s\n' "$key" "${env_pairs[$key]}"
  done | jq -Rn '[inputs | index("\t") as $tab | {(.[:$tab]): .[$tab + 1:]}] | add // {}' -S
}

# results_render RUN_DIR: results.csv and results.md from every cells/*/row.json,
# in cell order, with the axis columns the manifest names (scripts/ltsuite/tables.py).
results_render() {
  results_tables render "$1"
}

# results_render_final RUN_DIR INPUTS: results_render, and in the same Python
# start the report's inputs into INPUTS (report_inputs, report.sh): the run's
# last step starts Python once for its tables and its report (needs report.sh).
results_render_final() {
  results_tables render "$1" --report-inputs "$2" "$REPORT_LATENCY_POINTS" "$REPORT_TIME_PART_BARS"
}

# results_tables ARGS...: scripts/ltsuite/tables.py (render RUN_DIR: write the
# tables; head RUN_DIR: results.csv's header as a JSON array).
results_tables() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.tables "$@"
}

# results_columns_json: the columns of a results row and each table's list
# of them, as one line of JSON (scripts/ltsuite/columns.py --json).
results_columns_json() {
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -m ltsuite.columns --json
}
