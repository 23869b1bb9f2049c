"""A non-generative extractor's pattern logic, pure: parsed sentences (`math.sentences`) -> nodes, relations
(`math.relations`) and causal edges (`CAUSES`, `Triple.cue` = the words that fired).

Cues (Khoo et al. 1998-style): causal verbs ("caused", "led to", "caused by", "resulted from"), prepositions
("because of", "due to"), "because", discourse cues ("therefore", "as a result", ", so") and "so that"; a
clause stands for its focus. No coreference, no "since"/"as", no implicit causation or negation.

>>> from haystack_cfrag.causal_rag.math.sentences import Phrase, Sentence, Token
>>> toks = [Token("Heavy", "heavy", "ADJ", "JJ", "amod", 1), Token("rain", "rain", "NOUN", "NN", "nsubj", 2),
...         Token("caused", "cause", "VERB", "VBD", "ROOT", 2), Token("the", "the", "DET", "DT", "det", 4),
...         Token("flood", "flood", "NOUN", "NN", "dobj", 2), Token(".", ".", "PUNCT", ".", "punct", 2)]
>>> ex = extract_sentences([Sentence(tuple(toks), (Phrase(0, 2), Phrase(3, 5)))])
>>> [(t.head, t.relation, t.tail, t.cue) for t in ex.triples]
[('Heavy rain', 'CAUSES', 'flood', 'caused')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from haystack_cfrag.causal_rag.math.graph import Triple
from haystack_cfrag.causal_rag.math.names import node_key
from haystack_cfrag.causal_rag.math.relations import sentence_relations
from haystack_cfrag.causal_rag.math.sentences import ParsedSentence, Sentence

CAUSAL_RELATION = "CAUSES"
"""The relation of every causal edge (the cue that fired is kept beside it, `Triple.cue`)."""
MAX_TRIPLES_PER_SENTENCE = 40
"""Relations kept from one sentence at most (a run-on list sentence could otherwise make hundreds)."""

# causal verbs: lemma (+ the particle or preposition that must follow) -> the cause is the subject
CAUSAL_VERBS: dict[str, tuple[str, ...]] = {"cause": (), "trigger": (), "spark": (), "provoke": (),
                                            "induce": (), "produce": (), "lead": ("to",), "result": ("in",),
                                            "contribute": ("to",), "bring": ("about",)}
# reversed causal verbs: the subject is the effect, the prepositional object the cause
REVERSED_VERBS: dict[str, tuple[str, ...]] = {"result": ("from",), "stem": ("from",), "arise": ("from",)}
# prepositions whose object is the cause of the clause (or noun) they attach to
CAUSE_PREPOSITIONS: tuple[tuple[str, ...], ...] = (("as", "a", "result", "of"),
                                                   ("as", "a", "consequence", "of"), ("on", "account", "of"),
                                                   ("because", "of"), ("due", "to"), ("owing", "to"),
                                                   ("thanks", "to"))
# discourse cues: the clause they open is the effect of the clause (or sentence) before
EFFECT_CUES: tuple[tuple[str, ...], ...] = (("as", "a", "result"), ("as", "a", "consequence"), ("therefore",),
                                            ("thus",), ("hence",), ("consequently",), ("so",))


@dataclass(frozen=True)
class SentenceGraph:
    """What the patterns found in some sentences: nodes (name, type) and triples (causal ones carry a cue)."""

    nodes: tuple[tuple[str, str], ...]
    triples: tuple[Triple, ...]

    @property
    def causal(self) -> tuple[Triple, ...]:
        return tuple(t for t in self.triples if t.cue)



# ------------------------------------------------------------------ causal cues
def _causal(p: ParsedSentence, previous: ParsedSentence | None) -> list[Triple]:
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
    previous: ParsedSentence | None = None
    for sentence in sentences:
        p = ParsedSentence(sentence)
        causal = _causal(p, previous)  # first: it marks the cues' tokens, which make no node or relation
        for i, (name, kind) in p.phrase_of.items():
            if i not in p.cue_tokens:
                nodes.setdefault(node_key(name), (name, kind))
        pairs = {(node_key(t.head), node_key(t.tail)) for t in causal}
        found = causal + [
            t
            for t in sentence_relations(p)
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


__all__ = ["CAUSAL_RELATION", "CAUSAL_VERBS", "CAUSE_PREPOSITIONS", "EFFECT_CUES", "MAX_TRIPLES_PER_SENTENCE",
           "REVERSED_VERBS", "SentenceGraph", "extract_sentences"]
