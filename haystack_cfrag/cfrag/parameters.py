"""CF-RAG's tunable parameters: where each one goes, its type and its range (from `cfrag.ranges`).

The family's declaration (`haystack_cfrag.cfrag.family.FAMILY`) hands this table to the
registry, which the served request fields, the `cfrag ask/compare` options and the
evaluation's overrides read, so a range is written once. `Parameter` and its type rule:
`haystack_cfrag.common.parameters`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from haystack_cfrag.cfrag.components.arbitration_duel import DUEL_READINGS
from haystack_cfrag.cfrag.components.counterfactual_query_expander import PROMPT_STYLES
from haystack_cfrag.cfrag.components.parallel_draft_generator import PROMPTS
from haystack_cfrag.cfrag.components.spectral_stratifier import ORDERS, POOLS, SELECTIONS
from haystack_cfrag.cfrag.ranges import RANGES
from haystack_cfrag.cfrag.settings import CAUSAL_SCORES, EVIDENCE_MODES, QUALIFIERS, STRATA_QUALIFIERS
from haystack_cfrag.common.parameters import Parameter, ParameterError
from haystack_cfrag.common.parameters import check_parameters as _check


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
        Parameter("anchors", "stratifier", "anchors", **_span("anchors"),
                  help="most relevant documents shared by every subset"),
        Parameter("random_state", "stratifier", "random_state", **_span("random_state"),
                  help="seed of the sampler and k-means"),
        Parameter("top_k", "retriever", "top_k", **_span("top_k"), help="documents retrieved per query"),
        Parameter("draft_workers", "drafter", "max_workers", **_span("max_workers"),
                  help="drafts written at once (> 1 only with a model server)"),
        # the default configuration's mechanisms (docs/method.md), each with an ablation
        Parameter("override_margin", "ranker", "override_margin", **_span("override_margin"),
                  help="Psi by which a challenger must beat the baseline"),
        Parameter("duel", "duel", "enabled", bool, help="settle a disagreement by one passage per answer"),
        Parameter("duel_reading", "duel", "reading", str, choices=DUEL_READINGS,
                  help="the duel read by a generation, or by the reader's support (or PMI) of each answer"),
        Parameter("causal_score", "ranker", "causal_score", str, choices=CAUSAL_SCORES,
                  help="phi_causal from the bi-encoder's margins or the reader's counterfactual test"),
        Parameter("duel_confirm", "duel", "confirm", bool,
                  help="a duel replaces the baseline only if a reverse-order reading names the same answer"),
        Parameter("stop_after_lines", "expander", "stop_after_lines", bool,
                  help="stop the expander's reply after the N questions asked for"),
        Parameter("duel_qualifier", "ranker", "qualifier", str, choices=QUALIFIERS,
                  help="the duel reads each answer's passage that best dates the question's period"),
        Parameter("stratum_qualifier", "stratifier", "qualifier", str, choices=STRATA_QUALIFIERS,
                  help="a challenger drafted from the passages that best date the question's period"),
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
    """The CF-RAG parameters that are set (None = not set), checked; ParameterError names unknown or bad ones."""
    return _check(values, PARAMETERS, allowed)


__all__ = ["PARAMETERS", "REQUEST_PARAMETERS", "TARGETS", "Parameter", "ParameterError", "check_parameters"]
