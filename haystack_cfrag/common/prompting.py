"""Prompt pieces every family shares: standard RAG's prompt, evidence rendering, `str.format` template checks."""

from __future__ import annotations

import string
from collections.abc import Mapping

from haystack import Document

NO_EVIDENCE_TEXT = "(no evidence was retrieved)"

SHORT_DRAFT_PROMPT = """Answer the question using the documents below.

Documents:
{evidence}
Question: {query}

Reply in this format:
Answer: <the short answer only>"""
"""The answer-only draft prompt: STANDARD_RAG_TEMPLATE in `str.format` form (the same text for the same passages)."""

DOCUMENTS_BLOCK = """Documents:
{% for doc in documents %}[{{ loop.index }}] {{ doc.content }}
{% endfor %}"""
"""Standard RAG's passages (Jinja: `documents`), "[i] content" lines; the other families' answer prompts reuse it."""

SHORT_ANSWER_BLOCK = """Question: {{ query }}

Reply in this format:
Answer: <the short answer only>"""
"""Standard RAG's question and reply format (Jinja: `query`), the end of every answer prompt built on it."""

STANDARD_RAG_TEMPLATE = ("Answer the question using the documents below.\n\n" + DOCUMENTS_BLOCK + "\n"
                         + SHORT_ANSWER_BLOCK)
"""Standard RAG's prompt (Jinja: `documents`, `query`)."""


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


_SAMPLE_VALUES = {"query": "q", "n_candidates": 2, "evidence": "[1] e", "drafts": "1. Answer: a | score 0.5"}
"""A value for each common placeholder when a template is rendered as a check (others get "x")."""


def check_template(template: str | None, fields: tuple[str, ...], *, component: str,
                   parameter: str = "prompt_template") -> None:
    """Raise a one-line ValueError naming `component` unless `template` (None passes) uses exactly `fields`.

    >>> check_template("Q: {query} ({n_candidates})", ("query", "n_candidates"), component="X")
    >>> check_template("Q: {query}", ("query", "n_candidates"), component="X")
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
        template.format(**{f: _SAMPLE_VALUES.get(f, "x") for f in fields})
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"{where} does not render: {exc}.") from None


def check_prompt_templates(templates: Mapping[str, str] | None, defaults: Mapping[str, str],
                           fields: Mapping[str, tuple[str, ...]], *, component: str) -> None:
    """Raise a one-line ValueError unless `templates` (None passes) maps keys of `defaults` to templates
    that pass `check_template` with `fields[key]`.

    >>> check_prompt_templates({"a": "Q: {query}"}, {"a": "{query}"}, {"a": ("query",)}, component="X")
    >>> check_prompt_templates({"b": "Q: {query}"}, {"a": "{query}"}, {"a": ("query",)}, component="X")
    Traceback (most recent call last):
    ...
    ValueError: X: 'prompt_templates' has an unknown key 'b' (allowed: a).
    """
    if templates is None:
        return
    if not isinstance(templates, Mapping):
        raise ValueError(f"{component}: 'prompt_templates' must be a mapping of key to template, "
                         f"got {templates!r:.60}.")
    for key, template in templates.items():
        if key not in defaults:
            raise ValueError(f"{component}: 'prompt_templates' has an unknown key {key!r} "
                             f"(allowed: {', '.join(defaults)}).")
        check_template(template, fields[key], component=component, parameter=f"prompt_templates[{key!r}]")
