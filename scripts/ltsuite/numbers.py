"""How the row writes and compares numbers: rounding half away from zero (C's round(), as the
tables have always shown it), integral values as integers, and an order in which "unmeasured"
(None) sorts below every number, so a missing figure never passes a check by accident."""
from __future__ import annotations

import math
from typing import Any

Number = int | float


def rounded(value: Number | None, scale: int) -> Number | None:
    """value rounded to 1/scale, halves away from zero (C's round()); None stays None."""
    if value is None:
        return None
    scaled = value * scale
    whole = math.floor(abs(scaled) + 0.5)
    return tidy(math.copysign(whole, scaled) / scale)


def num(value: Number | None) -> Number | None:
    """A figure as the row keeps it: to the thousandth."""
    return rounded(value, 1000)


def r1(value: Number) -> Number:
    """To a tenth (design notes, predicted_tps)."""
    return rounded(value, 10)


def r2(value: Number) -> Number:
    """To a hundredth (design notes)."""
    return rounded(value, 100)


def tidy(value: Any) -> Any:
    """An integral float as an int (3.0 -> 3), so a row writes 3 where a count is meant; other
    values unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e17:
        return int(value)
    return value


def text(value: Any) -> str:
    """A value as the notes write it: 3 for 3.0, 1.25 for 1.25, "null" for None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    value = tidy(value)
    if isinstance(value, float):
        out = repr(value)
        if "e" in out:
            mantissa, exponent = out.split("e")
            sign = "-" if exponent.startswith("-") else "+"
            out = "%se%s%02d" % (mantissa, sign, int(exponent.lstrip("+-")))
        return out
    return str(value)


def to_number(value: Any) -> Number | None:
    """A knob or a figure as a number: None for None, "" or text that is not a number."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:
        return tidy(float(value))
    except (TypeError, ValueError):
        return None


def below(a: Number | None, b: Number | None) -> bool:
    """a < b with None below every number."""
    if a is None:
        return b is not None
    if b is None:
        return False
    return a < b


def at_most(a: Number | None, b: Number | None) -> bool:
    """a <= b with None below every number."""
    return not below(b, a)


def at_least(a: Number | None, b: Number | None) -> bool:
    """a >= b with None below every number."""
    return not below(a, b)


def above(a: Number | None, b: Number | None) -> bool:
    """a > b with None below every number."""
    return below(b, a)


def smallest(values: list[Number | None]) -> Number | None:
    """The least value, None counting below every number (and None for no value)."""
    if not values:
        return None
    if any(v is None for v in values):
        return None
    return min(values)


def or_default(value: Any, default: Any) -> Any:
    """value unless it is None or False, else default."""
    return default if value is None or value is False else value
