"""The ranker's settings: one frozen dataclass, checked once (`CausalArbitrationRanker` holds one).

The ranker's init parameters stay flat (as a YAML file and the parameter table name them); the
ranker hands them to `RankerSettings`, which checks them against `cfrag.ranges` and the choices
below, and gives the decision rules of one call (`rules`).

    >>> RankerSettings(override_margin=1.0).rules(causal_weight=None, synthesis=False).weights["causal"]
    0.4
    >>> RankerSettings(evidence="all")
    Traceback (most recent call last):
    ...
    ValueError: 'evidence' must be one of 'cited', 'subset', 'mentions', got 'all'.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.math.algorithm import Rules
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS
from haystack_cfrag.common.validation import check_choice, check_int, check_range

EVIDENCE_MODES = ("cited", "subset", "mentions")
CAUSAL_SCORES = ("biencoder", "reader")
"""Where φ_causal comes from: the bi-encoder's margins s(q, e) − max s(q', e) averaged over E_j ("biencoder"),
or the reader's counterfactual test on E_j, tanh(support(a_j | q, E_j) − max_j' support(a_j | q'_j', E_j))
("reader", `arbitration.reader_phi_causal`; haystack_cfrag.support)."""
QUALIFIERS = ("none", "period")
"""What decides the answer besides the question's topic, read from the question and each passage: nothing,
or the period it asks about ("from 1964 to 1965": `common.qualifiers`)."""
STRATA_QUALIFIERS = (*QUALIFIERS, "period_only")
"""The stratifier's: "period_only" drafts the period's passages alone where the question states one."""


@dataclass(frozen=True)
class RankerSettings:
    """What `CausalArbitrationRanker` decides by (its init parameters other than the injected parts and prompt).

    Each field is the ranker's init parameter of the same name (documented there).
    """

    causal_weight: float = 0.4
    weights: dict[str, float] | None = None
    agreement_threshold: float = 0.8
    consensus_threshold: float = 2 / 3
    coherence_weights: tuple[float, float] = (0.5, 0.5)
    synthesis_top: int = 3
    evidence: str = "cited"
    max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS
    override_margin: float | None = None
    consensus_min_causal: float | None = None
    causal_score: str = "biencoder"
    qualifier: str = "none"

    def __post_init__(self) -> None:
        check_choice("causal_score", self.causal_score, CAUSAL_SCORES)
        check_choice("qualifier", self.qualifier, QUALIFIERS)
        if self.override_margin is not None:
            ranges.check("override_margin", self.override_margin)
        if self.consensus_min_causal is not None:
            ranges.check("consensus_min_causal", self.consensus_min_causal)
        ranges.check("causal_weight", self.causal_weight)
        check_range("agreement_threshold", self.agreement_threshold, 0.0, 1.0, low_open=True)
        check_range("consensus_threshold", self.consensus_threshold, 0.0, 1.0, low_open=True)
        weights = self.weights
        if weights is not None and (
            set(weights) - set(arb.CRITERIA)
            or any(not isinstance(w, (int, float)) or w < 0 for w in weights.values())
            or not any(weights.values())
        ):
            raise ValueError(
                f"'weights' must map {list(arb.CRITERIA)} to non-negative numbers, not all zero, got {weights!r}."
            )
        lam = tuple(float(x) for x in self.coherence_weights)
        if len(lam) != 2 or any(x < 0 for x in lam):
            raise ValueError(f"'coherence_weights' must be two non-negative numbers, got {self.coherence_weights!r}.")
        check_choice("evidence", self.evidence, EVIDENCE_MODES)
        if not isinstance(self.synthesis_top, int) or self.synthesis_top < 1:
            raise ValueError(f"'synthesis_top' must be an integer ≥ 1, got {self.synthesis_top!r}.")
        if self.max_query_chars is not None:
            check_int("max_query_chars", self.max_query_chars, 1)
        object.__setattr__(self, "coherence_weights", lam)
        object.__setattr__(self, "weights", dict(weights) if weights is not None else None)  # not the caller's dict

    def criterion_weights(self, causal_weight: float | None = None) -> dict[str, float]:
        """w_k for one call: `weights` when set, else (1 − λ, λ, 0, 0) with this call's λ (or the settings')."""
        if self.weights is not None:
            return {k: float(self.weights.get(k, 0.0)) for k in arb.CRITERIA}
        lam = self.causal_weight if causal_weight is None else causal_weight
        ranges.check("causal_weight", lam)
        return arb.default_weights(lam)

    def rules(self, *, causal_weight: float | None, synthesis: bool) -> Rules:
        """Algorithm 1's rules for one call; a duel is proposed wherever one applies (the `duel` component reads it)."""
        return Rules(
            weights=self.criterion_weights(causal_weight),
            coherence_weights=self.coherence_weights,
            agreement_threshold=self.agreement_threshold,
            consensus_threshold=self.consensus_threshold,
            consensus_min_causal=self.consensus_min_causal,
            synthesis=synthesis,
            override_margin=self.override_margin,
            duel=True,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ranker's init parameters of these settings, JSON/YAML-ready."""
        data = asdict(self)
        data["coherence_weights"] = list(self.coherence_weights)
        return data


__all__ = ["CAUSAL_SCORES", "EVIDENCE_MODES", "QUALIFIERS", "STRATA_QUALIFIERS", "RankerSettings"]
