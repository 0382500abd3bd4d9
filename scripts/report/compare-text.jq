# How compare-md.jq and compare-html.jq write a figure of compare.jq's model
# (include "compare-text"; with -L scripts/report).
def num: if . == null then "-" else tostring end;
# range($v; $lo; $hi): a median with its min..max when the run repeated the cell.
def range($v; $lo; $hi): ($v | num) + (if $lo != null and $lo != $hi then " (\($lo)..\($hi))" else "" end);
def change: if .change_pct == null then (if .a == .b then "" else "new" end)
  else (if .change_pct > 0 then "+" else "" end) + (.change_pct | tostring) + " %" end;
