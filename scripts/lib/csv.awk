# Summary: csv_split, an RFC 4180 field splitter for awk programs (mawk, gawk).
#
# Quoted fields ("a,b", "say ""hi""") keep their commas and lose the quoting.
# Lines without a quote take the fast path of split().

# csv_split(line, fields): fill fields[1..n] from one CSV line; returns n.
function csv_split(line, fields,    n, i, len, c, value, quoted) {
  if (index(line, "\"") == 0) return split(line, fields, ",")
  n = 0; value = ""; quoted = 0; len = length(line)
  for (i = 1; i <= len; i++) {
    c = substr(line, i, 1)
    if (quoted) {
      if (c == "\"") {
        if (substr(line, i + 1, 1) == "\"") { value = value "\""; i++ }
        else quoted = 0
      } else value = value c
    } else if (c == "\"") quoted = 1
    else if (c == ",") { fields[++n] = value; value = "" }
    else value = value c
  }
  fields[++n] = value
  return n
}
