"""The ranker's ruling: what one arbitration decided, and the `answers`, `answer` and `trace` it gives.

`ArbitrationDuel` settles a duel the ruling left open; an open duel reads as declined (`algorithm.decline_duel`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from haystack import logging
from haystack.dataclasses import ChatMessage, GeneratedAnswer

from haystack_cfrag.cfrag.case import ArbitrationCase
from haystack_cfrag.cfrag.dataclasses import NO_EVIDENCE
from haystack_cfrag.cfrag.math.algorithm import Arbitration, Override, decline_duel
from haystack_cfrag.cfrag.math.replies import parse_draft_reply
from haystack_cfrag.cfrag.trace import (
    DraftEntry,
    DuelEntry,
    EvidenceEntry,
    FailedDraftEntry,
    MarginRuleEntry,
    OverrideEntry,
    Trace,
    TraceDecision,
    failed_draft_entry,
    make_trace,
)
from haystack_cfrag.common.plumbing import degradation

logger = logging.getLogger(__name__)

SCORES_KEY = "cfrag_scores"


@dataclass(frozen=True)
class Ruling:
    """One arbitration's outcome, as the ranker hands it on (nothing downstream changes it).

    :param case: the arbitration's inputs (drafts, evidence, matrices).
    :param arbitration: Algorithm 1's outcome; None when no draft was usable.
    :param agreement_threshold: θ_agree, at which a duel's reading names a candidate.
    :param synthesis: the synthesizer's replies when the decision is "synthesis" ([] = the call failed).
    :param degradations: what a later stage (the duel) gave less than asked, after the case's own.
    :param duel_reading: how the duel was read, when by the reader's support (with `duel_support`).
    :param duel_support: each duel candidate's support score, when so read.
    """

    case: ArbitrationCase
    arbitration: Arbitration | None
    agreement_threshold: float = 0.8
    synthesis: list[ChatMessage] | None = None
    degradations: tuple[dict[str, Any], ...] = ()
    duel_reading: str | None = None
    duel_support: list[dict[str, Any]] | None = None

    @property
    def open_duel(self) -> bool:
        """Whether the ruling leaves a duel to be read (`ArbitrationDuel`)."""
        return self.arbitration is not None and self.arbitration.decision == "duel"

    @cached_property
    def outputs(self) -> dict[str, Any]:
        """`answers` (best first), `answer` and `trace`, made once per ruling."""
        if self.arbitration is None:
            return _no_drafts(self.case)
        arbitration = decline_duel(self.arbitration) if self.open_duel else self.arbitration
        return self._finish(arbitration)

    def _finish(self, arbitration: Arbitration) -> dict[str, Any]:
        case = self.case
        degradations = case.degradations + list(self.degradations)
        answers = []
        for j in arbitration.order:
            draft = case.drafts[j]
            meta = {
                SCORES_KEY: {**arbitration.scores[j], "psi": arbitration.psi[j],
                             "agreement": arbitration.agreements[j]},
                "cfrag_draft_index": draft.index,
                "rationale": draft.rationale,
            }
            answers.append(GeneratedAnswer(data=draft.answer, query=case.query, documents=draft.documents, meta=meta))
        final = answers[0].data
        decision: TraceDecision = arbitration.decision
        if self.synthesis is not None:
            parsed = parse_draft_reply((self.synthesis[0].text if self.synthesis else "") or "")
            if parsed["answer"]:
                final = parsed["answer"]
                if parsed["parsed_by"] == "first_line":
                    degradations.append(degradation("synthesis",
                                                    "reply without an 'Answer:' label; its first line was taken"))
                meta = {"cfrag_decision": "synthesis", "rationale": parsed["rationale"]}
                answers.insert(0, GeneratedAnswer(data=final, query=case.query, documents=case.docs, meta=meta))
            else:
                logger.warning("CausalArbitrationRanker: no usable synthesis; the best-scoring draft wins")
                decision = "best_score"
                degradations.append(degradation("synthesis", "no usable synthesis; the best-scoring draft won"))
        trace = _trace(case, arbitration, decision, final, degradations)
        duel = (trace.get("override") or {}).get("duel")
        if isinstance(duel, dict) and self.duel_support is not None:
            duel["reading"], duel["support"] = self.duel_reading, self.duel_support
        if case.reader_causal:
            trace["reader_causal"] = case.reader_causal
        return {"answers": answers, "answer": final, "trace": trace}


def _no_drafts(case: ArbitrationCase) -> dict[str, Any]:
    """The outputs when no draft was usable: no answer, and the trace's `decision` says why."""
    decision: TraceDecision
    if case.failed and all(d.error == NO_EVIDENCE for d in case.failed):
        decision = "no_evidence"
    else:
        decision = "all_drafts_failed" if case.failed else "no_drafts"
    degradations = list(case.degradations)
    if case.failed:
        degradations.append(degradation("drafts", f"every draft failed ({len(case.failed)} of {len(case.failed)})"))
    logger.warning("CausalArbitrationRanker: no usable draft ({decision})", decision=decision)
    trace = make_trace(query=case.query, counterfactuals=case.queries[1:], decision=decision, answer="",
                       drafts=[failed_draft_entry(d) for d in case.failed], degradations=degradations)
    return {"answers": [], "answer": "", "trace": trace}


def _trace(case: ArbitrationCase, arbitration: Arbitration, decision: TraceDecision, final: str,
           degradations: list[dict[str, Any]]) -> Trace:
    """The JSON-serialisable account of the decision."""
    rel, margins, mentions = case.relevance, arbitration.margins, case.mentions
    clusters: dict[str, list[str]] = {}
    for doc in case.docs:
        if "cfrag_cluster" in doc.meta:
            clusters.setdefault(str(doc.meta["cfrag_cluster"]), []).append(doc.id)
    entries: list[DraftEntry | FailedDraftEntry] = []
    for j, draft in enumerate(case.drafts):
        evidence = [
            EvidenceEntry(id=case.docs[i].id, title=case.docs[i].meta.get("title"),
                          cluster=case.docs[i].meta.get("cfrag_cluster"), relevance=float(rel[0, i]),
                          max_counterfactual_relevance=float(rel[1:, i].max()) if rel.shape[0] > 1 else None,
                          causal_margin=float(margins[i]) if margins is not None else None,
                          mention=float(mentions[j, i]))
            for i in dict.fromkeys(case.evidence[j])
        ]
        entries.append(
            DraftEntry(index=draft.index, answer=draft.answer, rationale=draft.rationale,
                       parsed_by=draft.parsed_by, evidence_kind=case.evidence_kind[j],
                       seen=len(draft.documents), evidence=evidence, scores=arbitration.scores[j],
                       psi=arbitration.psi[j], agreement=arbitration.agreements[j])
        )
    best = arbitration.best
    return make_trace(query=case.query, counterfactuals=case.queries[1:], counterfactual_details=case.details,
                      scorer=case.scorer_kind, weights=arbitration.weights, clusters=clusters,
                      drafts=entries + [failed_draft_entry(d) for d in case.failed],
                      ranking=[case.drafts[j].index for j in arbitration.order],
                      best_draft=case.drafts[best].index, agreement=arbitration.agreements[best],
                      decision=decision, override=_override_entry(case, arbitration.override), answer=final,
                      degradations=degradations)


def _override_entry(case: ArbitrationCase, override: Override | None) -> OverrideEntry | None:
    """The override's account with draft numbers and document ids (positions in `Override`)."""
    if override is None:
        return None
    entry = OverrideEntry(baseline_draft=case.drafts[override.baseline].index, margin=override.margin,
                          gap=override.gap)
    if override.duel:
        entry["duel"] = DuelEntry(
            passages=[case.docs[i].id for _, i in override.duel],
            candidates=[case.drafts[j].index for j, _ in override.duel],
            margin_rule=MarginRuleEntry(winner=case.drafts[override.winner].index, decision=override.decision),
            answer=override.duel_answer or "",
            winner=case.drafts[override.duel_winner].index,
        )
        if override.confirmed is not None:
            entry["duel"]["confirm_answer"] = override.confirm_answer or ""
    return entry


__all__ = ["SCORES_KEY", "Ruling"]
