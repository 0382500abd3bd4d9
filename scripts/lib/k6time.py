"""k6's sample times (RFC 3339, as its --out json writes them) as
nanoseconds since the epoch, for the readers of k6's samples (k6-lines.py,
k6-series.py)."""
import re
from datetime import datetime, timezone

_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[-+]\d\d:\d\d)?\Z")


class Clock:
    """RFC 3339 times as nanoseconds since the epoch; the whole seconds are
    remembered, since they change only once a second."""

    def __init__(self):
        self._last = (None, 0)

    def ns(self, text):
        whole, rest = text[:19], text[19:]
        if rest[:1] == "." and rest[-1:] == "Z" and rest[1:-1].isdigit():
            fraction, offset = rest[1:-1], "Z"
        else:
            match = _TIME.match(text)
            if not match:
                raise ValueError("not an RFC 3339 time: %r" % text)
            whole, fraction, offset = match.groups()
        key = (whole, offset)
        if self._last[0] != key:
            if not _TIME.match(whole):
                raise ValueError("not an RFC 3339 time: %r" % text)
            seconds = int(datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S")
                          .replace(tzinfo=timezone.utc).timestamp())
            if offset and offset != "Z":
                shift = int(offset[1:3]) * 3600 + int(offset[4:6]) * 60
                seconds += -shift if offset[0] == "+" else shift
            self._last = (key, seconds)
        return "%d%s" % (self._last[1], ((fraction or "") + "000000000")[:9])
