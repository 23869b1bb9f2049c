"""Pure text helpers: SQuAD normalisation (so drafts' agreement and EM mean the same), overlap, mention, keywords."""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections import Counter

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_WORD = re.compile(r"\w+", re.UNICODE)

# A small English stop-word list: enough to find the content words of questions and answers.
STOPWORDS = frozenset(
    """a an the of in on at to for from by with about as into over after before between under
    and or but nor so yet if then than that this these those there here is are was were be been
    being am do does did done has have had having will would shall should can could may might must
    who whom whose which what when where why how i you he she it we they me him her us them my your
    his its our their mine yours not no yes also just only very more most much many some any all
    each every both either neither one own same such too s t""".split()
)


def normalize_answer(text: str) -> str:
    """SQuAD/HotpotQA answer normalisation: lower, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """Tokens of the normalised text (the SQuAD F1 tokens)."""
    return normalize_answer(text).split()


def content_words(text: str) -> list[str]:
    """Lower-cased word tokens without stop words: the keywords of a question or answer."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 between two strings (1.0 when both normalise to nothing)."""
    pred, ref = tokens(prediction), tokens(reference)
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    common = Counter(pred) & Counter(ref)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_iou(a: str, b: str) -> float:
    """Jaccard overlap of the normalised token sets (1.0 when both are empty)."""
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def answers_agree(a: str, b: str, threshold: float = 0.8) -> bool:
    """Two answers agree when they are equal after normalisation or their token F1 ≥ threshold."""
    na, nb = normalize_answer(a), normalize_answer(b)
    if na == nb:
        return True
    return token_f1(a, b) >= threshold


def agreement_matrix(answers: list[str], threshold: float = 0.8) -> np.ndarray:
    """Boolean matrix A[i, j] = answers_agree(answers[i], answers[j]); the diagonal is True."""
    n = len(answers)
    norm = [normalize_answer(a) for a in answers]
    out = np.eye(n, dtype=bool)
    for i in range(n):  # answers are few (M ≤ 5): the pairwise loop is over drafts, not documents
        for j in range(i + 1, n):
            same = norm[i] == norm[j] or token_f1(answers[i], answers[j]) >= threshold
            out[i, j] = out[j, i] = same
    return out


def mention(answer: str, text: str) -> float:
    """Containment of an answer in a text: 1.0 as a whole-token phrase, else the share of its tokens present
    (0.0 for an empty answer)."""
    ans = tokens(answer)
    if not ans:
        return 0.0
    txt = tokens(text)
    if not txt:
        return 0.0
    if f" {' '.join(ans)} " in f" {' '.join(txt)} ":
        return 1.0
    present = set(txt)
    return sum(1 for t in ans if t in present) / len(ans)


def mention_matrix(answers: list[str], texts: list[str]) -> np.ndarray:
    """M[j, i] = mention(answers[j], texts[i])."""
    return np.array([[mention(a, t) for t in texts] for a in answers], dtype=float).reshape(len(answers),
                                                                                            len(texts))


def keyword_distribution(text: str) -> np.ndarray:
    """Relative frequencies of the content words of a text (empty array when it has none)."""
    counts = Counter(content_words(text))
    if not counts:
        return np.zeros(0)
    values = np.array(list(counts.values()), dtype=float)
    return values / values.sum()


def bag_of_words_matrix(texts: list[str], vocabulary: dict[str, int] | None = None) -> np.ndarray:
    """Term-count vectors over content words, L2-normalised rows (zero for empty texts): a lexical embedder."""
    if vocabulary is None:
        vocabulary = {}
        for text in texts:
            for w in content_words(text):
                vocabulary.setdefault(w, len(vocabulary))
    mat = np.zeros((len(texts), max(1, len(vocabulary))))
    for i, text in enumerate(texts):
        for w in content_words(text):
            if w in vocabulary:
                mat[i, vocabulary[w]] += 1.0
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)


def clean_query(text: str) -> str:
    """A query fit for prompts and encoders: stream-safe, NFKC, category-C characters as spaces, spaces folded."""
    text = unicodedata.normalize("NFKC", stream_safe(text))
    text = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in text)
    return " ".join(text.split())


MAX_NON_STARTERS = 30
"""UAX #15's Stream-Safe Text Format: at most 30 non-starters (combining marks) in a row."""
_CGJ = "\u034f"  # COMBINING GRAPHEME JOINER: a starter that joins nothing, the format's separator


def stream_safe(text: str) -> str:
    """`text` in UAX #15's Stream-Safe Text Format (a CGJ after every 30 non-starters in a row), so that
    normalising is linear in its length; unchanged without such a run."""
    if text.isascii():
        return text
    info, suspicious = _non_starter_table()
    if suspicious.search(text) is None:
        return text
    out: list[str] = []
    run = 0
    for ch in text:
        lead, trail, whole = info.get(ch, (0, 0, False))
        if run + lead > MAX_NON_STARTERS:
            out.append(_CGJ)
            run = 0
        out.append(ch)
        run = run + lead if whole else trail
    return "".join(out)


@functools.cache
def _non_starter_table() -> tuple[dict[str, tuple[int, int, bool]], re.Pattern[str]]:
    """Per character with non-starters in its NFKD: (leading, trailing, all non-starters); and a pattern of
    runs long enough to pass the cap. Built once from this Python's Unicode tables (planes 0-2)."""
    info: dict[str, tuple[int, int, bool]] = {}
    for cp in range(0x30000):
        ch = chr(cp)
        if not (unicodedata.combining(ch) or unicodedata.decomposition(ch)):
            continue
        classes = [unicodedata.combining(c) for c in unicodedata.normalize("NFKD", ch)]
        lead = next((i for i, c in enumerate(classes) if c == 0), len(classes))
        trail = next((i for i, c in enumerate(reversed(classes)) if c == 0), len(classes))
        if lead or trail:
            info[ch] = (lead, trail, lead == len(classes))
    leads = sorted(ord(ch) for ch, (lead, _, _) in info.items() if lead)
    max_lead = max(info[chr(cp)][0] for cp in leads)
    max_trail = max(trail for _, trail, _ in info.values())
    shortest = (MAX_NON_STARTERS - max_trail) // max_lead + 1  # fewer in a row never reach the cap
    ranges, start = [], leads[0]
    for prev, cp in zip(leads, [*leads[1:], None], strict=True):
        if cp != prev + 1:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}" if prev > start else re.escape(chr(start)))
            start = cp
    return info, re.compile(f"[{''.join(ranges)}]{{{shortest},}}")


def truncate_text(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, at the last space when there is one in the last 10 %."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space >= max_chars * 0.9 else cut
