# Rows of a run grouped by the matrix cell they repeat (REPEAT=N runs every
# cell N times): every numeric figure as its median with min and max over
# the repetitions. A run with REPEAT=1 has groups of one row, and a row from
# before repetitions stands for its own cell.
# Used with -L scripts/lib: include "repeats";

# median: of an array of numbers (null for none).
def median:
  sort
  | if length == 0 then null
    elif length % 2 == 1 then .[length / 2 | floor]
    else (.[length / 2 - 1] + .[length / 2]) / 2 end;

# figure($row; $k): a row's number for $k, from the row or its scenario's extra columns.
def figure($row; $k): ($row[$k] // ($row.extra // {})[$k]) | if type == "number" then . else null end;

# spread: {median, min, max, n} of an array of numbers (all null for none).
def spread:
  if length == 0 then {median: null, min: null, max: null, n: 0}
  else {median: median, min: min, max: max, n: length} end;

# repeat_groups: an array of rows -> [{cell, scenario, status, axes, n, ok,
# as_designed, rows: [cell dirs], members: [its rows], figures: {name: spread}}],
# in cell order.
# The figures are those of the rows that ran (status ok): a failed repetition's
# figures (a target that never started) are left out, as are empty ones.
def repeat_groups:
  group_by(.repeat_of // .cell)
  | map(. as $rows
    | {cell: ($rows[0].repeat_of // $rows[0].cell), scenario: $rows[0].scenario, axes: ($rows[0].axes // {}),
       n: length,
       ok: ([$rows[] | select(.status == "ok")] | length),
       as_designed: ([$rows[] | select(.as_designed == 1)] | length),
       status: ([$rows[].status] | unique | join("/")),
       rows: [$rows[].cell],
       members: $rows,
       figures: ([$rows[] | select(.status == "ok")] as $ok
                 | [$ok[] | ., (.extra // {}) | to_entries[] | select(.value | type == "number") | .key]
                 | unique - ["repeat"]
                 | map(. as $k | {($k): [$ok[] | figure(.; $k) | select(. != null)] | spread})
                 | add // {})});

# with_range: "median (min..max)" of a spread, or its one value.
def with_range:
  if . == null or .median == null then ""
  elif .n == 1 or .min == .max then (.median | tostring)
  else "\(.median) (\(.min)..\(.max))" end;

# group_value($rows; $f): a group's figure $f as text: the median (min..max)
# of a number, else its repetitions' distinct values joined by "/" (such as
# prediction_check's "match/differs"). The group's own rows when it has
# them (members; a scan of every row per group and figure would take hours
# for a run of 20,000 rows).
def group_value($rows; $f):
  . as $g
  | if $g.figures[$f] != null then ($g.figures[$f] | with_range)
    else [($g.members // [$rows[] | select((.repeat_of // .cell) == $g.cell)])[] | (.[$f] // (.extra // {})[$f])]
         | unique | map(if . == null then "" else tostring end) | join("/") end;
