"""Checks of init parameters that raise a ValueError naming the parameter and what it must be.

>>> check_range("causal_weight", 0.4, 0.0, 1.0)
>>> check_range("causal_weight", 1.5, 0.0, 1.0)
Traceback (most recent call last):
...
ValueError: 'causal_weight' must be in [0.0, 1.0], got 1.5.
>>> check_int("top_k", 0, 1)
Traceback (most recent call last):
...
ValueError: 'top_k' must be an integer ≥ 1, got 0.
"""

from __future__ import annotations

import math
from collections.abc import Collection


def check_range(
    name: str, value: float, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> None:
    """Raise ValueError naming `name` and its allowed range unless low ≤ value ≤ high (open ends as given)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"'{name}' must be in {lo}{low}, {high}{hi}, got {value!r}.")


def check_int(name: str, value: int, minimum: int, maximum: int | None = None) -> None:
    """Raise ValueError unless `value` is an int ≥ minimum (and ≤ maximum when given)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum or (
        maximum is not None and value > maximum
    ):
        bound = f"an integer ≥ {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
        raise ValueError(f"'{name}' must be {bound}, got {value!r}.")


def check_bool(name: str, value: bool, *, component: str | None = None) -> None:
    """Raise ValueError naming `name` (after `component`, when given) unless `value` is True or False.

    >>> check_bool("flat_meta", "yes")
    Traceback (most recent call last):
    ...
    ValueError: 'flat_meta' must be true or false, got 'yes'.
    """
    if not isinstance(value, bool):
        prefix = f"{component}: " if component else ""
        raise ValueError(f"{prefix}'{name}' must be true or false, got {value!r}.")


def check_optional_int(name: str, value: int | None, minimum: int, maximum: int | None = None) -> None:
    """Raise ValueError unless `value` is None or passes `check_int`.

    >>> check_optional_int("max_query_chars", None, 1)
    >>> check_optional_int("max_query_chars", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: 'max_query_chars' must be an integer ≥ 1, got 0.
    """
    if value is not None:
        check_int(name, value, minimum, maximum)


def check_choice(name: str, value: str, choices: Collection[str]) -> None:
    """Raise ValueError naming `name` and its choices unless `value` is one of them.

    >>> check_choice("rewrite_mode", "reanswer", ("correct", "reanswer"))
    >>> check_choice("rewrite_mode", "redo", ("correct", "reanswer"))
    Traceback (most recent call last):
    ...
    ValueError: 'rewrite_mode' must be one of 'correct', 'reanswer', got 'redo'.
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"'{name}' must be one of {', '.join(repr(c) for c in choices)}, got {value!r}.")


def check_optional_seconds(name: str, value: float | None) -> None:
    """Raise ValueError unless `value` is None or a finite number of seconds > 0."""
    if value is not None:
        check_range(name, value, 0.0, 86400.0, low_open=True)


__all__ = ["check_bool", "check_choice", "check_int", "check_optional_int", "check_optional_seconds", "check_range"]
