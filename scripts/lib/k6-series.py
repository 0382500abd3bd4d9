#!/usr/bin/env python3
"""k6's per-request samples as the report's per-cell series.

Usage: k6-series.py STRIDE <k6-samples.json >series.json

Input: the JSON lines k6 writes with --out json (gzip already undone). Only
whole http_req_duration and http_req_blocked Points are read; a line cut
short by a killed k6 is skipped. Setup traffic (traffic=setup) is left out.

Output, one JSON object:
  per_second: requests per second of completion, every second from the
              first request's to the last's, split by cause (the suite's one
              table, scripts/ltsuite/causes.tsv: answered is status 200-399,
              then dial errors 1210-1219, reset 1220, request timeout 1050,
              HTTP 4xx/5xx (together: http_error), other);
  latency:    every STRIDE-th answered request: its start (epoch s, to the
              ms) and its http_req_duration (ms, to 0.1), so a large cell
              stays small; with the count of answered requests.

The samples of one request share their time stamp and are written together.
Two requests can share a time stamp to the nanosecond (15 in 539,292 of one
cell): a metric seen twice at one time starts the next request.
"""
import json
import os
import sys
from functools import lru_cache

from k6time import Clock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ltsuite.causes import cause as request_cause  # noqa: E402 (after its path)

CAUSES = ("answered", "connect", "reset", "timeout", "http_error", "other")
PREFIXES = ('{"metric":"http_req_duration"', '{"metric":"http_req_blocked"')


def number(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0


def cause(tags):
    return cause_of(tags.get("status", "0"), tags.get("error_code", "0"))


@lru_cache(maxsize=4096)
def cause_of(status, code):
    """The chart's cause of a status and error code: causes.tsv's, its two HTTP causes as one."""
    why = request_cause(number(status), number(code))
    return "http_error" if why in ("http_4xx", "http_5xx") else why


def half_up(value, scale):
    """value rounded to 1/scale, halves away from zero (as jq's round)."""
    scaled = value * scale
    rounded = int(scaled + 0.5) if scaled >= 0 else -int(-scaled + 0.5)
    result = rounded / scale
    return int(result) if result == int(result) else result


def requests(lines):
    """Each request's samples: (time, tags, {metric: value})."""
    current_time, tags, values = None, None, None
    for line in lines:
        if not line.startswith(PREFIXES) or not line.rstrip().endswith("}}}"):
            continue
        try:
            sample = json.loads(line)
            data = sample["data"]
            time, metric, value = data["time"], sample["metric"], data["value"]
            sample_tags = data.get("tags") or {}
        except (ValueError, KeyError, TypeError):
            continue
        if sample.get("type") != "Point" or sample_tags.get("traffic", "load") == "setup":
            continue
        if time == current_time and metric not in values:
            values[metric] = value
            continue
        if current_time is not None:
            yield current_time, tags, values
        current_time, tags, values = time, sample_tags, {metric: value}
    if current_time is not None:
        yield current_time, tags, values


def series(lines, stride):
    clock = Clock()
    seconds = {}
    answered = 0
    start, ms = [], []
    for time, tags, values in requests(lines):
        try:
            ns = int(clock.ns(time))
        except ValueError:
            continue
        why = cause(tags)
        second, fraction = divmod(ns, 1000000000)
        fraction /= 1e9
        counts = seconds.setdefault(second, {})
        counts[why] = counts.get(why, 0) + 1
        duration = values.get("http_req_duration")
        if why == "answered" and duration is not None:
            answered += 1
            if (answered - 1) % stride == 0:
                # k6's blocked is from asking for a connection to having it,
                # so it holds the connect time (and any SYN retries) already.
                begun = second + fraction - (duration + (values.get("http_req_blocked") or 0)) / 1000
                start.append(half_up(begun, 1000))
                ms.append(half_up(duration, 10))
    every = list(range(min(seconds), max(seconds) + 1)) if seconds else []
    per_second = {"t": every}
    for name in CAUSES:
        per_second[name] = [seconds.get(t, {}).get(name, 0) for t in every]
    return {"per_second": per_second,
            "latency": {"start": start, "ms": ms, "stride": stride, "answered": answered}}


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit() or int(argv[1]) < 1:
        sys.stderr.write("usage: k6-series.py STRIDE <k6-samples.json\n")
        return 2
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    json.dump(series(sys.stdin, int(argv[1])), sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
