"""CDF-RAG's two answer checks and the bounded feedback loop (paper 002, §2.4–2.5), pure.

- Claims: an answer split into sentences and clauses (`split_claims`); a short answer (an
  entity, a date, a few words) is one claim.
- S_hall = 1 − |K ∩ Y| / |Y| (Eq. in §2.5): Y the claims, K ∩ Y the claims whose support
  (the reader's length-normalised log P(claim | q, K)) reaches `support_threshold`.
- S_causal = share of the retrieved causal edges C → E that the answer respects (§2.4), over
  the edges the answer takes a position on (see `edge_verdict`: what "respects" means here).
- Decisions: regenerate when S_causal < τ, rewrite when S_hall > δ (both strict, as in the
  paper); an undefined score (None: no claims, no edge the answer speaks to) decides nothing.
- `FeedbackLoop`: a state machine that bounds the corrective rounds.

The paper gives no value for τ or δ; the defaults below are ours (docs/cdf_rag.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from haystack_cfrag.common.text import content_words, normalize_answer

TAU = 0.5
"""τ: regenerate when S_causal < τ (ours: fewer than half the edges the answer speaks to respected)."""
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
MAX_REGENERATIONS = 1
"""The paper's fallback generation: one regeneration under stricter grounding."""
MAX_REWRITES = 1
"""One knowledge rewrite."""

# ---------------------------------------------------------------- claims
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc inc ltd co corp no vol fig al gen col lt sgt rev mt ft e.g i.e u.s u.k".split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)])\s+")
_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*", re.IGNORECASE)


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
    text = _LABEL.sub("", (answer or "").strip())
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
_NEGATORS = r"(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|is\s+not|isn't|was\s+not|wasn't|are\s+not|aren't|never|not|no\s+longer|cannot|can't)"
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
    """Directed cause → effect statements in `text`, read from its causal connectives.

    Per sentence, the first connective splits it: "A causes / leads to / results in B" and "A,
    so B" give A → B; "B is caused by / results from / is due to / because (of) A" give A → B.
    A negator right before the connective ("does not cause", "is not caused by") negates it.
    Text without a connective states nothing.

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
    """The statement a short answer makes through its causal question.

    "What causes E?" answered "C" states C → E; "What does C cause?" / "What is the effect of
    C?" answered "E" states C → E. Any other question states nothing this way.

    >>> question_statements("What causes acid rain?", "sulfur dioxide")
    [CausalStatement(cause='sulfur dioxide', effect='acid rain', negated=False)]
    >>> question_statements("What is the effect of smoking?", "lung cancer")
    [CausalStatement(cause='smoking', effect='lung cancer', negated=False)]
    """
    answer = _LABEL.sub("", (answer or "").strip()).strip(" .")
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
    """An edge (cause, effect) from the shapes graph components give, or None when `item` is none of them.

    A mapping with cause/effect (or source/target, head/tail, subject/object, from/to) keys; a
    sequence (cause, effect[, relation]); a string "cause -> effect" (or →, =>).

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
    """Whether the answer's statements respect the edge cause → effect.

    - "violated": a statement names the effect as causing the cause (the edge reversed), or
      denies the edge ("C does not cause E"); one violation outweighs any agreement;
    - "respected": a statement names the cause as causing the effect;
    - "neutral": no statement links the two ends (one end or none named, both named with no
      causal connective between them, or only "E does not cause C", which does not speak to
      C → E). Neutral edges are left out of S_causal: nothing there is measured.
    """
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
    """S_causal = respected / (respected + violated) over the edges (cause, effect); None when no edge is judged.

    The answer's statements are read from its causal connectives (`causal_statements`) and,
    for a short answer to a causal question, through the question (`question_statements`).

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


# ---------------------------------------------------------------- the loop
ACCEPT, REGENERATE, REWRITE, STOP = "accept", "regenerate", "rewrite", "stop"


@dataclass(frozen=True)
class LoopState:
    """Where the feedback loop stands: the corrective rounds spent, per check, and what each step decided."""

    max_rounds: int = MAX_REGENERATIONS + MAX_REWRITES
    max_regenerations: int = MAX_REGENERATIONS
    max_rewrites: int = MAX_REWRITES
    regenerations: int = 0
    rewrites: int = 0
    done: bool = False
    history: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_rounds", "max_regenerations", "max_rewrites"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10:
                raise ValueError(f"'{name}' must be an integer in [0, 10], got {value!r}.")

    @property
    def rounds(self) -> int:
        """Corrective rounds spent (regenerations + rewrites)."""
        return self.regenerations + self.rewrites


def next_step(
    state: LoopState, s_causal: float | None, s_hall: float | None, *, tau: float = TAU, delta: float = DELTA
) -> tuple[str, LoopState]:
    """The loop's next step after an answer was checked, and the new state.

    Order of the paper: the causal check first (regenerate when S_causal < τ), then the
    hallucination check (rewrite when S_hall > δ); a check whose own budget is spent gives way
    to the other. When a check fires and no budget allows its action (its own, or the total
    `max_rounds`), the loop ends with "stop" (the answer is kept as it is); an answer that
    passes both checks ends it with "accept". After the end every call returns "stop" unchanged.

    >>> action, s = next_step(LoopState(), 0.0, 1.0)
    >>> action, s.rounds
    ('regenerate', 1)
    >>> next_step(s, 0.0, 0.0)[0], next_step(s, 0.0, 1.0)[0], next_step(s, 1.0, 0.0)[0]
    ('stop', 'rewrite', 'accept')
    """
    if state.done:
        return STOP, state
    regenerate = should_regenerate(s_causal, tau)
    rewrite = should_rewrite(s_hall, delta)
    room = state.rounds < state.max_rounds
    if regenerate and room and state.regenerations < state.max_regenerations:
        action, new = REGENERATE, replace(state, regenerations=state.regenerations + 1)
    elif rewrite and room and state.rewrites < state.max_rewrites:
        action, new = REWRITE, replace(state, rewrites=state.rewrites + 1)
    elif regenerate or rewrite:
        action, new = STOP, replace(state, done=True)
    else:
        action, new = ACCEPT, replace(state, done=True)
    return action, replace(new, history=(*state.history, action))


__all__ = [
    "ACCEPT",
    "DELTA",
    "MAX_CLAIMS",
    "MAX_REGENERATIONS",
    "MAX_REWRITES",
    "NEUTRAL",
    "REGENERATE",
    "RESPECTED",
    "REWRITE",
    "STOP",
    "SUPPORT_THRESHOLD",
    "TAU",
    "VIOLATED",
    "CausalCheck",
    "CausalStatement",
    "LoopState",
    "as_edge",
    "causal_consistency",
    "causal_statements",
    "edge_verdict",
    "hallucination_score",
    "names",
    "next_step",
    "question_statements",
    "should_regenerate",
    "should_rewrite",
    "split_claims",
    "supported_claims",
]
