"""The escalation gate's reading of standard RAG's run, pure (no Haystack).

Standard RAG has answered; would a causal method change the answer for the better? The gate reads
what standard RAG already holds:

- `support`: the reader's length-normalised log P(answer | its own prompt), read as its reply where
  llama.cpp left the prompt (a few tokens, not a second read), and what the same logits say besides:
  `margin` (top-1 − top-2 at the answer's first token), `min_margin`, `rank`;
- `holding`: how many of the retrieved passages hold the answer (normalised whole-phrase mention),
  and whether the top-ranked one does (`top_holds`);
- `rivals`: passages that hold none of the answer's words; `score_gap`: the retrieval score gap;
- for a question that states a period ("from 1964 to 1965") or a namesake's descriptor ("John Smith
  (the 1950s painter)"): `best_dated`, how well the passage that meets it best does
  (`common.qualifiers.qualifying`: for a period alone, its `dating`), and `dated`, how well a passage
  holding the answer does (`answer_dating`: a clause stating the answer beginning in the period's first year
  dates it wholly): an answer whose passages date another period, or describe another namesake,
  is the trap's shape; `elsewhere`, how many passages holding the answer state dates, none of them in
  the question's period.

A fitted model (`cascade.model.GateModel`, its numbers in the cascade's YAML) turns these and the
answer's and question's form (`cascade.features`) into P(the method wins here); `decide` escalates
when that reaches the operating point, when there is no answer, or when the support could not be read.

    >>> s = signals("Mount Everest", ["Mount Everest is 8,849 m.", "Mauna Kea rises 10,210 m."], -0.05)
    >>> s["holding"], s["rivals"], s["top_holds"]
    (1, 1, True)
    >>> s = signals("George Peter", ["George Peter lived there until 1827.", "- 1964-1965 - Jacqueline Kennedy"],
    ...             -0.4, question="Who lived there from 1964 to 1965?")
    >>> s["dated"], s["best_dated"], s["elsewhere"]
    (0.0, 1.0, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.cascade.features import features
from haystack_cfrag.cascade.model import GateModel, reaches
from haystack_cfrag.common.qualifiers import answer_dating, dated_elsewhere, qualifying, question_qualifier
from haystack_cfrag.common.text import mention

GATE_KEY = "gate"
"""Where a cascade's trace keeps the gate's reading (the trace of a run that did not escalate is only this)."""

READS = ("margin", "min_margin", "rank")
"""What the scorer's `read_reply` gives besides the support (None where a backend cannot read them)."""


DECLARED = ("period_gap", "elsewhere_pile", "pile")
"""The declared rules: `decide`'s (and `EscalationGate`'s) parameters that escalate besides the fitted model."""

RULES = ("model", "no_answer", "unread", *DECLARED)
"""What decided (`GateDecision.by`): the fitted model (either way), no answer, a support that could not be read, the
declared period rules, the declared pile rule (`decide`). A cascade may route on it: `cf_rag_auto` drafts the
period's passages alone after `period_gap` (`pipelines/cf_rag_auto.yml`)."""


@dataclass(frozen=True)
class GateDecision:
    """Escalate or not, why (one line for the trace), and which rule decided (one of `RULES`)."""

    escalate: bool
    because: str
    probability: float | None = None
    by: str = "model"


def signals(answer: str, passages: Sequence[str], support: float | None,
            scores: Sequence[float | None] | None = None, reads: dict[str, Any] | None = None,
            question: str | None = None) -> dict[str, Any]:
    """What the gate reads of standard RAG's run: its answer against its passages, and the reader's support.

    :param answer: standard RAG's answer ("" when it gave none).
    :param passages: the retrieved passages' texts, best first.
    :param support: the reader's support of the answer (None: not scored).
    :param scores: the passages' retrieval scores, best first (optional).
    :param reads: what the scorer read off the same logits (`margin`, `min_margin`, `rank`; None: unread).
    :param question: the question, for the qualifier readings (None where it states no period or descriptor).
    """
    mentions = [mention(answer, text) for text in passages]
    qualifier = question_qualifier(question) if question else None
    period = qualifier.period if qualifier is not None else None
    dates = None if qualifier is None else [qualifying(qualifier, text) for text in passages]
    gap = None
    if scores and len(scores) > 1 and all(isinstance(s, (int, float)) for s in scores[:2]):
        gap = round(float(scores[0]) - float(scores[1]), 4)
    return {
        "answer": answer,
        "support": None if support is None else round(float(support), 4),
        "passages": len(passages),
        "holding": sum(m == 1.0 for m in mentions),
        "rivals": sum(m == 0.0 for m in mentions),
        "top_holds": bool(mentions) and mentions[0] == 1.0,
        "score_gap": gap,
        "dated": None if qualifier is None else max(
            (answer_dating(qualifier, answer, text) for text, m in zip(passages, mentions, strict=True) if m == 1.0),
            default=0.0),
        "best_dated": None if dates is None else max(dates, default=0.0),
        "elsewhere": None if period is None else sum(m == 1.0 and dated_elsewhere(period, text)
                                                     for text, m in zip(passages, mentions, strict=True)),
        **{k: (reads or {}).get(k) for k in READS},
    }


def answer_of(reply: str, answer_prefix: str) -> str:
    r"""The answer in a reply: the rest of the line after `answer_prefix`, else the whole first line.

    >>> answer_of("Answer: Mount Everest\nbecause …", "Answer:"), answer_of("Mount Everest", "Answer:")
    ('Mount Everest', 'Mount Everest')
    """
    prefix, text = answer_prefix.strip(), reply.strip()
    _, found, rest = text.partition(prefix) if prefix else ("", "", "")
    return (rest if found else text).strip().split("\n", 1)[0].strip()


def gate_line(gate: dict[str, Any] | None) -> str:
    """One line of a cascade's gate trace, for people (the CLI, the served answer).

    >>> gate_line({"escalated": False, "because": "the reader is sure"})
    'Escalated: no, because the reader is sure'
    """
    if not gate:
        return ""
    return f"Escalated: {'yes' if gate.get('escalated') else 'no'}, because {gate.get('because', '?')}"


def decide(reading: dict[str, Any], question: str, model: GateModel, *, threshold: float,
           period_gap: float | None = None, elsewhere_pile: bool = False, pile: bool = False) -> GateDecision:
    """Escalate when standard RAG gave no answer, when its support could not be read, when the model's
    P(the method wins) reaches `threshold` (the reason names the model's two largest terms), or, below a
    threshold of 1, by the declared period rules, the temporal trap's two shapes: with `period_gap`, when a
    passage dates the question's period better than every passage stating the answer by at least
    `period_gap` (`features.dating_gap`); with `elsewhere_pile`, when two or more passages state the answer
    and every one dates it to another period than the question's (`features.elsewhere_pile`), though none
    may date the question's period at all; and, where the model stays closed, with `pile`, the Correlation Trap's
    shape: two or more passages state the answer and the best-ranked passage does not (`features` "pile").

    >>> m = GateModel.from_dict({"features": ["pile"], "means": [0.0], "scales": [1.0], "weights": [3.0],
    ...                          "intercept": -2.0, "threshold": 0.5})
    >>> decide({"answer": "Sydney", "support": -0.1, "holding": 2, "top_holds": False}, "Capital?", m,
    ...        threshold=0.5).because
    'P(the method wins) 0.73 ≥ 0.50: pile 1 (+3.00)'
    >>> d = decide({"answer": "Peter", "support": -0.1, "dated": 0.0, "best_dated": 1.0}, "Who in 1965?", m,
    ...            threshold=0.5, period_gap=0.5)
    >>> d.because, d.by
    ("a passage dates the question's period better than any stating the answer (dating_gap 1.00 ≥ 0.5)", 'period_gap')
    >>> pile = {"answer": "Yankee Stadium", "support": -0.1, "holding": 2, "elsewhere": 2, "dated": 0.0,
    ...         "best_dated": 0.0}
    >>> decide(pile, "Which park from 1903 to 1912?", m, threshold=0.5, elsewhere_pile=True).by
    'elsewhere_pile'
    >>> sure = GateModel.from_dict({**m.to_dict(), "weights": [0.0]})   # P 0.12: the model stays closed
    >>> trap = {"answer": "Sydney", "support": -0.1, "holding": 3, "top_holds": False}
    >>> [decide(trap, "Capital?", sure, threshold=0.5, pile=on).by for on in (False, True)]
    ['model', 'pile']
    """
    if not (reading.get("answer") or "").strip():
        return GateDecision(True, "standard RAG gave no answer", by="no_answer")
    support = reading.get("support")
    if support is None or not math.isfinite(support):
        return GateDecision(True, "the reader's support could not be read", by="unread")
    values = features(reading, question)
    p = model.probability(values)
    gap = values.get("dating_gap") or 0.0
    if period_gap is not None and threshold < 1.0 and gap >= period_gap:
        qualifier = question_qualifier(question)
        what = "meets the question's qualifier" if qualifier and qualifier.words else "dates the question's period"
        return GateDecision(True, f"a passage {what} better than any stating the answer "
                                  f"(dating_gap {gap:.2f} ≥ {period_gap})", round(p, 4), by="period_gap")
    if elsewhere_pile and threshold < 1.0 and values.get("elsewhere_pile"):
        return GateDecision(True, f"{reading.get('holding')} passages state the answer, each dating it to another "
                                  f"period than the question's (elsewhere_pile)", round(p, 4), by="elsewhere_pile")
    escalate = reaches(p, threshold)
    if pile and not escalate and threshold < 1.0 and values.get("pile"):
        return GateDecision(True, f"{reading.get('holding')} passages state the answer and the best-ranked one does "
                                  f"not (pile; P(the method wins) {p:.2f})", round(p, 4), by="pile")
    return GateDecision(escalate, f"P(the method wins) {p:.2f} {'≥' if escalate else '<'} {threshold:.2f}: "
                                  f"{model.reasons(values)}", round(p, 4))
