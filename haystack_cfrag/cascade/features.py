"""What the fitted gate reads of one standard-RAG answer, as plain numbers (pure: no Haystack, no model).

Every feature is something standard RAG has already computed or the answer's and question's own form:
the reader's support of its answer and what the same logits say besides (the top-1/top-2 margin at
the answer's first token, the smallest margin over its tokens, the answer's rank among the reader's
alternatives), how many passages state the answer and whether the best-ranked one does, the pile
shape (several passages state it, the best-ranked does not), the retrieval score gap, the answer's
form (number, year, yes/no, words, a capitalised name) and the question's (its wh-word, its length,
whether it states a period), and for a qualified question how much better some passage
dates its period (or describes its namesake) than any passage that states the answer (`dating_gap`: the temporal
and the namesake trap's shape) and whether two or more
passages state the answer, every one dated to another period (`elsewhere_pile`: its shape where no passage
dates the question's period).
A value that could not be read is None: the model puts its training mean there (`model.GateModel`).

    >>> f = features({"answer": "Mount Everest", "support": -0.25, "margin": 1.5, "min_margin": 0.2, "rank": 0,
    ...               "passages": 5, "holding": 4, "rivals": 1, "top_holds": True, "score_gap": 0.02},
    ...              "Which is the tallest mountain on Earth?")
    >>> f["holding"], f["pile"], f["q_which"], f["a_name"], f["a_words"], f["period"], f["dating_gap"]
    (4.0, 0.0, 1.0, 1.0, 2.0, 0.0, 0.0)
    >>> features({"answer": "George Peter", "dated": 0.0, "best_dated": 1.0}, "Who lived there in 1965?")["dating_gap"]
    1.0
    >>> features({"answer": "Yankee Stadium", "holding": 2, "elsewhere": 2}, "Which park in 1905?")["elsewhere_pile"]
    1.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from haystack_cfrag.common.qualifiers import question_period, question_qualifier

FEATURES = (
    "support", "margin", "min_margin", "rank",
    "holding", "top_holds", "rivals", "pile", "unstated", "score_gap",
    "a_number", "a_year", "a_yesno", "a_words", "a_name",
    "q_who", "q_when", "q_where", "q_which", "q_what", "q_how", "q_yesno", "q_words",
    "period", "dating_gap", "elsewhere_pile",
)
"""Every feature a gate model may name, in one place (a model names a subset, in any order)."""

_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_NUMBER = re.compile(r"[0-9]")
_YES_NO = {"yes", "no"}
_AUX = ("is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had", "will", "would")


def features(reading: Mapping[str, Any], question: str) -> dict[str, float | None]:
    """The gate's features of one reading (`cascade.math.signals`, with the logit reads) and its question."""
    answer = str(reading.get("answer") or "").strip()
    words = answer.split()
    holding, top_holds = reading.get("holding"), reading.get("top_holds")
    rank = reading.get("rank")
    q = question.strip().lower()
    first = q.split()[0] if q.split() else ""
    return {
        "support": _number(reading.get("support")),
        "margin": _number(reading.get("margin")),
        "min_margin": _number(reading.get("min_margin")),
        "rank": None if rank is None else math.log1p(max(0, int(rank))),
        "holding": _number(holding),
        "top_holds": None if top_holds is None else float(bool(top_holds)),
        "rivals": _number(reading.get("rivals")),
        "pile": None if holding is None else float(holding >= 2 and not top_holds),
        "unstated": None if holding is None or not reading.get("passages") else float(holding == 0),
        "score_gap": _number(reading.get("score_gap")),
        "a_number": float(bool(_NUMBER.search(answer))),
        "a_year": float(bool(_YEAR.match(answer))),
        "a_yesno": float(answer.lower().strip(".") in _YES_NO),
        "a_words": float(len(words)),
        "a_name": float(bool(words) and all(w[:1].isupper() for w in words if w[:1].isalpha())),
        "q_who": float(first in ("who", "whom", "whose")),
        "q_when": float(first == "when" or "what year" in q),
        "q_where": float(first == "where"),
        "q_which": float(first == "which"),
        "q_what": float(first == "what"),
        "q_how": float(first == "how"),
        "q_yesno": float(first in _AUX),
        "q_words": float(len(q.split())),
        "period": float(question_period(question) is not None),
        "dating_gap": _dating_gap(reading, question),
        "elsewhere_pile": _elsewhere_pile(reading, question),
    }


def _dating_gap(reading: Mapping[str, Any], question: str) -> float | None:
    """How much better the best passage meets the question's qualifier (dates its period, describes its namesake)
    than one stating the answer: 0 without a qualifier or without a passage stating the answer (nothing then to
    qualify better than); None for a reading made before the gate read periods (the model's mean stands in)."""
    if question_qualifier(question) is None or reading.get("holding") == 0:
        return 0.0
    dated, best = _number(reading.get("dated")), _number(reading.get("best_dated"))
    return None if dated is None or best is None else max(0.0, best - dated)


def _elsewhere_pile(reading: Mapping[str, Any], question: str) -> float | None:
    """1 where two or more passages state the answer and every one dates it to another period than the question's;
    0 without a period; None for a reading made before the gate read it (the model's mean stands in)."""
    if question_period(question) is None:
        return 0.0
    holding, elsewhere = _number(reading.get("holding")), _number(reading.get("elsewhere"))
    return None if holding is None or elsewhere is None else float(holding >= 2 and elsewhere == holding)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None
