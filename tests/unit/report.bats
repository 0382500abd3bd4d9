#!/usr/bin/env bats
# report.html: the run's facts, its rows (from row.json), the data its charts
# draw, and links to each cell. The browser side: tests/integration/report.bats.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

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
  lt_write "$RUN_DIR/cells/01_vus-4/row.json" <<'JSON'
{"run_id": "20261122-0000-t", "cell": "01_vus-4", "scenario": "spike", "status": "ok", "axes": {"VUS": "4"},
 "tps": 8.5, "http_reqs": 4, "failed_reqs": 3, "queue_capacity": 4, "predicted_server_conns_peak": 4, "error": ""}
JSON
  lt_write "$RUN_DIR/cells/02_vus-8/row.json" <<'JSON'
{"run_id": "20261122-0000-t", "cell": "02_vus-8", "scenario": "spike", "status": "failed", "axes": {"VUS": "8"},
 "tps": null, "error": "k6 exited with status 107: a, <b>"}
JSON
  printf '<html></html>\n' >"$RUN_DIR/cells/01_vus-4/k6-report.html"
  printf 'TOMCAT_MAX_THREADS=10\nTOMCAT_MAX_CONNECTIONS=2\nVUS=4\n' >"$RUN_DIR/cells/01_vus-4/cell.env"
  printf 'x\n' >"$RUN_DIR/cells/02_vus-8/k6.log"
  # samples.tsv with a column appended after the known ones: read by name.
  printf 'ts\tlisten_recvq\tlisten_sendq\tserver_estab\tnew_column\n1795400000.5\t0\t1\t0\t7\n1795400001.5\t2\t1\t4\t\n' \
    >"$RUN_DIR/cells/01_vus-4/samples.tsv"
  # k6's JSON output for a setup request (left out) and three load requests:
  # answered, a dial timeout and a request timeout.
  k6_point() { # METRIC TIME VALUE STATUS ERROR_CODE TRAFFIC
    printf '{"metric":"%s","type":"Point","data":{"time":"%s","value":%s,"tags":{"status":"%s"%s,"traffic":"%s"}}}\n' \
      "$1" "$2" "$3" "$4" "$([[ -n "$5" ]] && printf ',"error_code":"%s"' "$5")" "$6"
  }
  {
    printf '{"type":"Metric","data":{"name":"http_req_duration","type":"trend"},"metric":"http_req_duration"}\n'
    k6_point http_req_duration 2026-11-22T00:00:00.100000000Z 50 200 "" setup
    k6_point http_reqs 2026-11-22T00:00:01.500000000Z 1 200 "" load
    k6_point http_req_duration 2026-11-22T00:00:01.500000000Z 1000 200 "" load
    # k6's blocked holds its connecting: 150 ms to get a connection, 50 of them connecting.
    k6_point http_req_blocked 2026-11-22T00:00:01.500000000Z 150 200 "" load
    k6_point http_req_connecting 2026-11-22T00:00:01.500000000Z 50 200 "" load
    k6_point http_req_duration 2026-11-22T01:00:02.250000000+01:00 0 0 1211 load
    k6_point http_req_blocked 2026-11-22T01:00:02.250000000+01:00 0 0 1211 load
    k6_point http_req_connecting 2026-11-22T01:00:02.250000000+01:00 2000 0 1211 load
    k6_point http_req_duration 2026-11-22T00:00:02.900000000Z 3000 0 1050 load
    k6_point http_req_duration 2026-11-22T00:00:04.100000000Z 3000 0 1050 load
  } | gzip >"$RUN_DIR/cells/01_vus-4/k6-samples.json.gz"
}

# report_cell CELL: CELL's entry of the chart data (report_data).
report_cell() {
  report_data "$RUN_DIR" | jq -c --arg cell "$1" '.cells[] | select(.cell == $cell)'
}

@test "the report starts Python once for every cell's series, not once a cell" {
  cp "$RUN_DIR/cells/01_vus-4/k6-samples.json.gz" "$RUN_DIR/cells/02_vus-8/"
  printf '127.0.0.1 - - [22/Nov/2026:00:00:01 +0000] "GET /hello HTTP/1.1" 200 5 1000\n' \
    | tee "$RUN_DIR/cells/01_vus-4/tomcat-access.log" >"$RUN_DIR/cells/02_vus-8/tomcat-access.log"
  local real="$LT_PYTHON"
  printf '#!/bin/bash\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$BATS_TEST_TMPDIR/starts" "$real" >"$BATS_TEST_TMPDIR/python"
  chmod +x "$BATS_TEST_TMPDIR/python"
  LT_PYTHON="$BATS_TEST_TMPDIR/python" run report_data "$RUN_DIR"
  assert_success
  jq -e '[.cells[].k6.per_second.answered] == [[1, 0, 0, 0], [1, 0, 0, 0]]
         and (.time_parts.cells | keys) == ["01_vus-4", "02_vus-8"]' <<<"$output"
  local two
  two="$(wc -l <"$BATS_TEST_TMPDIR/starts")"
  # A third cell like them: as many starts (the columns' labels, the series).
  cp -r "$RUN_DIR/cells/02_vus-8" "$RUN_DIR/cells/03_vus-9"
  : >"$BATS_TEST_TMPDIR/starts"
  LT_PYTHON="$BATS_TEST_TMPDIR/python" run report_data "$RUN_DIR"
  jq -e '(.time_parts.cells | keys | length) == 3 and .cells[2].k6 != null' <<<"$output"
  assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/starts")" "$two"
  run grep -c reportseries "$BATS_TEST_TMPDIR/starts"
  assert_output 1
}

@test "a run's last step starts Python once: the tables' process makes the report's inputs, and the page is the same" {
  results_render "$RUN_DIR"
  report_render "$RUN_DIR"
  cp "$RUN_DIR/report.html" "$BATS_TEST_TMPDIR/alone.html"
  local real="$LT_PYTHON"
  printf '#!/bin/bash\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$BATS_TEST_TMPDIR/starts" "$real" >"$BATS_TEST_TMPDIR/python"
  chmod +x "$BATS_TEST_TMPDIR/python"
  # shellcheck disable=SC2030 # SC2030: each test runs in its own process, the export is this test's
  export LT_PYTHON="$BATS_TEST_TMPDIR/python"
  results_render_final "$RUN_DIR" "$BATS_TEST_TMPDIR/inputs"
  report_render "$RUN_DIR" "$RUN_DIR/manifest.json" "$BATS_TEST_TMPDIR/inputs"
  run cat "$BATS_TEST_TMPDIR/starts"
  assert_output --regexp '^-m ltsuite.tables render .* --report-inputs '
  assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/starts")" 1
  [ -s "$RUN_DIR/results.csv" ] && [ -s "$RUN_DIR/results.md" ]
  jq -e '(.head | index("cell")) != null and .columns.labels != null and [.data.cells[] | .k6 != null] == [true, false]
         and (.cells_html | startswith("<h2>Cells</h2>"))' \
    "$BATS_TEST_TMPDIR/inputs"
  cmp "$BATS_TEST_TMPDIR/alone.html" "$RUN_DIR/report.html"
  # Inputs that could not be made: the page makes its own, in one start.
  : >"$BATS_TEST_TMPDIR/starts"
  report_render "$RUN_DIR" "$RUN_DIR/manifest.json" "$BATS_TEST_TMPDIR/missing"
  run cat "$BATS_TEST_TMPDIR/starts"
  assert_output --regexp '^-S -m ltsuite.reportseries --inputs '
  assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/starts")" 1
  cmp "$BATS_TEST_TMPDIR/alone.html" "$RUN_DIR/report.html"
}

@test "with its inputs made, the page starts jq three times (title, body, chart data), whatever the cells and sections" {
  results_render_final "$RUN_DIR" "$BATS_TEST_TMPDIR/inputs"
  mkdir "$BATS_TEST_TMPDIR/bin"
  printf '#!/bin/bash\necho jq >>"%s"\nexec "%s" "$@"\n' "$BATS_TEST_TMPDIR/jq-starts" "$(command -v jq)" >"$BATS_TEST_TMPDIR/bin/jq"
  chmod +x "$BATS_TEST_TMPDIR/bin/jq"
  printf 'what changed\n' >"$RUN_DIR/across.txt"
  printf 'what happened\n' >"$RUN_DIR/findings.txt"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" report_render "$RUN_DIR" "$RUN_DIR/manifest.json" "$BATS_TEST_TMPDIR/inputs"
  assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/jq-starts")" 3
  run cat "$RUN_DIR/report.html"
  assert_output --partial '<ul id="across">'
  assert_output --partial '<li>what happened</li>'
  assert_output --partial '<h2>Results</h2>'
}

@test "the report shows the run, its facts and its warnings, escaped" {
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  assert_output --partial "<title>run 20261122-0000-t</title>"
  assert_output --partial "<h1>Run <code>20261122-0000-t</code>: complete, 0 of 2 cell(s) ran as designed</h1>"
  assert_output --partial "env/matrices/t.matrix (sha256 0123456789ab)"
  assert_output --partial "2 of 2 done, 1 failed"
  assert_output --partial "http://127.0.0.1:8086, database k6, 986 points"
  assert_output --partial "monitoring: &lt;InfluxDB&gt; &amp; co"
  refute_output --partial "<InfluxDB>"
}

@test "what each cell found, in words, comes first under the headline, escaped; none without findings" {
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  refute_output --partial "What happened"
  printf '%s\n' "01_a: 3 of 4 requests <failed> & more." "02_b: none failed." >"$RUN_DIR/findings.txt"
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  assert_output --partial $'<h2>What happened</h2>\n<ul id="findings">\n<li>01_a: 3 of 4 requests &lt;failed&gt; &amp; more.</li>\n<li>02_b: none failed.</li>\n</ul>'
  [[ "$output" == *"What happened"*"<h2>Run</h2>"* ]]
}

@test "what changed across the cells comes before what each found, escaped; none without it" {
  printf '%s\n' "01_a: none failed." >"$RUN_DIR/findings.txt"
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  refute_output --partial "What changed across cells"
  printf '%s\n' "Somaxconn 2 / 4096 changed connections held 5 -> 8 (<03> & 04)." >"$RUN_DIR/across.txt"
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  assert_output --partial $'<h2>What changed across cells</h2>\n<ul id="across">\n<li>Somaxconn 2 / 4096 changed connections held 5 -&gt; 8 (&lt;03&gt; &amp; 04).</li>\n</ul>'
  [[ "$output" == *"What changed across cells"*"What happened"*"<h2>Run</h2>"* ]]
}

@test "the headline says how many cells ran as designed and the first reason, in the browser too" {
  # One cell k6 could not drive as designed, one that failed.
  jq '.as_designed = 0 | .design_notes = "k6 at 197% of 2 cores for 3 s: the generator set the pace"' \
    "$RUN_DIR/cells/01_vus-4/row.json" >"$BATS_TEST_TMPDIR/row" && mv "$BATS_TEST_TMPDIR/row" "$RUN_DIR/cells/01_vus-4/row.json"
  report_render "$RUN_DIR"
  node "$LT_ROOT/scripts/report/open-report.js" "$RUN_DIR/report.html" >"$BATS_TEST_TMPDIR/page.json"
  run jq -r .headline "$BATS_TEST_TMPDIR/page.json"
  assert_output "Run 20261122-0000-t: complete, 0 of 2 cell(s) ran as designed
First reason: 01_vus-4: k6 at 197% of 2 cores for 3 s: the generator set the pace"
  # Without a design note, a failed cell's error is the reason, escaped.
  run report_as_designed "$BATS_TEST_TMPDIR/none"
  assert_output '{"cells_as_designed":0,"first_design_reason":null}'
  jq '.as_designed = 1 | .design_notes = null' "$RUN_DIR/cells/01_vus-4/row.json" >"$BATS_TEST_TMPDIR/row" \
    && mv "$BATS_TEST_TMPDIR/row" "$RUN_DIR/cells/01_vus-4/row.json"
  report_render "$RUN_DIR"
  run grep -A1 '^<h1>' "$RUN_DIR/report.html"
  assert_output '<h1>Run <code>20261122-0000-t</code>: complete, 1 of 2 cell(s) ran as designed</h1>
<p id="first-reason" class="warning">First reason: 02_vus-8: failed: k6 exited with status 107: a, &lt;b&gt;</p>'
}

@test "the results table is read from row.json, in results.csv's columns; a failed cell is marked" {
  report_render "$RUN_DIR"
  run grep -c '^<tr><td>20261122-0000-t</td>' "$RUN_DIR/report.html"
  assert_output 1
  run grep -c '^<tr class="failed"><td>20261122-0000-t</td>' "$RUN_DIR/report.html"
  assert_output 1
  grep -q '<td class="n">8.5</td>' "$RUN_DIR/report.html"
  grep -q '<td>k6 exited with status 107: a, &lt;b&gt;</td>' "$RUN_DIR/report.html"
  # The same columns, in the same order, as results.csv.
  results_render "$RUN_DIR"
  local html_head
  html_head="$(grep -A1 '^<div class="results"><table>' "$RUN_DIR/report.html" | sed -n '2{s#</th><th>#,#g; s#^<tr><th>##; s#</th></tr>$##; p}')"
  assert_equal "$html_head" "$(head -n 1 "$RUN_DIR/results.csv")"
}

@test "each cell links its k6 report and every file, and has a place for its charts" {
  report_render "$RUN_DIR"
  run cat "$RUN_DIR/report.html"
  assert_output --partial '<a href="#cell-01_vus-4">01_vus-4</a>'
  assert_output --partial '<h3 id="cell-01_vus-4">'
  assert_output --partial '<div class="charts" id="charts-01_vus-4"></div>'
  assert_output --partial '<a href="cells/01_vus-4/k6-report.html">k6 report</a>'
  assert_output --partial '<a href="cells/01_vus-4/cell.env">cell.env</a> (53 B)'
  assert_output --partial '<a href="cells/02_vus-8/k6.log">k6.log</a>'
  assert_output --partial 'No k6 report for this cell'
}

@test "a run without rows yet still gets a page" {
  rm "$RUN_DIR"/cells/*/row.json
  report_render "$RUN_DIR"
  grep -q '<p>No cell finished.</p>' "$RUN_DIR/report.html"
  grep -q '</html>' "$RUN_DIR/report.html"
}

@test "the chart data holds samples.tsv's columns by name, the row and the knobs the charts use" {
  run report_cell 01_vus-4
  assert_success
  jq -e '.samples.ts == [1795400000.5, 1795400001.5] and .samples.listen_recvq == [0, 2]
         and .samples.new_column == [7, null]' <<<"$output"
  jq -e '.row.predicted_server_conns_peak == 4 and .env.TOMCAT_MAX_THREADS == "10"' <<<"$output"
  run report_cell "02_vus-8"
  jq -e '.samples == {} and .k6 == null' <<<"$output"
}

@test "the chart data is written as jq writes it: the row's numbers, the knobs in order, each field of samples.tsv as tonumber reads it" {
  printf '{"cell": "02_vus-8", "status": "failed", "tps": 2.0, "p": 1e-7, "big": 1e20, "a": 1, "a": 2, "s": "caf\u00e9 \u007f"}\n' \
    >"$RUN_DIR/cells/02_vus-8/row.json"
  printf 'DELAY_MS=50\nK6_INSTANCES=\n' >"$RUN_DIR/cells/02_vus-8/cell.env"
  printf 'ts\tq\tq\tr\n1.50\t01\t-0\t1e3\n2\t\t x \n\n3\tnan\t 4 \n' >"$RUN_DIR/cells/02_vus-8/samples.tsv"
  run report_cell 02_vus-8
  assert_success
  assert_output '{"cell":"02_vus-8","row":{"cell":"02_vus-8","status":"failed","tps":2,"p":1e-07,"big":1e+20,"a":2,"s":"café \u007f"},"env":{"TOMCAT_MAX_THREADS":null,"TOMCAT_MAX_CONNECTIONS":null,"DELAY_MS":"50","K6_INSTANCES":""},"samples":{"ts":[1.5,2,null,3],"q":[-0,null,null,4],"r":[1000,null,null,null]},"k6":null}'
}

@test "each cell's section is written in one Python start: its k6 report, every file with its size, names escaped" {
  head -c 1600000 /dev/zero >"$RUN_DIR/cells/02_vus-8/big <&\">.bin"
  head -c 2000 /dev/zero >"$RUN_DIR/cells/02_vus-8/two.bin"
  mkdir "$RUN_DIR/cells/02_vus-8/sub"
  : >"$RUN_DIR/cells/02_vus-8/.hidden"
  # shellcheck disable=SC2031 # SC2031: each test runs in its own process; the export above is another test's
  local real="$LT_PYTHON"
  printf '#!/bin/bash\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$BATS_TEST_TMPDIR/starts" "$real" >"$BATS_TEST_TMPDIR/python"
  chmod +x "$BATS_TEST_TMPDIR/python"
  LT_PYTHON="$BATS_TEST_TMPDIR/python" run report_cells "$RUN_DIR"
  assert_success
  assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/starts")" 1
  assert_output '<h2>Cells</h2>
<h3 id="cell-01_vus-4"><code>01_vus-4</code></h3>
<div class="charts" id="charts-01_vus-4"></div>
<p><a href="cells/01_vus-4/k6-report.html">k6 report</a> (k6 web dashboard export: request rate, latency and VUs over time)</p>
<ul>
<li><a href="cells/01_vus-4/cell.env">cell.env</a> ('"$(stat -c %s "$RUN_DIR/cells/01_vus-4/cell.env")"' B)</li>
<li><a href="cells/01_vus-4/k6-report.html">k6-report.html</a> ('"$(stat -c %s "$RUN_DIR/cells/01_vus-4/k6-report.html")"' B)</li>
<li><a href="cells/01_vus-4/k6-samples.json.gz">k6-samples.json.gz</a> ('"$(stat -c %s "$RUN_DIR/cells/01_vus-4/k6-samples.json.gz")"' B)</li>
<li><a href="cells/01_vus-4/row.json">row.json</a> ('"$(stat -c %s "$RUN_DIR/cells/01_vus-4/row.json")"' B)</li>
<li><a href="cells/01_vus-4/samples.tsv">samples.tsv</a> ('"$(stat -c %s "$RUN_DIR/cells/01_vus-4/samples.tsv")"' B)</li>
</ul>
<h3 id="cell-02_vus-8"><code>02_vus-8</code></h3>
<div class="charts" id="charts-02_vus-8"></div>
<p>No k6 report for this cell (K6_HTML_REPORT=0, or k6 did not finish).</p>
<ul>
<li><a href="cells/02_vus-8/big &lt;&amp;&quot;&gt;.bin">big &lt;&amp;&quot;&gt;.bin</a> (1.5 MB)</li>
<li><a href="cells/02_vus-8/k6.log">k6.log</a> (2 B)</li>
<li><a href="cells/02_vus-8/row.json">row.json</a> ('"$(stat -c %s "$RUN_DIR/cells/02_vus-8/row.json")"' B)</li>
<li><a href="cells/02_vus-8/two.bin">two.bin</a> (2 KB)</li>
</ul>'
}

@test "k6's samples become requests per second by cause and each answered request's latency at its start" {
  run report_cell 01_vus-4
  assert_success
  # 2026-11-22T00:00:01Z = 1795305601; the +01:00 time is the same second as
  # 00:00:02Z; the second without a request (00:00:03) counts 0.
  jq -e '.k6.per_second == {t: [1795305601, 1795305602, 1795305603, 1795305604], answered: [1, 0, 0, 0],
          connect: [0, 1, 0, 0], reset: [0, 0, 0, 0], timeout: [0, 1, 0, 1], http_error: [0, 0, 0, 0],
          other: [0, 0, 0, 0]}' <<<"$output"
  # Started 1.5 - (1000 + 100 + 50) ms before its last sample: at 0.35 s.
  jq -e '.k6.latency == {start: [1795305600.35], ms: [1000], stride: 1, answered: 1}' <<<"$output"
}

@test "two requests at the same nanosecond are two requests" {
  local cell="$RUN_DIR/cells/01_vus-4" t='2026-11-22T00:00:01.000000009Z'
  printf '{"metric":"http_req_duration","type":"Point","data":{"time":"%s","value":%s,"tags":{"status":"200"}}}\n{"metric":"http_req_blocked","type":"Point","data":{"time":"%s","value":0,"tags":{"status":"200"}}}\n' \
    "$t" 5 "$t" "$t" 7 "$t" | gzip >"$cell/k6-samples.json.gz"
  run report_cell 01_vus-4
  jq -e '.k6.per_second.answered == [2] and .k6.latency.ms == [5, 7]' <<<"$output"
}

@test "a large cell draws every Nth answered request, at most REPORT_LATENCY_POINTS" {
  local cell="$RUN_DIR/cells/01_vus-4"
  # 20,000 answered requests, one every millisecond.
  awk 'BEGIN { for (i = 0; i < 20000; i++) {
      t = sprintf("2026-11-22T00:00:%02d.%03d000000Z", int(i / 1000), i % 1000)
      printf "{\"metric\":\"http_req_duration\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":%d,\"tags\":{\"status\":\"200\"}}}\n", t, i % 97
    } }' | gzip >"$cell/k6-samples.json.gz"
  jq '.http_reqs = 20000 | .failed_reqs = 0' "$cell/row.json" >"$cell/row.json.new" && mv "$cell/row.json.new" "$cell/row.json"
  run report_cell 01_vus-4
  jq -e '.k6.latency | .stride == 5 and (.ms | length) == 4000 and .answered == 20000' <<<"$output"
  jq -e '.k6.per_second.answered | length == 20 and add == 20000' <<<"$output"
  report_render "$RUN_DIR"
  [ "$(stat -c %s "$RUN_DIR/report.html")" -lt 400000 ]
  # Two k6 instances: the file holds the first one's share, so half the stride.
  printf 'K6_INSTANCES=2\n' >>"$cell/cell.env"
  jq '.http_reqs = 40000' "$cell/row.json" >"$cell/row.json.new" && mv "$cell/row.json.new" "$cell/row.json"
  run report_cell 01_vus-4
  jq -e '.k6.latency.stride == 5 and .env.K6_INSTANCES == "2"' <<<"$output"
}

@test "the page is self-contained: uPlot, the data and the drawing code inline, nothing fetched" {
  report_render "$RUN_DIR"
  grep -q 'id="report-data"' "$RUN_DIR/report.html"
  grep -q 'window.ltReportCharts' "$RUN_DIR/report.html"
  grep -q 'uPlot' "$RUN_DIR/report.html"
  run grep -Ec '<(script|link|img)[^>]* (src|href)=' "$RUN_DIR/report.html"
  assert_output 0
}

@test "a value cannot end the data's script element" {
  jq '.error = "</script><script>alert(1)</script>"' "$RUN_DIR/cells/02_vus-8/row.json" >"$BATS_TEST_TMPDIR/row" \
    && mv "$BATS_TEST_TMPDIR/row" "$RUN_DIR/cells/02_vus-8/row.json"
  report_render "$RUN_DIR"
  run grep -c '</script><script>alert' "$RUN_DIR/report.html"
  assert_output 0
  # Only the page's own three script elements end: uPlot, the data, the drawing code.
  run grep -o '</script>' "$RUN_DIR/report.html"
  assert_equal "${#lines[@]}" 3
}

@test "without the charting library the page keeps its tables and says how to get the charts" {
  REPORT_UPLOT_DIR="$BATS_TEST_TMPDIR/none"
  run report_render "$RUN_DIR"
  assert_output --partial "install-report-tools.sh"
  run grep -c '<script' "$RUN_DIR/report.html"
  assert_output 0
  grep -q '<td class="n">8.5</td>' "$RUN_DIR/report.html"
}

@test "a URL's user and password in a manifest are not shown" {
  jq '.overrides = ["INFLUXDB_URL=http://ltuser:s3cret@127.0.0.1:8086"] | .monitoring.influxdb_url = "http://ltuser:s3cret@127.0.0.1:8086"' \
    "$RUN_DIR/manifest.json" >"$RUN_DIR/m" && mv "$RUN_DIR/m" "$RUN_DIR/manifest.json"
  run report_facts "$RUN_DIR/manifest.json"
  assert_success
  refute_output --partial s3cret
  refute_output --partial ltuser
  assert_output --partial "INFLUXDB_URL=http://127.0.0.1:8086"
}

@test "the rules' answers per second are drawn beside the answered requests per second, not beside tps" {
  # 4 requests at 8.5 a second, 3 failed: 2.125 answered a second; the rules predict 2.
  jq '.answered_tps = 2.125 | .predicted_tps = 2' "$RUN_DIR/cells/01_vus-4/row.json" >"$BATS_TEST_TMPDIR/row" \
    && mv "$BATS_TEST_TMPDIR/row" "$RUN_DIR/cells/01_vus-4/row.json"
  report_render "$RUN_DIR"
  node "$LT_ROOT/scripts/report/open-report.js" "$RUN_DIR/report.html" >"$BATS_TEST_TMPDIR/page.json"
  run jq -c '.charts[] | select(.id == "chart-across-answered_tps") | [.title, [.series[] | .label, .pixels > 0], .data[1:]]' \
    "$BATS_TEST_TMPDIR/page.json"
  assert_output '["answered requests per second",["answered_tps",true,"predicted_tps",true],[[2.125,null],[2,null]]]'
  # tps keeps every request sent and says so, with no prediction beside it.
  run jq -c '.charts[] | select(.id == "chart-across-tps") | [.title, [.series[].label], .data[1:]]' "$BATS_TEST_TMPDIR/page.json"
  assert_output '["requests per second (every request sent, failed ones included)",["tps"],[[8.5,null]]]'
}

@test "with nginx in front, each cell's users', proxy's and server's views side by side; no tiers without a proxy" {
  report_render "$RUN_DIR"
  run grep -c 'id="tiers"' "$RUN_DIR/report.html"
  assert_output 0
  lt_write "$RUN_DIR/cells/01_vus-4/row.json" <<'JSON'
{"run_id": "20261122-0000-t", "cell": "01_vus-4", "scenario": "keepalive", "status": "ok", "axes": {"VUS": "4"},
 "http_reqs": 12, "failed_reqs": 7, "fail_connect": 0, "fail_http_5xx": 7, "lat_p99_ms": 3001.5,
 "proxy_reqs": 13, "proxy_504": 7, "proxy_502": 0, "proxy_upstream_connect_timeouts": 7,
 "proxy_upstream_connect_p99_ms": 1, "listen_overflows": 7, "server_conns_peak": 3, "queue_capacity": 3}
JSON
  report_render "$RUN_DIR"
  run grep -A4 'id="tiers"' "$RUN_DIR/report.html"
  assert_line '<tr><th></th><th colspan="6">users (k6)</th><th colspan="6">proxy (nginx)</th><th colspan="4">server (kernel, Tomcat)</th></tr>'
  # users: 7 failed, none to connect, 7 5xx; nginx: 7 504s; the server: 7 overflows.
  assert_output --partial '<tr><td>01_vus-4</td><td class="n">12</td><td class="n">7</td><td class="n">0</td><td></td><td class="n">7</td><td class="n">3001.5</td><td class="n">13</td><td class="n">7</td><td class="n">0</td><td class="n">7</td><td class="n">1</td><td></td><td class="n">7</td><td class="n">3</td><td class="n">3</td><td></td></tr>'
  # The failed cell without a proxy has an empty line.
  assert_output --partial '<tr><td>02_vus-8</td><td></td>'
}
