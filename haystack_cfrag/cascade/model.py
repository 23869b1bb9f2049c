"""The fitted gate: a logistic model of "the method wins here", as plain numbers (pure: no pickle, no code).

A cascade's YAML holds its gate's model as a mapping of numbers, checked when it loads (a pydantic model:
known features, each once; finite numbers within ±MAX_WEIGHT, one per feature; nothing else):

    features:   [support, pile, ...]        names from `features.FEATURES`
    means:      [...]                       one per feature: standardisation, and the value of a missing one
    scales:     [...]                       one per feature, at least MIN_SCALE
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
    ...                      "threshold": 0.5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: gate model: 'features' unknown feature(s) 'colour' (known: support, margin, ...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from haystack_cfrag.cascade.features import FEATURES
from haystack_cfrag.common.parameters import clip

PROBABILITY_RANGE = (0.0, 1.0)
"""The operating point's range (a probability): `gate_threshold` of every cascade."""
MAX_WEIGHT = 1e3
"""A weight or intercept beyond this is refused: no fitted gate needs one, a typo or an attack would."""
MIN_SCALE = 1e-3
"""The smallest scale (a tinier one turns the gate all-or-nothing); `fit` scales such a feature by 1 instead."""


NEVER = 1.0
"""The operating point that never escalates: a rule, not a comparison (a P(win) can round to 1.0)."""


def reaches(probability: float, threshold: float) -> bool:
    """Whether P(win) reaches the operating point; the point `NEVER` (1.0) is reached by nothing.

    >>> reaches(1.0, 1.0), reaches(0.35, 0.35), reaches(0.34, 0.35)
    (False, True, False)
    """
    return threshold < NEVER and probability >= threshold


def _number(value: Any) -> float:
    # an int compares with a float exactly: a 400-digit one is out of range here, never an OverflowError
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not abs(value) <= MAX_WEIGHT:
        huge = isinstance(value, int) and value.bit_length() >= 64
        raise ValueError(f"holds {'a huge integer' if huge else clip(repr(value))}, not a finite number "
                         f"within ±{MAX_WEIGHT:g}")
    return float(value)


def _within(low: float, high: float, what: str) -> AfterValidator:
    def check(value: float) -> float:
        if not low <= value <= high:
            raise ValueError(f"holds {value:g}: {what}")
        return value

    return AfterValidator(check)


def _features(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(n, str) for n in value):
        raise ValueError("must be a non-empty list of feature names")
    unknown = [n for n in value if n not in FEATURES]
    if unknown:
        raise ValueError(f"unknown feature(s) {', '.join(repr(clip(n)) for n in unknown[:5])} "
                         f"(known: {', '.join(FEATURES)})")
    if len(set(value)) != len(value):
        raise ValueError("a feature is named twice")
    return tuple(value)


Number = Annotated[float, BeforeValidator(_number)]
Scale = Annotated[Number, _within(MIN_SCALE, MAX_WEIGHT, f"every scale must be > 0 and at least {MIN_SCALE:g} "
                                                         "(a smaller one makes an all-or-nothing gate)")]


class GateModel(BaseModel):
    """A checked logistic gate (see the module doc); build it with `from_dict` (a one-line ValueError)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    features: Annotated[tuple[str, ...], BeforeValidator(_features)]
    means: tuple[Number, ...]
    scales: tuple[Scale, ...]
    weights: tuple[Number, ...]
    intercept: Number
    threshold: Annotated[Number, _within(*PROBABILITY_RANGE, "must be a probability in [0, 1]")]
    fitted_on: str = Field(default="", strict=True, max_length=500)  # what it was fitted on, for people

    @model_validator(mode="after")
    def _one_per_feature(self) -> GateModel:
        for key in ("means", "scales", "weights"):
            if len(getattr(self, key)) != len(self.features):
                raise ValueError(f"'{key}' must be a list of {len(self.features)} number(s), one per feature")
        return self

    @classmethod
    def from_dict(cls, data: Any) -> GateModel:
        """Check and build; a ValueError names the field and what is wrong (one line)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"gate model: must be a mapping of {', '.join(cls.model_fields)}, "
                             f"got {type(data).__name__}.")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            errors = exc.errors()
        missing = [str(e["loc"][0]) for e in errors if e["type"] == "missing"]
        extra = [clip(str(e["loc"][0])) for e in errors if e["type"] == "extra_forbidden"]
        if missing or extra:
            raise ValueError(f"gate model: missing {missing or 'nothing'}, unknown {extra or 'nothing'} "
                             f"(keys: {', '.join(cls.model_fields)}).")
        where = "".join(f"[{p}]" if isinstance(p, int) else f"'{p}'" for p in errors[0]["loc"])
        text = (errors[0].get("ctx") or {}).get("error") or errors[0]["msg"]
        raise ValueError(f"gate model: {where + ' ' if where else ''}{text}.")

    def to_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (what a YAML file holds)."""
        return self.model_dump(mode="json")

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


def _short(value: float | None) -> str:
    if value is None:
        return "unread"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2g}"
