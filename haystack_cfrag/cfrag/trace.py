"""The arbitration trace, a plain JSON-serialisable dict: its schema (the TypedDicts), its one constructor
(`make_trace`) and its readers (`format_trace`, `why_no_answer`, `failed_drafts`, `scored_drafts`).

With no usable draft the `ARBITRATION_KEYS` are left out and `decision` says why (`NoAnswerDecision`);
`reader_causal` only with `causal_score="reader"` and counterfactuals."""

# no `from __future__ import annotations` here: TypedDict must see NotRequired at run time (Python 3.11)
from typing import Any, Literal, NotRequired, TypedDict

from haystack_cfrag.cfrag.dataclasses import Draft
from haystack_cfrag.cfrag.math.algorithm import Decision, Scores
from haystack_cfrag.common.text import clean_query

__all__ = ["ARBITRATION_KEYS", "CounterfactualDetail", "Decision", "Degradation", "DraftEntry", "DuelEntry",
           "DuelSupportEntry", "EvidenceEntry", "FailedDraftEntry", "MarginRuleEntry", "NoAnswerDecision",
           "OverrideEntry", "ReaderCausalEntry", "Scores", "Trace", "TraceDecision", "decision_lines",
           "duel_readings", "failed_draft_entry", "failed_drafts", "format_trace", "make_trace",
           "scored_drafts", "why_no_answer"]

NoAnswerDecision = Literal["no_evidence", "all_drafts_failed", "no_drafts"]
"""Why no draft was usable: nothing was retrieved, every draft failed, or none was given."""
TraceDecision = Decision | NoAnswerDecision

Degradation = dict[str, Any]
"""What gave less than asked: {"stage", "reason", …details} (see `components._common.degradation`)."""


class CounterfactualDetail(TypedDict, total=False):
    """One counterfactual as the expander gave it (its "text" is the question)."""

    text: str
    type: str
    answer_hint: str
    similarity: float
    info: float


class EvidenceEntry(TypedDict):
    """One passage of a draft's evidence E_j."""

    id: str
    title: Any
    cluster: Any
    relevance: float
    max_counterfactual_relevance: float | None
    causal_margin: float | None
    mention: float


class DraftEntry(TypedDict):
    """A usable draft, scored."""

    index: int
    answer: str
    rationale: str
    parsed_by: str
    evidence_kind: Literal["cited", "subset", "mentions"]
    seen: int
    evidence: list[EvidenceEntry]
    scores: Scores
    psi: float
    agreement: float


class FailedDraftEntry(TypedDict):
    """A draft that failed or gave no answer (its `evidence` is always empty)."""

    index: int
    answer: str
    error: str
    evidence: list[EvidenceEntry]


class MarginRuleEntry(TypedDict):
    """What the margin rule alone would have decided."""

    winner: int
    decision: Decision


class DuelSupportEntry(TypedDict):
    """One answer of a duel read by the reader's support: its passage, score, and what the scoring cost."""

    answer: str
    passage: str
    score: float
    calls: int | None
    tokens_evaluated: int | None


class DuelEntry(TypedDict):
    """A duel: one passage per candidate answer, read once (and once more in reverse order to confirm an override)."""

    passages: list[str]
    candidates: list[int]
    margin_rule: MarginRuleEntry
    answer: str
    winner: int
    confirm_answer: NotRequired[str]
    """What the reverse-order reading named; present only when the duel's pick was checked that way."""
    reading: NotRequired[str]
    """"support", "support_pmi" or "support_reply" when the reader's support read the duel (no generation); absent:
    a generation."""
    support: NotRequired[list[DuelSupportEntry]]
    """Each answer's score on its own duel passage (with `reading`)."""


class ReaderCausalEntry(TypedDict, total=False):
    """One draft's φ_causal from the reader's counterfactual test (`causal_score="reader"`)."""

    draft: int
    passages: list[str]
    support: float
    """support(a | q, E): length-normalised log-probability of the draft's answer (nats per token)."""
    margin: float
    """support(a | q, E) − max_j support(a | q'_j, E)."""
    phi_causal: float | None
    """tanh(margin): what Ψ and the override read as φ_causal."""
    calls: int | None
    tokens_evaluated: int | None


class OverrideEntry(TypedDict):
    """The conservative override: the baseline draft, the margin and the best challenger's Ψ gap."""

    baseline_draft: int
    margin: float
    gap: float | None
    duel: NotRequired[DuelEntry]


class Trace(TypedDict):
    """The account of one arbitration (see the module docstring for when the NotRequired keys are left out)."""

    query: str
    counterfactuals: list[str]
    counterfactual_details: NotRequired[list[CounterfactualDetail]]
    scorer: NotRequired[Literal["cross-encoder", "embedding", "lexical"]]
    weights: NotRequired[dict[str, float]]
    clusters: NotRequired[dict[str, list[str]]]
    drafts: list[DraftEntry | FailedDraftEntry]
    ranking: list[int]
    best_draft: NotRequired[int]
    agreement: float
    decision: TraceDecision
    override: OverrideEntry | None
    answer: str
    degradations: list[Degradation]
    reader_causal: NotRequired[list[ReaderCausalEntry]]
    """With `causal_score="reader"` and counterfactuals: each draft's reader test, in draft order."""


ARBITRATION_KEYS = ("counterfactual_details", "scorer", "weights", "clusters", "best_draft")


def make_trace(
    *,
    query: str,
    counterfactuals: list[str],
    drafts: list[DraftEntry | FailedDraftEntry],
    decision: TraceDecision,
    answer: str,
    degradations: list[Degradation],
    ranking: list[int] | None = None,
    agreement: float = 0.0,
    override: OverrideEntry | None = None,
    counterfactual_details: list[CounterfactualDetail] | None = None,
    scorer: str | None = None,
    weights: dict[str, float] | None = None,
    clusters: dict[str, list[str]] | None = None,
    best_draft: int | None = None,
) -> Trace:
    """The trace, its keys in their fixed order; without `best_draft` (nothing arbitrated) the
    `ARBITRATION_KEYS` are left out.

    >>> trace = make_trace(query="Who?", counterfactuals=[], drafts=[], decision="no_drafts", answer="",
    ...                    degradations=[])
    >>> list(trace)
    ['query', 'counterfactuals', 'drafts', 'ranking', 'agreement', 'decision', 'override', 'answer', 'degradations']
    """
    trace = {
        "query": query,
        "counterfactuals": counterfactuals,
        "counterfactual_details": counterfactual_details,
        "scorer": scorer,
        "weights": weights,
        "clusters": clusters,
        "drafts": drafts,
        "ranking": [] if ranking is None else ranking,
        "best_draft": best_draft,
        "agreement": agreement,
        "decision": decision,
        "override": override,
        "answer": answer,
        "degradations": degradations,
    }
    if best_draft is None:
        for key in ARBITRATION_KEYS:
            del trace[key]
    return trace


def failed_draft_entry(draft: Draft) -> FailedDraftEntry:
    """The trace's entry of a failed draft."""
    return FailedDraftEntry(index=draft.index, answer=draft.answer, error=draft.error or "empty answer", evidence=[])


# ---------------------------------------------------------------- reading
def failed_drafts(trace: Trace) -> list[FailedDraftEntry]:
    """The drafts that failed (those with an "error")."""
    return [d for d in trace.get("drafts") or [] if d.get("error")]


def duel_readings(trace: Trace | None) -> int:
    """Generations the duel made: 0 (none, or read by the support score), 1, or 2 (read again reversed).

    >>> duel_readings({"override": {"duel": {"answer": "a", "confirm_answer": "a"}}}), duel_readings({"override": None})
    (2, 0)
    >>> duel_readings({"override": {"duel": {"answer": "a", "reading": "support_pmi", "support": []}}})
    0
    """
    duel = ((trace or {}).get("override") or {}).get("duel")
    if not duel or duel.get("reading", "generate") != "generate":
        return 0
    return 1 + ("confirm_answer" in duel)


def scored_drafts(trace: Trace) -> list[DraftEntry]:
    """The drafts that were arbitrated (those without an "error")."""
    return [d for d in trace.get("drafts") or [] if not d.get("error")]


def record(trace: Trace) -> dict[str, Any]:
    """What an evaluation record keeps of a CF-RAG trace: the decision, the counterfactuals, the override, and
    every scored draft as a candidate (for the oracle and offline re-arbitration).

    >>> trace = {"decision": "baseline", "counterfactuals": ["q'"], "drafts": [{"index": 0, "answer": "x"}]}
    >>> record(trace)["candidates"]
    [{'index': 0, 'answer': 'x', 'psi': None, 'scores': None, 'evidence': [], 'seen': None}]
    """
    return {
        "decision": trace.get("decision"), "n_counterfactuals": len(trace.get("counterfactuals") or []),
        "counterfactuals": trace.get("counterfactuals") or [], "override": trace.get("override"),
        "candidates": [{"index": d["index"], "answer": d["answer"], "psi": d.get("psi"), "scores": d.get("scores"),
                        "evidence": [e.get("title") or "" for e in d.get("evidence") or []], "seen": d.get("seen")}
                       for d in scored_drafts(trace)],
    }


def why_no_answer(trace: Trace | None) -> str:
    """Why a run that gave no answer gave none, from its trace (None: a pipeline without arbitration)."""
    if trace is None:
        return "the model's reply held no answer"
    drafts = trace.get("drafts") or []
    if trace.get("decision") == "no_evidence" or not drafts:
        return "no evidence was found in the store"
    if len(failed_drafts(trace)) == len(drafts):
        return f"every LLM call failed ({len(drafts)} of {len(drafts)} drafts; see the trace)"
    return "the model's reply held no answer"


def format_trace(trace: Trace) -> str:
    """A readable account of an arbitration trace (what `cfrag ask` prints)."""
    lines = ["", "Counterfactuals:"]
    cfs = trace.get("counterfactual_details") or [{"text": t} for t in trace.get("counterfactuals", [])]
    for c in cfs:
        extra = f" [{c['type']}, sim {c['similarity']:.2f}]" if "type" in c else ""
        lines.append(f"  - {clean_query(str(c['text']))}{extra}")
    if not cfs:
        lines.append("  (none)")
    clusters = trace.get("clusters") or {}
    if clusters:
        sizes = ", ".join(f"{k}: {len(v)} docs" for k, v in clusters.items())
        lines.append(f"Clusters: {len(clusters)} ({sizes})")
    weights = trace.get("weights", {})
    lines.append(f"Drafts (scorer: {trace.get('scorer')}, weights: "
                 + ", ".join(f"{k} {v:.2f}" for k, v in weights.items() if v) + "):")
    override = trace.get("override") or {}
    for d in trace.get("drafts", []):
        if d.get("error"):
            lines.append(f"  #{d['index']}: FAILED ({clean_query(str(d['error']))})")
            continue
        s = d["scores"]
        fmt = lambda v: "—" if v is None else f"{v:+.3f}"  # noqa: E731
        tag = " (baseline: standard RAG's reading)" if d["index"] == override.get("baseline_draft") else ""
        lines.append(f"  #{d['index']}{tag} {d['answer']!r}  Ψ {d['psi']:+.3f}  coh {fmt(s['coherence'])}  "
                     f"causal {fmt(s['causal'])}  conf {fmt(s['confidence'])}  spec {fmt(s['specificity'])}  "
                     f"agree {d['agreement']:.2f}")
        for e in d["evidence"]:
            margin = "" if e["causal_margin"] is None else f"  margin {e['causal_margin']:+.3f}"
            lines.append(f"       · {clean_query(str(e.get('title') or e['id']))} "
                         f"(cluster {e.get('cluster')}, s {e['relevance']:.3f}{margin})")
    lines += decision_lines(trace)
    for d in trace.get("degradations") or []:
        details = ", ".join(f"{k} {v}" for k, v in d.items() if k not in ("stage", "reason"))
        lines.append(f"Degraded: {d['stage']}: {d['reason']}" + (f" ({details})" if details else ""))
    return "\n".join(lines)


def decision_lines(trace: Trace) -> list[str]:
    """Why the answer won, in one or two lines (the duel or the override check, then the decision).

    >>> duel = {"passages": ["p1", "p2"], "answer": "Perth", "winner": 0, "reading": "support",
    ...         "support": [{"answer": "Perth", "passage": "p1", "score": -0.95},
    ...                     {"answer": "Sydney", "passage": "p2", "score": -1.82}]}
    >>> print(decision_lines({"override": {"duel": duel}, "decision": "override", "answer": "Perth"})[0][44:])
    by the reader's support): Perth -0.95; Sydney -1.82 → 'Perth', draft #0 wins
    """
    lines: list[str] = []
    override = trace.get("override") or {}
    duel = override.get("duel")
    if duel:
        titles = {e["id"]: e.get("title") or e["id"] for d in trace.get("drafts", []) for e in d.get("evidence", [])}
        shown = "; ".join(clean_query(str(titles.get(i, i))) for i in duel["passages"])
        how, again = "one passage per answer", ""
        if duel.get("support"):  # scored: each answer's score on its own passage
            how = f"each answer scored on its own passage by the reader's {duel.get('reading', 'support')}"
            shown = "; ".join(f"{clean_query(str(s['answer']))} {s['score']:+.2f}" for s in duel["support"])
        if "confirm_answer" in duel:
            again = f", in reverse order → {clean_query(str(duel['confirm_answer']))!r}"
        lines.append(f"Duel ({how}): {shown} → {clean_query(str(duel.get('answer', '')))!r}{again}, "
                     f"draft #{duel.get('winner')} wins")
    elif override and override.get("gap") is not None:
        lines.append(f"Override check: best challenger's Ψ − baseline's = {override['gap']:+.3f} "
                     f"(needs ≥ {override['margin']} and a higher φ_causal)")
    agreement = trace.get("agreement", 0)
    lines.append(f"Decision: {trace.get('decision')} (agreement {agreement:.2f}) → {trace.get('answer')!r}")
    return lines
