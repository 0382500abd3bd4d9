#!/usr/bin/env python3
"""k6's JSON samples (--out json) as InfluxDB line protocol.

Usage: k6-lines.py RUN_ID CELL SCENARIO <samples.json >points.lp

Input: the file k6 writes with --out json=FILE, one JSON object per line.
Output: one point per sample ("type": "Point"), as k6's own InfluxDB output
would write it: the metric's name is the measurement, the sample's non-empty
tags are tags (sorted by key), the value is the field "value", and the time
is in nanoseconds. run_id, cell and scenario come from the arguments and are
set on every point.

Not kept as tags: error (free text; error_code says the same with few
values), url (name carries the endpoint), and transport details.
A line that is not a whole sample (k6 killed mid-write) is skipped.

Two requests can end with the same time stamp to the nanosecond and the same
tags (seen: 15 in 539,292 requests of one cell); InfluxDB would keep one
point of the two (a point is its series and its time). The later one is
written a nanosecond later, so every sample stays a point.
"""
import json
import re
import sys

from k6time import Clock

NOT_A_TAG = frozenset(("error", "url", "proto", "subproto", "tls_version", "service"))
FIXED = ("run_id", "cell", "scenario")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TAG_SPECIAL = re.compile(r"([ ,=\\])")
_NAME_SPECIAL = re.compile(r"([ ,\\])")


def escape(text, special=_TAG_SPECIAL):
    """text as a line-protocol tag key or value (or, with _NAME_SPECIAL, a
    measurement): control characters become spaces, specials get a backslash."""
    return special.sub(r"\\\1", _CONTROL.sub(" ", text))


class Unique:
    """Times made unique within each series: a point whose series already has
    a point at that nanosecond moves to the next free one. Samples come
    roughly in time order, so only the last WINDOW seconds are remembered."""

    WINDOW = 300

    def __init__(self):
        self._seen = {}  # second -> set of (series, ns)
        self._newest = 0

    def ns(self, series, ns_text):
        ns = int(ns_text)
        second = ns // 1000000000
        taken = self._seen.get(second)
        if taken is None:
            taken = self._seen[second] = set()
            if second > self._newest:
                self._newest = second
                for old in [s for s in self._seen if s < second - self.WINDOW]:
                    del self._seen[old]
        if (series, ns) not in taken:
            taken.add((series, ns))
            return ns_text
        while (series, ns) in taken:
            ns += 1
        taken.add((series, ns))
        return str(ns)


def number(value):
    """A JSON number as line protocol writes a float field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("not a number")
    return repr(value) if isinstance(value, float) else str(value)


def point(sample, run_tags, clock, unique):
    """One sample as a line, or None if it is not a whole point."""
    if not isinstance(sample, dict) or sample.get("type") != "Point":
        return None
    name, data = sample.get("metric"), sample.get("data")
    if not isinstance(name, str) or not name or not isinstance(data, dict):
        return None
    time, tags = data.get("time"), data.get("tags") or {}
    if not isinstance(time, str) or not isinstance(tags, dict):
        return None
    try:
        value = number(data.get("value"))
        ns = clock.ns(time)
    except ValueError:
        return None
    measurement = _NAMES.get(name)
    if measurement is None:
        measurement = _NAMES[name] = escape(name, _NAME_SPECIAL)
    series = "%s%s%s" % (measurement, run_tags, tag_text(tags))
    return "%s value=%s %s\n" % (series, value, unique.ns(series, ns))


_NAMES = {}


_TAG_TEXTS = {}


def tag_text(tags):
    """",key=value..." of a sample's own tags, sorted by key. A cell has few
    distinct tag sets: each is formatted once."""
    try:
        key = tuple(tags.items())
        text = _TAG_TEXTS.get(key)
    except TypeError:  # a value that is a list or an object
        key, text = None, None
    if text is None:
        text = "".join(",%s=%s" % (escape(name), escape(str(value)))
                       for name, value in sorted(tags.items())
                       if name not in NOT_A_TAG and name not in FIXED and value not in ("", None))
        if key is not None and len(_TAG_TEXTS) < 10000:
            _TAG_TEXTS[key] = text
    return text


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: k6-lines.py RUN_ID CELL SCENARIO <samples.json\n")
        return 2
    run_tags = "".join(",%s=%s" % (key, escape(value or "none"))
                       for key, value in zip(FIXED, argv[1:]))
    clock = Clock()
    unique = Unique()
    # k6 writes UTF-8 whatever the locale says.
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    sys.stdout.reconfigure(encoding="utf-8")
    out = sys.stdout
    for line in sys.stdin:
        try:
            sample = json.loads(line)
        except ValueError:
            continue
        text = point(sample, run_tags, clock, unique)
        if text:
            out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
