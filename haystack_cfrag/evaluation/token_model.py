"""A cost a noisy machine cannot disturb: Σ prompt tokens / prompt rate + completion tokens / decode rate (each
model's measured rates), plus scoring tokens; `all` prices every prompt token, `evaluated` leaves out cached ones.
The gate is priced for its answer tokens only (`GATE`).

    >>> llm = {"prompt_tokens": 620, "completion_tokens": 14, "scoring_tokens": 62, "by_component": {
    ...     "generator": {"prompt_tokens": 496, "cached_tokens": 0, "completion_tokens": 6, "model": READER},
    ...     "expander": {"prompt_tokens": 124, "cached_tokens": 0, "completion_tokens": 8, "model": SMALL},
    ...     "gate": {"scoring_tokens": 62}}}
    >>> {k: round(v, 2) for k, v in token_seconds(llm).items()}
    {'all': 10.71, 'evaluated': 10.71}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haystack_cfrag.cascade.parameters import GATE_NODE

READER = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SMALL = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
RATES: dict[str, tuple[float, float]] = {READER: (62.0, 13.7), SMALL: (130.0, 25.3)}
"""(prompt tokens/s, decoded tokens/s) per model on this project's 2-core machines. The reader's are issue 61's (its
archived standard-RAG runs); the small model's are the reader's times the ratios `benchmarks/token_rates.py` measured
between the two on one machine, 2026-11-29 (prompt 2.25× idle and 1.99× beside tests: 2.1×; generated tokens 1.85×;
archive docs/results/token_rates_2026-11-29)."""
DEFAULT = READER
GATE = GATE_NODE
"""The cascades' gate node: its scorings are priced at their answer tokens (module doc)."""


def rates(model: str | None) -> tuple[float, float]:
    """A model's rates (an unknown model is priced as the reader)."""
    return RATES.get(model or DEFAULT, RATES[DEFAULT])


def token_seconds(llm: Mapping[str, Any] | None) -> dict[str, float]:
    """One question's token-model seconds, `all` and `evaluated` (module doc); zeros for a failed question."""
    llm = llm or {}
    parts = llm.get("by_component")
    reader_prompt = rates(READER)[0]
    if not isinstance(parts, Mapping) or not parts:
        prompt_rate, decode_rate = rates(READER)
        total = ((llm.get("prompt_tokens") or 0) / prompt_rate + (llm.get("completion_tokens") or 0) / decode_rate
                 + (llm.get("scoring_tokens") or 0) / reader_prompt)
        return {"all": total, "evaluated": total - (llm.get("cached_tokens") or 0) / prompt_rate}
    full = evaluated = 0.0
    for name, part in parts.items():
        prompt_rate, decode_rate = rates(part.get("model"))
        prompt, cached = part.get("prompt_tokens") or 0, part.get("cached_tokens") or 0
        scored = part.get("scoring_answer_tokens") if name == GATE and part.get("scoring_answer_tokens") else (
            part.get("scoring_tokens") or 0)
        rest = (part.get("completion_tokens") or 0) / decode_rate + scored / reader_prompt
        full += prompt / prompt_rate + rest
        evaluated += (prompt - cached) / prompt_rate + rest
    return {"all": full, "evaluated": evaluated}


def by_component(recs: list[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean tokens per question by component, with their token-model seconds (`all`).

    >>> by_component([{"llm": {"by_component": {"expander": {"calls": 1, "prompt_tokens": 124, "completion_tokens": 40,
    ...                                                       "model": READER}}}}])["expander"]["seconds"]
    4.92
    """
    out: dict[str, dict[str, float]] = {}
    n = max(1, len(recs))
    for r in recs:
        for name, part in ((r.get("llm") or {}).get("by_component") or {}).items():
            row = out.setdefault(name, {"calls": 0.0, "prompt_tokens": 0.0, "cached_tokens": 0.0,
                                        "completion_tokens": 0.0, "scoring_tokens": 0.0, "seconds": 0.0})
            for key in ("calls", "prompt_tokens", "cached_tokens", "completion_tokens", "scoring_tokens"):
                row[key] += (part.get(key) or 0) / n
            row["seconds"] += token_seconds({"by_component": {name: part}})["all"] / n
    return {k: {kk: round(vv, 2) for kk, vv in v.items()} for k, v in out.items()}
