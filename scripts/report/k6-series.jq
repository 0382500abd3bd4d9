# k6's per-request samples (the JSON lines of --out json, already narrowed
# to http_req_duration and http_req_blocked Points) as
# the report's per-cell series:
#   per_second: requests per second of completion (every second from the
#               first request's to the last's), split by cause (the
#               rule of scenarios/lib/failures.js: answered is status
#               200-399, then dial errors, reset, request timeout, HTTP
#               4xx/5xx, other);
#   latency:    every $stride-th answered request: its start (epoch s) and
#               its http_req_duration (ms), so a large cell stays small.
# The samples of one request share their time stamp and are written
# together; they are grouped by it, in any order. Two requests can share a
# time stamp to the nanosecond (15 in 539,292 of one cell): a metric seen
# twice at one time starts the next request. Setup traffic is left out.
# Args: --argjson stride N.

# "2026-11-23T11:42:42.827048508Z" or "...+01:00" -> epoch seconds.
def epoch:
  capture("^(?<s>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(\\.(?<f>[0-9]+))?(?<z>Z|[+-][0-9]{2}:[0-9]{2})$")
  | (.s + "Z" | fromdateiso8601) + ("0." + (.f // "0") | tonumber)
    - (if .z == "Z" then 0
       else (.z[0:1] + "1" | tonumber) * ((.z[1:3] | tonumber) * 3600 + (.z[4:6] | tonumber) * 60) end);

def cause:
  ((.tags.status // "0") | tonumber? // 0) as $status
  | ((.tags.error_code // "0") | tonumber? // 0) as $code
  | if $status >= 200 and $status < 400 then "answered"
    elif $code >= 1210 and $code <= 1219 then "connect"
    elif $code == 1220 then "reset"
    elif $code == 1050 then "timeout"
    elif $status >= 400 and $status < 600 then "http_error"
    else "other" end;

def requests:
  foreach ((inputs | select(.type == "Point" and (.data.tags.traffic // "load") != "setup")), null) as $p (
    {time: null, request: null, done: null};
    if $p == null then {done: .request}
    elif $p.data.time == .time and (.request | has($p.metric) | not) then .request[$p.metric] = $p.data.value | .done = null
    else {done: .request, time: $p.data.time,
          request: {time: $p.data.time, tags: $p.data.tags, ($p.metric): $p.data.value}}
    end;
    .done // empty);

def causes: ["answered", "connect", "reset", "timeout", "http_error", "other"];

reduce requests as $r ({seconds: {}, answered: 0, start: [], ms: []};
  ($r | cause) as $cause
  # The time without its fraction names the second; parsed once per second below.
  | ($r.time | sub("\\.[0-9]+"; "")) as $second
  | .seconds[$second][$cause] += 1
  | if $cause == "answered" and ($r.http_req_duration != null) then
      .answered += 1
      | if (.answered - 1) % $stride == 0 then
          # k6's blocked is from asking for a connection to having it, so it
          # holds the connect time (and any SYN retries) already.
          .start += [($r.time | epoch) - ($r.http_req_duration + ($r.http_req_blocked // 0)) / 1000
                     | . * 1000 | round / 1000]
          | .ms += [$r.http_req_duration * 10 | round / 10]
        else . end
    else . end)
# Times with different offsets can name the same second: merged after parsing.
| (.seconds | to_entries | map({t: (.key | epoch), counts: .value}) | group_by(.t)
   | map({t: .[0].t, counts: (reduce .[].counts as $c ({}; reduce ($c | to_entries[]) as $e (.; .[$e.key] += $e.value)))})
  ) as $seconds
# Every second from the first to the last, so a second without a request is a 0.
| (if ($seconds | length) == 0 then [] else [range($seconds[0].t; $seconds[-1].t + 1)] end) as $all
| ($seconds | map({(.t | tostring): .counts}) | add // {}) as $by_second
| {
    per_second: ({t: $all} + (reduce causes[] as $c ({}; .[$c] = [$all[] | $by_second[tostring][$c] // 0]))),
    latency: {start: .start, ms: .ms, stride: $stride, answered: .answered}
  }
