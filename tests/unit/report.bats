#!/usr/bin/env bats
# report.html: the run's facts, its results table and links to each cell.

setup() {
  load '../test_helper'
  lt_source_libs results report
  RUN_DIR="$BATS_TEST_TMPDIR/run"
  mkdir -p "$RUN_DIR/cells/01_vus-4" "$RUN_DIR/cells/02_vus-8"
  lt_write "$RUN_DIR/manifest.json" <<'JSON'
{"run_id": "20261122-0000-t", "matrix": "env/matrices/t.matrix", "matrix_sha256": "0123456789abcdef",
 "git_commit": "abc", "versions": {"k6": "k6 v1.8.1"}, "backend": "netns",
 "started_at": "2026-11-22T00:00:00Z", "ended_at": "2026-11-22T00:01:00Z", "status": "complete",
 "axes": ["VUS"], "cells_total": 2, "cells_done": 2, "cells_failed": 1, "overrides": [],
 "warnings": ["monitoring: <InfluxDB> & co"],
 "monitoring": {"mode": "on", "influxdb_url": "http://127.0.0.1:8086", "database": "k6",
                "k6_samples": "file", "active": true, "points_written": 986}}
JSON
  lt_write "$RUN_DIR/results.csv" <<'CSV'
run_id,cell,scenario,status,VUS,tps,error
20261122-0000-t,01_vus-4,spike,ok,4,8.5,
20261122-0000-t,02_vus-8,spike,failed,8,,"k6 exited with status 107: a, b"
CSV
  printf '<html></html>\n' >"$RUN_DIR/cells/01_vus-4/k6-report.html"
  printf '{}\n' >"$RUN_DIR/cells/01_vus-4/row.json"
  printf 'x\n' >"$RUN_DIR/cells/02_vus-8/k6.log"
}

@test "the report shows the run, its facts and its warnings, escaped" {
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  assert_output --partial "<title>run 20261122-0000-t</title>"
  assert_output --partial "<h1>Run <code>20261122-0000-t</code>: complete</h1>"
  assert_output --partial "env/matrices/t.matrix (sha256 0123456789ab)"
  assert_output --partial "2 of 2 done, 1 failed"
  assert_output --partial "http://127.0.0.1:8086, database k6, 986 points"
  assert_output --partial "monitoring: &lt;InfluxDB&gt; &amp; co"
  refute_output --partial "<InfluxDB>"
}

@test "the results table has one row per cell; a failed cell is marked" {
  report_render "$RUN_DIR"
  run grep -c '^<tr><td>20261122-0000-t</td>' "$RUN_DIR/report.html"
  assert_output 1
  run grep -c '^<tr class="failed"><td>20261122-0000-t</td>' "$RUN_DIR/report.html"
  assert_output 1
  grep -q '<td class="n">8.5</td>' "$RUN_DIR/report.html"
  # A quoted CSV field with a comma stays one column.
  grep -q '<td>k6 exited with status 107: a, b</td></tr>' "$RUN_DIR/report.html"
}

@test "each cell links its k6 report and every file" {
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  assert_output --partial '<a href="#cell-01_vus-4">01_vus-4</a>'
  assert_output --partial '<h3 id="cell-01_vus-4">'
  assert_output --partial '<a href="cells/01_vus-4/k6-report.html">k6 report</a>'
  assert_output --partial '<a href="cells/01_vus-4/row.json">row.json</a> (3 B)'
  assert_output --partial '<a href="cells/02_vus-8/k6.log">k6.log</a>'
  assert_output --partial 'No k6 report for this cell'
}

@test "a run without results yet still gets a page" {
  rm "$RUN_DIR/results.csv"
  report_render "$RUN_DIR"
  grep -q '<p>No cell finished.</p>' "$RUN_DIR/report.html"
  grep -q '</html>' "$RUN_DIR/report.html"
}
