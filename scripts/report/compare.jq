# Two runs' rows compared cell by cell. Input (-n): $a and $b, the rows
# (row.json) of runs A and B; $columns, the columns of results.csv (the
# figures, in table order, before the scenarios' own); $threshold, the
# percentage beyond which a change is marked.
# Output: {cells: [{cell, figures: [{figure, a, b, change_pct, marked}]}],
#          only_a: [cell...], only_b: [cell...]}.
# change_pct is (b - a) / |a| x 100; from 0 to another value it is null
# and the change is marked.

def by_cell: map({(.cell): .}) | add // {};
def value($row; $k): ($row[$k] // ($row.extra // {})[$k]) | if type == "number" then . else null end;

($columns + ([$a[], $b[] | .extra // {} | keys_unsorted[]] | unique)) as $figures
| ($a | by_cell) as $ra
| ($b | by_cell) as $rb
| {
    threshold_pct: $threshold,
    only_a: [$a[].cell | select($rb[.] == null)],
    only_b: [$b[].cell | select($ra[.] == null)],
    cells: [$a[].cell | select($rb[.] != null) | . as $cell
      | {cell: $cell, status_a: $ra[$cell].status, status_b: $rb[$cell].status,
         figures: [$figures[] | . as $f
           | value($ra[$cell]; $f) as $x | value($rb[$cell]; $f) as $y
           | select($x != null or $y != null)
           | (if $x == null or $y == null then null
              elif $x == 0 then (if $y == 0 then 0 else null end)
              else (($y - $x) / ($x | fabs) * 1000 | round / 10) end) as $change
           | {figure: $f, a: $x, b: $y, change_pct: $change,
              marked: ($x != $y and ($change == null or ($change | fabs) > $threshold))}]}
      | .changed = [.figures[] | select(.marked) | .figure]]
  }
