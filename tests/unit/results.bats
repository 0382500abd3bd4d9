#!/usr/bin/env bats
# results_row and write_atomic: a cell never ends without a valid row, and a
# result file is never replaced by nothing.

setup() {
  load '../test_helper'
  lt_source_libs results
  export LT_RUN_ID=test-run
  CELL_DIR="$BATS_TEST_TMPDIR/cells/01_x-1"
  mkdir -p "$CELL_DIR"
  printf 'SCENARIO=spike\nVUS=2\nDURATION=1s\nDELAY_MS=0\nREQUEST_TIMEOUT=1s\nGRACEFUL_STOP=1s\nSTART_SPREAD_LIMIT_MS=1000\nSAMPLE_INTERVAL=1\n' >"$CELL_DIR/cell.env"
}

@test "a truncated summary.json makes the cell failed with that reason" {
  printf '{"metrics": {"http_reqs": {"values": {"count"' >"$CELL_DIR/summary.json"
  run results_row "$CELL_DIR" ok "" '{"X": "1"}'
  assert_success
  run jq -r '[.status, .error, .axes.X] | @tsv' "$CELL_DIR/row.json"
  assert_output $'failed\tsummary.json is not a k6 summary (truncated or not JSON)\t1'
}

@test "a missing or empty summary.json makes the cell failed" {
  run results_row "$CELL_DIR" ok "" '{}'
  [ "$(jq -r .error "$CELL_DIR/row.json")" = "k6 wrote no summary.json" ]
  : >"$CELL_DIR/summary.json"
  run results_row "$CELL_DIR" ok "" '{}'
  [ "$(jq -r .error "$CELL_DIR/row.json")" = "summary.json is empty" ]
  [ "$(jq -r .status "$CELL_DIR/row.json")" = failed ]
}

@test "an earlier failure keeps its own reason" {
  run results_row "$CELL_DIR" failed "target died during the cell" '{}'
  [ "$(jq -r .error "$CELL_DIR/row.json")" = "target died during the cell" ]
}

@test "a valid summary gives an ok row with the delivered-load figures" {
  cat >"$CELL_DIR/summary.json" <<'JSON'
{"state": {"testRunDurationMs": 2500}, "metrics": {
 "http_reqs{traffic:load}": {"values": {"count": 20, "rate": 8}},
 "iterations": {"values": {"count": 19}},
 "lt_iterations_started": {"values": {"count": 20}},
 "lt_vu_first_request": {"values": {"count": 2, "min": 1700000000000, "max": 1700000000040}},
 "lt_request_end": {"values": {"value": 1700000002000, "min": 1700000000100, "max": 1700000002000}}}}
JSON
  printf 'k6_start\t1699999999000\n' >"$CELL_DIR/phases.tsv"
  run results_row "$CELL_DIR" ok "" '{}'
  assert_success
  run jq -c '[.status, .vus_started, .iterations_started, .iterations_interrupted, .first_request_spread_ms, .load_window_s, .tps, .first_request_after_s]' "$CELL_DIR/row.json"
  assert_output '["ok",2,20,1,40,2,10,1]'
}

@test "a row that cannot be built is still written, failed, with the reason" {
  printf '{"metrics": {}}' >"$CELL_DIR/summary.json"
  printf 'not a samples file\n1\t2\n' >"$CELL_DIR/samples.tsv"
  # A broken axes argument stands for any input the row builder cannot take.
  run results_row "$CELL_DIR" ok "" '{"broken"'
  assert_failure
  assert_output --partial "row.json: the row could not be built: json.decoder.JSONDecodeError"
  run jq -r '[.status, .error] | @tsv' "$CELL_DIR/row.json"
  assert_output $'failed\tthe row could not be built: json.decoder.JSONDecodeError: Expecting \':\' delimiter: line 1 column 10 (char 9)'
}

@test "k6's exit status reaches the row as given, not through a global" {
  printf '{"metrics": {}}' >"$CELL_DIR/summary.json"
  CELL_K6_EXIT=7 run results_row "$CELL_DIR" ok "" '{}' 1.5 null 99
  assert_success
  run jq -c '[.k6_exit, .cell_wall_s, .status]' "$CELL_DIR/row.json"
  assert_output '[99,1.5,"ok"]'
}

@test "write_atomic keeps the old file when its producer wrote nothing" {
  printf 'old\n' >"$BATS_TEST_TMPDIR/file"
  run bash -c 'source "$LT_ROOT/scripts/lib/results.sh"; false | write_atomic "$1"' _ "$BATS_TEST_TMPDIR/file"
  assert_failure
  [ "$(cat "$BATS_TEST_TMPDIR/file")" = old ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '*file.tmp*')" ]
}

# A recorded run (tests/python/fixtures/runs/NAME: its manifest and rows, and
# the tables it wrote) copied under the test's directory; its path on stdout.
recorded_run() {
  cp -r "$LT_ROOT/tests/python/fixtures/runs/$1" "$BATS_TEST_TMPDIR/$1"
  printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

# csv_columns_of CSV HEADER: the CSV's rows cut to HEADER's columns (comma
# separated), one Python list a line.
csv_columns_of() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    for row in csv.DictReader(f):
        print([row[c] for c in sys.argv[2].split(",")])
PY
}

@test "results_render writes the tables a real run wrote from its rows: every recorded column, its values, in order" {
  local name run_dir recorded_head head
  for name in tiny scenarios websocket repeat; do
    run_dir="$(recorded_run "$name")"
    results_render "$run_dir"
    recorded_head="$(head -n 1 "$run_dir/expected-results.csv")"
    head="$(head -n 1 "$run_dir/results.csv")"
    # A column added to the schema since the run may stand between the recorded ones.
    [[ "$(tr ',' '\n' <<<"$head" | grep -Fxf <(tr ',' '\n' <<<"$recorded_head") | paste -sd,)" == "$recorded_head" ]] \
      || fail "$name: the recorded columns are not all in results.csv, in order"
    [ "$(csv_columns_of "$run_dir/results.csv" "$recorded_head")" = "$(csv_columns_of "$run_dir/expected-results.csv" "$recorded_head")" ] \
      || fail "$name: a recorded column's values differ from the run's own"
    [ "$(grep -c '^| ' "$run_dir/results.md")" -eq "$(grep -c '^| ' "$run_dir/expected-results.md")" ]
  done
}

@test "results.csv's header is the columns' schema's, with the run's axis and its scenarios' columns" {
  local run_dir
  run_dir="$(recorded_run scenarios)"
  results_render "$run_dir"
  run head -n 1 "$run_dir/results.csv"
  assert_output --partial 'run_id,cell,scenario,status,SCENARIO,repeat_of,repeat,as_designed,design_notes,vus_max,'
  assert_output --partial ',cell_wall_s,k6_exit,arrival_rate_per_s,iteration_rate_per_s,wr_visitors,'
  assert_output --partial ',wr_server_max_inside_observed,error,notes'
}

@test "a row that is not JSON fails the tables with its file's name and keeps the last ones" {
  local run_dir
  run_dir="$(recorded_run tiny)"
  results_render "$run_dir"
  cp "$run_dir/results.csv" "$BATS_TEST_TMPDIR/before.csv"
  printf '{"run_id": ' >"$run_dir/cells/02_accept_count-20/row.json"
  run results_render "$run_dir"
  assert_failure 1
  assert_output --partial "ltsuite.tables: $run_dir/cells/02_accept_count-20/row.json: not JSON"
  cmp "$run_dir/results.csv" "$BATS_TEST_TMPDIR/before.csv"
}

@test "a run with no row yet gets tables that say so" {
  mkdir -p "$BATS_TEST_TMPDIR/empty/cells/01_x"
  printf '{"axes": ["VUS"]}\n' >"$BATS_TEST_TMPDIR/empty/manifest.json"
  results_render "$BATS_TEST_TMPDIR/empty"
  [ "$(cat "$BATS_TEST_TMPDIR/empty/results.csv")" = "run_id,cell,scenario,status" ]
  [ "$(cat "$BATS_TEST_TMPDIR/empty/results.md")" = "No cell finished." ]
}

@test "20,000 rows (2,000 cells x REPEAT=10) are counted and reported: no reader puts them on one command line" {
  local lib
  for lib in manifest rundir report; do
    # shellcheck source=/dev/null
    source "$LT_ROOT/scripts/lib/$lib.sh"
  done
  local run_dir="$BATS_TEST_TMPDIR/run"
  mkdir -p "$run_dir/cells"
  printf '{"run_id": "r", "axes": ["TOMCAT_ACCEPT_COUNT"], "repeat": {"n": 10}, "cells_total": 20000, "status": "running"}\n' >"$run_dir/manifest.json"
  # Names as long as a three-axis matrix's: together past ARG_MAX (2 MB here).
  "$LT_PYTHON" - "$run_dir/cells" <<'PY'
import json, os, sys
for i in range(2000):
    for k in range(1, 11):
        cell = f"{i + 1:04d}_accept_count-{i}_max_connections-{i}_max_threads-{i}_delay_ms-{i}_rep-{k:02d}"
        os.mkdir(os.path.join(sys.argv[1], cell))
        with open(os.path.join(sys.argv[1], cell, "row.json"), "w") as f:
            json.dump({"cell": cell, "status": "failed" if k == 1 else "ok", "as_designed": 1, "repeat": 10,
                       "repeat_of": cell.rsplit("_rep-", 1)[0], "axes": {"TOMCAT_ACCEPT_COUNT": str(i)}}, f)
PY
  # shellcheck disable=SC2034 # SC2034: read by rows_failed_and_missing and say_as_designed (rundir.sh)
  LT_RUN_DIR="$run_dir"
  # Every cell's row read (xargs splits the names past ARG_MAX): 2,000 failed, none missing.
  local -a names
  mapfile -t names < <(find "$run_dir/cells" -mindepth 1 -maxdepth 1 -printf '%f\n')
  run rows_failed_and_missing "${names[@]}"
  assert_success
  assert_output 2000
  run report_as_designed "$run_dir"
  assert_success
  assert_output '{"cells_as_designed":20000,"first_design_reason":"0001_accept_count-0_max_connections-0_max_threads-0_delay_ms-0_rep-01: failed: null"}'
  run report_repeats "$run_dir"
  assert_success
  assert_output --partial '<table id="repeats">'
  run say_as_designed 20000
  assert_output --partial "20000 of 20000 cell(s) ran as designed"
  update_cell_counts
  run jq -c '[.cells_done, .cells_failed, .cells_as_designed]' "$run_dir/manifest.json"
  assert_output '[20000,2000,20000]'
}

@test "rows_failed_and_missing: the failed rows counted and the cells without a valid row named, in one jq start when every row reads" {
  local lib
  for lib in manifest rundir; do
    # shellcheck source=/dev/null
    source "$LT_ROOT/scripts/lib/$lib.sh"
  done
  local run_dir="$BATS_TEST_TMPDIR/run"
  mkdir -p "$run_dir"/cells/{01,02,03,04,05,06}
  printf '{"cell": "01", "status": "ok"}\n' >"$run_dir/cells/01/row.json"
  printf '{"cell": "02", "status": "failed"}\n' >"$run_dir/cells/02/row.json"
  printf '{"cell": "03", "status": "failed"}\n' >"$run_dir/cells/03/row.json"
  printf '{"cell": "04", "status": "running"}\n' >"$run_dir/cells/04/row.json"
  # shellcheck disable=SC2034 # SC2034: read by rows_failed_and_missing (rundir.sh)
  LT_RUN_DIR="$run_dir"
  # jq's starts, counted through a jq of its own first in PATH.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  printf '#!/bin/sh\necho x >>"%s"\nexec %s "$@"\n' "$BATS_TEST_TMPDIR/jq-starts" "$(command -v jq)" >"$BATS_TEST_TMPDIR/bin/jq"
  chmod +x "$BATS_TEST_TMPDIR/bin/jq"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run rows_failed_and_missing 01 02 03 04
  assert_output $'2\n04'
  [ "$(wc -l <"$BATS_TEST_TMPDIR/jq-starts")" -eq 1 ]
  # A row cut off, one not there (05's directory has none, 06's is empty): each read alone.
  printf '{"cell": "01", "stat' >"$run_dir/cells/01/row.json"
  : >"$run_dir/cells/06/row.json"
  run rows_failed_and_missing 01 02 03 04 05 06
  assert_output $'2\n01 04 05 06'
  run rows_failed_and_missing 02
  assert_output 1
}

@test "manifest_finished: the status, the time, a warning and the cells' counts from their rows, in one jq start" {
  local lib
  for lib in manifest rundir; do
    # shellcheck source=/dev/null
    source "$LT_ROOT/scripts/lib/$lib.sh"
  done
  local run_dir="$BATS_TEST_TMPDIR/run"
  mkdir -p "$run_dir/cells/01" "$run_dir/cells/02" "$run_dir/cells/03"
  printf '{"run_id": "r", "cells_total": 3, "cells_done": 0, "cells_failed": 0, "status": "running", "ended_at": null, "warnings": ["w"]}\n' >"$run_dir/manifest.json"
  printf '{"cell": "01", "status": "ok", "as_designed": 1}\n' >"$run_dir/cells/01/row.json"
  printf '{"cell": "02", "status": "failed", "as_designed": null, "error": "target exited"}\n' >"$run_dir/cells/02/row.json"
  printf '{"cell": "03", "status": "ok", "as_designed": 0, "design_notes": "k6 was the bottleneck"}\n' >"$run_dir/cells/03/row.json"
  run manifest_finished "$run_dir" failed "cannot write report.html"
  assert_success
  run jq -c '[.status, .cells_done, .cells_failed, .cells_as_designed, .first_design_reason, .warnings, (.ended_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$"))]' <<<"$output"
  assert_output '["failed",3,1,1,"03: k6 was the bottleneck",["w","cannot write report.html"],true]'
  # The manifest on disk is not written: the caller does (finish_run, manifest_finish).
  [ "$(jq -r .cells_done "$run_dir/manifest.json")" = 0 ]
}

@test "update_cell_counts: done, failed, as designed and the first reason, from the rows read once" {
  local lib
  for lib in manifest rundir report; do
    # shellcheck source=/dev/null
    source "$LT_ROOT/scripts/lib/$lib.sh"
  done
  local run_dir="$BATS_TEST_TMPDIR/run"
  mkdir -p "$run_dir/cells/01" "$run_dir/cells/02" "$run_dir/cells/03" "$run_dir/cells/04"
  printf '{"run_id": "r", "cells_total": 4, "status": "running", "warnings": ["w"]}\n' >"$run_dir/manifest.json"
  printf '{"cell": "01", "status": "ok", "as_designed": 1}\n' >"$run_dir/cells/01/row.json"
  printf '{"cell": "02", "status": "ok", "as_designed": 0, "design_notes": "k6 was the bottleneck"}\n' >"$run_dir/cells/02/row.json"
  printf '{"cell": "03", "status": "failed", "as_designed": null, "error": "target exited"}\n' >"$run_dir/cells/03/row.json"
  # A row cut off while written (empty) is not counted.
  : >"$run_dir/cells/04/row.json"
  # shellcheck disable=SC2034 # SC2034: read by update_cell_counts (rundir.sh)
  LT_RUN_DIR="$run_dir"
  update_cell_counts
  run jq -c '[.cells_done, .cells_failed, .cells_as_designed, .first_design_reason, .status, .warnings]' "$run_dir/manifest.json"
  assert_output '[3,1,1,"02: k6 was the bottleneck","running",["w"]]'
  # The same figures as the page's headline (report_as_designed).
  run report_as_designed "$run_dir"
  assert_output '{"cells_as_designed":1,"first_design_reason":"02: k6 was the bottleneck"}'
}
