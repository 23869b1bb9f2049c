"""Parsed sentences in a library-neutral form (`Token`, `Phrase`, `Sentence`: any parser can fill it) and the
patterns' lookups, pure. Nodes are entities (their label) and noun chunks ("Concept"), pronouns excluded.

>>> toks = (Token("The", "the", "DET", "DT", "det", 1), Token("flood", "flood", "NOUN", "NN", "ROOT", 1))
>>> ParsedSentence(Sentence(toks, (Phrase(0, 2),))).phrase_of
{0: ('flood', 'Concept'), 1: ('flood', 'Concept')}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from haystack_cfrag.causal_rag.math.names import clean_name, node_key

CONCEPT = "Concept"
"""The node type of a noun chunk that is not an entity."""
_PRONOUN_TAGS = {"PRP", "PRP$", "WP", "WP$", "WDT", "EX"}
_DROP_FIRST = {"the", "a", "an", "this", "that", "these", "those", "his", "her", "its", "their", "our", "my",
               "your", "whose", "which", "some", "any", "every", "each"}
_SUBJECTS = {"nsubj", "nsubjpass", "csubj"}
OBJECTS = {"dobj", "attr", "oprd", "dative", "acomp"}
"""The dependency labels of a verb's objects."""


@dataclass(frozen=True)
class Token:
    """A parsed token: `head` is the index of its head in the sentence (itself for the root)."""

    text: str
    lemma: str
    pos: str
    tag: str
    dep: str
    head: int


@dataclass(frozen=True)
class Phrase:
    """Tokens [start, end) of the sentence naming one thing; `label`: an entity's type ("" = a noun chunk)."""

    start: int
    end: int
    label: str = ""


@dataclass(frozen=True)
class Sentence:
    """A sentence's tokens and the phrases naming things in it."""

    tokens: tuple[Token, ...]
    phrases: tuple[Phrase, ...] = ()



class ParsedSentence:
    """One sentence with the lookups the patterns need."""

    def __init__(self, sentence: Sentence) -> None:
        self.toks = sentence.tokens
        n = len(self.toks)
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, tok in enumerate(self.toks):
            if 0 <= tok.head < n and tok.head != i:
                self.children[tok.head].append(i)
        self.lower = [t.text.lower() for t in self.toks]
        self.phrase_of: dict[int, tuple[str, str]] = {}  # token index -> (name, type) of its phrase
        self.phrase_start: dict[int, int] = {}  # token index -> first token of its phrase
        self.cue_tokens: set[int] = set()  # tokens of the cues that fired ("as a result": no node "result")
        for ph in sorted(sentence.phrases, key=lambda p: p.label != ""):  # entities last: they win
            named = self._name(ph)
            if named is None:
                continue
            for i in range(max(ph.start, 0), min(ph.end, n)):
                self.phrase_of[i] = named
                self.phrase_start[i] = ph.start

    def _name(self, ph: Phrase) -> tuple[str, str] | None:
        idx = list(range(max(ph.start, 0), min(ph.end, len(self.toks))))
        if not ph.label:
            while idx and (self.lower[idx[0]] in _DROP_FIRST or self.toks[idx[0]].tag in _PRONOUN_TAGS):
                idx.pop(0)
        while idx and (self.toks[idx[-1]].tag == "POS" or self.toks[idx[-1]].pos == "PUNCT"):
            idx.pop()
        if not idx or all(self.toks[i].tag in _PRONOUN_TAGS for i in idx):
            return None
        text = "".join(self.toks[i].text + ("" if i + 1 in idx and self._glued(i) else " ") for i in idx)
        name = clean_name(text)
        return (name, ph.label or CONCEPT) if node_key(name) else None

    def _glued(self, i: int) -> bool:
        nxt = self.toks[i + 1].text if i + 1 < len(self.toks) else ""
        return nxt in ("'s", "’s", "-", "'", "%") or self.toks[i].text == "-"

    # ---------------------------------------------------------- lookups
    def node(self, i: int | None) -> str | None:
        """The node a token stands for: its phrase, a relative pronoun's antecedent; None for other tokens."""
        if i is None:
            return None
        tok = self.toks[i]
        if tok.tag in ("WP", "WDT", "WP$") and tok.dep in _SUBJECTS | {"dobj"}:  # "…, which led to …"
            verb = self.toks[i].head
            if self.toks[verb].dep == "relcl":
                return self.node(self.toks[verb].head)
            return None
        named = self.phrase_of.get(i)
        return named[0] if named else None

    def kids(self, i: int, *deps: str) -> list[int]:
        return [c for c in self.children[i] if self.toks[c].dep in deps]

    def with_conj(self, idx: Iterable[int]) -> list[int]:
        out: list[int] = []
        todo = list(idx)
        while todo:
            i = todo.pop(0)
            out.append(i)
            todo.extend(self.kids(i, "conj"))
        return out

    def subjects(self, v: int) -> list[int]:
        subj = self.kids(v, "nsubj", "csubj")
        if not subj and self.toks[v].dep in ("conj", "xcomp") and self.toks[v].head != v:
            return self.subjects(self.toks[v].head)  # "X rose and flooded the town": X is the subject
        if not subj and self.toks[v].dep == "relcl":
            return [self.toks[v].head]
        if not subj and self.toks[v].dep == "acl" and self.toks[v].tag == "VBG":
            return [self.toks[v].head]  # "a film starring Bale"
        return self.with_conj(subj)

    def passive_subjects(self, v: int) -> list[int]:
        subj = self.kids(v, "nsubjpass")
        if not subj and self.toks[v].dep == "acl" and self.toks[v].tag == "VBN":
            return [self.toks[v].head]  # "a film directed by Nolan"
        return self.with_conj(subj)

    def agents(self, v: int) -> list[int]:
        return self.with_conj(p for a in self.kids(v, "agent") for p in self.kids(a, "pobj"))

    def pobjs(self, prep: int) -> list[int]:
        return self.with_conj(self.kids(prep, "pobj"))

    def clause(self, i: int) -> int:
        """The verb of the clause token `i` is in (walking up the heads)."""
        seen = 0
        while self.toks[i].pos not in ("VERB", "AUX") and self.toks[i].head != i and seen < 50:
            i, seen = self.toks[i].head, seen + 1
        return i

    def focus(self, v: int, effect: bool) -> str | None:
        """The node standing for a clause: an effect clause's patient first, a cause clause's agent first."""
        order = (("nsubjpass", "dobj", "attr", "nsubj"), ("nsubj", "nsubjpass", "dobj", "attr"))[not effect]
        for dep in order:
            for c in self.kids(v, dep) or (self.subjects(v) if dep == "nsubj" else []):
                if (name := self.node(c)) is not None:
                    return name
        for prep in self.kids(v, "prep", "agent"):
            for p in self.pobjs(prep):
                if (name := self.node(p)) is not None:
                    return name
        return None

    def node_after(self, j: int, span: int = 8) -> int | None:
        """The head token of the first node in tokens [j, j + span) (None if a verb or a stop comes first)."""
        for i in range(j, min(j + span, len(self.toks))):
            if self.toks[i].pos in ("VERB", "AUX") or self.lower[i] in (".", ";", ","):
                return None
            if self.node(i) is not None:
                while self.toks[i].head != i and self.phrase_of.get(self.toks[i].head) == self.phrase_of.get(
                    i
                ):
                    i = self.toks[i].head
                return i
        return None

    def verb(self, order: Iterable[int]) -> int | None:
        """The first verb (else auxiliary) met in `order`."""
        aux = None
        for i in order:
            if self.toks[i].pos == "VERB":
                return i
            if aux is None and self.toks[i].pos == "AUX":
                aux = i
        return aux

    def match(self, i: int, words: Sequence[str]) -> bool:
        return tuple(self.lower[i : i + len(words)]) == tuple(words)


__all__ = ["CONCEPT", "OBJECTS", "ParsedSentence", "Phrase", "Sentence", "Token"]
