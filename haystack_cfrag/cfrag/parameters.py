"""The tunable parameters of the shipped pipelines: where each one goes, its type and its range.

One table for every entry point: the served request fields (`haystack_cfrag.serving`), the
`cfrag ask/compare` options and the evaluation's overrides read it, so a range is written
once. A parameter marked `per_request` is also a run-time input (socket) of its component:
it can change per request without rebuilding the pipeline.

Type rule, the same everywhere: an integer parameter takes an integer, or a number with no
fraction (2.0 is 2, as JSON Schema counts it); a number parameter takes an integer or a
float; booleans, strings and non-finite numbers (NaN, ±Infinity) are refused, never coerced.
A choice parameter takes one of its strings, a switch takes true or false.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.cfrag.ranges import RANGES
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CAUSAL_SCORES, DUEL_READINGS, EVIDENCE_MODES
from haystack_cfrag.cfrag.components.counterfactual_query_expander import PROMPT_STYLES
from haystack_cfrag.cfrag.components.parallel_draft_generator import PROMPTS
from haystack_cfrag.cfrag.components.spectral_stratifier import ORDERS, POOLS, SELECTIONS


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


def _span(name: str) -> dict[str, Any]:
    """Type and range of a numeric parameter, from `cfrag.ranges` (which the components check too)."""
    return RANGES[name].fields()


PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("n_counterfactuals", "expander", "n_counterfactuals", **_span("n_counterfactuals"), per_request=True,
                  help="N, counterfactual questions"),
        Parameter("n_clusters", "stratifier", "n_clusters", **_span("n_clusters"), per_request=True,
                  help="K, evidence clusters"),
        Parameter("n_subsets", "stratifier", "n_subsets", **_span("n_subsets"), per_request=True,
                  help="M, evidence subsets, one draft each"),
        Parameter("causal_weight", "ranker", "causal_weight", **_span("causal_weight"), per_request=True,
                  help="lambda, weight of the causal score in the ranking"),
        Parameter("sampling_ratio", "stratifier", "sampling_ratio", **_span("sampling_ratio"),
                  help="rho, share of each cluster sampled into a subset"),
        Parameter("anchors", "stratifier", "anchors", **_span("anchors"), help="most relevant documents shared by every subset"),
        Parameter("random_state", "stratifier", "random_state", **_span("random_state"), help="seed of the sampler and k-means"),
        Parameter("top_k", "retriever", "top_k", **_span("top_k"), help="documents retrieved per query"),
        Parameter("draft_workers", "drafter", "max_workers", **_span("max_workers"),
                  help="drafts written at once (> 1 only with a model server)"),
        # the default configuration's mechanisms (docs/method.md), each with an ablation
        Parameter("override_margin", "ranker", "override_margin", **_span("override_margin"),
                  help="Psi by which a challenger must beat the baseline"),
        Parameter("duel", "ranker", "duel", bool, help="settle a disagreement by one passage per answer"),
        Parameter("duel_reading", "ranker", "duel_reading", str, choices=DUEL_READINGS,
                  help="the duel read by a generation, or by the reader's support (or PMI) of each answer"),
        Parameter("causal_score", "ranker", "causal_score", str, choices=CAUSAL_SCORES,
                  help="phi_causal from the bi-encoder's margins or the reader's counterfactual test"),
        Parameter("duel_confirm", "ranker", "duel_confirm", bool,
                  help="a duel replaces the baseline only if a reverse-order reading names the same answer"),
        Parameter("stop_after_lines", "expander", "stop_after_lines", bool,
                  help="stop the expander's reply after the N questions asked for"),
        Parameter("evidence", "ranker", "evidence", str, choices=EVIDENCE_MODES, help="each draft's evidence E_j"),
        Parameter("consensus_min_causal", "ranker", "consensus_min_causal", **_span("consensus_min_causal"),
                  help="phi_causal a consensus needs (paper mode)"),
        Parameter("pool", "stratifier", "pool", str, choices=POOLS, help="documents the strata are made of"),
        Parameter("selection", "stratifier", "selection", str, choices=SELECTIONS, help="subsets: sampled or clusters"),
        Parameter("order", "stratifier", "order", str, choices=ORDERS, help="passage order in each subset"),
        Parameter("draft_prompt", "drafter", "prompt", str, choices=PROMPTS, help="the challengers' prompt"),
        Parameter("prompt_style", "expander", "prompt_style", str, choices=PROMPT_STYLES,
                  help="the expander's prompt: JSON (paper) or lines"),
        Parameter("paraphrase_threshold", "expander", "paraphrase_threshold", **_span("paraphrase_threshold"),
                  help="cosine at which a counterfactual is a paraphrase"),
        Parameter("similarity_threshold", "expander", "similarity_threshold", **_span("similarity_threshold"),
                  help="theta_sim, cosine a counterfactual needs to be on topic"),
    )
}

TARGETS: dict[str, tuple[str, str]] = {name: (p.component, p.target) for name, p in PARAMETERS.items()}
"""parameter → (component, init parameter) in the shipped pipelines (the evaluation's and CLI's overrides)."""

REQUEST_PARAMETERS: tuple[str, ...] = tuple(name for name, p in PARAMETERS.items() if p.per_request)


def check_parameters(values: Mapping[str, Any], allowed: Iterable[str] = REQUEST_PARAMETERS) -> dict[str, Any]:
    """The parameters that are set (None = not set), checked; ParameterError names unknown or bad ones."""
    allowed = tuple(allowed)
    unknown = [name for name in values if name not in allowed]
    if unknown:
        raise ParameterError(f"Unknown field(s) {', '.join(repr(n) for n in unknown)} (known: {', '.join(allowed)}).")
    return {name: PARAMETERS[name].check(value) for name, value in values.items() if value is not None}


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
