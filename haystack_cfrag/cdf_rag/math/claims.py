"""CDF-RAG's hallucination check, pure (paper 002, §2.5): an answer's claims and S_hall.

- Claims: an answer split into sentences and clauses (`split_claims`); a short answer (an
  entity, a date, a few words) is one claim.
- S_hall = 1 − |K ∩ Y| / |Y|: Y the claims, K ∩ Y the claims whose support (the reader's
  length-normalised log P(claim | q, K)) reaches `support_threshold`.
- Decision: rewrite when S_hall > δ (strict, as in the paper); None (no claims) decides nothing.

The paper gives no value for δ; the default below is ours (docs/cdf_rag.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence


DELTA = 0.5
"""δ: rewrite when S_hall > δ (ours: more than half the claims unsupported)."""
SUPPORT_THRESHOLD = -1.0
"""A claim is supported when its mean token log-probability is ≥ this (≈ a geometric-mean token
probability of e^-1 ≈ 0.37; ours, to be calibrated on the reader)."""
SUPPORT_RANGE = (-20.0, 0.0)
"""The range a support threshold may take (nats per token)."""
REWRITE_MODES = ("correct", "reanswer")
"""The rewrite's prompt: "correct" asks to correct or remove the unsupported statements (the paper's
knowledge rewrite); "reanswer" asks for a fresh answer from the evidence, naming the flagged one."""
MAX_CLAIMS = 12
"""Claims past this many are joined into the last one (bounds the scorer calls per answer)."""
SHORT_ANSWER_WORDS = 8
"""An answer of at most this many words with no sentence break inside is one claim."""

# ---------------------------------------------------------------- claims
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc inc ltd co corp no vol fig al gen col lt sgt rev mt ft e.g i.e u.s u.k".split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)])\s+")
ANSWER_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*", re.IGNORECASE)


def _ends_with_abbreviation(text: str) -> bool:
    """Whether `text` (a sentence candidate ending with '.') ends with an abbreviation or an initial."""
    last = text.rstrip(".").rsplit(None, 1)[-1] if text.strip(". ") else ""
    word = last.lower().strip("(\"'")
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or bool(re.fullmatch(r"(?:\w\.)+\w", word))


def _sentences(text: str) -> list[str]:
    parts = _SENTENCE_END.split(text)
    out: list[str] = []
    for part in parts:
        if out and out[-1].endswith(".") and _ends_with_abbreviation(out[-1]):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return out


def split_claims(answer: str, *, max_claims: int = MAX_CLAIMS, short_answer_words: int = SHORT_ANSWER_WORDS) -> list[str]:
    """The answer's claims: its lines, sentences and ';'-clauses, with list marks and an 'Answer:' label removed.

    A short answer (at most `short_answer_words` words, no sentence break inside) is one claim;
    a piece without a letter or digit is no claim; claims past `max_claims` are joined into the
    last one. Clauses joined by "and" or "," stay together (splitting "Tom and Jerry" would
    invent claims).

    >>> split_claims("Christian Bale")
    ['Christian Bale']
    >>> split_claims("Smoking causes cancer. Dr. Smith showed it in 1950; the U.S. agreed.")
    ['Smoking causes cancer.', 'Dr. Smith showed it in 1950', 'the U.S. agreed.']
    >>> split_claims("  ")
    []
    """
    if max_claims < 1:
        raise ValueError(f"'max_claims' must be an integer ≥ 1, got {max_claims!r}.")
    text = ANSWER_LABEL.sub("", (answer or "").strip())
    if not text:
        return []
    if len(text.split()) <= short_answer_words and len(_sentences(text)) == 1 and "\n" not in text and ";" not in text:
        return [text] if re.search(r"\w", text) else []
    claims: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        for sentence in _sentences(line):
            for clause in sentence.split(";"):
                clause = clause.strip()
                if re.search(r"\w", clause):
                    claims.append(clause)
    if len(claims) > max_claims:
        claims = claims[: max_claims - 1] + [" ".join(claims[max_claims - 1 :])]
    return claims


# ---------------------------------------------------------------- S_hall
def supported_claims(supports: Sequence[float], support_threshold: float = SUPPORT_THRESHOLD) -> list[bool]:
    """Per claim: whether its support (a log-probability) reaches `support_threshold` (−inf never does)."""
    out = []
    for s in supports:
        if not isinstance(s, (int, float)) or isinstance(s, bool) or math.isnan(s):
            raise ValueError(f"a claim's support must be a number (a log-probability), got {s!r}.")
        out.append(s >= support_threshold)
    return out


def hallucination_score(supports: Sequence[float], support_threshold: float = SUPPORT_THRESHOLD) -> float | None:
    """S_hall = 1 − |K ∩ Y| / |Y|: the share of claims whose support stays below the threshold.

    None when there is no claim (an empty answer: nothing is measured, nothing decided).

    >>> hallucination_score([-0.1, -3.0, -0.5, -2.0], -1.0)
    0.5
    >>> hallucination_score([]) is None
    True
    """
    ok = supported_claims(supports, support_threshold)
    if not ok:
        return None
    return 1.0 - sum(ok) / len(ok)


def should_rewrite(s_hall: float | None, delta: float = DELTA) -> bool:
    """Rewrite when S_hall > δ (strictly; None never rewrites).

    >>> should_rewrite(0.5, 0.5), should_rewrite(0.51, 0.5), should_rewrite(None, 0.0)
    (False, True, False)
    """
    return s_hall is not None and s_hall > delta


__all__ = [
    "ANSWER_LABEL",
    "DELTA",
    "MAX_CLAIMS",
    "REWRITE_MODES",
    "SHORT_ANSWER_WORDS",
    "SUPPORT_RANGE",
    "SUPPORT_THRESHOLD",
    "hallucination_score",
    "should_rewrite",
    "split_claims",
    "supported_claims",
]
