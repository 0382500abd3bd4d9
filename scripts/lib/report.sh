# shellcheck shell=bash
# Summary: RUN_DIR/report.html, one self-contained page per run for readers without Grafana.
#
# The page holds the manifest's facts, the results table (results.csv) and,
# per cell, links to k6's own HTML report (k6-report.html, the web dashboard
# export) and to every file of the cell. Links are relative, so the run
# directory can be copied or served as it is. Needs results.sh (write_atomic).

REPORT_LIB_DIR="$(dirname "${BASH_SOURCE[0]}")"

# report_render RUN_DIR: write RUN_DIR/report.html from what the run has so far.
report_render() {
  local run_dir="$1"
  [[ -f "$run_dir/manifest.json" ]] || return 0
  {
    report_head "$run_dir/manifest.json"
    report_facts "$run_dir/manifest.json"
    report_results "$run_dir/results.csv"
    report_cells "$run_dir"
    printf '</body>\n</html>\n'
  } | write_atomic "$run_dir/report.html"
}

# report_head MANIFEST: the document's head (title, style) and its heading.
report_head() {
  jq -r '"<!DOCTYPE html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<title>run \(.run_id | @html)</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
  table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
  th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
  th { background: #f3f3f3; text-align: left; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  tr.failed td { background: #fde8e8; }
  .results { overflow-x: auto; }
  .warning { color: #a40; }
  code { font-size: 90%; }
</style>
</head>
<body>
<h1>Run <code>\(.run_id | @html)</code>: \(.status | @html)</h1>"' "$1"
}

# report_facts MANIFEST: what ran, where, with which versions, and warnings.
report_facts() {
  jq -r '
    def row($name; $value): "<tr><th>\($name | @html)</th><td>\($value | @html)</td></tr>";
    def list: if length == 0 then "-" else join(", ") end;
    "<h2>Run</h2>", "<table>",
    row("matrix"; "\(.matrix) (sha256 \((.matrix_sha256 // "")[0:12]))"),
    row("axes"; .axes | list),
    row("overrides"; .overrides // [] | list),
    row("cells"; "\(.cells_done) of \(.cells_total) done, \(.cells_failed) failed"),
    row("started"; .started_at // "-"),
    row("ended"; .ended_at // "-"),
    row("backend"; .backend // "-"),
    row("git commit"; .git_commit // "-"),
    (.versions // {} | to_entries[] | row(.key; .value)),
    (if .monitoring then row("InfluxDB";
        if .monitoring.active then "\(.monitoring.influxdb_url), database \(.monitoring.database), \(.monitoring.points_written) points (k6 samples: \(.monitoring.k6_samples))"
        else "not used (MONITORING=\(.monitoring.mode))" end) else empty end),
    "</table>",
    (if (.warnings // []) | length > 0 then
      "<h2>Warnings</h2>", "<ul>", (.warnings[] | "<li class=\"warning\">\(@html)</li>"), "</ul>"
     else empty end)
  ' "$1"
}

# report_results RESULTS_CSV: results.csv as an HTML table; each cell name
# links to its section below.
report_results() {
  printf '<h2>Results</h2>\n'
  if [[ ! -s "$1" ]]; then
    printf '<p>No cell finished.</p>\n'
    return
  fi
  printf '<p><a href="results.csv">results.csv</a> · <a href="results.md">results.md</a> · <a href="manifest.json">manifest.json</a></p>\n'
  awk -f "$REPORT_LIB_DIR/csv.awk" -f /dev/stdin "$1" <<'AWK'
function html(s) {
  gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/"/, "\\&quot;", s)
  return s
}
NR == 1 {
  columns = csv_split($0, head)
  for (i = 1; i <= columns; i++) if (head[i] == "status") status_at = i; else if (head[i] == "cell") cell_at = i
  printf "<div class=\"results\"><table>\n<tr>"
  for (i = 1; i <= columns; i++) printf "<th>%s</th>", html(head[i])
  printf "</tr>\n"
  next
}
{
  n = csv_split($0, f)
  printf "<tr%s>", (status_at && f[status_at] != "ok") ? " class=\"failed\"" : ""
  for (i = 1; i <= n; i++) {
    if (i == cell_at) printf "<td><a href=\"#cell-%s\">%s</a></td>", html(f[i]), html(f[i])
    else if (f[i] ~ /^-?[0-9]+(\.[0-9]+)?$/) printf "<td class=\"n\">%s</td>", f[i]
    else printf "<td>%s</td>", html(f[i])
  }
  printf "</tr>\n"
}
END { if (NR > 0) printf "</table></div>\n" }
AWK
}

# report_cells RUN_DIR: per cell, k6's report and every file, with its size.
report_cells() {
  local run_dir="$1" cell_dir cell file name
  printf '<h2>Cells</h2>\n'
  for cell_dir in "$run_dir"/cells/*/; do
    [[ -d "$cell_dir" ]] || continue
    cell="$(basename "$cell_dir")"
    printf '<h3 id="cell-%s"><code>%s</code></h3>\n' "$(report_escape "$cell")" "$(report_escape "$cell")"
    if [[ -s "$cell_dir/k6-report.html" ]]; then
      printf '<p><a href="cells/%s/k6-report.html">k6 report</a> (k6 web dashboard export: request rate, latency and VUs over time)</p>\n' \
        "$(report_escape "$cell")"
    else
      printf '<p>No k6 report for this cell (K6_HTML_REPORT=0, or k6 did not finish).</p>\n'
    fi
    printf '<ul>\n'
    for file in "$cell_dir"*; do
      [[ -f "$file" ]] || continue
      name="$(basename "$file")"
      printf '<li><a href="cells/%s/%s">%s</a> (%s)</li>\n' "$(report_escape "$cell")" \
        "$(report_escape "$name")" "$(report_escape "$name")" "$(report_size "$file")"
    done
    printf '</ul>\n'
  done
}

# report_escape TEXT: TEXT with HTML's special characters escaped.
report_escape() {
  local s="$1"
  s="${s//&/&amp;}"
  s="${s//</&lt;}"
  s="${s//>/&gt;}"
  s="${s//\"/&quot;}"
  printf '%s' "$s"
}

# report_size FILE: the size of FILE for people (812 B, 14 KB, 3.2 MB).
report_size() {
  local bytes
  bytes="$(stat -c %s "$1")"
  awk -v b="$bytes" 'BEGIN {
    if (b < 1024) printf "%d B", b
    else if (b < 1048576) printf "%.0f KB", b / 1024
    else printf "%.1f MB", b / 1048576
  }'
}
