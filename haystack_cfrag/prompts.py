"""Every prompt template of the package, in one place (paper App. E/F, G and J).

Templates are plain `str.format` strings; documents are rendered by `render_evidence`.
A component's `prompt_template` replaces its built-in template with another `str.format`
string over the same placeholders (`*_FIELDS` below), checked by `check_template`.
"""

from __future__ import annotations

import string

from haystack import Document

COUNTERFACTUAL_PROMPT = """You write counterfactual questions for retrieval (CF-RAG).
A counterfactual question stays on the topic of the original question but asks for
something whose answer is DIFFERENT. Transformation types:
- role: another role or relation of the same thing (the villain instead of the hero)
- temporal: another time (the previous book, an earlier year)
- entity: a related entity instead of the main one (a sequel, a sibling company)
- categorical: another category of answer (the director instead of an actor)
- scope: a wider or narrower scope (the whole series instead of one book)

Example. Original question: Who wrote the novel Emma?
{{"original_answer_hint": "Jane Austen",
  "counterfactuals": [
    {{"question": "Who is the heroine of the novel Emma?", "type": "role", "answer_hint": "Emma Woodhouse"}},
    {{"question": "Who published the novel Emma in 1815?", "type": "categorical", "answer_hint": "John Murray"}},
    {{"question": "Who wrote the novel Jane Eyre?", "type": "entity", "answer_hint": "Charlotte Bronte"}}]}}

Original question: {query}

Give {n_candidates} counterfactual questions in the same JSON form. Each answer_hint is your
best guess of the short answer: a name, a date or a few words, not a sentence.
Reply with the JSON only."""

COUNTERFACTUAL_LINES_PROMPT = """Write {n_candidates} questions on the same topic as the original question, each asking
for something with a DIFFERENT answer: another role, another time, a related entity, another
category of answer or another scope.

Original question: Who wrote the novel Emma?
Who is the heroine of the novel Emma?
Who published the novel Emma?
Who wrote the novel Jane Eyre?

Original question: {query}
"""

DRAFT_PROMPT = """Answer the question using only the evidence below. Some evidence may be related
to the topic without answering the question: prefer the passages that answer exactly what is
asked.

Evidence:
{evidence}

Question: {query}

Reply in this format:
Answer: <the short answer only>
Rationale: <one or two sentences on why>
Key evidence: <the numbers of the passages you used, e.g. [1], [3]>
Conflicts: <any evidence that disagrees, or "none">"""

NO_EVIDENCE_TEXT = "(no evidence was retrieved)"

SYNTHESIS_PROMPT = """Several drafts answered the same question from different evidence and
disagree. Each draft comes with a score: higher means its evidence supports this question
more than related questions (causal discrimination) and it is coherent with its evidence.

Question: {query}

Drafts (best score first):
{drafts}

Give the single best final answer. Prefer the draft whose evidence answers exactly this
question. Reply in this format:
Answer: <the short answer only>
Rationale: <one sentence>"""

SHORT_DRAFT_PROMPT = """Answer the question using the documents below.

Documents:
{evidence}
Question: {query}

Reply in this format:
Answer: <the short answer only>"""
"""The answer-only draft prompt: STANDARD_RAG_TEMPLATE in `str.format` form (the same text for the same passages)."""

STANDARD_RAG_TEMPLATE = """Answer the question using the documents below.

Documents:
{% for doc in documents %}[{{ loop.index }}] {{ doc.content }}
{% endfor %}
Question: {{ query }}

Reply in this format:
Answer: <the short answer only>"""


def render_evidence(documents: list[Document], max_chars: int | None = None) -> str:
    """Number the passages [1], [2], … with their title when the document has one."""
    if not documents:
        return NO_EVIDENCE_TEXT
    lines = []
    for i, doc in enumerate(documents, start=1):
        text = doc.content or ""
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + " …"
        title = doc.meta.get("title")
        lines.append(f"[{i}] ({title}) {text}" if title else f"[{i}] {text}")
    return "\n".join(lines)


def render_plain_evidence(documents: list[Document]) -> str:
    """Passages as standard RAG's template writes them: "[i] content" lines, no titles, nothing cut.

    >>> print(render_plain_evidence([Document(content="a"), Document(content="b")]), end="|")
    [1] a
    [2] b
    |
    """
    return "".join(f"[{i}] {doc.content or ''}\n" for i, doc in enumerate(documents, start=1))


def render_drafts(drafts: list[tuple[str, str, float]]) -> str:
    """Drafts as (answer, rationale, Ψ) lines for the synthesis prompt."""
    return "\n".join(
        f"{i}. Answer: {answer} | score {score:.3f} | rationale: {rationale}"
        for i, (answer, rationale, score) in enumerate(drafts, start=1)
    )


# ---------------------------------------------------------------- overridable templates
COUNTERFACTUAL_FIELDS = ("query", "n_candidates")
"""Placeholders of the expander's prompt (both styles): the question and how many candidates to ask for."""

DRAFT_FIELDS = ("query", "evidence")
"""Placeholders of a draft prompt and of the ranker's duel prompt: the question and the numbered passages."""

SYNTHESIS_FIELDS = ("query", "drafts")
"""Placeholders of the ranker's synthesis prompt: the question and the scored drafts (`render_drafts`)."""

_SAMPLE_VALUES = {"query": "q", "n_candidates": 2, "evidence": "[1] e", "drafts": "1. Answer: a | score 0.5"}


def check_template(template: str | None, fields: tuple[str, ...], *, component: str,
                   parameter: str = "prompt_template") -> None:
    """Raise a one-line ValueError naming `component` unless `template` (None passes) is a
    `str.format` string that uses every placeholder of `fields` and no other.

    >>> check_template("Q: {query} ({n_candidates})", COUNTERFACTUAL_FIELDS, component="X")
    >>> check_template("Q: {query}", COUNTERFACTUAL_FIELDS, component="X")
    Traceback (most recent call last):
    ...
    ValueError: X: 'prompt_template' lacks the placeholder {n_candidates} (it needs {query}, {n_candidates}).
    """
    if template is None:
        return
    where = f"{component}: '{parameter}'"
    needs = ", ".join(f"{{{f}}}" for f in fields)
    if not isinstance(template, str) or not template.strip():
        raise ValueError(f"{where} must be a non-empty string or None, got {template!r:.60}.")
    try:
        used = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise ValueError(f"{where} is not a valid str.format template ({exc}); "
                         "write a literal brace as {{ or }}.") from None
    unknown = [name for name in used if name not in fields]
    if unknown:
        raise ValueError(f"{where} has an unknown placeholder {{{unknown[0]}}} (allowed: {needs}; "
                         "write a literal brace as {{ or }}).")
    missing = [f for f in fields if f not in used]
    if missing:
        raise ValueError(f"{where} lacks the placeholder {{{missing[0]}}} (it needs {needs}).")
    try:
        template.format(**{f: _SAMPLE_VALUES[f] for f in fields})
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"{where} does not render: {exc}.") from None
