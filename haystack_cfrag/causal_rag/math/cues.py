"""A non-generative extractor's pattern logic, pure: parsed sentences -> nodes, relations, causal edges.

Input is a parsed sentence in a library-neutral form (`Token`: text, lemma, part of speech,
fine tag, dependency label, head index; `Phrase`: an entity or a noun chunk). The spaCy
component (`SpacyGraphExtractor`) converts its `Doc` into this form; any other parser can.

- **Nodes**: entities (typed by their label) and noun chunks (type "Concept"); pronouns and
  relative pronouns are no nodes (no coreference here), leading articles and possessives are
  dropped from the name.
- **Relations** from the dependency tree: subject -verb-> object ("Nolan DIRECT The Dark
  Knight"), subject -verb_prep-> prepositional object ("Scott REACH_AT pole"), the passive
  read actively ("X was directed by Nolan": "Nolan DIRECT X"), participles on a noun ("a film
  starring Bale": "film STAR Bale"), a noun's prepositional phrase ("flood IN Paris") and
  apposition ("Nolan IS director").
- **Causal edges** (relation `CAUSES`, `Triple.cue` = the words that fired), from cue patterns
  (Khoo et al. 1998-style): causal verbs with their subject as the cause ("caused", "led to",
  "resulted in", "triggered", the passive "caused by" and the reversed "resulted from");
  prepositions whose object is the cause ("because of", "due to", "owing to", "as a result
  of"); the conjunction "because" (its clause is the cause of the main clause); and discourse
  cues whose clause is the effect of the clause or sentence before ("therefore", "thus",
  "hence", "consequently", "as a result", ", so"); "so that" (the main clause's purpose).
  A clause stands in the graph for its focus: the patient of the effect clause (passive
  subject, then object), the agent of the cause clause (subject, then object).

Known limits (what a trained tagger such as UniCausal would do better): no coreference ("he",
"it" end no edge), "since" and "as" are not read as causal (mostly temporal), implicit
causation without a cue is missed, and negation ("did not cause") is not detected.

>>> toks = [Token("Heavy", "heavy", "ADJ", "JJ", "amod", 1), Token("rain", "rain", "NOUN", "NN", "nsubj", 2),
...         Token("caused", "cause", "VERB", "VBD", "ROOT", 2), Token("the", "the", "DET", "DT", "det", 4),
...         Token("flood", "flood", "NOUN", "NN", "dobj", 2), Token(".", ".", "PUNCT", ".", "punct", 2)]
>>> ex = extract_sentences([Sentence(tuple(toks), (Phrase(0, 2), Phrase(3, 5)))])
>>> [(t.head, t.relation, t.tail, t.cue) for t in ex.triples]
[('Heavy rain', 'CAUSES', 'flood', 'caused')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from haystack_cfrag.causal_rag.math.graph import Triple
from haystack_cfrag.causal_rag.math.names import clean_name, clean_relation, node_key

CAUSAL_RELATION = "CAUSES"
"""The relation of every causal edge (the cue that fired is kept beside it, `Triple.cue`)."""
CONCEPT = "Concept"
"""The node type of a noun chunk that is not an entity."""
MAX_TRIPLES_PER_SENTENCE = 40
"""Relations kept from one sentence at most (a run-on list sentence could otherwise make hundreds)."""

# causal verbs: lemma (+ the particle or preposition that must follow) -> the cause is the subject
CAUSAL_VERBS: dict[str, tuple[str, ...]] = {
    "cause": (),
    "trigger": (),
    "spark": (),
    "provoke": (),
    "induce": (),
    "produce": (),
    "lead": ("to",),
    "result": ("in",),
    "contribute": ("to",),
    "bring": ("about",),
}
# reversed causal verbs: the subject is the effect, the prepositional object the cause
REVERSED_VERBS: dict[str, tuple[str, ...]] = {"result": ("from",), "stem": ("from",), "arise": ("from",)}
# prepositions whose object is the cause of the clause (or noun) they attach to
CAUSE_PREPOSITIONS: tuple[tuple[str, ...], ...] = (
    ("as", "a", "result", "of"),
    ("as", "a", "consequence", "of"),
    ("on", "account", "of"),
    ("because", "of"),
    ("due", "to"),
    ("owing", "to"),
    ("thanks", "to"),
)
# discourse cues: the clause they open is the effect of the clause (or sentence) before
EFFECT_CUES: tuple[tuple[str, ...], ...] = (
    ("as", "a", "result"),
    ("as", "a", "consequence"),
    ("therefore",),
    ("thus",),
    ("hence",),
    ("consequently",),
    ("so",),
)
_PRONOUN_TAGS = {"PRP", "PRP$", "WP", "WP$", "WDT", "EX"}
_DROP_FIRST = {
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "his",
    "her",
    "its",
    "their",
    "our",
    "my",
    "your",
    "whose",
    "which",
    "some",
    "any",
    "every",
    "each",
}
_SUBJECTS = {"nsubj", "nsubjpass", "csubj"}
_OBJECTS = {"dobj", "attr", "oprd", "dative", "acomp"}


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
    tokens: tuple[Token, ...]
    phrases: tuple[Phrase, ...] = ()


@dataclass(frozen=True)
class SentenceGraph:
    """What the patterns found in some sentences: nodes (name, type) and triples (causal ones carry a cue)."""

    nodes: tuple[tuple[str, str], ...]
    triples: tuple[Triple, ...]

    @property
    def causal(self) -> tuple[Triple, ...]:
        return tuple(t for t in self.triples if t.cue)


class _Parse:
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


# ------------------------------------------------------------------ relations
def _verb_relation(p: _Parse, v: int, prep: int | None = None) -> str:
    lemma = p.toks[v].lemma.lower() or p.lower[v]
    parts = ["IS" if lemma == "be" else lemma.upper()]
    parts += [p.lower[c].upper() for c in p.kids(v, "prt")]
    if prep is not None:
        parts.append(p.lower[prep].upper())
    return clean_relation("_".join(parts))


def _relations(p: _Parse) -> list[Triple]:
    out: list[Triple] = []
    for v, tok in enumerate(p.toks):
        if tok.pos in ("VERB", "AUX"):
            subj = [s for s in p.subjects(v) if p.node(s)]
            patients = [s for s in p.passive_subjects(v) if p.node(s)]
            objs = [o for o in p.with_conj(p.kids(v, *_OBJECTS)) if p.node(o)]
            agents = [a for a in p.agents(v) if p.node(a)]
            for s in subj:
                out += [Triple(p.node(s), _verb_relation(p, v), p.node(o)) for o in objs]  # type: ignore[arg-type]
            for a in agents:
                out += [Triple(p.node(a), _verb_relation(p, v), p.node(s)) for s in patients]  # type: ignore[arg-type]
            for prep in p.kids(v, "prep"):
                for o in p.pobjs(prep):
                    if p.node(o) and prep not in p.cue_tokens and o not in p.cue_tokens:
                        rel = _verb_relation(p, v, prep)
                        out += [Triple(p.node(s), rel, p.node(o)) for s in subj + patients]  # type: ignore[arg-type]
        elif (head := p.node(v)) is not None and p.phrase_start.get(v) is not None:
            for prep in p.kids(v, "prep"):
                out += [
                    Triple(head, clean_relation(p.lower[prep].upper()), p.node(o))  # type: ignore[arg-type]
                    for o in p.pobjs(prep)
                    if p.node(o)
                ]
            out += [Triple(head, "IS", p.node(a)) for a in p.kids(v, "appos") if p.node(a)]  # type: ignore[arg-type]
    return out


# ------------------------------------------------------------------ causal cues
def _causal(p: _Parse, previous: _Parse | None) -> list[Triple]:
    out: list[Triple] = []

    def edge(cause: str | None, effect: str | None, cue: str) -> None:
        if cause and effect and node_key(cause) != node_key(effect):
            out.append(Triple(cause, CAUSAL_RELATION, effect, cue=cue))

    n = len(p.toks)
    for i in range(n):
        tok = p.toks[i]
        lemma = tok.lemma.lower()
        if tok.pos == "VERB" and (lemma in CAUSAL_VERBS or lemma in REVERSED_VERBS):
            for table, reverse in ((CAUSAL_VERBS, False), (REVERSED_VERBS, True)):
                need = table.get(lemma)
                if need is None:
                    continue
                follow = [c for c in p.children[i] if p.lower[c] in need] if need else []
                if need and not follow:
                    continue
                cue = " ".join([p.lower[i], *(p.lower[c] for c in follow[:1])])
                after = [q for c in follow for q in p.pobjs(c)] or p.with_conj(p.kids(i, "dobj"))
                agents, patients = p.agents(i), p.passive_subjects(i)
                if agents and patients and not reverse:  # "the flood was caused by heavy rain"
                    for a in agents:
                        for s in patients:
                            edge(p.node(a), p.node(s), f"{p.lower[i]} by")
                    continue
                for s in p.subjects(i):
                    for o in after:
                        cause, effect = (p.node(o), p.node(s)) if reverse else (p.node(s), p.node(o))
                        edge(cause, effect, cue)
        for words in CAUSE_PREPOSITIONS:
            if p.match(i, words):
                effect_at = p.toks[i].head
                effect = (
                    p.node(effect_at)
                    if p.toks[effect_at].pos in ("NOUN", "PROPN")
                    else p.focus(p.clause(effect_at), effect=True)
                )
                for cause_at in p.with_conj([j] if (j := p.node_after(i + len(words))) is not None else []):
                    edge(p.node(cause_at), effect, " ".join(words))
                p.cue_tokens.update(range(i, i + len(words)))
                break
        if p.lower[i] == "because" and not p.match(i, ("because", "of")):
            cause_v = p.verb(range(i + 1, n))
            if (
                cause_v is not None
            ):  # "Y because X" or "Because X, Y": the main clause is the cause clause's head
                head = p.clause(p.toks[cause_v].head)
                effect_v = head if head != cause_v else p.verb(range(i - 1, -1, -1))
                if effect_v is not None and effect_v != cause_v:
                    edge(p.focus(cause_v, effect=False), p.focus(effect_v, effect=True), "because")
                    p.cue_tokens.add(i)
        if p.match(i, ("so", "that")):
            purpose_v = p.toks[i + 1].head
            main_v = p.toks[purpose_v].head
            if purpose_v != main_v:
                edge(p.focus(p.clause(main_v), effect=False), p.focus(purpose_v, effect=True), "so that")
            p.cue_tokens.update((i, i + 1))
            continue
        for words in EFFECT_CUES:
            if (
                not p.match(i, words)
                or p.match(i, (*words, "of"))
                or (
                    words == ("so",)
                    and (
                        p.match(i, ("so", "that"))
                        or tok.dep not in ("cc", "advmod", "mark")
                        or i + 1 < n
                        and p.toks[i + 1].pos in ("ADJ", "ADV")
                    )
                )
            ):
                continue
            effect_v = p.verb(range(i + len(words), n))  # the clause the cue opens is the effect
            cause_v = p.verb(range(i - 1, -1, -1))  # the clause before it, or the sentence before, the cause
            effect = p.focus(effect_v, effect=True) if effect_v is not None else None
            if cause_v is not None:
                cause = p.focus(cause_v, effect=False)
            elif previous is not None:
                root = next((k for k, t in enumerate(previous.toks) if t.head == k), None)
                cause = previous.focus(root, effect=False) if root is not None else None
            else:
                cause = None
            p.cue_tokens.update(range(i, i + len(words)))
            edge(cause, effect, " ".join(words))
            break
    return out


def extract_sentences(sentences: Sequence[Sentence], *, max_triples: int = 500) -> SentenceGraph:
    """The nodes, relations and causal edges of consecutive sentences of one text (bounded, never raises)."""
    nodes: dict[str, tuple[str, str]] = {}
    triples: dict[tuple[str, str, str], Triple] = {}
    previous: _Parse | None = None
    for sentence in sentences:
        p = _Parse(sentence)
        causal = _causal(p, previous)  # first: it marks the cues' tokens, which make no node or relation
        for i, (name, kind) in p.phrase_of.items():
            if i not in p.cue_tokens:
                nodes.setdefault(node_key(name), (name, kind))
        pairs = {(node_key(t.head), node_key(t.tail)) for t in causal}
        found = causal + [
            t
            for t in _relations(p)
            if (node_key(t.head), node_key(t.tail)) not in pairs
            and (node_key(t.tail), node_key(t.head)) not in pairs
        ]
        kept = 0
        for t in found:
            if kept >= MAX_TRIPLES_PER_SENTENCE or len(triples) >= max_triples:
                break
            key = (node_key(t.head), t.relation.casefold(), node_key(t.tail))
            if key[0] and key[2] and key[0] != key[2] and key not in triples:
                head_type = nodes.get(key[0], ("", ""))[1]
                tail_type = nodes.get(key[2], ("", ""))[1]
                triples[key] = Triple(t.head, t.relation, t.tail, head_type, tail_type, t.cue)
                kept += 1
        previous = p
    return SentenceGraph(nodes=tuple(nodes.values()), triples=tuple(triples.values()))


__all__ = [
    "CAUSAL_RELATION",
    "CAUSAL_VERBS",
    "CAUSE_PREPOSITIONS",
    "CONCEPT",
    "EFFECT_CUES",
    "MAX_TRIPLES_PER_SENTENCE",
    "REVERSED_VERBS",
    "Phrase",
    "Sentence",
    "SentenceGraph",
    "Token",
    "extract_sentences",
]
