"""The fitted gate: a logistic model of "the method wins here", as plain numbers (pure: no pickle, no code).

A cascade's YAML holds its gate's model as a mapping of numbers, checked when it loads:

    features:   [support, pile, ...]        names from `features.FEATURES`
    means:      [...]                       one per feature: standardisation, and the value of a missing one
    scales:     [...]                       one per feature, > 0
    weights:    [...]                       one per feature (on the standardised values)
    intercept:  -2.1
    threshold:  0.12                        escalate when P(win) >= this (the operating point); 1.0 = never
    fitted_on:  "trap_dev 24, trap_tune 60, ..."   what it was fitted on (text, for people)

P(win) = sigmoid(intercept + Σ weights · (x − means) / scales). A win is a question where the
always-on method was right and standard RAG wrong (`fit.py` makes these from measured runs).

    >>> m = GateModel.from_dict({"features": ["support", "pile"], "means": [-0.5, 0.2], "scales": [1.0, 0.4],
    ...                          "weights": [-1.0, 2.0], "intercept": -2.0, "threshold": 0.3})
    >>> round(m.probability({"support": -0.1, "pile": 1.0}), 3), m.escalates({"support": -0.1, "pile": 1.0})
    (0.832, True)
    >>> m.reasons({"support": -0.1, "pile": 1.0})
    'pile 1 (+4.00), support -0.1 (-0.40)'
    >>> GateModel.from_dict({"features": ["colour"], "means": [0], "scales": [1], "weights": [1], "intercept": 0,
    ...                      "threshold": 0.5})
    Traceback (most recent call last):
    ...
    ValueError: gate model: unknown feature(s) 'colour' (known: support, margin, min_margin, rank, holding, top_holds, rivals, pile, unstated, score_gap, a_number, a_year, a_yesno, a_words, a_name, q_who, q_when, q_where, q_which, q_what, q_how, q_yesno, q_words).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.cascade.features import FEATURES

PROBABILITY_RANGE = (0.0, 1.0)
"""The operating point's range (a probability): `gate_threshold` of every cascade."""
MAX_WEIGHT = 1e3
"""A weight or intercept beyond this is refused: no fitted gate needs one, a typo or an attack would."""
_KEYS = ("features", "means", "scales", "weights", "intercept", "threshold")


NEVER = 1.0
"""The operating point that never escalates: a logistic P(win) can round to exactly 1.0 (held out, CER's did), so
1.0 is a rule, not a comparison — what a fit writes where no point within its budget gains (`fit.operating_point`)."""


def reaches(probability: float, threshold: float) -> bool:
    """Whether P(win) reaches the operating point; the point `NEVER` (1.0) is reached by nothing.

    >>> reaches(1.0, 1.0), reaches(0.35, 0.35), reaches(0.34, 0.35)
    (False, True, False)
    """
    return threshold < NEVER and probability >= threshold


@dataclass(frozen=True)
class GateModel:
    """A checked logistic gate (see the module doc); build it with `from_dict`."""

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float
    fitted_on: str = ""

    @classmethod
    def from_dict(cls, data: Any) -> GateModel:
        """Check and build; a ValueError names what is wrong (one line)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"gate model: must be a mapping of {', '.join(_KEYS)}, got {type(data).__name__}.")
        missing = [k for k in _KEYS if k not in data]
        extra = sorted(set(data) - set(_KEYS) - {"fitted_on"})
        if missing or extra:
            raise ValueError(f"gate model: missing {missing or 'nothing'}, unknown {extra or 'nothing'} "
                             f"(keys: {', '.join(_KEYS)}, fitted_on).")
        names = data["features"]
        if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) for n in names):
            raise ValueError("gate model: 'features' must be a non-empty list of feature names.")
        unknown = [n for n in names if n not in FEATURES]
        if unknown:
            raise ValueError(f"gate model: unknown feature(s) {', '.join(repr(n) for n in unknown)} "
                             f"(known: {', '.join(FEATURES)}).")
        if len(set(names)) != len(names):
            raise ValueError("gate model: a feature is named twice.")
        rows = {k: _numbers(data[k], k, len(names)) for k in ("means", "scales", "weights")}
        if any(s <= 0 for s in rows["scales"]):
            raise ValueError("gate model: every scale must be > 0.")
        intercept = _numbers([data["intercept"]], "intercept", 1)[0]
        threshold = _numbers([data["threshold"]], "threshold", 1)[0]
        if not PROBABILITY_RANGE[0] <= threshold <= PROBABILITY_RANGE[1]:
            raise ValueError(f"gate model: 'threshold' must be a probability in [0, 1], got {threshold}.")
        fitted_on = data.get("fitted_on", "")
        if not isinstance(fitted_on, str) or len(fitted_on) > 500:
            raise ValueError("gate model: 'fitted_on' must be a text of at most 500 characters.")
        return cls(tuple(names), rows["means"], rows["scales"], rows["weights"], intercept, threshold, fitted_on)

    def to_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (what a YAML file holds)."""
        return {"features": list(self.features), "means": list(self.means), "scales": list(self.scales),
                "weights": list(self.weights), "intercept": self.intercept, "threshold": self.threshold,
                "fitted_on": self.fitted_on}

    def contributions(self, values: Mapping[str, float | None]) -> dict[str, float]:
        """Each feature's term of the log-odds (0 for a value that could not be read: the mean stands in)."""
        out = {}
        for name, mean, scale, weight in zip(self.features, self.means, self.scales, self.weights, strict=True):
            value = values.get(name)
            out[name] = 0.0 if value is None or not math.isfinite(value) else weight * (value - mean) / scale
        return out

    def probability(self, values: Mapping[str, float | None]) -> float:
        """P(the method wins on this question), from the feature values (`features.features`)."""
        z = self.intercept + sum(self.contributions(values).values())
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def escalates(self, values: Mapping[str, float | None], threshold: float | None = None) -> bool:
        """Whether P(win) reaches the operating point (`threshold`, default the model's; 1.0 never does)."""
        return reaches(self.probability(values), self.threshold if threshold is None else threshold)

    def reasons(self, values: Mapping[str, float | None], top: int = 2) -> str:
        """The `top` largest terms of the log-odds, for the trace: 'pile 1 (+1.52), support -0.9 (+0.80)'."""
        terms = sorted(self.contributions(values).items(), key=lambda kv: -abs(kv[1]))[:top]
        return ", ".join(f"{name} {_short(values.get(name))} ({term:+.2f})" for name, term in terms)


def _numbers(values: Any, key: str, n: int) -> tuple[float, ...]:
    if not isinstance(values, (list, tuple)) or len(values) != n:
        raise ValueError(f"gate model: '{key}' must be a list of {n} number(s), one per feature.")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or abs(v) > MAX_WEIGHT:
            raise ValueError(f"gate model: '{key}' holds {v!r}, not a finite number within ±{MAX_WEIGHT:g}.")
        out.append(float(v))
    return tuple(out)


def _short(value: float | None) -> str:
    if value is None:
        return "unread"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2g}"
