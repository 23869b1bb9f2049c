"""CER's settings in one home: the paper's defaults (Sec. 4.2), their ranges and `CerSettings`, the frozen value
the selector passes to the search and the quality function.

    >>> CerSettings().theta, CerSettings(theta=0.6, weights=[0.5, 0.3, 0.1, 0.1]).weights
    (0.75, (0.5, 0.3, 0.1, 0.1))
    >>> CerSettings(theta=1.2)
    Traceback (most recent call last):
    ...
    ValueError: 'theta' must be in (0.0, 1.0], got 1.2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from haystack_cfrag.common.validation import check_int, check_range

WEIGHTS = (0.4, 0.3, 0.2, 0.1)
"""(w1, w2, w3, w4): entailment, coverage, contradiction, length (Eq. 3 / 17)."""
THETA = 0.75
"""Quality threshold θ: the forward search has reached a sufficient set when F̂ ≥ θ."""
EPSILON = 0.05
"""Safety margin ε: reverse pruning removes d only while F̂(C \\ {d}) ≥ θ + ε (Eq. 22)."""
MU = 0.05
"""Length cost μ of the utility, per 1000 tokens of a passage (Eq. 19)."""
KAPPA = 0.2
"""Uncertainty bonus κ of the utility (Eq. 19); unused zero-shot, where σ̂ = 0."""
DELTA = 0.02
"""Gain below which a round counts towards the two-round stop of the forward search."""
K_MAX = 25
"""K_max: the candidate pool size K_2 and the length normaliser of p_len."""
ALPHA = 0.7
"""Weight α of the deletion effect against the replacement effect (Eq. 7)."""

RANGES: dict[str, tuple[float, float]] = {"theta": (0.0, 1.0), "epsilon": (0.0, 0.5), "mu": (0.0, 1.0),
                                          "kappa": (0.0, 1.0), "delta": (0.0, 0.5), "alpha": (0.0, 1.0)}
"""Closed ranges of the scalar parameters, but for those in `OPEN_BELOW`."""
OPEN_BELOW = frozenset({"theta"})
"""The parameters whose range excludes its low end (θ = 0 would admit any set)."""


@dataclass(frozen=True)
class CerSettings:
    """θ, ε, μ, κ, δ, K_max, α and the weights of F̂, each checked on construction (`RANGES`, `check_weights`;
    a ValueError names the first one out of range)."""

    theta: float = THETA
    epsilon: float = EPSILON
    mu: float = MU
    kappa: float = KAPPA
    delta: float = DELTA
    k_max: int = K_MAX
    alpha: float = ALPHA
    weights: Sequence[float] = WEIGHTS

    def __post_init__(self) -> None:
        for name, (low, high) in RANGES.items():
            check_range(name, getattr(self, name), low, high, low_open=name in OPEN_BELOW)
        check_int("k_max", self.k_max, 1)
        check_weights(self.weights)
        object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))

    def init_parameters(self) -> dict[str, Any]:
        """The settings as a component's init parameters, in their order (the weights as a list).

        >>> CerSettings(k_max=5).init_parameters()["k_max"], CerSettings().init_parameters()["weights"]
        (5, [0.4, 0.3, 0.2, 0.1])
        """
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "weights": list(self.weights)}


def check_weights(weights: Sequence[float]) -> None:
    """Raise ValueError unless `weights` are four numbers in [0, 1] with w1 + w2 > 0.

    >>> check_weights((0.0, 0.0, 0.2, 0.1))
    Traceback (most recent call last):
    ...
    ValueError: 'weights' must give w1 + w2 > 0 (entailment or coverage must count), got (0.0, 0.0, 0.2, 0.1).
    """
    if not isinstance(weights, (tuple, list)) or len(weights) != 4:
        raise ValueError(f"'weights' must be four numbers (w1, w2, w3, w4), got {weights!r}.")
    for i, w in enumerate(weights, start=1):
        check_range(f"w{i}", w, 0.0, 1.0)
    if weights[0] + weights[1] <= 0:
        raise ValueError(
            f"'weights' must give w1 + w2 > 0 (entailment or coverage must count), got {tuple(weights)!r}."
        )


DEFAULTS = CerSettings()
"""The paper's settings."""

__all__ = ["ALPHA", "DEFAULTS", "DELTA", "EPSILON", "KAPPA", "K_MAX", "MU", "OPEN_BELOW", "RANGES", "THETA",
           "WEIGHTS", "CerSettings", "check_weights"]
