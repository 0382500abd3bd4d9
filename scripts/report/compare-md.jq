# compare.jq's model as Markdown. Args: --arg a RUN_A --arg b RUN_B.
include "compare-text";

"# Runs compared: `\($a)` (A) and `\($b)` (B)",
"",
"A change beyond \(.threshold_pct) % (or from zero) is marked **!**. A figure is that of the cell's rows that ran (ok): failed rows and empty figures are left out. Where both runs repeated a cell (REPEAT), a figure is the median (min..max) of its repetitions, and a change whose ranges overlap is within the noise (~), not marked.",
"",
"| cell | A | B | repetitions | figures changed beyond \(.threshold_pct) % |",
"|---|---|---|---|---|",
(.cells[] | "| \(.cell) | \(.status_a) | \(.status_b) | \(.n_a // 1) / \(.n_b // 1) | \(if (.changed | length) == 0 then "none" else .changed | join(", ") end) |"),
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
  (.figures[] | "| \(.figure) | \(range(.a; .a_min; .a_max)) | \(range(.b; .b_min; .b_max)) | \(change) | \(if .marked then "**!**" elif .noise then "~" else "" end) |"))
