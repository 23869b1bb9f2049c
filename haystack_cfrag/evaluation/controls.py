"""Every method beside its cheap controls, from one condition's records: the best *retrieval* control (highest
EM), the order-noise floor (`order_rag` against standard RAG) and what each win or loss is (`change_kind`).

    >>> a = {"em": 1.0, "f1": 1.0, "lenient": 1.0, "answers": ["Bale"], "support_recall": 0.5, "evidence": ["x", "y"]}
    >>> b = {"em": 0.0, "f1": 0.0, "lenient": 1.0, "answers": ["Bale"], "support_recall": 0.5, "evidence": ["y", "x"]}
    >>> wrong = {**b, "lenient": 0.0}
    >>> change_kind(a, b), change_kind(a, wrong), change_kind(a, {**wrong, "support_recall": 0.0})
    ('answer form', 'same evidence reordered', 'new evidence')
    >>> change_kind({**a, "answers": ["yes"]}, b), change_kind(a, a)
    ('yes/no', None)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from haystack_cfrag.common.text import normalize_answer

KINDS = ("new evidence", "same evidence reordered", "answer form", "yes/no")
"""What a question won or lost against a reference is, in the order `change_kind` tests them (last three first)."""

FORM_F1 = 0.5
"""Token F1 of the wrong answer against the gold at which a change counts as form (the entity partly said)."""

Paired = Callable[[list[dict[str, Any]], list[dict[str, Any]], str], "dict[str, Any] | None"]


def change_kind(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Why record `a` scored another EM than `b` on the same question (one of `KINDS`; None: same EM); evidence is
    compared by gold recall, else by the titles read."""
    if a["em"] == b["em"]:
        return None
    if {normalize_answer(g) for g in a.get("answers") or []} <= {"yes", "no"} and a.get("answers"):
        return "yes/no"
    lower = b if a["em"] > b["em"] else a
    if a.get("lenient") == b.get("lenient") == 1.0 or (lower.get("f1") or 0.0) >= FORM_F1:
        return "answer form"
    ra, rb = a.get("support_recall"), b.get("support_recall")
    if ra is not None and rb is not None:
        return "new evidence" if ra != rb else "same evidence reordered"
    same = set(a.get("evidence") or []) == set(b.get("evidence") or [])
    return "same evidence reordered" if same else "new evidence"


def kinds_of_changes(system: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{"won": kind -> count, "lost": kind -> count} of `system` against `reference`, over their common questions."""
    ref = {(r["condition"], r["qid"]): r for r in reference}
    won: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    for r in system:
        other = ref.get((r["condition"], r["qid"]))
        kind = change_kind(r, other) if other is not None and not r.get("error") and not other.get("error") else None
        if kind is not None:
            (won if r["em"] > other["em"] else lost)[kind] += 1
    return {"won": {k: won[k] for k in KINDS if won[k]}, "lost": {k: lost[k] for k in KINDS if lost[k]}}


def answers_changed(system: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, int]:
    """How many common questions got another normalised answer ({"n", "changed"}): the order-noise count."""
    ref = {(r["condition"], r["qid"]): r for r in reference}
    pairs = [(r, ref[(r["condition"], r["qid"])]) for r in system if (r["condition"], r["qid"]) in ref]
    changed = sum(normalize_answer(r.get("answer") or "") != normalize_answer(o.get("answer") or "") for r, o in pairs)
    return {"n": len(pairs), "changed": changed}


def against_controls(
    systems: Mapping[str, list[dict[str, Any]]], roles: Mapping[str, str], baseline: str, paired: Paired,
) -> dict[str, Any]:
    """One condition's comparison with the controls: {"best_control", "order_noise", "systems": name ->
    {"vs_best_control", "kinds_vs_baseline", "kinds_vs_best_control"}} (controls: only `kinds_vs_baseline`).

    :param roles: pipeline name -> control role (`registry.controls()`).
    :param paired: the paired difference of two record lists on a metric (`statistics.paired`).
    """
    def role(name: str) -> str:
        recs = systems[name]
        return roles.get(recs[0].get("pipeline", ""), "") if recs else ""

    def em(name: str) -> float:
        recs = systems[name]
        return sum(r["em"] for r in recs) / len(recs) if recs else 0.0

    retrieval = [name for name in systems if role(name) == "retrieval"]
    best = max(retrieval, key=lambda n: (em(n), n == baseline), default=None)
    order = [name for name in systems if role(name) == "order"]
    noise = None
    if order and baseline in systems:
        noise = {"system": order[0], **answers_changed(systems[order[0]], systems[baseline]),
                 "em": paired(systems[order[0]], systems[baseline], "em")}
    out: dict[str, Any] = {}
    for name, recs in systems.items():
        entry: dict[str, Any] = {}
        if baseline in systems and name != baseline:
            entry["kinds_vs_baseline"] = kinds_of_changes(recs, systems[baseline])
        if best is not None and name != best and not role(name):
            entry["vs_best_control"] = {m: paired(recs, systems[best], m) for m in ("em", "f1")}
            entry["kinds_vs_best_control"] = kinds_of_changes(recs, systems[best])
        out[name] = entry
    return {"best_control": best, "order_noise": noise, "systems": out}


def kinds_text(kinds: Mapping[str, Mapping[str, int]] | None) -> str:
    """"won: 3 answer form, 1 yes/no; lost: 2 new evidence" ("–" when nothing changed).

    >>> kinds_text({"won": {"answer form": 3}, "lost": {}})
    'won: 3 answer form; lost: –'
    """
    if not kinds or not (kinds.get("won") or kinds.get("lost")):
        return "–"
    part = {side: ", ".join(f"{n} {k}" for k, n in (kinds.get(side) or {}).items()) or "–" for side in ("won", "lost")}
    return f"won: {part['won']}; lost: {part['lost']}"


__all__ = ["KINDS", "against_controls", "answers_changed", "change_kind", "kinds_of_changes", "kinds_text"]
