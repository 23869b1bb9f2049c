"""CDF-RAG's hallucination check, pure (paper 002, §2.5): S_hall = 1 − |K ∩ Y| / |Y|, the share of the answer's
claims Y whose support stays below `support_threshold`; rewrite when S_hall > δ (δ is ours)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

DELTA = 0.5
"""δ: rewrite when S_hall > δ (ours: more than half the claims unsupported)."""
SUPPORT_THRESHOLD = -1.0
"""A claim is supported when its mean token log-probability is ≥ this (ours; calibrate on the reader)."""
SUPPORT_RANGE = (-20.0, 0.0)
"""The range a support threshold may take (nats per token)."""
REWRITE_MODES = ("correct", "reanswer")
"""The rewrite's prompt: "correct" (the paper's knowledge rewrite) or "reanswer" (a fresh answer)."""
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


def split_claims(answer: str, *, max_claims: int = MAX_CLAIMS,
                 short_answer_words: int = SHORT_ANSWER_WORDS) -> list[str]:
    """The answer's claims: its lines, sentences and ';'-clauses (list marks and 'Answer:' removed); a short answer
    is one claim, claims past `max_claims` join the last; "and" and "," do not split.

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
    """S_hall: the share of claims whose support stays below the threshold (None without claims).

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


__all__ = ["ANSWER_LABEL", "DELTA", "MAX_CLAIMS", "REWRITE_MODES", "SHORT_ANSWER_WORDS", "SUPPORT_RANGE",
           "SUPPORT_THRESHOLD", "hallucination_score", "should_rewrite", "split_claims", "supported_claims"]
