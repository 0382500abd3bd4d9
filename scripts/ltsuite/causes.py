"""Why a request failed, from its HTTP status and k6's error code: the rules of causes.tsv (one
table for the whole suite; scenarios/lib/causes.js, which counts failures inside k6, is tested
against it)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("causes.tsv")


@dataclass(frozen=True)
class Rule:
    """One line of causes.tsv: a cause, the status and error-code ranges it matches (None: any
    value) and a text k6's error message must contain ("": any message)."""

    cause: str
    status: tuple[int, int] | None
    error_code: tuple[int, int] | None
    error: str = ""

    def matches(self, status: int, error_code: int, error: str = "") -> bool:
        return (all(r is None or r[0] <= v <= r[1] for r, v in ((self.status, status), (self.error_code, error_code)))
                and self.error in error)


def _range(text: str, where: str) -> tuple[int, int] | None:
    if text == "":
        return None
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise ValueError(f"{where}: '{text}' is not a number or a range a-b") from None


@lru_cache(maxsize=None)
def rules(path: Path = TABLE) -> tuple[Rule, ...]:
    """The rules of causes.tsv, in order (comment lines and the header left out)."""
    out = []
    lines = path.read_text(encoding="utf-8").split("\n")
    header_seen = False
    for number, line in enumerate(lines, 1):
        if line.startswith("#") or line == "":
            continue
        fields = line.split("\t")
        if not header_seen:
            header_seen = True
            continue
        if len(fields) != 4:
            raise ValueError(f"{path}:{number}: expected 4 tab-separated fields, got {len(fields)}")
        out.append(Rule(fields[0], _range(fields[1], f"{path}:{number}: status"),
                        _range(fields[2], f"{path}:{number}: error_code"), fields[3]))
    return tuple(out)


def cause(status: int, error_code: int, error: str = "") -> str:
    """The cause of a request: "answered" for a 2xx/3xx answer, else no_fd, connect, reset,
    timeout, http_4xx, http_5xx or other (causes.tsv). error: k6's error message (without it a
    cause told apart by its message alone, no_fd, counts as the next line that matches)."""
    for rule in rules():
        if rule.matches(status, error_code, error):
            return rule.cause
    return "other"


def failure_causes() -> list[str]:
    """The causes of a failed request, in table order (the fail_<cause> counters)."""
    return [r.cause for r in rules() if r.cause != "answered"]
