# Summary: k6's CSV samples (--out csv) as InfluxDB line protocol.
#
# Input: the CSV k6 writes with K6_CSV_TIME_FORMAT=unix_nano. Output: one
# point per sample, as k6's own InfluxDB output would write it: the metric's
# name is the measurement, the sample's non-empty tags are tags, the value is
# the field "value", the time is in nanoseconds. run_id, cell and scenario
# (-v) are set on every point. Needs csv.awk (awk -f csv.awk -f k6-lines.awk).
#
# Left out as tags: error (free text; error_code says the same and stays
# low-cardinality), url (name carries the endpoint), and transport details.

BEGIN {
  split("error url proto subproto tls_version service metadata extra_tags", words, " ")
  for (i in words) not_a_tag[words[i]] = 1
  split("run_id cell scenario", words, " ")
  for (i in words) fixed[words[i]] = 1
  run_tags = ",run_id=" lp_escape(run_id) ",cell=" lp_escape(cell) ",scenario=" lp_escape(scenario)
}

# lp_escape(s): s as a line-protocol tag key or value (commas, equals, spaces).
function lp_escape(s) {
  if (s ~ /[ ,=\\]/) gsub(/[ ,=\\]/, "\\\\&", s)
  return s
}

# lp_measurement(s): s as a measurement name (commas and spaces).
function lp_measurement(s) {
  if (s ~ /[ ,\\]/) gsub(/[ ,\\]/, "\\\\&", s)
  return s
}

NR == 1 {
  columns = csv_split($0, head)
  for (i = 1; i <= columns; i++) {
    column[head[i]] = i
    is_tag[i] = !(head[i] in not_a_tag) && !(head[i] in fixed) \
      && head[i] != "metric_name" && head[i] != "timestamp" && head[i] != "metric_value"
  }
  if (!("metric_name" in column) || !("timestamp" in column) || !("metric_value" in column)) {
    print "k6-lines.awk: not a k6 CSV (no metric_name, timestamp, metric_value header)" > "/dev/stderr"
    exit 2
  }
  name_at = column["metric_name"]; time_at = column["timestamp"]; value_at = column["metric_value"]
  extra_at = ("extra_tags" in column) ? column["extra_tags"] : 0
  next
}

{
  n = csv_split($0, f)
  tags = run_tags
  for (i = 1; i <= n; i++) {
    if (is_tag[i] && f[i] != "") tags = tags "," head[i] "=" lp_escape(f[i])
  }
  # extra_tags: the script's own tags as k=v&k=v (run_id, cell, traffic...).
  if (extra_at && f[extra_at] != "") {
    pairs = split(f[extra_at], pair, "&")
    for (j = 1; j <= pairs; j++) {
      eq = index(pair[j], "=")
      if (eq < 2) continue
      key = substr(pair[j], 1, eq - 1)
      if (key in fixed) continue
      tags = tags "," lp_escape(key) "=" lp_escape(substr(pair[j], eq + 1))
    }
  }
  print lp_measurement(f[name_at]) tags " value=" f[value_at] " " f[time_at]
}
