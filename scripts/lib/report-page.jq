# report.html's text between its head's styles and its scripts, made in one
# jq start: every section a stream of strings, each line ending with its
# newline (run with -j). The shell around it (scripts/lib/report.sh) writes
# the styles, the scripts and the data.
# Used with -L scripts/lib: include "report-page";
include "repeats";

# as_designed: an array of rows -> {cells_as_designed, first_design_reason}:
# how many cells ran as designed, and "CELL: why" for the first that did not
# (its design notes; else a failed cell's error; else a cell that could not
# be judged), null when none. The page's headline, the manifest
# (update_cell_counts) and the terminal say both.
def as_designed:
  {cells_as_designed: ([.[] | select(.as_designed == 1)] | length),
   first_design_reason: (
     [.[] | select(.as_designed == 0) | "\(.cell): \(.design_notes)"]
     + [.[] | select(.status == "failed" and .as_designed != 0) | "\(.cell): failed: \(.error)"]
     + [.[] | select(.status == "ok" and .as_designed == null)
         | "\(.cell): not judged (neither when k6 started its users nor its CPU was measured)"]
     | first)};

# cell_counts($rows): a manifest -> the same with the counts of its cells
# from their rows: cells_done (ok or failed), cells_failed, and as_designed's
# two. Written after each cell (update_cell_counts) and at the run's end
# (manifest_finished).
def cell_counts($rows):
  ([$rows[] | select(.status == "ok")] | length) as $ok
  | ([$rows[] | select(.status == "failed")] | length) as $failed
  | .cells_done = ($ok + $failed) | .cells_failed = $failed | . + ($rows | as_designed);

# text_lines: a text file's content -> its lines, as jq -R reads them.
def text_lines:
  if . == "" then []
  else split("\n") as $parts | if endswith("\n") then $parts[:-1] else $parts end end;

# cell_html: a row's value as a table cell (numbers to the right, null empty).
def cell_html:
  if . == null then "<td></td>"
  elif type == "number" then "<td class=\"n\">\(.)</td>"
  else "<td>\(tostring | @html)</td>" end;

# head($designed): the manifest -> the headline: the run's status, how many
# cells ran as designed and the first reason one did not ($designed:
# as_designed).
def head($designed):
  "</head>\n<body>\n<h1>Run <code>\(.run_id | @html)</code>: \(.status | @html), \($designed.cells_as_designed) of \(.cells_total) cell(s) ran as designed</h1>\n",
  (if $designed.first_design_reason == null then empty
   else "<p id=\"first-reason\" class=\"warning\">First reason: \($designed.first_design_reason | @html)</p>\n" end);

# findings($across; $findings): what changed across the cells with each axis
# (across.txt, ltsuite.across), then what each cell found, in words
# (findings.txt, ltsuite.words), first on the page as on the terminal;
# nothing for an empty text.
def findings($across; $findings):
  (if $across == "" then empty
   else "<h2>What changed across cells</h2>\n<ul id=\"across\">\n",
     ($across | text_lines[] | "<li>\(@html)</li>\n"), "</ul>\n" end),
  (if $findings == "" then empty
   else "<h2>What happened</h2>\n<ul id=\"findings\">\n",
     ($findings | text_lines[] | "<li>\(@html)</li>\n"), "</ul>\n" end);

# facts: the manifest -> what ran, where, with which versions, and warnings.
def facts:
  def row($name; $value): "<tr><th>\($name | @html)</th><td>\($value | @html)</td></tr>\n";
  def list: if length == 0 then "-" else join(", ") end;
  # A URL with a user and password (a manifest from before they were kept out) shows neither.
  def no_credentials: gsub("(?<s>[A-Za-z][A-Za-z0-9+.-]*://)[^/@ ]*@"; "\(.s)");
  "<h2>Run</h2>\n", "<table>\n",
  row("matrix"; "\(.matrix) (sha256 \((.matrix_sha256 // "")[0:12]))"),
  row("axes"; .axes | list),
  row("overrides"; .overrides // [] | map(no_credentials) | list),
  row("cells"; "\(.cells_done) of \(.cells_total) done, \(.cells_failed) failed"),
  row("started"; .started_at // "-"),
  row("ended"; .ended_at // "-"),
  row("backend"; .backend // "-"),
  row("git commit"; .git_commit // "-"),
  (.versions // {} | to_entries[] | row(.key; .value)),
  (if .monitoring then row("InfluxDB";
      if .monitoring.active then "\(.monitoring.influxdb_url | no_credentials), database \(.monitoring.database), \(.monitoring.points_written) points (k6 samples: \(.monitoring.k6_samples))"
      else "not used (MONITORING=\(.monitoring.mode))" end) else empty end),
  "</table>\n",
  (if (.warnings // []) | length > 0 then
    "<h2>Warnings</h2>\n", "<ul>\n", (.warnings[] | "<li class=\"warning\">\(@html)</li>\n"), "</ul>\n"
   else empty end);

# across($charts): the section the figures across cells are drawn in.
def across($charts):
  if $charts == 1 then
    "<h2>Across cells</h2>\n",
    "<p>One bar per cell (labelled by its axis values); dots mark a limit (queue_capacity) and, where the rows carry one, the prediction.</p>\n",
    "<div class=\"charts\" id=\"across-cells\"></div>\n"
  else empty end;

# repeats($manifest; $columns): the rows -> with REPEAT > 1, each matrix
# cell's figures (those of results.md: md_figures of
# scripts/ltsuite/columns.py) as the median (min..max) of its repetitions
# (repeats.jq); nothing otherwise.
def repeats($manifest; $columns):
  . as $rows
  | if any(.[]; (.repeat // 1) > 1) | not then empty
    else ($manifest.axes // []) as $axes | $columns.md_figures as $figures
      | "<h2>Repetitions</h2>\n<p>Each matrix cell run \($manifest.repeat.n // "several") times in a shuffled order; every figure is the median (min..max) of its repetitions.</p>\n",
        "<div class=\"results\"><table id=\"repeats\">\n",
        "<tr>" + ([("cell", "repetitions", "ok", "as_designed"), $axes[], $figures[]] | map("<th>\(@html)</th>") | join("")) + "</tr>\n",
        (repeat_groups[] | . as $g
         | "<tr\(if $g.ok < $g.n then " class=\"failed\"" else "" end)><td>\($g.cell | @html)</td>"
           + ([$g.n, $g.ok, $g.as_designed] | map("<td class=\"n\">\(.)</td>") | join(""))
           + ([$axes[] | "<td>\($g.axes[.] // "" | @html)</td>"] | join(""))
           + ([$figures[] | . as $f | "<td class=\"n\">\($g | group_value($rows; $f) | @html)</td>"] | join(""))
           + "</tr>\n"),
        "</table></div>\n" end;

# tiers: the rows -> with nginx in front in some cell (proxy_reqs in a row),
# each cell's three views side by side: the users' (k6), the proxy's
# (nginx's logs) and the server's (its kernel's counters, Tomcat's access
# log), so a failure that moved one tier up (a full accept queue as nginx's
# 504s, not as the users' connect failures) reads across a line. Nothing
# without a proxy.
def tiers:
  def groups: [["users (k6)", ["http_reqs", "failed_reqs", "fail_connect", "fail_timeout", "fail_http_5xx", "lat_p99_ms"]],
    ["proxy (nginx)", ["proxy_reqs", "proxy_504", "proxy_502", "proxy_upstream_connect_timeouts",
      "proxy_upstream_connect_p99_ms", "proxy_request_p99_ms"]],
    ["server (kernel, Tomcat)", ["listen_overflows", "server_conns_peak", "queue_capacity", "app_lat_p99_ms"]]];
  if any(.[]; .proxy_reqs != null) | not then empty
  else "<h2>Tiers</h2>\n<p>Each cell as the users, nginx and the server saw it (the columns of results.csv).</p>\n",
    "<div class=\"results\"><table id=\"tiers\">\n",
    "<tr><th></th>" + ([groups[] | "<th colspan=\"\(.[1] | length)\">\(.[0] | @html)</th>"] | join("")) + "</tr>\n",
    "<tr><th>cell</th>" + ([groups[][1][] | "<th>\(@html)</th>"] | join("")) + "</tr>\n",
    (.[] | . as $r | "<tr><td>\($r.cell | @html)</td>" + ([groups[][1][] | $r[.] | cell_html] | join("")) + "</tr>\n"),
    "</table></div>\n" end;

# results($head): the rows -> the rows as an HTML table with the columns of
# results.csv ($head); each cell name links to its section below.
def results($head):
  "<h2>Results</h2>\n",
  if length == 0 then "<p>No cell finished.</p>\n"
  else "<p><a href=\"results.csv\">results.csv</a> · <a href=\"results.md\">results.md</a> · <a href=\"manifest.json\">manifest.json</a></p>\n",
    "<div class=\"results\"><table>\n",
    "<tr>" + ([$head[] | "<th>\(@html)</th>"] | join("")) + "</tr>\n",
    (.[] | . as $r
      | "<tr\(if $r.status != "ok" then " class=\"failed\"" else "" end)>"
        + ([$head[] | . as $k
            | (if $r | has($k) then $r[$k] elif ($r.extra // {}) | has($k) then $r.extra[$k] else ($r.axes // {})[$k] end) as $v
            | if $k == "cell" then "<td><a href=\"#cell-\($v | @html)\">\($v | @html)</a></td>" else $v | cell_html end]
           | join(""))
        + "</tr>\n"),
    "</table></div>\n" end;

# page_body($manifest; $inputs; $across; $findings; $charts): the rows ->
# the page from its headline to its Cells section ($inputs: the page's
# inputs, ltsuite.reportseries --inputs, null when they could not be made;
# $across and $findings: across.txt and findings.txt, "" when empty).
def page_body($manifest; $inputs; $across; $findings; $charts):
  . as $rows
  | ($manifest | head($rows | as_designed)),
    findings($across; $findings),
    ($manifest | facts),
    across($charts),
    ($rows | repeats($manifest; $inputs.columns)),
    ($rows | tiers),
    ($rows | results($inputs.head)),
    (if $inputs == null then "null\n" else $inputs.cells_html | if type == "string" then . else tojson end end);
