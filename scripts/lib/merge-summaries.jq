# One k6 summary (handleSummary's data) from those of several instances that
# each ran an execution segment of the same scenario (jq -s: an array of
# summaries). Counts add up exactly; min and max are exact; the mean is
# weighted by the counts. Percentiles of parts do not combine: they are
# dropped, and .merge_notes says so, so no table shows a made-up p95.
# $expected: how many processes ran; fewer summaries are said in the notes
# (the cell fails for it: k6_failure).
def sum_of($key): map(.[$key] // 0) | add;
def merge_values($type):
  if $type == "counter" then {count: sum_of("count"), rate: sum_of("rate")}
  elif $type == "rate" then
    {passes: sum_of("passes"), fails: sum_of("fails")}
    | .rate = (if .passes + .fails == 0 then 0 else .passes / (.passes + .fails) end)
  elif $type == "gauge" then
    {min: (map(.min) | min), max: (map(.max) | max), value: (map(.value) | max)}
  elif $type == "trend" then
    sum_of("count") as $n
    | {min: (map(.min) | min), max: (map(.max) | max), count: $n,
       avg: (if $n == 0 then 0 else (map((.avg // 0) * (.count // 0)) | add) / $n end)}
  else .[0] end;
. as $parts
| ($parts | map(.metrics | keys[]) | unique) as $names
| {
    state: ($parts[0].state + {testRunDurationMs: ($parts | map(.state.testRunDurationMs // 0) | max)}),
    merge_notes: ("merged from \($parts | length) k6 instances (execution segments): counts, min, max and mean are exact; percentiles are left out"
      + (if ($parts | length) < $expected
         then "; only \($parts | length) of the \($expected) processes wrote a summary: the requests of the others are missing"
         else "" end)),
    metrics: (reduce $names[] as $name ({};
      ($parts | map(.metrics[$name] | select(. != null))) as $these
      | .[$name] = {type: $these[0].type, contains: $these[0].contains,
                    values: ($these | map(.values) | merge_values($these[0].type))}))
  }
# Every instance runs its own VUs: the peaks add up.
| if .metrics.vus_max == null then .
  else .metrics.vus_max.values.max = ($parts | map(.metrics.vus_max.values.max // 0) | add) end
