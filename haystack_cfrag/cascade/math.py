"""The escalation gate's signals and rule, pure (no Haystack).

Standard RAG has answered; would a causal method change the answer? The gate reads three things
standard RAG already holds:

- `support`: the reader's length-normalised log P(answer | its own prompt), read as its reply where
  llama.cpp left the prompt (the grounded check's reading: a few tokens, not a second read);
- `holding`: how many of the retrieved passages hold the answer (normalised whole-phrase mention),
  and whether the top-ranked one does;
- `rivals`: passages that hold none of the answer's words — evidence that points elsewhere.

The rule: escalate when the answer is empty, when the reader is unsure of its own answer
(`support < threshold`), when no passage states it (an answer the evidence does not give), or when it
has the Correlation Trap's shape: a pile of passages states it while the best-ranked passage does not
(volume, not the best match, carried the answer). Otherwise standard RAG's answer stands.

    >>> s = signals("Mount Everest", ["Mount Everest is 8,849 m.", "Mauna Kea rises 10,210 m."], -0.05)
    >>> s["holding"], s["rivals"], s["top_holds"]
    (1, 1, True)
    >>> decide(s, threshold=-0.3).escalate
    False
    >>> decide(signals("Mount Everest", ["Everest is high."], -0.9), threshold=-0.3).because
    'the reader is unsure of its answer (support -0.90 < -0.30)'
    >>> decide(signals("Sydney", ["Canberra is the capital.", "Sydney is big.", "The harbour of Sydney."], -0.01),
    ...        threshold=-0.3).because
    'a pile of 2 passages states the answer but the best-ranked passage does not'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.common.text import mention

GATE_KEY = "gate"
"""Where a cascade's trace keeps the gate's reading (the trace of a run that did not escalate is only this)."""

PILE = 2
"""Passages that state the answer, the best-ranked not among them: the answer came from volume, not the best match."""

THRESHOLD_RANGE = (-20.0, 0.0)
"""The support threshold's range, in nats per token (0: escalate on anything short of certainty)."""


@dataclass(frozen=True)
class GateDecision:
    """Escalate or not, and why (one line for the trace)."""

    escalate: bool
    because: str


def signals(answer: str, passages: Sequence[str], support: float | None,
            scores: Sequence[float | None] | None = None) -> dict[str, Any]:
    """What the gate reads of standard RAG's run: its answer against its passages, and the reader's support.

    :param answer: standard RAG's answer ("" when it gave none).
    :param passages: the retrieved passages' texts, best first.
    :param support: the reader's support of the answer (None: not scored).
    :param scores: the passages' retrieval scores, best first (optional: the gap is reported, not decided on).
    """
    mentions = [mention(answer, text) for text in passages]
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


def decide(reading: dict[str, Any], *, threshold: float) -> GateDecision:
    """The rule (module doc) over `signals`' reading."""
    if not (reading.get("answer") or "").strip():
        return GateDecision(True, "standard RAG gave no answer")
    support = reading.get("support")
    if support is None or not math.isfinite(support):
        return GateDecision(True, "the reader's support could not be read")
    if support < threshold:
        return GateDecision(True, f"the reader is unsure of its answer (support {support:.2f} < {threshold:.2f})")
    if reading.get("passages") and not reading.get("holding"):
        return GateDecision(True, "no passage states the answer")
    if reading.get("holding", 0) >= PILE and not reading.get("top_holds"):
        return GateDecision(True, f"a pile of {reading['holding']} passages states the answer but the best-ranked "
                                  "passage does not")
    return GateDecision(False, f"the reader is sure (support {support:.2f} ≥ {threshold:.2f}) and "
                               f"{reading.get('holding')} of {reading.get('passages')} passages state the answer")
