"""Why a request failed, from its HTTP status and k6's error code: the rules of causes.tsv (one
table for the whole suite). k6's side (scenarios/lib/causes.js, which counts failures inside k6)
reads the same rules from scenarios/lib/causes-table.js, made from the table by `javascript`
(python3 -m ltsuite.causes js)."""
from __future__ import annotations

import json
import sys
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


#: The cause no k6 result has (causes.tsv's last line): a request its iteration's graceful stop or
#: ramp-down cut while it waited, counted by the suite (ltsuite.row, fail_interrupted).
INTERRUPTED = "interrupted"


def cause(status: int, error_code: int, error: str = "") -> str:
    """The cause of a request k6 gave a result for: "answered" for a 2xx/3xx answer, else no_fd,
    connect, reset, timeout, http_4xx, http_5xx or other (causes.tsv; never INTERRUPTED, which
    follows "other"). error: k6's error message (without it a cause told apart by its message
    alone, no_fd, counts as the next line that matches)."""
    for rule in rules():
        if rule.matches(status, error_code, error):
            return rule.cause
    return "other"


def failure_causes() -> list[str]:
    """The causes of a failed request, in table order (the fail_<cause> columns; INTERRUPTED's is
    counted by the suite, the others by k6's results)."""
    return [r.cause for r in rules() if r.cause != "answered"]


#: The table as a JavaScript module for k6's side (scenarios/lib/causes.js imports it, and k6's
#: archive of a cell's script carries it as it carries every import): made by `javascript` and
#: committed; tests/python/test_causes.py checks that it is the table's.
JS_MODULE = Path(__file__).resolve().parents[2] / "scenarios" / "lib" / "causes-table.js"


def javascript(path: Path = TABLE) -> str:
    """causes-table.js: the rules of `path` as a JavaScript array, in order; a range is [low, high],
    any value null."""
    def js_range(r: tuple[int, int] | None) -> str:
        return "null" if r is None else f"[{r[0]}, {r[1]}]"

    lines = ["// Made from scripts/ltsuite/causes.tsv by `PYTHONPATH=scripts python3 -m ltsuite.causes js",
             "// >scenarios/lib/causes-table.js`: edit the table, not this file. One rule a line, in",
             "// the table's order: the first that matches a request gives its cause; null matches",
             "// any value, error any message that contains it.", "export const RULES = ["]
    for rule in rules(path):
        lines.append(f"  {{ cause: {json.dumps(rule.cause)}, status: {js_range(rule.status)}, "
                     f"errorCode: {js_range(rule.error_code)}, error: {json.dumps(rule.error)} }},")
    lines.append("];")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """js [TABLE]: print causes-table.js made from TABLE (default causes.tsv)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "js" or len(args) > 2:
        print("usage: python3 -m ltsuite.causes js [TABLE]", file=sys.stderr)
        return 2
    sys.stdout.write(javascript(Path(args[1]) if len(args) == 2 else TABLE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
