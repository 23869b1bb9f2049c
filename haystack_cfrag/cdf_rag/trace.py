"""How `cfrag ask` and `cfrag compare` show CDF-RAG's traces: {component: trace} of the refiner and the two checkers.

    >>> trace = {"refiner": {"action": "expand", "chosen_by": "reader"},
    ...          "causal_checker": {"s_causal": None, "tau": 0.5, "decision": "no_edges", "edges": 0},
    ...          "hallucination_checker": {"s_hall": 0.0, "delta": 0.5, "decision": "keep", "claims": 1,
    ...                                    "supported": 1, "rewritten": False}}
    >>> print("\\n".join(decision_lines(trace)))
    Refinement: expand (reader)
    Causal check: S_causal — (τ 0.5, 0 edges) → no_edges
    Hallucination check: S_hall 0.00 (δ 0.5, 1/1 claims supported) → keep
"""

from __future__ import annotations

from typing import Any

BY_STAGE = True
"""The trace is {component: trace} even when one stage left one (`grounded_rag_lite`: the hallucination check alone)."""


def _score(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "—"


def decision_lines(trace: dict[str, Any]) -> list[str]:
    """One line per stage that left a trace."""
    lines = []
    refiner = trace.get("refiner") or {}
    if refiner:
        lines.append(f"Refinement: {refiner.get('action')} ({refiner.get('chosen_by') or 'fixed'})"
                     + (f", fell back: {refiner.get('fallback_reason')}" if refiner.get("fallback") else ""))
    causal = trace.get("causal_checker") or {}
    if causal:
        lines.append(f"Causal check: S_causal {_score(causal.get('s_causal'))} (τ {causal.get('tau')}, "
                     f"{causal.get('edges', 0)} edges) → {causal.get('decision')}"
                     + (", regenerated" if causal.get("regenerated") else ""))
    hall = trace.get("hallucination_checker") or {}
    if hall:
        lines.append(f"Hallucination check: S_hall {_score(hall.get('s_hall'))} (δ {hall.get('delta')}, "
                     f"{hall.get('supported', 0)}/{hall.get('claims', 0)} claims supported) → {hall.get('decision')}"
                     + (", rewritten" if hall.get("rewritten") else ""))
    return lines


def format_trace(trace: dict[str, Any]) -> str:
    """The decision lines after a blank line (what `cfrag ask` prints)."""
    return "\n".join(["", *decision_lines(trace)])


def why_no_answer(trace: dict[str, Any] | None) -> str:
    """Why a CDF-RAG run gave no answer."""
    return "the model's reply held no answer"


RECORDED = ("action", "chosen_by", "fallback", "s_causal", "s_hall", "decision", "edges", "claims", "supported",
            "claim_supports", "regenerated", "rewritten", "original_answer", "calls")
"""What an evaluation record keeps of each stage's trace: how often each check fired and what it replaced."""


def record(trace: dict[str, Any]) -> dict[str, Any]:
    """The evaluation record's `selection`: {stage: its RECORDED keys} of every stage that has some.

    >>> record({"hallucination_checker": {"s_hall": 0.5, "decision": "rewrite", "claims": 2}, "retriever": {"k": 1}})
    {'selection': {'hallucination_checker': {'s_hall': 0.5, 'decision': 'rewrite', 'claims': 2}}}
    """
    return {"selection": {name: {k: sub[k] for k in RECORDED if k in sub} for name, sub in trace.items()
                          if isinstance(sub, dict) and any(k in sub for k in RECORDED)}}


__all__ = ["RECORDED", "decision_lines", "format_trace", "record", "why_no_answer"]
