#!/usr/bin/env bats
# A run's directory: the run id made from the matrix's name is one RESUME
# accepts, whatever the name holds.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test
# shellcheck disable=SC2317,SC2153 # SC2317: stubs the library under test calls; SC2153: LT_RUN_ID is set by create_run_dir

setup() {
  load '../test_helper'
  lt_source_libs results manifest rundir
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  REPEAT=1
  declare -gA MATRIX_VALUE=([REPEAT]=1 [REPEAT_SEED]=1)
  declare -ga AXIS_KEYS=()
  # The manifest's contents are not under test here.
  manifest_create() { printf '{}\n' >"$1/manifest.json"; }
  manifest_update() { :; }
}

@test "a matrix named with a space and non-ASCII letters gives a run id RESUME accepts" {
  create_run_dir "$BATS_TEST_TMPDIR/my test schön.matrix" "0 1 01"
  [[ "$LT_RUN_ID" =~ ^[0-9]{8}-[0-9]{6}-my-test-sch--n$ ]] || fail "run id: $LT_RUN_ID"
  [ -d "$LT_RESULTS_DIR/$LT_RUN_ID/cells" ]
  run_id_valid "$LT_RUN_ID"
  rm "$LT_RESULTS_DIR/$LT_RUN_ID/manifest.json"
  # The runner takes the id, and stops only because this run has no manifest.
  RESUME="$LT_RUN_ID" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  assert_output "run-matrix: RESUME: no run $LT_RUN_ID under $LT_RESULTS_DIR"
}

@test "run_id_valid refuses what the slug would change, and names above the results" {
  run_id_valid 20261126-193327-default
  run_id_valid 20261126-193327-default-2
  local id
  for id in "20261126-193327-my test" "20261126-193327-schön" .. ../x ""; do
    run run_id_valid "$id"
    assert_failure
  done
  RESUME="a/../b" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  assert_output --partial "is not a run id"
}

# finish_fixture: a run whose manifest says running, with stubs for the two
# renders that record the manifest on disk while they run (the tables'
# render also makes the report's inputs, which the report is given).
finish_fixture() {
  unset -f manifest_update
  LT_RUN_DIR="$BATS_TEST_TMPDIR/run"
  mkdir -p "$LT_RUN_DIR"
  printf '{"run_id": "r", "status": "running", "ended_at": null, "warnings": []}\n' >"$LT_RUN_DIR/manifest.json"
  RESULTS_FAIL=0 REPORT_FAIL=0
  results_render_final() {
    jq -r .status "$1/manifest.json" >"$BATS_TEST_TMPDIR/status-at-results"
    printf '{"head": ["cell"]}\n' >"$2"
    return "$RESULTS_FAIL"
  }
  report_render() {
    cp "$3" "$BATS_TEST_TMPDIR/inputs-given"
    jq -r .status "$1/manifest.json" >"$BATS_TEST_TMPDIR/status-at-report"
    jq -r .status "$2" >"$BATS_TEST_TMPDIR/status-shown"
    return "$REPORT_FAIL"
  }
}

@test "a run is complete in its manifest only after its last tables and report were written" {
  finish_fixture
  finish_run complete
  [ "$(cat "$BATS_TEST_TMPDIR/status-at-results")" = running ]
  [ "$(cat "$BATS_TEST_TMPDIR/status-at-report")" = running ]
  # The report shows the status the run ends with.
  [ "$(cat "$BATS_TEST_TMPDIR/status-shown")" = complete ]
  # The report is drawn from what the tables' process made for it.
  jq -e '.head == ["cell"]' "$BATS_TEST_TMPDIR/inputs-given"
  [ "$(jq -r .status "$LT_RUN_DIR/manifest.json")" = complete ]
  jq -e '.ended_at != null' "$LT_RUN_DIR/manifest.json"
}

@test "a last render that fails leaves the run failed, naming what could not be written" {
  finish_fixture
  REPORT_FAIL=1
  run finish_run complete
  assert_failure
  assert_output --partial "warning: cannot write report.html"
  [ "$(jq -r .status "$LT_RUN_DIR/manifest.json")" = failed ]
  jq -e '.warnings == ["cannot write report.html"]' "$LT_RUN_DIR/manifest.json"
  RESULTS_FAIL=1 REPORT_FAIL=0
  printf '{"run_id": "r", "status": "running", "warnings": []}\n' >"$LT_RUN_DIR/manifest.json"
  run finish_run complete
  assert_failure
  [ "$(jq -r .status "$LT_RUN_DIR/manifest.json")" = failed ]
  [ "$(cat "$BATS_TEST_TMPDIR/status-shown")" = failed ]
  jq -e '.warnings == ["cannot write results.csv and results.md"]' "$LT_RUN_DIR/manifest.json"
}

@test "RESUME refuses a run written in another format, by its file, before anything starts" {
  local id=20261126-193327-default
  mkdir -p "$LT_RESULTS_DIR/$id/cells/01"
  printf '{"format": 1, "cell": "01"}\n' >"$LT_RESULTS_DIR/$id/cells/01/row.json"
  printf '{"format": 2, "run_id": "%s", "matrix": "env/matrices/default.matrix"}\n' "$id" >"$LT_RESULTS_DIR/$id/manifest.json"
  RESUME="$id" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  assert_output "run-matrix: $LT_RESULTS_DIR/$id/manifest.json: format 2, but this suite reads format 1 (scripts/formats.env): read it with the suite's version that wrote it"
  [ "$(find "$LT_RESULTS_DIR/$id" -type f | wc -l)" -eq 2 ]
}
