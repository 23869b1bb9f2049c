"""Relations from a parsed sentence's dependency tree (pure): subject-verb-object, verb_prep objects, the passive
read actively, participles, a noun's prepositional phrase, apposition; a fired cue's tokens make none.

>>> from haystack_cfrag.causal_rag.math.sentences import Phrase, Sentence, Token
>>> toks = (Token("Nolan", "Nolan", "PROPN", "NNP", "nsubj", 1), Token("directed", "direct", "VERB", "VBD", "ROOT", 1),
...         Token("Memento", "Memento", "PROPN", "NNP", "dobj", 1))
>>> p = ParsedSentence(Sentence(toks, (Phrase(0, 1, "PERSON"), Phrase(2, 3, "WORK_OF_ART"))))
>>> [(t.head, t.relation, t.tail) for t in sentence_relations(p)]
[('Nolan', 'DIRECT', 'Memento')]
"""

from __future__ import annotations

from haystack_cfrag.causal_rag.math.graph import Triple
from haystack_cfrag.causal_rag.math.names import clean_relation
from haystack_cfrag.causal_rag.math.sentences import OBJECTS, ParsedSentence


def verb_relation(p: ParsedSentence, v: int, prep: int | None = None) -> str:
    """The relation verb `v` names: its lemma upper-cased ("IS" for "be"), its particles and `prep`, joined by "_"."""
    lemma = p.toks[v].lemma.lower() or p.lower[v]
    parts = ["IS" if lemma == "be" else lemma.upper()]
    parts += [p.lower[c].upper() for c in p.kids(v, "prt")]
    if prep is not None:
        parts.append(p.lower[prep].upper())
    return clean_relation("_".join(parts))


def sentence_relations(p: ParsedSentence) -> list[Triple]:
    """The relations between the sentence's nodes (verbs' arguments, nouns' prepositions and appositions)."""
    out: list[Triple] = []
    for v, tok in enumerate(p.toks):
        if tok.pos in ("VERB", "AUX"):
            subj = [s for s in p.subjects(v) if p.node(s)]
            patients = [s for s in p.passive_subjects(v) if p.node(s)]
            objs = [o for o in p.with_conj(p.kids(v, *OBJECTS)) if p.node(o)]
            agents = [a for a in p.agents(v) if p.node(a)]
            for s in subj:
                out += [Triple(p.node(s), verb_relation(p, v), p.node(o)) for o in objs]  # type: ignore[arg-type]
            for a in agents:
                out += [Triple(p.node(a), verb_relation(p, v), p.node(s)) for s in patients]  # type: ignore[arg-type]
            for prep in p.kids(v, "prep"):
                for o in p.pobjs(prep):
                    if p.node(o) and prep not in p.cue_tokens and o not in p.cue_tokens:
                        rel = verb_relation(p, v, prep)
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


__all__ = ["sentence_relations", "verb_relation"]
