"""Tunable parameters, their ranges and their one check: what every family's table (read by the CLI, the server's
schema and the sweeps) is made of. A `per_request` parameter is also its component's run-time socket.

An integer parameter takes an integer or a number with no fraction; a number takes an int or float; booleans,
strings and NaN/±Infinity are refused, never coerced.

    >>> p = Parameter("theta", "selector", "theta", float, low=0.0, high=1.0, low_open=True)
    >>> p.describe(), p.check(1)
    ('a number in (0, 1]', 1.0)
    >>> check_parameters({"theta": 0.5, "beta": 1}, {"theta": p})
    Traceback (most recent call last):
    ...
    haystack_cfrag.common.parameters.ParameterError: Unknown field(s) 'beta' (known: theta).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.common.validation import check_int, check_range


@dataclass(frozen=True)
class Range:
    """An integer or number range; `high` None: no upper bound; `low_open`: the low end is excluded."""

    kind: type
    low: float
    high: float | None = None
    low_open: bool = False

    def fields(self) -> dict[str, Any]:
        """As the keyword arguments of a `Parameter`."""
        return {"kind": self.kind, "low": self.low, "high": self.high, "low_open": self.low_open}



def check_in_range(ranges: Mapping[str, Range], name: str, value: Any) -> None:
    """Raise a ValueError naming `name` and its range unless `value` is in `ranges[name]` (what components call)."""
    r = ranges[name]
    if r.kind is int:
        check_int(name, value, int(r.low), None if r.high is None else int(r.high))
    else:
        check_range(name, value, r.low, r.high if r.high is not None else float("inf"), low_open=r.low_open)


class ParameterError(ValueError):
    """A parameter value outside its type or range, or an unknown parameter name."""


@dataclass(frozen=True)
class Parameter:
    """One tunable parameter: the component and init parameter it sets, its type and range."""

    name: str
    component: str
    target: str  # the component's init parameter; also its run-time socket when per_request
    kind: type  # int, float, str (one of `choices`) or bool
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    per_request: bool = False
    help: str = ""
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        """The allowed values in words, e.g. "an integer in [0, 10]"."""
        if self.kind is str:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind is bool:
            return "true or false"
        what = "an integer" if self.kind is int else "a number"
        if self.low is not None and self.high is not None:
            return f"{what} in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}]"
        if self.low is not None:
            return f"{what} {'>' if self.low_open else '≥'} {_num(self.low)}"
        return what

    def check(self, value: Any) -> int | float | str | bool:
        """`value` as this parameter's type; ParameterError naming the parameter otherwise."""
        if self.kind is str:
            if not isinstance(value, str) or value not in self.choices:
                raise ParameterError(f"'{self.name}' must be {self.describe()}, got {_shown(value)}.")
            return value
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ParameterError(f"'{self.name}' must be {self.describe()}, got {_shown(value)}.")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"'{self.name}' must be {self.describe()}, got {_shown(value)}.")
        if isinstance(value, float) and not math.isfinite(value):  # an int is finite, however long
            raise ParameterError(f"'{self.name}' must be a finite number, got {value!r}.")
        if self.kind is int and isinstance(value, float) and not value.is_integer():
            raise ParameterError(f"'{self.name}' must be {self.describe()}, got {value!r}.")
        # int against float compares exactly in Python (no conversion, no overflow), so a huge int is out of range
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and value > self.high
        if too_low or too_high:
            raise ParameterError(f"'{self.name}' must be {self.describe()}, got {_number(value)}.")
        return int(value) if self.kind is int else float(value)

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of a value (null meaning: the pipeline file's own value)."""
        if self.kind is str:
            return {"anyOf": [{"enum": list(self.choices)}, {"type": "null"}], "default": None}
        if self.kind is bool:
            return {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None}
        schema: dict[str, Any] = {"type": "integer" if self.kind is int else "number"}
        if self.low is not None:
            schema["exclusiveMinimum" if self.low_open else "minimum"] = self.low
        if self.high is not None:
            schema["maximum"] = self.high
        return {"anyOf": [schema, {"type": "null"}], "default": None}


def check_parameters(values: Mapping[str, Any], table: Mapping[str, Parameter],
                     allowed: Iterable[str] | None = None) -> dict[str, Any]:
    """The parameters set (None = not set), checked against `table` (ParameterError names unknown or bad ones);
    `allowed`: the names that may be set here (default: all)."""
    allowed = tuple(table if allowed is None else allowed)
    unknown = [name for name in values if name not in allowed]
    if unknown:
        shown = ", ".join(repr(clip(str(n))) for n in unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise ParameterError(f"Unknown field(s) {shown} (known: {', '.join(allowed)}).")
    return {name: table[name].check(value) for name, value in values.items() if value is not None}


INTEGER = re.compile(r"[+-]?[0-9]+")
"""An integer as a command line writes it: ASCII digits, an optional sign (`int` also reads '٣' and '1_0')."""
NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|nan|inf|infinity)",
                    re.ASCII | re.IGNORECASE)
"""A number as a command line writes it: ASCII decimal, an optional exponent; nan and inf (checks refuse)."""


def parse_value(text: str) -> Any:
    """A command-line value: true/false, an integer, a number (ASCII only), else the text.

    >>> parse_value("0.6"), parse_value("2"), parse_value("False"), parse_value("pmi"), parse_value("1_0")
    (0.6, 2, False, 'pmi', '1_0')
    """
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # beyond Python's 4,300-digit limit: read as a (non-finite) number
            pass
    return float(text) if NUMBER.fullmatch(text) else text


def parse_integer(text: str) -> int:
    """An integer in ASCII digits (an optional sign, spaces around); ValueError naming the text otherwise."""
    if not INTEGER.fullmatch(text.strip()):
        raise ValueError(f"'{clip(text)}' is not an integer (ASCII digits, an optional sign)")
    return int(text)


def clip(text: str, limit: int = 40) -> str:
    """User text fit for one line: control and format characters as spaces, cut to `limit` characters + "…".

    >>> clip("theta"), clip("x" * 50, 8)
    ('theta', 'xxxxxxxx…')
    """
    shown = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in text[:limit])
    return shown + ("…" if len(text) > limit else "")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _number(value: float) -> str:
    """A refused number as written, shortened when it is long (an integer of thousands of digits)."""
    if isinstance(value, int) and value.bit_length() > 14_000:  # beyond Python's 4,300-digit str() limit
        return "an integer of more than 4,000 digits"
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}…{text[-6:]} ({len(text.lstrip('-'))} digits)"


def _shown(value: Any) -> str:
    """A short, safe account of a refused value: its type, and its text when that is short."""
    if isinstance(value, str):
        return f"a string ({value[:20]!r})" if len(value) <= 20 else "a string"
    return type(value).__name__ if not isinstance(value, bool) else repr(value)


__all__ = ["INTEGER", "NUMBER", "Parameter", "ParameterError", "Range", "check_in_range", "check_parameters",
           "clip", "parse_integer", "parse_value"]
