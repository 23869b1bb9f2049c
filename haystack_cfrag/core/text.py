"""Text helpers: SQuAD normalisation, token overlap, answer mention and agreement, keywords.

Pure functions, no Haystack. The normalisation is the official SQuAD / HotpotQA one
(lower-case, strip punctuation, drop the articles a/an/the, fold white space), so that
"agreement" between drafts and the evaluation's EM mean the same thing.
"""

from __future__ import annotations

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
    """Normalised containment of an answer in a text, in [0, 1].

    1.0 when the normalised answer occurs in the normalised text as a whole-token phrase;
    otherwise the share of the answer's tokens that occur in the text. An empty answer
    mentions nothing (0.0).
    """
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
    return np.array([[mention(a, t) for t in texts] for a in answers], dtype=float).reshape(
        len(answers), len(texts)
    )


def keyword_distribution(text: str) -> np.ndarray:
    """Relative frequencies of the content words of a text (empty array when it has none)."""
    counts = Counter(content_words(text))
    if not counts:
        return np.zeros(0)
    values = np.array(list(counts.values()), dtype=float)
    return values / values.sum()


def bag_of_words_matrix(texts: list[str], vocabulary: dict[str, int] | None = None) -> np.ndarray:
    """Term-count vectors over content words, L2-normalised rows (zero rows for empty texts).

    A lexical stand-in for an embedder where none is configured; cosine of two rows is the
    classic TF cosine.
    """
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
    """A query fit for prompts and encoders: NFKC-normalised, control/format characters removed, spaces folded.

    NFKC folds full-width and compatibility forms (so mixed scripts compare as users expect);
    characters of Unicode category C (control, format such as zero-width or bidi overrides,
    private use, unassigned) become spaces; runs of white space become one space. Letters of
    every script are kept.
    """
    text = unicodedata.normalize("NFKC", text)
    text = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in text)
    return " ".join(text.split())


def truncate_text(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, at the last space when there is one in the last 10 %."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space >= max_chars * 0.9 else cut
