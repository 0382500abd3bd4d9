# shellcheck shell=bash
# Summary: RUN_DIR/report.html, one self-contained page per run for readers without Grafana.
#
# The page holds the manifest's facts, charts of the figures across cells,
# the results table (from every cells/*/row.json) and, per cell, charts over
# time (samples.tsv and k6's per-request samples), k6's own HTML report and
# links to every file of the cell. The charting library (uPlot, pinned in
# scripts/report/package-lock.json) and the data are inlined, so the page
# opens from disk with no network. Needs results.sh (write_atomic,
# results_env_json).

REPORT_LIB_DIR="$(dirname "${BASH_SOURCE[0]}")"
REPORT_SOURCE_DIR="$REPORT_LIB_DIR/../report"
REPORT_UPLOT_DIR="${REPORT_UPLOT_DIR:-$LT_ROOT/.tools/report/node_modules/uplot/dist}"
# Answered requests drawn per cell at most; a larger cell draws every Nth.
REPORT_LATENCY_POINTS="${REPORT_LATENCY_POINTS:-4000}"

# report_render RUN_DIR [MANIFEST] [INPUTS] [RUN_ID]: write RUN_DIR/report.html
# from what the run has so far, with the facts of MANIFEST (RUN_DIR/manifest.json
# when not given; the runner's last render gives the manifest as it will be,
# and the run's id, MANIFEST's run_id, which is then not read from it).
# INPUTS: what the page reads from Python (the results' header, the columns'
# schema, the cells' series: ltsuite.reportseries --inputs), when the caller
# made it already (the runner, with the run's tables: results_render_final);
# otherwise made here, in one Python start.
report_render() {
  local run_dir="$1" manifest="${2:-$1/manifest.json}" inputs="${3:-}" run_id="${4:-}" charts=1 mine=0 status=0
  [[ -f "$manifest" ]] || return 0
  [[ -n "$run_id" ]] || run_id="$(jq -r .run_id "$manifest")"
  if [[ ! -s "$REPORT_UPLOT_DIR/uPlot.iife.min.js" ]]; then
    warn "report: no charting library in $REPORT_UPLOT_DIR (scripts/setup/install-report-tools.sh installs it); report.html has tables only"
    charts=0
  fi
  [[ -z "$inputs" || ! -s "$inputs" ]] || REPORT_INPUTS="$inputs"
  report_inputs_begin "$run_dir" "$charts" && mine=1
  {
    report_style "run $run_id" "$charts"
    report_body "$run_dir" "$manifest" "$charts"
    if ((charts)); then
      report_scripts "$run_dir"
    fi
    printf '</body>\n</html>\n'
  } | write_atomic "$run_dir/report.html" || status=$?
  ((mine == 0)) || report_inputs_end
  [[ "$REPORT_INPUTS" != "$inputs" ]] || REPORT_INPUTS=""
  return "$status"
}

# The file of the page's inputs while it renders (report_inputs).
REPORT_INPUTS=""

# report_inputs_begin RUN_DIR CHARTS: make the page's inputs (report_inputs)
# into a temporary file, REPORT_INPUTS, unless there is one already; succeeds
# when it made it (its caller then ends it: report_inputs_end), fails when
# the inputs were there (the caller's caller's).
report_inputs_begin() {
  [[ -z "$REPORT_INPUTS" ]] || return 1
  REPORT_INPUTS="$(mktemp)"
  report_inputs "$1" "$2" >"$REPORT_INPUTS" || true
}

# report_inputs_end: remove the inputs report_inputs_begin made.
report_inputs_end() {
  rm -f "$REPORT_INPUTS"
  REPORT_INPUTS=""
}

# report_inputs RUN_DIR CHARTS: what the page reads from Python as one JSON
# object, in one start (ltsuite.reportseries --inputs): {"head": results.csv's
# header, "columns": the columns' schema, "data": what the charts draw
# (report_data: every cell's row, chart knobs and samples.tsv's columns, and
# its series over time: k6's samples as requests per second by cause and the
# answered requests' latency at their start, scripts/lib/k6-series.py, which
# reads only the two metrics it needs, in whole lines: a file cut short by a
# killed k6 gives what it has; about 10 s for a cell of 539,291 requests; and
# each request split into connect, queued, service and rest, ltsuite.timeparts
# bars, drawn by scripts/report/time-parts.js), null when CHARTS is 0,
# "cells_html": the Cells section (report_cells)}. The shell then runs no loop
# over the cells or their files (ltsuite.reportcells).
report_inputs() {
  local -a series=()
  [[ "$2" == 1 ]] || series=(--no-series)
  PYTHONPATH="$REPORT_LIB_DIR/.." "$LT_PYTHON" -S -m ltsuite.reportseries --inputs "${series[@]}" "$1" \
    "$REPORT_LATENCY_POINTS" "$REPORT_TIME_PART_BARS"
}

# report_input KEY [FLAG]: one part of the page's inputs (REPORT_INPUTS:
# report_inputs_begin), compact JSON (FLAG -j: a string as it is, with no
# newline added); null when they could not be made.
report_input() {
  if [[ -s "$REPORT_INPUTS" ]]; then
    jq "${2:--c}" --arg key "$1" '.[$key]' "$REPORT_INPUTS" 2>/dev/null && return 0
  fi
  printf 'null\n'
}

# report_body RUN_DIR MANIFEST CHARTS: the page from its headline to its
# Cells section (report-page.jq's page_body), in one jq start: the headline,
# what changed and what happened, the run's facts, the charts' section, the
# repetitions and tiers where the run has them, the results and the cells.
report_body() {
  local run_dir="$1" across=/dev/null findings=/dev/null inputs=/dev/null
  [[ ! -s "$run_dir/across.txt" ]] || across="$run_dir/across.txt"
  [[ ! -s "$run_dir/findings.txt" ]] || findings="$run_dir/findings.txt"
  [[ ! -s "$REPORT_INPUTS" ]] || inputs="$REPORT_INPUTS"
  results_rows "$run_dir" | jq -js -L "$LT_ROOT/scripts/lib" --slurpfile manifest "$2" --argjson charts "$3" \
    --rawfile across "$across" --rawfile findings "$findings" --slurpfile inputs "$inputs" \
    'include "report-page"; page_body($manifest[0]; $inputs[0]; $across; $findings; $charts)'
}

# report_as_designed RUN_DIR: {cells_as_designed, first_design_reason} from
# the cells' rows (report-page.jq's as_designed), as one line of JSON.
report_as_designed() {
  results_rows "$1" | jq -cs -L "$LT_ROOT/scripts/lib" 'include "report-page"; as_designed'
}

# report_style TITLE CHARTS: the document up to its head's styles (uPlot's
# too when CHARTS is 1), TITLE escaped.
report_style() {
  printf '<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%s</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
  table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
  th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
  th { background: #f3f3f3; text-align: left; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  tr.failed td { background: #fde8e8; }
  .results { overflow-x: auto; }
  .warning { color: #a40; }
  code { font-size: 90%%; }
  .charts { display: flex; flex-wrap: wrap; gap: 0.5em 1.5em; }
  figure.chart { margin: 0.5em 0; }
  figure.chart figcaption { font-weight: 600; margin-bottom: 0.2em; }
</style>
' "$(report_escape "$1")"
  if [[ "$2" == 1 ]]; then
    printf '<style>\n'
    cat "$REPORT_UPLOT_DIR/uPlot.min.css"
    printf '\n</style>\n'
  fi
}

# report_facts MANIFEST: what ran, where, with which versions, and warnings
# (report-page.jq's facts).
report_facts() {
  jq -j -L "$LT_ROOT/scripts/lib" 'include "report-page"; facts' "$1"
}

# report_repeats RUN_DIR: with REPEAT > 1, each matrix cell's figures as the
# median (min..max) of its repetitions (report-page.jq's repeats); nothing
# otherwise.
report_repeats() {
  local run_dir="$1" mine=0 status=0
  report_inputs_begin "$run_dir" 0 && mine=1
  results_rows "$run_dir" | jq -js -L "$LT_ROOT/scripts/lib" --slurpfile manifest "$run_dir/manifest.json" \
    --argjson columns "$(report_input columns)" 'include "report-page"; repeats($manifest[0]; $columns)' || status=$?
  ((mine == 0)) || report_inputs_end
  return "$status"
}

# report_cells RUN_DIR: per cell, its charts, k6's report and every file
# (the page's inputs: cells_html, ltsuite.reportcells).
report_cells() {
  local mine=0 status=0
  report_inputs_begin "$1" 0 && mine=1
  report_input cells_html -j || status=$?
  ((mine == 0)) || report_inputs_end
  return "$status"
}

# report_scripts RUN_DIR: the charting library, the run's data and the code
# that draws the charts (chart-box.js, report.js, time-parts.js), inlined.
# "</" in the data is written "<\/" so no value can end its script element.
report_scripts() {
  printf '<script>\n'
  sed 's#</script#<\\/script#g' "$REPORT_UPLOT_DIR/uPlot.iife.min.js"
  printf '\n</script>\n<script type="application/json" id="report-data">\n'
  report_data "$1" | sed 's#</#<\\/#g'
  printf '\n</script>\n<script>\n'
  cat "$REPORT_SOURCE_DIR/chart-box.js" "$REPORT_SOURCE_DIR/report.js" "$REPORT_SOURCE_DIR/time-parts.js"
  printf '</script>\n'
}

# Requests drawn per cell at most in the picture of each request's parts; a
# larger cell draws every Nth (in order of start).
REPORT_TIME_PART_BARS="${REPORT_TIME_PART_BARS:-2000}"

# report_data RUN_DIR: what the charts draw, as one JSON object: the run's
# axes, the titles of the columns charted across cells (labels, from
# scripts/ltsuite/columns.py) and, per cell, its row, the knobs the charts
# use, the columns of samples.tsv and the series made from k6's samples (null
# without them): the page's inputs' data (ltsuite.reportcells chart_data).
report_data() {
  local mine=0 status=0
  report_inputs_begin "$1" 1 && mine=1
  report_input data || status=$?
  ((mine == 0)) || report_inputs_end
  return "$status"
}

# report_escape TEXT: TEXT with HTML's special characters escaped (the
# replacements quoted: in bash 5.2 an unquoted & in one is the matched text).
report_escape() {
  local s="$1"
  s="${s//&/'&amp;'}"
  s="${s//</'&lt;'}"
  s="${s//>/'&gt;'}"
  s="${s//\"/'&quot;'}"
  printf '%s' "$s"
}

# report_render_capacity DIR: DIR/report.html for a make capacity search
# (DIR/capacity.json, scripts/ltsuite/capacity.py): the answer in words
# first (the verified maximum and the first load above it that failed),
# throughput and p99 against the load with the knee marked
# (scripts/report/capacity.js), every cell with a link to its run's page,
# the model and the goal. Tables only without the charting library.
report_render_capacity() {
  local dir="$1" charts=1
  [[ -s "$dir/capacity.json" ]] || return 0
  if [[ ! -s "$REPORT_UPLOT_DIR/uPlot.iife.min.js" ]]; then
    warn "report: no charting library in $REPORT_UPLOT_DIR (scripts/setup/install-report-tools.sh installs it); report.html has tables only"
    charts=0
  fi
  {
    report_style "capacity $(basename "$dir")" "$charts"
    report_capacity_body "$dir/capacity.json" "$charts"
    if ((charts)); then
      printf '<script>\n'
      sed 's#</script#<\\/script#g' "$REPORT_UPLOT_DIR/uPlot.iife.min.js"
      printf '\n</script>\n<script type="application/json" id="capacity-data">\n'
      jq -c . "$dir/capacity.json" | sed 's#</#<\\/#g'
      printf '\n</script>\n<script>\n'
      cat "$REPORT_SOURCE_DIR/chart-box.js" "$REPORT_SOURCE_DIR/capacity.js"
      printf '</script>\n'
    fi
    printf '</body>\n</html>\n'
  } | write_atomic "$dir/report.html"
}

# report_capacity_body CAPACITY_JSON CHARTS: the page's text: the answer, the
# settings and the goal, the model, the place of the curve, the cells.
report_capacity_body() {
  jq -r --argjson charts "$2" '
    def num: if . == null then "" else tostring end;
    def goal: (if (.goal.failed_rate // 0) == 0 then "no failed request" else "at most a rate of \(.goal.failed_rate) failed" end)
      + (if .goal.p99_ms == null then "" else ", p99 within \(.goal.p99_ms) ms" end);
    "</head>\n<body>",
    "<h1>How much can it take: \(.verdict // (if .maximum == null then "No load verified" else "Verified maximum: \(.knob)=\(.maximum) \(.unit)" end) | @html)</h1>",
    "<p>\(.source // "" | @html)</p>",
    "<table id=\"capacity-answer\">",
    "<tr><th>verified maximum</th><td>\(if .maximum == null then "none" else "\(.knob)=\(.maximum) \(.unit)" end | @html)</td></tr>",
    "<tr><th>first failing load</th><td>\(if .first_failing == null then "none" else "\(.knob)=\(.first_failing)" end | @html)</td></tr>",
    "<tr><th>stopped</th><td>\(.stopped // "" | @html)</td></tr>",
    "<tr><th>settings</th><td>\(.setting as $s | "\(.scenario), \(.service_time.text // "DELAY_MS \($s.delay_ms)"), \($s.threads) threads\(if $s.virtual_threads then " (virtual threads)" else "" end), max-connections \($s.max_connections), accept-count \($s.accept_count): \(.workers) workers, capacity \(.server_capacity)" | @html)</td></tr>",
    "<tr><th>goal</th><td>\(goal | @html)</td></tr>",
    "<tr><th>model</th><td>\("\(.model.limit // "none") (\(.model.why))" | @html)</td></tr>",
    "</table>",
    "<h2>Throughput and p99 against the load</h2>",
    (if $charts == 1 then
      "<p>One point a cell the search judged; circled: it failed the goal; dashed green: the knee (the verified maximum); dotted grey: the goal'"'"'s p99.</p>\n<div class=\"charts\" id=\"capacity-curve\"></div>"
     else "<p class=\"warning\">No charts: the charting library is not installed (scripts/setup/install-report-tools.sh).</p>" end),
    "<p><a href=\"capacity.md\">capacity.md</a> · <a href=\"capacity.json\">capacity.json</a> · <a href=\"capacity.svg\">capacity.svg</a></p>",
    "<h2>Cells</h2>",
    (if (.cells | length) == 0 then "<p>No cell ran.</p>" else
      "<table id=\"capacity-cells\">",
      "<tr><th>#</th><th>\(.knob | @html)</th><th>the run</th><th>why</th><th>req/s</th><th>p99 ms</th><th>cell</th></tr>",
      (.cells | to_entries[] | .key as $i | .value
       | "<tr\(if .passed == false then " class=\"failed\"" else "" end)><td class=\"n\">\($i + 1)</td><td class=\"n\">\(.load)</td>"
         + "<td>\({"true": "held", "false": "failed"}[.passed | tostring] // "not judged")</td><td>\(.why | @html)</td>"
         + "<td class=\"n\">\(.tps | num)</td><td class=\"n\">\(.lat_p99_ms | num)</td>"
         + "<td>\(if (.run // "") == "" then "" else "<a href=\"runs/\(.run | @uri)/report.html#cell-\(.cell | @uri)\">\("\(.run)/\(.cell)" | @html)</a>" end)</td></tr>"),
      "</table>" end)
  ' "$1"
}
