# compare.jq's model as Markdown. Args: --arg a RUN_A --arg b RUN_B.
def num: if . == null then "-" else tostring end;
def change: if .change_pct == null then (if .a == .b then "" else "new" end)
  else (if .change_pct > 0 then "+" else "" end) + (.change_pct | tostring) + " %" end;

"# Runs compared: `\($a)` (A) and `\($b)` (B)",
"",
"A change beyond \(.threshold_pct) % (or from zero) is marked **!**.",
"",
"| cell | A | B | figures changed beyond \(.threshold_pct) % |",
"|---|---|---|---|",
(.cells[] | "| \(.cell) | \(.status_a) | \(.status_b) | \(if (.changed | length) == 0 then "none" else .changed | join(", ") end) |"),
"",
"Cells only in A: \(if (.only_a | length) == 0 then "none" else .only_a | map("`\(.)`") | join(", ") end)",
"",
"Cells only in B: \(if (.only_b | length) == 0 then "none" else .only_b | map("`\(.)`") | join(", ") end)",
(.cells[] |
  "",
  "## \(.cell)",
  "",
  "| figure | A | B | change | |",
  "|---|---|---|---|---|",
  (.figures[] | "| \(.figure) | \(.a | num) | \(.b | num) | \(change) | \(if .marked then "**!**" else "" end) |"))
