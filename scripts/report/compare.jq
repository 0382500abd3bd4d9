# Two runs' rows compared cell by cell. Input (-n): $a and $b, the rows
# (row.json) of runs A and B; $columns, the figures to compare (in
# results.csv's order, then the scenarios' own by name: the "compare" list of
# scripts/ltsuite/columns.py --json); $threshold, the percentage beyond which
# a change is marked. Run with -L scripts/lib.
# Output: {cells: [{cell, n_a, n_b, figures: [{figure, a, b, a_min, a_max,
#          b_min, b_max, change_pct, marked, noise}]}], only_a, only_b}.
# A cell's figure is the median over its repetitions that ran (status ok:
# failed rows and empty figures are left out) (REPEAT=N; one row
# otherwise). change_pct is (b - a) / |a| x 100; from 0 to another value it
# is null and the change counts as beyond the threshold. A change beyond
# the threshold is marked, unless both runs repeated the cell and the two
# ranges (min..max) overlap: then it is within the noise (noise: true).
include "repeats";

def by_cell: map({(.cell): .}) | add // {};

$columns as $figures
| ($a | repeat_groups) as $ga
| ($b | repeat_groups) as $gb
| ($ga | by_cell) as $ra
| ($gb | by_cell) as $rb
| {
    threshold_pct: $threshold,
    only_a: [$ga[].cell | select($rb[.] == null)],
    only_b: [$gb[].cell | select($ra[.] == null)],
    cells: [$ga[].cell | select($rb[.] != null) | . as $cell
      | {cell: $cell, status_a: $ra[$cell].status, status_b: $rb[$cell].status,
         n_a: $ra[$cell].n, n_b: $rb[$cell].n,
         figures: [$figures[] | select(. != "repeat") | . as $f
           | ($ra[$cell].figures[$f] // null) as $sa | ($rb[$cell].figures[$f] // null) as $sb
           | ($sa.median // null) as $x | ($sb.median // null) as $y
           | select($x != null or $y != null)
           | (if $x == null or $y == null then null
              elif $x == 0 then (if $y == 0 then 0 else null end)
              else (($y - $x) / ($x | fabs) * 1000 | round / 10) end) as $change
           | ($x != $y and ($change == null or ($change | fabs) > $threshold)) as $beyond
           | ($beyond and ($sa.n // 0) > 1 and ($sb.n // 0) > 1
              and ($sa.max >= $sb.min and $sb.max >= $sa.min)) as $noise
           | {figure: $f, a: $x, b: $y, a_min: $sa.min, a_max: $sa.max, b_min: $sb.min, b_max: $sb.max,
              change_pct: $change, marked: ($beyond and ($noise | not)), noise: $noise}]}
      | .changed = [.figures[] | select(.marked) | .figure]]
  }
