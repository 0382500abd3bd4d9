# shellcheck shell=bash
# Summary: a run's directory: results/<run-id>/, its manifest, the cells'
# rows counted, and what the run says at its start (design checks) and end.
#
# Needs common.sh, matrix.sh, manifest.sh, results.sh, report.sh and design.sh; the
# runner sets LT_RUN_ID, LT_RUN_DIR and LT_RESULTS_DIR.

# run_id_slug TEXT: TEXT with every byte that is not an ASCII letter, a
# digit, ".", "_" or "-" made "-" (a matrix named "my test" or "schön"
# gives a run id "...-my-test", "...-sch--n"). The one rule of what a run id
# may hold: run ids are made with it and checked with it (run_id_valid).
run_id_slug() {
  printf '%s' "$1" | LC_ALL=C tr -c 'A-Za-z0-9._-' '-'
}

# run_id_valid ID: succeed when ID is one run_id_slug could have made (and
# names no directory above: it never starts with ".").
run_id_valid() {
  [[ -n "$1" && "$1" != .* && "$(run_id_slug "$1")" == "$1" ]]
}

# rundir_new BASE: make LT_RESULTS_DIR/BASE, or BASE-2, BASE-3, ... (never
# an existing directory, even with another run starting at the same second);
# print the id it made.
rundir_new() {
  local base="$1" id="$1" suffix=1
  mkdir -p "$LT_RESULTS_DIR"
  until mkdir "$LT_RESULTS_DIR/$id" 2>/dev/null; do
    suffix=$((suffix + 1))
    id="$base-$suffix"
  done
  printf '%s\n' "$id"
}

# create_run_dir MATRIX PLAN: results/<run-id>/ (never an existing one) and
# its manifest, with the run's PLAN (run_plan's lines, as one string) in it.
create_run_dir() {
  local matrix="$1" plan="$2"
  LT_RUN_ID="$(rundir_new "$(date +%Y%m%d-%H%M%S)-$(run_id_slug "$(basename "$matrix" .matrix)")")"
  LT_RUN_DIR="$LT_RESULTS_DIR/$LT_RUN_ID"
  mkdir "$LT_RUN_DIR/cells"
  manifest_create "$LT_RUN_DIR" "$matrix" "$plan"
  ln -sfn "$LT_RUN_ID" "$LT_RESULTS_DIR/latest"
}

# run_plan TOTAL REPEAT SEED: the cells of the run in the order they run, one
# "INDEX K NAME" a line (INDEX: the matrix cell, 0-based; K: the repetition).
# REPEAT=1: the matrix order, NAME the cell's id. REPEAT=N: every cell N
# times, NAME <cell id>_rep-<k> (k with as many digits as REPEAT, so
# _rep-02 sorts before _rep-10), in an order shuffled with SEED (as Flent
# does), so that whatever drifts over a run (a warming machine, a neighbour)
# spreads over every cell instead of landing on the last ones.
run_plan() {
  local total="$1" repeat="$2" seed="$3" index k id
  for ((index = 0; index < total; index++)); do
    id="$(matrix_cell_id "$index")"
    if ((repeat == 1)); then
      printf '%s 1 %s\n' "$index" "$id"
      continue
    fi
    for ((k = 1; k <= repeat; k++)); do
      printf '%s %s %s_rep-%0*d\n' "$index" "$k" "$id" "${#repeat}" "$k"
    done
  done | if ((repeat == 1)); then cat; else
    awk -v seed="$seed" 'BEGIN { srand(seed) } { printf "%.12f %s\n", rand(), $0 }' | sort -k1,1 | cut -d' ' -f2-
  fi
}

# run_plan_recorded RUN_DIR: the plan an earlier run recorded in its
# manifest, as run_plan's lines (nothing for a run from before plans).
run_plan_recorded() {
  jq -r '.plan // [] | .[] | "\(.index) \(.repeat) \(.cell)"' "$1/manifest.json"
}

# run_keep_id_width NAME: a resumed run's cells keep the width of the
# numbers its ids were made with (MATRIX_ID_WIDTH, from NAME, one of its
# cells: the plan's or a cell directory's), whatever matrix_cell_id makes
# now: a run from before the widths grew with the cell count keeps "01".
run_keep_id_width() {
  # shellcheck disable=SC2034 # SC2034: read by matrix_cell_id (matrix.sh)
  [[ "$1" =~ ^([0-9]+)(_|$) ]] && MATRIX_ID_WIDTH="${#BASH_REMATCH[1]}"
  return 0
}

# reopen_run_dir RUN_ID: continue an earlier run in its own directory.
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
reopen_run_dir() {
  LT_RUN_ID="$1"
  LT_RUN_DIR="$LT_RESULTS_DIR/$LT_RUN_ID"
  local cell_dir
  # A cell without a row was cut off: its partial files are redone.
  for cell_dir in "$LT_RUN_DIR"/cells/*/; do
    [[ -d "$cell_dir" && ! -s "$cell_dir/row.json" ]] && rm -rf "$cell_dir"
  done
  manifest_update "$LT_RUN_DIR" '.status = "running" | .ended_at = null | .resumed_at += [$t]' \
    --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ln -sfn "$LT_RUN_ID" "$LT_RESULTS_DIR/latest"
}

# update_cell_counts: cells_done, cells_failed, cells_as_designed and
# first_design_reason (report-page.jq's cell_counts) in the manifest, from
# the rows: the rows read once, in one jq start (it runs between two cells).
# shellcheck disable=SC2016 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs
update_cell_counts() {
  manifest_update "$LT_RUN_DIR" 'include "report-page"; cell_counts($rows)' \
    -L "$LT_ROOT/scripts/lib" --slurpfile rows <(results_rows "$LT_RUN_DIR")
}

# check_design TOTAL: warn about every cell whose design makes its result
# unlikely to mean what it seems to (ltsuite/design.py); the warnings go to the
# manifest too. They never stop the run: a user may mean it. The same process
# resolves every cell's knobs left at auto (K6_INSTANCES, BURST_LEAD_MS,
# USERS_PER_VU) into LT_RUN_DIR/cell-env/INDEX.env, which the cell records as
# its cell.env (run_cell). A run planned with its refusals (LT_PLAN_DIR,
# run-matrix.sh) has both already: no Python start here.
check_design() {
  local total="$1" index machine
  if [[ -n "${LT_PLAN_DIR:-}" && -f "$LT_PLAN_DIR/warnings.tsv" && -d "$LT_PLAN_DIR/resolved" ]]; then
    mv "$LT_PLAN_DIR/resolved" "$LT_RUN_DIR/cell-env"
    check_design_warn <"$LT_PLAN_DIR/warnings.tsv"
    return
  fi
  machine="$(design_machine_json)"
  local cells_dir
  cells_dir="$(mktemp -d)"
  local inspected
  for ((index = 0; index < total; index++)); do
    matrix_cell_values "$index" >"$cells_dir/$index.env"
    inspected="$(check_design_inspect "$cells_dir/$index.env")"
    # Kept for the cell, which then need not ask k6 again (run_cell).
    if [[ "$inspected" != null ]]; then
      mkdir -p "$LT_RUN_DIR/k6-inspect"
      jq . <<<"$inspected" >"$LT_RUN_DIR/k6-inspect/$index.json"
      printf '%s\n' "$inspected" >"$cells_dir/$index.json"
    fi
  done
  # Every cell's warnings and resolved settings in one process.
  check_design_warn < <(design_plan "$cells_dir" "$total" "$machine" "$LT_RUN_DIR/cell-env")
  rm -rf "$cells_dir"
}

# check_design_warn: each "INDEX<TAB>warning" line on stdin said, and kept
# in the manifest, with its cell's id.
check_design_warn() {
  local index warning cell_id
  while IFS=$'\t' read -r index warning; do
    [[ -n "$warning" ]] || continue
    cell_id="$(matrix_cell_id "$index")"
    warn "cell $cell_id: $warning"
    manifest_warn "$LT_RUN_DIR" "cell $cell_id: $warning"
  done
}

# check_design_inspect CELL_ENV_FILE: k6's inspection of the cell's script
# when it is one of one's own (its load shape is in its options), else null.
# k6 sees the target's URL as it will in the cell (backend_url).
check_design_inspect() {
  local -A probe=()
  load_cell_env "$1" probe
  if k6_own_script "${probe[SCENARIO]}"; then
    k6_inspect probe "$(backend_url probe)" | jq -c . 2>/dev/null || printf 'null\n'
  else
    printf 'null\n'
  fi
}

# rows_failed_and_missing NAME...: of the cells (directory names), how many
# have a row that says failed (line 1), and which have no valid row.json,
# space-separated (line 2): one jq start for all the rows; when one of them
# cannot be read (missing, cut off), each is read alone.
rows_failed_and_missing() {
  local name line listed failed=0
  local -a missing=() files=()
  local -A row_status=()
  for name in "$@"; do files+=("$LT_RUN_DIR/cells/$name/row.json"); done
  if ! listed="$(rows_status "${files[@]}" 2>/dev/null)"; then
    listed=""
    for name in "$@"; do
      line="$(rows_status "$LT_RUN_DIR/cells/$name/row.json" 2>/dev/null)" || true
      listed+="${line:+$line$'\n'}"
    done
  fi
  while IFS=$'\t' read -r line name; do
    [[ -z "$name" ]] || row_status[$name]="$line"
  done <<<"$listed"
  for name in "$@"; do
    case "${row_status[$LT_RUN_DIR/cells/$name/row.json]:-}" in
      failed) failed=$((failed + 1)) ;;
      ok) ;;
      *) missing+=("$name") ;;
    esac
  done
  printf '%s\n%s\n' "$failed" "${missing[*]}"
}

# rows_status FILE...: "STATUS<TAB>FILE" for each FILE whose row says ok or
# failed, one a line (through xargs: any number of files); fails when one
# cannot be read.
rows_status() {
  printf '%s\0' "$@" | xargs -0 -r jq -r 'select(.status == "ok" or .status == "failed") | "\(.status)\t\(input_filename)"'
}

# finish_run STATUS: the run's last tables and report, then the end of its
# manifest (STATUS), in that order: the manifest says complete only once
# every file of the run is written (the report is drawn from the manifest as
# it will be). A render that fails makes the run failed, with a warning
# naming what could not be written, and this fails.
finish_run() {
  local status="$1" final inputs problem=""
  final="$(mktemp)"
  inputs="$(mktemp)"
  if ! results_render_final "$LT_RUN_DIR" "$inputs"; then
    problem="cannot write results.csv and results.md"
    status=failed
  fi
  if ! manifest_finished "$LT_RUN_DIR" "$status" "$problem" >"$final"; then
    rm -f "$final" "$inputs"
    return 1
  fi
  if ! report_render "$LT_RUN_DIR" "$final" "$inputs" "$LT_RUN_ID"; then
    problem="${problem:+$problem; }cannot write report.html"
    status=failed
    manifest_finished "$LT_RUN_DIR" "$status" "$problem" >"$final" || true
  fi
  rm -f "$inputs"
  if ! write_atomic "$LT_RUN_DIR/manifest.json" <"$final"; then
    rm -f "$final"
    return 1
  fi
  rm -f "$final"
  [[ -z "$problem" ]] || {
    warn "$problem"
    return 1
  }
}

# say_as_designed TOTAL: "N of M cells ran as designed", and the others with why.
say_as_designed() {
  local total="$1"
  jq -rs --argjson total "$total" '
    [.[] | select(.as_designed == 1)] as $good
    | [.[] | select(.as_designed == 0)] as $bad
    | "\($good | length) of \($total) cell(s) ran as designed",
      ($bad[] | "  \(.cell): \(.design_notes)"),
      ([.[] | select(.prediction_check == "mismatch")][] | "  \(.cell): prediction mismatch: \(.prediction_notes)")
  ' < <(results_rows "$LT_RUN_DIR") 2>/dev/null || true
}

