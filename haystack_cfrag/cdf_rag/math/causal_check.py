"""CDF-RAG's causal check, pure (paper 002, §2.4): S_causal, the share of the retrieved edges C → E the answer's
causal statements respect (`edge_verdict`) over those it speaks to; regenerate when S_causal < τ (τ is ours).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from haystack_cfrag.cdf_rag.math.claims import ANSWER_LABEL, split_claims
from haystack_cfrag.common.text import content_words, normalize_answer

TAU = 0.5
"""τ: regenerate when S_causal < τ (ours: fewer than half the edges the answer speaks to respected)."""

# ---------------------------------------------------------------- S_causal
_FORWARD = (
    r"causes|caused|cause|leads\s+to|led\s+to|lead\s+to|results\s+in|resulted\s+in|result\s+in|produces|produced"
    r"|triggers|triggered|trigger|brings\s+about|brought\s+about|gives\s+rise\s+to|gave\s+rise\s+to"
    r"|contributes\s+to|contributed\s+to|is\s+responsible\s+for|was\s+responsible\s+for|induces|induced"
)
_BACKWARD = (
    r"is\s+caused\s+by|was\s+caused\s+by|are\s+caused\s+by|were\s+caused\s+by|caused\s+by|results\s+from"
    r"|resulted\s+from|result\s+from|stems\s+from|stemmed\s+from|is\s+due\s+to|was\s+due\s+to|are\s+due\s+to"
    r"|due\s+to|because\s+of|owing\s+to|is\s+a\s+result\s+of|is\s+the\s+result\s+of|as\s+a\s+result\s+of"
    r"|is\s+triggered\s+by|was\s+triggered\s+by|is\s+produced\s+by|was\s+produced\s+by|is\s+induced\s+by"
    r"|because"
)
_NEGATORS = (r"(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|is\s+not|isn't|was\s+not|wasn't|are\s+not|"
             r"aren't|never|not|no\s+longer|cannot|can't)")
_CONSEQUENCE = r"(?:,?\s*(?:so|therefore|thus|hence|consequently)\b)"
_CONNECTIVE = re.compile(
    rf"(?P<neg>\b{_NEGATORS}\s+)?\b(?:(?P<back>{_BACKWARD})|(?P<fwd>{_FORWARD}))\b|(?P<cons>{_CONSEQUENCE})",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CausalStatement:
    """A directed statement read from a claim: `cause` → `effect`, possibly negated."""

    cause: str
    effect: str
    negated: bool = False


def causal_statements(text: str) -> list[CausalStatement]:
    """Directed cause → effect statements in `text`: per sentence, its first causal connective ("A causes B",
    "B is caused by A", …) splits it; a negator right before it negates it.

    >>> causal_statements("Smoking causes lung cancer.")
    [CausalStatement(cause='Smoking', effect='lung cancer', negated=False)]
    >>> causal_statements("The flood was caused by heavy rain")
    [CausalStatement(cause='heavy rain', effect='The flood', negated=False)]
    >>> causal_statements("Vaccines do not cause autism")
    [CausalStatement(cause='Vaccines', effect='autism', negated=True)]
    """
    out = []
    for claim in split_claims(text, short_answer_words=0):
        match = _CONNECTIVE.search(claim)
        if match is None:
            continue
        left = claim[: match.start()].strip(" ,;:.")
        right = claim[match.end() :].strip(" ,;:.!?")
        if not left or not right:
            continue
        negated = bool(match.group("neg"))
        if match.group("back"):
            out.append(CausalStatement(cause=right, effect=left, negated=negated))
        else:
            out.append(CausalStatement(cause=left, effect=right, negated=negated))
    return out


_QUESTION_FORWARD = re.compile(  # "what causes E?" -> the answer causes E
    rf"^\s*(?:what|which|who)\b.*?\b(?:{_FORWARD})\s+(?P<effect>.+?)\??\s*$|"
    r"^\s*(?:what|which)\s+(?:is|was|are|were)\s+the\s+(?:main\s+)?(?:cause|causes|reason|reasons|source|origin)"
    r"\s+(?:of|for|behind)\s+(?P<effect2>.+?)\??\s*$",
    re.IGNORECASE,
)
_QUESTION_BACKWARD = re.compile(  # "what does C cause?" / "what is the effect of C?" -> C causes the answer
    r"^\s*(?:what|which)\s+(?:does|did|do|can|could|will|would)\s+(?P<cause>.+?)\s+"
    r"(?:cause|lead\s+to|result\s+in|trigger|produce|bring\s+about|give\s+rise\s+to)\s*\??\s*$|"
    r"^\s*(?:what|which)\s+(?:is|was|are|were)\s+the\s+(?:main\s+)?(?:effect|effects|result|results|consequence"
    r"|consequences|outcome|outcomes|impact)\s+of\s+(?P<cause2>.+?)\??\s*$",
    re.IGNORECASE,
)


def question_statements(question: str, answer: str) -> list[CausalStatement]:
    """The statement a short answer makes through its causal question ("What causes E?", "What is the effect of C?").

    >>> question_statements("What causes acid rain?", "sulfur dioxide")
    [CausalStatement(cause='sulfur dioxide', effect='acid rain', negated=False)]
    >>> question_statements("What is the effect of smoking?", "lung cancer")
    [CausalStatement(cause='smoking', effect='lung cancer', negated=False)]
    """
    answer = ANSWER_LABEL.sub("", (answer or "").strip()).strip(" .")
    if not answer or not question:
        return []
    match = _QUESTION_BACKWARD.match(question)
    if match:
        return [CausalStatement(cause=(match.group("cause") or match.group("cause2")).strip(), effect=answer)]
    match = _QUESTION_FORWARD.match(question)
    if match:
        return [CausalStatement(cause=answer, effect=(match.group("effect") or match.group("effect2")).strip())]
    return []


def _words(text: str) -> frozenset[str]:
    words = content_words(text)
    return frozenset(words or normalize_answer(text).split())


def names(node: str, text: str) -> bool:
    """Whether `text` names the graph node: every content word of the node appears in it.

    >>> names("heart disease", "Diseases of the heart"), names("heart disease", "heart disease in the elderly")
    (False, True)
    """
    node_words = _words(node)
    return bool(node_words) and node_words <= _words(text)


_ARROW = re.compile(r"\s*(?:->|→|=>|⇒|-\[[^\]]*\]->)\s*")
_CAUSE_KEYS = ("cause", "source", "head", "subject", "from")
_EFFECT_KEYS = ("effect", "target", "tail", "object", "to")


def as_edge(item: object) -> tuple[str, str] | None:
    """An edge (cause, effect) from a mapping (cause/effect, source/target, head/tail, …), a sequence or a
    "cause -> effect" string; None otherwise.

    >>> as_edge({"source": "rain", "target": "flood"}), as_edge(("rain", "flood", "causes")), as_edge("rain → flood")
    (('rain', 'flood'), ('rain', 'flood'), ('rain', 'flood'))
    >>> as_edge("rain"), as_edge({"cause": "", "effect": "flood"}), as_edge(7)
    (None, None, None)
    """
    cause = effect = None
    if isinstance(item, dict):
        cause = next((item[k] for k in _CAUSE_KEYS if k in item), None)
        effect = next((item[k] for k in _EFFECT_KEYS if k in item), None)
    elif isinstance(item, str):
        parts = _ARROW.split(item.strip(), maxsplit=1)
        if len(parts) == 2:
            cause, effect = parts
    elif isinstance(item, (list, tuple)) and len(item) in (2, 3):
        cause, effect = item[0], item[1]
    if not (isinstance(cause, str) and isinstance(effect, str) and cause.strip() and effect.strip()):
        return None
    return cause.strip(), effect.strip()


RESPECTED, VIOLATED, NEUTRAL = "respected", "violated", "neutral"


def edge_verdict(cause: str, effect: str, statements: Iterable[CausalStatement]) -> str:
    """"violated" (a statement reverses or denies the edge; it outweighs agreement), "respected" (one states it)
    or "neutral" (none links the two ends: left out of S_causal)."""
    verdict = NEUTRAL
    for st in statements:
        forward = names(cause, st.cause) and names(effect, st.effect)
        backward = names(effect, st.cause) and names(cause, st.effect)
        if (forward and st.negated) or (backward and not st.negated):
            return VIOLATED
        if forward:
            verdict = RESPECTED
    return verdict


@dataclass(frozen=True)
class CausalCheck:
    """S_causal and the verdict of each edge (in the order given)."""

    score: float | None
    verdicts: tuple[str, ...]
    statements: tuple[CausalStatement, ...] = field(default=())

    @property
    def respected(self) -> int:
        return self.verdicts.count(RESPECTED)

    @property
    def violated(self) -> int:
        return self.verdicts.count(VIOLATED)


def causal_consistency(
    edges: Sequence[tuple[str, str]], answer: str, question: str | None = None
) -> CausalCheck:
    """S_causal = respected / (respected + violated) over the edges; None when no edge is judged.

    >>> check = causal_consistency([("rain", "flood"), ("flood", "crop loss"), ("wind", "fire")],
    ...                            "Heavy rain caused the flood. The crop loss led to the flood.")
    >>> check.verdicts, check.score
    (('respected', 'violated', 'neutral'), 0.5)
    """
    statements = causal_statements(answer or "")
    if question:
        statements += question_statements(question, answer or "")
    verdicts = tuple(edge_verdict(c, e, statements) for c, e in edges)
    judged = verdicts.count(RESPECTED) + verdicts.count(VIOLATED)
    score = None if judged == 0 else verdicts.count(RESPECTED) / judged
    return CausalCheck(score=score, verdicts=verdicts, statements=tuple(statements))


def should_regenerate(s_causal: float | None, tau: float = TAU) -> bool:
    """Regenerate under stricter grounding when S_causal < τ (strictly; None never regenerates).

    >>> should_regenerate(0.5, 0.5), should_regenerate(0.49, 0.5), should_regenerate(None, 1.0)
    (False, True, False)
    """
    return s_causal is not None and s_causal < tau


__all__ = ["NEUTRAL", "RESPECTED", "TAU", "VIOLATED", "CausalCheck", "CausalStatement", "as_edge",
           "causal_consistency", "causal_statements", "edge_verdict", "names", "question_statements",
           "should_regenerate"]
