# results.md: the rows as a readable Markdown table (a subset of the columns
# that fits a screen; results.csv has them all). A run with REPEAT > 1 gets
# first a table of the matrix cells, each figure as the median (min..max) of
# its repetitions, then every repetition's row. Run with -L scripts/lib.
include "repeats";
def cell: if . == null then "" else tostring end;
def md: cell | gsub("\\|"; "\\|") | gsub("\n"; " ");
(table_figures + $extra) as $figures
| (["cell", "status", "as_designed"] + $axes + $figures + ["error", "design_notes", "prediction_notes"]) as $head
| . as $rows
| (if any($rows[]; (.repeat // 1) > 1) then
    ($rows | repeat_groups) as $groups
    | (["cell", "repetitions", "ok", "as_designed"] + $axes + $figures) as $rhead
    | "Each matrix cell's figures: the median (min..max) of its repetitions.",
      "",
      ("| " + ($rhead | join(" | ")) + " |"),
      ("|" + ($rhead | map("---") | join("|")) + "|"),
      ($groups[] | . as $g
       | "| " + ([$g.cell, $g.n, $g.ok, $g.as_designed] + [$axes[] | $g.axes[.]]
           + [$figures[] | . as $f | $g | group_value($rows; $f)]
           | map(md) | join(" | ")) + " |"),
      "",
      "Every repetition, in the order of the cells:",
      ""
  else empty end),
  ("| " + ($head | join(" | ")) + " |"),
  ("|" + ($head | map("---") | join("|")) + "|"),
  ($rows[] | . as $r
   | "| " + ([$head[] | ($r[.] // ($r.extra // {})[.] // $r.axes[.]) | md] | join(" | ")) + " |")
