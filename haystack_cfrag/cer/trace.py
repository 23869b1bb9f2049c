"""The evidence-set selector's trace: how it is built (`selection_trace`) and shown (`cfrag ask`, `cfrag compare`).

    >>> trace = {"pool": ["a", "b", "c"], "kept": ["b"], "pruned": ["a"], "quality": 0.81, "reached": True,
    ...          "stop": "delta", "necessity": {"b": 1.0}, "scorer_calls": 7, "answer": "Bale"}
    >>> decision_lines(trace)
    ["Kept 1 of 3 passages (F̂ 0.810, θ reached, stop: delta; pruned 1); draft answer 'Bale', 7 scorings"]
"""

from __future__ import annotations

from typing import Any

from haystack_cfrag.cer.math.search import Effects, SearchResult
from haystack_cfrag.common.text import clean_query


def selection_trace(
    ids: list[str],
    answer: str,
    result: SearchResult,
    effects: Effects,
    replacements: dict[int, int],
    *,
    quality_calls: int,
    scorer_calls: int,
    seconds: float,
) -> dict[str, Any]:
    """The trace of one selection by passage id (`ids`: the pool's): the search's steps and outcome, the kept
    passages' effects and hard negatives, the sets scored and the scorer's calls."""
    kept = [ids[i] for i in result.kept]
    return {
        "answer": answer,
        "pool": ids,
        "steps": [
            {
                "chosen": ids[s.chosen],
                "utilities": {ids[d]: u for d, u in s.utilities.items()},
                "quality": s.quality,
                "gain": s.gain,
            }
            for s in result.steps
        ],
        "qualities": result.qualities,
        "initial_quality": result.initial_quality,
        "forward": [ids[i] for i in result.forward],
        "pruned": [ids[i] for i in result.pruned],
        "cut": [ids[i] for i in result.cut],
        "unscored": [ids[i] for i in result.unscored],
        "kept": kept,
        "quality": result.quality,
        "reached": result.reached,
        "stop": result.stop,
        "necessity": dict(zip(kept, effects.necessity, strict=True)),
        "deletion_effects": dict(zip(kept, effects.deletion, strict=True)),
        "replacement_effects": dict(zip(kept, effects.replacement, strict=True)),
        "fused_effects": dict(zip(kept, effects.fused, strict=True)),
        "replacements": {ids[d]: ids[r] for d, r in replacements.items()},
        "quality_calls": quality_calls,
        "scorer_calls": scorer_calls,
        "seconds": seconds,
        "fallback": False,
    }


def decision_lines(trace: dict[str, Any]) -> list[str]:
    """The set kept, in one line."""
    if trace.get("fallback"):
        return [f"Kept the top {len(trace.get('kept') or trace.get('pool') or [])} passages (the selection degraded)"]
    quality = trace.get("quality")
    shown = f"F̂ {quality:.3f}" if isinstance(quality, (int, float)) else "F̂ —"
    reached = "θ reached" if trace.get("reached") else "θ not reached"
    return [f"Kept {len(trace.get('kept') or [])} of {len(trace.get('pool') or [])} passages ({shown}, {reached}, "
            f"stop: {trace.get('stop')}; pruned {len(trace.get('pruned') or [])}); draft answer "
            f"{clean_query(str(trace.get('answer', '')))!r}, {trace.get('scorer_calls', 0)} scorings"]


def format_trace(trace: dict[str, Any]) -> str:
    """The kept set with each passage's necessity, then the search's steps."""
    lines = ["", *decision_lines(trace)]
    for doc_id in trace.get("kept") or []:
        nec = (trace.get("necessity") or {}).get(doc_id)
        lines.append(f"  kept {doc_id}" + (f"  Nec {nec:.2f}" if isinstance(nec, (int, float)) else ""))
    for k, step in enumerate(trace.get("steps") or [], 1):
        lines.append(f"  step {k}: +{step.get('chosen')}  F̂ {step.get('quality', 0.0):.3f}  "
                     f"gain {step.get('gain', 0.0):+.3f}")
    return "\n".join(lines)


RECORDED = ("pool", "kept", "pruned", "cut", "unscored", "quality", "reached", "stop", "scorer_calls")
"""What an evaluation record keeps of the selector's trace: enough for evidence size and cost."""


def record(trace: dict[str, Any]) -> dict[str, Any]:
    """The evaluation record's `selection`: the RECORDED keys of the selector's trace.

    >>> record({"kept": ["a"], "pool": ["a", "b"], "steps": []})
    {'selection': {'pool': ['a', 'b'], 'kept': ['a']}}
    """
    return {"selection": {k: trace[k] for k in RECORDED if k in trace}}


def why_no_answer(trace: dict[str, Any] | None) -> str:
    """Why a CER run gave no answer."""
    if trace is not None and not trace.get("pool"):
        return "no evidence was found in the store"
    return "the model's reply held no answer"


__all__ = ["RECORDED", "decision_lines", "format_trace", "record", "selection_trace", "why_no_answer"]
