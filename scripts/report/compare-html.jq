# compare.jq's model as one HTML page. Args: --arg a RUN_A --arg b RUN_B.
include "compare-text";
def cells($list): if ($list | length) == 0 then "none" else $list | map("<code>\(@html)</code>") | join(", ") end;

"<!DOCTYPE html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<title>\($a | @html) vs \($b | @html)</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
  table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
  th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
  th { background: #f3f3f3; text-align: left; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  tr.marked td { background: #fff1c2; font-weight: 600; }
  tr.noise td { color: #888; }
</style>
</head>
<body>
<h1>Runs compared: <code>\($a | @html)</code> (A) and <code>\($b | @html)</code> (B)</h1>
<p>A change beyond \(.threshold_pct) % (or from zero) is marked. A figure is that of the cell's rows that ran (ok): failed rows and empty figures are left out. Where both runs repeated a cell (REPEAT), a figure is the median (min..max) of its repetitions, and a change whose ranges overlap is within the noise (in grey), not marked.</p>
<table>
<tr><th>cell</th><th>A</th><th>B</th><th>repetitions</th><th>figures changed beyond \(.threshold_pct) %</th></tr>",
(.cells[] | "<tr\(if (.changed | length) > 0 then " class=\"marked\"" else "" end)><td><a href=\"#\(.cell | @html)\">\(.cell | @html)</a></td><td>\(.status_a | @html)</td><td>\(.status_b | @html)</td><td class=\"n\">\(.n_a // 1) / \(.n_b // 1)</td><td>\(if (.changed | length) == 0 then "none" else .changed | map(@html) | join(", ") end)</td></tr>"),
"</table>",
"<p>Cells only in A: \(cells(.only_a))</p>",
"<p>Cells only in B: \(cells(.only_b))</p>",
(.cells[] |
  "<h2 id=\"\(.cell | @html)\"><code>\(.cell | @html)</code></h2>",
  "<table>",
  "<tr><th>figure</th><th>A</th><th>B</th><th>change</th></tr>",
  (.figures[] | "<tr\(if .marked then " class=\"marked\"" elif .noise then " class=\"noise\"" else "" end)><td>\(.figure | @html)</td><td class=\"n\">\(range(.a; .a_min; .a_max) | @html)</td><td class=\"n\">\(range(.b; .b_min; .b_max) | @html)</td><td class=\"n\">\(change)</td></tr>"),
  "</table>"),
"</body>
</html>"
