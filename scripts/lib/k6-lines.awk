# Summary: k6's JSON samples (--out json) as InfluxDB line protocol.
#
# Input: the file k6 writes with --out json=FILE, one object per line. Output:
# one point per sample ("type":"Point"), as k6's own InfluxDB output would
# write it. The metric's name is the measurement, the sample's non-empty tags
# are tags, the value is the field "value", and the time is in nanoseconds.
# run_id, cell and scenario come from the environment (LP_RUN_ID, LP_CELL,
# LP_SCENARIO) and are set on every point.
#
# Not kept as tags: error (free text; error_code says the same with few
# values), url (name carries the endpoint), and transport details.
# The lines are Go's encoding/json output, always in the same shape:
#   {"metric":"NAME","type":"Point","data":{"time":"RFC3339","value":N,"tags":{...}}}
# so they are read by position, not by a general JSON parser: awk does this
# about 7 times faster than jq (160,000 lines a second here).

BEGIN {
  split("error url proto subproto tls_version service", words, " ")
  for (i in words) not_a_tag[words[i]] = 1
  split("run_id cell scenario", words, " ")
  for (i in words) fixed[words[i]] = 1
  run_tags = ",run_id=" lp_escape(ENVIRON["LP_RUN_ID"]) ",cell=" lp_escape(ENVIRON["LP_CELL"]) \
    ",scenario=" lp_escape(ENVIRON["LP_SCENARIO"])
  point_prefix = "{\"metric\":\""
  time_key = "\"data\":{\"time\":\""
  value_key = "\"value\":"
  tags_key = "\"tags\":{"
}

# lp_escape(s): s as a line-protocol tag key or value: commas, equals signs
# and spaces escaped; control characters (not allowed) become spaces.
function lp_escape(s) {
  if (s ~ /[[:cntrl:]]/) gsub(/[[:cntrl:]]/, " ", s)
  if (s ~ /[ ,=\\]/) gsub(/[ ,=\\]/, "\\\\&", s)
  return s
}

# json_string(s, i): the JSON string whose opening quote is s[i], decoded;
# json_next is set to the index just after its closing quote.
function json_string(s, i,    out, rest, quote, slash, c) {
  out = ""
  i++
  while (1) {
    rest = substr(s, i)
    quote = index(rest, "\"")
    slash = index(rest, "\\")
    if (quote == 0) { json_next = length(s) + 1; return out rest }
    if (slash == 0 || slash > quote) { json_next = i + quote; return out substr(rest, 1, quote - 1) }
    out = out substr(rest, 1, slash - 1)
    c = substr(rest, slash + 1, 1)
    if (c == "u") { out = out json_unicode(substr(rest, slash + 2, 4)); i += slash + 5 }
    else {
      out = out (c == "n" ? "\n" : c == "t" ? "\t" : c == "r" ? "\r" : c == "b" ? "\b" : c == "f" ? "\f" : c)
      i += slash + 1
    }
  }
}

# json_unicode(hex): the character of a \uXXXX escape. Go escapes only
# ASCII this way (<, >, &, control characters) besides U+2028/2029.
function json_unicode(hex,    n, j) {
  n = 0
  for (j = 1; j <= 4; j++) n = n * 16 + index("0123456789abcdef", tolower(substr(hex, j, 1))) - 1
  return (n > 0 && n < 128) ? sprintf("%c", n) : " "
}

# epoch_seconds(date_time): "YYYY-MM-DDTHH:MM:SS" (UTC) as seconds since the
# epoch, by the days-from-civil algorithm; remembered, since it changes only
# once a second.
function epoch_seconds(date_time,    y, m, d, era, yoe, doy, doe) {
  if (date_time == last_date_time) return last_epoch
  y = substr(date_time, 1, 4) + 0; m = substr(date_time, 6, 2) + 0; d = substr(date_time, 9, 2) + 0
  y -= (m <= 2)
  era = int(y / 400)
  yoe = y - era * 400
  doy = int((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1
  doe = yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy
  last_date_time = date_time
  last_epoch = (era * 146097 + doe - 719468) * 86400 \
    + substr(date_time, 12, 2) * 3600 + substr(date_time, 15, 2) * 60 + substr(date_time, 18, 2)
  return last_epoch
}

# time_ns(t): an RFC 3339 time (fraction and offset optional) in nanoseconds.
function time_ns(t,    rest, fraction, seconds, offset) {
  rest = substr(t, 20)
  fraction = ""
  if (match(rest, /^\.[0-9]+/)) {
    fraction = substr(rest, 2, RLENGTH - 1)
    rest = substr(rest, RLENGTH + 1)
  }
  seconds = epoch_seconds(substr(t, 1, 19))
  if (rest ~ /^[-+][0-9][0-9]:[0-9][0-9]$/) {
    offset = substr(rest, 2, 2) * 3600 + substr(rest, 5, 2) * 60
    seconds += (substr(rest, 1, 1) == "+") ? -offset : offset
  }
  return sprintf("%.0f", seconds) substr(fraction "000000000", 1, 9)
}

index($0, point_prefix) != 1 || index($0, "\"type\":\"Point\"") == 0 { next }

{
  name = substr($0, length(point_prefix) + 1)
  name = substr(name, 1, index(name, "\"") - 1)
  at = index($0, time_key)
  if (name == "" || at == 0) next
  t = substr($0, at + length(time_key), 40)
  t = substr(t, 1, index(t, "\"") - 1)
  at = index($0, value_key)
  if (at == 0 || !match(substr($0, at + length(value_key)), /^-?[0-9][0-9.eE+-]*/)) next
  value = substr($0, at + length(value_key), RLENGTH)
  if (t !~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]/) next

  tags = run_tags
  at = index($0, tags_key)
  if (at > 0) {
    object = substr($0, at + length(tags_key))
    if (index(object, "\\") == 0) {
      # Without escapes no string holds a quote: splitting at quotes gives
      # key, ":", value, "," ... and the text after the object.
      parts = split(object, part, "\"")
      closed = (substr(object, 1, 1) == "}")
      for (j = 2; j + 3 <= parts && part[j + 1] == ":"; j += 4) {
        add_tag(part[j], part[j + 2])
        if (part[j + 3] != ",") { closed = (substr(part[j + 3], 1, 1) == "}"); break }
      }
    } else {
      i = 1
      while (substr(object, i, 1) == "\"") {
        key = json_string(object, i)
        i = json_next + 1
        if (substr(object, i, 1) != "\"") break
        add_tag(key, json_string(object, i))
        i = json_next
        if (substr(object, i, 1) == ",") i++
      }
      closed = (substr(object, i, 1) == "}")
    }
    # A line cut short (k6 killed mid-write) has no end to its tags.
    if (!closed) next
  }
  print name tags " value=" value " " time_ns(t)
}

# add_tag(key, value): append one of the sample's own tags to tags.
function add_tag(key, value) {
  if (value != "" && !(key in not_a_tag) && !(key in fixed)) tags = tags "," lp_escape(key) "=" lp_escape(value)
}
