"""Counterfactual questions without a model: the question's words swapped by rule (issue 61).

The reader's counterfactual questions (paper 4.1.1) are mostly one of a few edits of the question:
an opposite ("largest" → "smallest"), a sibling role ("directed" → "produced"), another life event
("born" → "buried"), another year. These rules make the same edits in microseconds, with no call:
each candidate is the question with ONE word (or year, or ordinal) replaced, typed as the paper's
transformations are (DESIGN.md): "categorical" (an opposite), "role" (a sibling verb or noun),
"temporal" (a year or an ordinal shifted). What the rules cannot write — another entity of the same
kind ("the Eiffel Tower" for "the Petronas Towers"), a question about another attribute — the
reader's questions can; `CounterfactualRewriter` says so beside what it replaces.

>>> [c["question"] for c in rewrite_candidates("What is the largest desert in the world?")]
['What is the smallest desert in the world?']
>>> [(c["question"], c["type"]) for c in rewrite_candidates("Who directed the 1993 film Kong?", per_slot=1)]
[('Who produced the 1993 film Kong?', 'role'), ('Who directed the 1983 film Kong?', 'temporal')]
"""

from __future__ import annotations

import re

OPPOSITES: tuple[tuple[str, str], ...] = (
    ("largest", "smallest"), ("biggest", "smallest"), ("highest", "lowest"), ("tallest", "shortest"),
    ("longest", "shortest"), ("deepest", "shallowest"), ("oldest", "youngest"), ("earliest", "latest"),
    ("first", "last"), ("most", "least"), ("best", "worst"), ("brightest", "faintest"), ("heaviest", "lightest"),
    ("fastest", "slowest"), ("hottest", "coldest"), ("richest", "poorest"), ("wettest", "driest"),
    ("closest", "farthest"), ("northernmost", "southernmost"), ("easternmost", "westernmost"),
    ("larger", "smaller"), ("bigger", "smaller"), ("higher", "lower"), ("taller", "shorter"), ("longer", "shorter"),
    ("older", "younger"), ("earlier", "later"), ("more", "fewer"), ("before", "after"), ("north", "south"),
    ("east", "west"), ("original", "current"),
)
"""Word ↔ its opposite ("categorical"): the first pair a word appears in gives its opposite."""

ROLE_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("directed", "produced", "wrote", "edited", "narrated"),
    ("composed", "wrote", "performed", "recorded", "sang"),
    ("designed", "built", "commissioned", "owned", "painted", "sculpted"),
    ("founded", "discovered", "invented", "created", "named", "coined", "bought", "sold"),
    ("won", "lost", "managed", "coached", "led", "captained", "hosted"),
    ("stole", "found", "returned", "painted"),
    ("born", "buried", "married", "educated", "raised", "baptized"),
    ("director", "producer", "writer", "editor", "cinematographer"),
    ("composer", "lyricist", "performer", "singer"),
    ("architect", "builder", "engineer", "owner", "designer"),
    ("founder", "owner", "president", "chairman", "ceo"),
    ("author", "illustrator", "publisher", "translator", "editor"),
    ("manager", "coach", "captain", "owner"),
    ("wife", "husband", "father", "mother", "son", "daughter", "brother", "sister"),
    ("capital", "largest city", "oldest city"),
    ("language", "currency", "religion", "anthem"),
    ("actor", "director", "producer"),
    ("painter", "sculptor", "architect"),
)
"""Families of roles ("role"): a word is swapped for the other members of the first family it is in."""

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_ORDINAL = re.compile(r"\b([1-9][0-9]{0,2})(st|nd|rd|th)\b", re.IGNORECASE)
YEAR_SHIFT = 10
"""A year is moved this many years back (forward when that would be before year 1000)."""


def _suffix(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _cased(word: str, like: str) -> str:
    """`word` in the case of `like` (Capitalised, UPPER or lower)."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _replace(query: str, start: int, end: int, new: str) -> str:
    return query[:start] + _cased(new, query[start:end]) + query[end:]


def _opposite(word: str) -> str | None:
    for a, b in OPPOSITES:
        if word == a:
            return b
        if word == b:
            return a
    return None


def _siblings(phrase: str) -> list[str]:
    for family in ROLE_FAMILIES:
        if phrase in family:
            return [w for w in family if w != phrase]
    return []


def _words(query: str) -> list[tuple[int, int, str]]:
    """(start, end, lower-cased text) of each word, and of each two-word phrase a family names."""
    spans = [(m.start(), m.end(), m.group(0).lower()) for m in re.finditer(r"[A-Za-z]+", query)]
    pairs = [(a[0], b[1], f"{a[2]} {b[2]}") for a, b in zip(spans, spans[1:]) if query[a[1]:b[0]] == " "]
    return [p for p in pairs if _siblings(p[2])] + spans


def rewrite_candidates(query: str, *, per_slot: int = 2) -> list[dict[str, str]]:
    """Candidate counterfactual questions of `query`, each with one slot rewritten.

    :param query: the question.
    :param per_slot: at most this many rewrites of each matched word (its first siblings).
    :returns: dicts with "question", "type" ("categorical", "role", "temporal") and "answer_hint" ("": the
        rules know no answer), in the order the slots appear (categorical and role first, then years and
        ordinals); no duplicates, never the query itself.

    >>> [c["question"] for c in rewrite_candidates("In which city was the 43rd pope born?", per_slot=1)]
    ['In which city was the 43rd pope buried?', 'In which city was the 42nd pope born?']
    >>> rewrite_candidates("Hello?")
    []
    """
    out: list[dict[str, str]] = []
    taken: list[tuple[int, int]] = []

    def add(question: str, kind: str) -> None:
        if question != query and all(c["question"] != question for c in out):
            out.append({"question": question, "type": kind, "answer_hint": ""})

    for start, end, text in _words(query):
        if any(start < e and s < end for s, e in taken):
            continue  # a word already rewritten inside a two-word phrase
        opposite = _opposite(text)
        siblings = [] if opposite else _siblings(text)[:per_slot]
        if opposite:
            add(_replace(query, start, end, opposite), "categorical")
        for sibling in siblings:
            add(_replace(query, start, end, sibling), "role")
        if opposite or siblings:
            taken.append((start, end))
    for m in _YEAR.finditer(query):
        year = int(m.group(1))
        shifted = year - YEAR_SHIFT if year - YEAR_SHIFT >= 1000 else year + YEAR_SHIFT
        add(query[: m.start()] + str(shifted) + query[m.end():], "temporal")
    for m in _ORDINAL.finditer(query):
        n = int(m.group(1))
        other = n - 1 if n > 1 else n + 1
        add(query[: m.start()] + f"{other}{_suffix(other)}" + query[m.end():], "temporal")
    return out


__all__ = ["OPPOSITES", "ROLE_FAMILIES", "YEAR_SHIFT", "rewrite_candidates"]
