"""CDF-RAG's query refinement (§2.2, App. A.4), pure: the reply for expand / simplify / decompose parsed
defensively and bounded (else the original question, flagged), and `choose_action`, a rule in place of PPO."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from haystack_cfrag.common.text import STOPWORDS, content_words, normalize_answer, truncate_text
from haystack_cfrag.common.validation import check_choice

EXPAND, SIMPLIFY, DECOMPOSE, NONE = "expand", "simplify", "decompose", "none"
ACTIONS = (EXPAND, SIMPLIFY, DECOMPOSE)
"""The paper's three refinement actions."""
FIXED_ACTIONS = (*ACTIONS, NONE)
"""What a caller may fix: an action, or no refinement."""

MIN_SUB_QUERIES = 2
MAX_SUB_QUERIES = 4
"""The paper's decomposition prompt asks for 2–4 sub-questions."""
MAX_REFINED_CHARS = 300
"""A refined query or sub-question is cut to this many characters."""
LONG_QUESTION_WORDS = 25
SHORT_QUESTION_WORDS = 6


@dataclass(frozen=True)
class Refinement:
    """What a refinement gave: the action applied, the query, the sub-queries, and whether it fell back."""

    action: str
    query: str
    sub_queries: tuple[str, ...] = ()
    fallback: bool = False
    reason: str = ""

    @property
    def queries(self) -> list[str]:
        """The queries to retrieve with: the sub-queries of a decomposition, else the (refined) query."""
        return list(self.sub_queries) or [self.query]


def fallback(original: str, reason: str) -> Refinement:
    """The original question, unrefined, with the reason."""
    return Refinement(action=NONE, query=original, fallback=True, reason=reason)


# ---------------------------------------------------------------- reply cleaning
_FENCE = re.compile(r"```(?:json|text)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_LIST_MARK = re.compile(r"^\s*(?:[-*•>]+|\(?\d{1,2}[.):]|(?:q|sub-?questions?|sub-?query)\s*\d{1,2}\s*[.):])\s*",
                        re.IGNORECASE)
_LABEL = re.compile(
    r"^\s*(?:(?:expanded|simplified|refined|rewritten|improved|new|decomposed|final)\s+)?"
    r"(?:query|queries|question|questions|sub-?questions?|sub-?quer(?:y|ies))\s*:\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_ECHO = re.compile(r"^\s*(?:original|multihop|multi-hop)\s+question\s*:", re.IGNORECASE)
_QUESTION = re.compile(r"[^?]*\?")


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _clean_line(line: str) -> str:
    line = _LIST_MARK.sub("", _printable(line), count=1)
    return " ".join(line.split()).strip("\"'`*_ ")


def _lines(text: str) -> tuple[list[str], list[str]]:
    """(labelled, plain): the contents after a 'Query:'-like label, and the other lines, cleaned (echoes,
    headers and lines without a letter or digit dropped)."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    labelled: list[str] = []
    plain: list[str] = []
    for raw in body.splitlines():
        if _ECHO.match(raw):
            continue
        line = _clean_line(raw)
        label = _LABEL.match(line)
        if label:
            rest = _clean_line(label.group("rest"))
            if re.search(r"\w", rest):
                labelled.append(rest)
            continue
        if not re.search(r"\w", line) or (line.endswith(":") and "?" not in line):
            continue
        plain.append(line)
    return labelled, plain


def _from_json(text: str) -> object | None:
    fenced = _FENCE.search(text)
    body = (fenced.group(1) if fenced else text).strip()
    if not body.startswith(("{", "[")):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _json_strings(data: object, keys: tuple[str, ...]) -> list[str]:
    if isinstance(data, dict):
        for key in keys:
            if key in data:
                return _json_strings(data[key], keys)
        return []
    if isinstance(data, str):
        return [data]
    if isinstance(data, list):
        return [x for x in data if isinstance(x, str)]
    return []


_QUERY_KEYS = ("query", "refined_query", "expanded_query", "simplified_query", "question")
_SUB_KEYS = ("sub_queries", "subqueries", "sub_questions", "subquestions", "questions", "queries")


# ---------------------------------------------------------------- replies
def parse_refinement(
    text: str | None,
    action: str,
    original: str,
    *,
    max_sub_queries: int = MAX_SUB_QUERIES,
    max_chars: int = MAX_REFINED_CHARS,
    template: str = "",
) -> Refinement:
    """The refiner's reply for `action` read as a refined query (expand, simplify) or sub-questions (decompose).

    Falls back to `original` (flagged with the reason) for no query, fewer than two sub-questions, a copy of the
    prompt's example, or an off-topic reply; labelled lines, then questions, are preferred; JSON is read too.

    >>> parse_refinement("Expanded Query: Why is chronic stress a public health concern?", "expand",
    ...                  "Why is stress a concern?").query
    'Why is chronic stress a public health concern?'
    >>> parse_refinement("Who directed Jaws? When was he born?", "decompose",
    ...                  "When was the director of Jaws born?").sub_queries
    ('Who directed Jaws?', 'When was he born?')
    >>> parse_refinement("Sure!", "decompose", "Who?").reason
    'fewer than 2 sub-questions in the reply'
    >>> parse_refinement("Why is stress a public health concern?", "expand", "Who wrote Emma?",
    ...                  template="Why is stress a public health concern? {query}").reason
    "the reply repeats the prompt's example"
    """
    check_choice("action", action, ACTIONS)
    if not isinstance(text, str) or not text.strip():
        return fallback(original, "empty reply")
    if action == DECOMPOSE:
        return _parse_decomposition(text, original, max_sub_queries, max_chars, template)
    data = _from_json(text)
    candidates = _json_strings(data, _QUERY_KEYS) if data is not None else []
    if data is None:  # a JSON reply is read as JSON only
        labelled, plain = _lines(text)
        questions = [q.strip() for line in plain for q in _QUESTION.findall(line)]
        candidates = labelled or questions or [line for line in plain if len(line.split()) >= 2]
    query = _bounded(candidates[0], max_chars) if candidates else ""
    if not normalize_answer(query):
        return fallback(original, "no query in the reply")
    if repeats_template([query], template, original):
        return fallback(original, REPEATS_EXAMPLE)
    if not on_topic([query], original):
        return fallback(original, "the refined query shares no content word with the question")
    return Refinement(action=action, query=query)


def _parse_decomposition(text: str, original: str, max_sub_queries: int, max_chars: int, template: str) -> Refinement:
    data = _from_json(text)
    lines = _json_strings(data, _SUB_KEYS) if data is not None else []
    if data is None:
        labelled, plain = _lines(text)
        lines = labelled + plain
    questions = [q.strip() for line in lines for q in _QUESTION.findall(line)]
    candidates = questions or [line for line in lines if len(line.split()) >= 3]
    seen: set[str] = set()
    subs: list[str] = []
    for candidate in candidates:
        sub = _bounded(candidate, max_chars)
        key = normalize_answer(sub)
        if key and key not in seen:
            seen.add(key)
            subs.append(sub)
    if len(subs) < MIN_SUB_QUERIES:
        return fallback(original, f"fewer than {MIN_SUB_QUERIES} sub-questions in the reply")
    subs = subs[:max_sub_queries]
    if repeats_template(subs, template, original):
        return fallback(original, REPEATS_EXAMPLE)
    if not on_topic(subs, original):
        return fallback(original, "the sub-questions share no content word with the question")
    return Refinement(action=DECOMPOSE, query=original, sub_queries=tuple(subs))


REPEATS_EXAMPLE = "the reply repeats the prompt's example"


def repeats_template(queries: list[str], template: str, original: str) -> bool:
    """Whether the refined queries only repeat the template's example (all their content words are the template's,
    none the question's own; False when the question's are all in the template).

    >>> t = "Question: Why is stress a concern? Expanded: Why is chronic stress a concern? Question: {query}"
    >>> repeats_template(["Why is stress such a concern?"], t, "Which river flows through Baghdad?")
    True
    >>> repeats_template(["Which river flows through Baghdad, Iraq?"], t, "Which river flows through Baghdad?")
    False
    """
    said = {w for q in queries for w in content_words(q)}
    example = set(content_words(template.replace("{query}", " ")))
    asked = set(content_words(original))
    if not said or not example or asked <= example:
        return False
    return said <= example


def on_topic(queries: list[str], original: str) -> bool:
    """Whether the refined queries share a content word with the original (a question without one passes).

    >>> on_topic(["Why is chronic stress harmful?"], "Why is stress bad?"), on_topic(["Ignore all"], "Who wrote Emma?")
    (True, False)
    """
    wanted = set(content_words(original))
    if not wanted:
        return True
    return bool(wanted & {w for q in queries for w in content_words(q)})


def _bounded(text: str, max_chars: int) -> str:
    return truncate_text(" ".join(_printable(text).split()).strip("\"'`*_ "), max_chars).strip()


_ACTION_LABEL = re.compile(r"\b(?:action|refinement|strategy|choice)\s*[:=\-]\s*\**\s*(?P<word>[a-z]+)", re.IGNORECASE)
_ACTION_WORD = re.compile(r"\b(expan\w*|simplif\w*|decompos\w*)\b", re.IGNORECASE)


def _stem(word: str) -> str | None:
    word = word.lower()
    for action in ACTIONS:
        if word.startswith(action[:5]):
            return action
    return NONE if word in ("none", "no", "keep") else None


def parse_action(text: str | None) -> str | None:
    """The action after an 'Action:' label, else the one named in the first 300 characters (None: none or several).

    >>> parse_action("Action: decompose"), parse_action("I would simplify it."), parse_action("expand or decompose")
    ('decompose', 'simplify', None)
    """
    if not isinstance(text, str):
        return None
    head = _printable(text)[:300]
    label = _ACTION_LABEL.search(head)
    if label and _stem(label.group("word")):
        return _stem(label.group("word"))
    found = {_stem(m.group(1)) for m in _ACTION_WORD.finditer(head)}
    return found.pop() if len(found) == 1 else None


# ---------------------------------------------------------------- the rule
_QUESTION_WORDS = frozenset("what which who whom whose when where why how is are was were do does did in on".split())
_CONNECTORS = frozenset("of the for de la le von van der du da di".split())
_QUOTED = re.compile(r"[\"“”'‘’]([^\"“”'‘’]{2,80})[\"“”'‘’]")
_WORD = re.compile(r"[^\W_][\w'’.&-]*", re.UNICODE)
_COMPARISON = re.compile(
    r"\b(?:first|earlier|later|older|younger|oldest|youngest|larger|smaller|bigger|longer|shorter|taller|higher"
    r"|lower|more|less|fewer|greater|both|same|compare|compared|difference|differ|than|either|neither)\b",
    re.IGNORECASE,
)
_BRIDGE = re.compile(r"\S\s+(?:who|which|that|whose|where)\s+\w|\bof\s+the\s+\w+\s+(?:of|that|who|which)\b",
                     re.IGNORECASE)


def question_entities(question: str) -> list[str]:
    """Named things in a question: quoted titles and runs of capitalised words ("of", "the", … may join them).

    >>> question_entities("Were Scott Derrickson and Ed Wood of the same nationality?")
    ['Scott Derrickson', 'Ed Wood']
    >>> question_entities("Which magazine was started first, Arthur's Magazine or First for Women?")
    ["Arthur's Magazine", 'First for Women']
    """
    found = [m.group(1).strip() for m in _QUOTED.finditer(question) if m.group(1)[:1].isupper()]
    rest = _QUOTED.sub(" , ", question)
    words = [(m.group(0), m.start()) for m in _WORD.finditer(rest)]
    span: list[str] = []
    spans: list[list[str]] = []
    for i, (word, start) in enumerate(words):
        gap = rest[words[i - 1][1] + len(words[i - 1][0]) : start] if i else ""
        if span and any(ch in gap for ch in ",;:?!()"):
            spans.append(span)
            span = []
        first = i == 0
        capital = word[:1].isupper() and not (first and word.lower() in _QUESTION_WORDS | STOPWORDS)
        joins = span and word.lower() in _CONNECTORS and i + 1 < len(words) and words[i + 1][0][:1].isupper()
        if capital or joins:
            span.append(word)
        elif span:
            spans.append(span)
            span = []
    if span:
        spans.append(span)
    found += [" ".join(s).rstrip(".") for s in spans]
    out: list[str] = []
    for entity in found:
        if entity and entity not in out:
            out.append(entity)
    return out


def choose_action(
    question: str, *, long_words: int = LONG_QUESTION_WORDS, short_words: int = SHORT_QUESTION_WORDS
) -> tuple[str, str]:
    """The rule's action and why: decompose (2+ named things and a comparison or bridge), simplify (more than
    `long_words` words), expand (at most `short_words`), else none.

    >>> choose_action("Were Scott Derrickson and Ed Wood of the same nationality?")
    ('decompose', 'comparison of 2 named entities')
    >>> choose_action("Who wrote Emma?")
    ('expand', 'short question (3 words)')
    """
    words = len(question.split())
    entities = question_entities(question)
    if len(entities) >= 2 and _COMPARISON.search(question):
        return DECOMPOSE, f"comparison of {len(entities)} named entities"
    if len(entities) >= 2 and _BRIDGE.search(question):
        return DECOMPOSE, f"bridge over {len(entities)} named entities"
    if words > long_words:
        return SIMPLIFY, f"long question ({words} words)"
    if words <= short_words:
        return EXPAND, f"short question ({words} words)"
    return NONE, f"no rule applies ({words} words, {len(entities)} named entities)"


__all__ = ["ACTIONS", "DECOMPOSE", "EXPAND", "FIXED_ACTIONS", "MAX_REFINED_CHARS", "MAX_SUB_QUERIES",
           "MIN_SUB_QUERIES", "NONE", "REPEATS_EXAMPLE", "SIMPLIFY", "Refinement", "choose_action",
           "fallback", "on_topic", "parse_action", "parse_refinement", "question_entities",
           "repeats_template"]
