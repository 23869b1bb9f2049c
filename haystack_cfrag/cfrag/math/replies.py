"""Parsing the expander's replies (counterfactual questions); draft replies: `haystack_cfrag.common.replies`."""

from __future__ import annotations

import json
import re
from typing import Any

from haystack_cfrag.cfrag.math.counterfactuals import TRANSFORMATION_TYPES
from haystack_cfrag.common.replies import MAX_ANSWER_CHARS, MAX_RATIONALE_CHARS, extract_json, parse_draft_reply

_OBJECT = re.compile(r"\{[^{}]*\}")
_HINT = re.compile(r'"original_answer_hint"\s*:\s*"([^"]*)"')


def parse_counterfactual_reply(text: str) -> tuple[str, list[dict[str, str]]]:
    """(original answer hint, candidates {"question", "type", "answer_hint"}) from the expander's reply (the
    object, a list, a cut-off reply's complete items); ("", []) when unusable."""
    data = extract_json(text or "")
    if data is None:
        data = _salvage(text or "")
    hint = ""
    items: list[Any] = []
    if isinstance(data, dict):
        hint = str(data.get("original_answer_hint") or data.get("answer_hint") or "")
        raw = data.get("counterfactuals") or data.get("questions") or []
        items = raw if isinstance(raw, list) else []
    elif isinstance(data, list):
        items = data
    out: list[dict[str, str]] = []
    for item in items:
        if isinstance(item, str):
            item = {"question": item}
        if not isinstance(item, dict):
            continue
        question = str(item.get("question") or item.get("text") or "").strip()
        if not question:
            continue
        ctype = str(item.get("type") or "unknown").strip().lower()
        out.append(
            {
                "question": question,
                "type": ctype if ctype in TRANSFORMATION_TYPES else "unknown",
                "answer_hint": str(item.get("answer_hint") or item.get("answer") or "").strip(),
            }
        )
    return hint.strip(), out


def _salvage(text: str) -> dict[str, Any] | None:
    """The complete {…} candidate objects of a truncated JSON reply."""
    items = []
    for match in _OBJECT.finditer(text):
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "question" in value:
            items.append(value)
    if not items:
        return None
    hint = _HINT.search(text)
    return {"original_answer_hint": hint.group(1) if hint else "", "counterfactuals": items}


_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.):]|(?:q|question)\s*\d{1,2}\s*[.):])?\s*", re.IGNORECASE)


def parse_question_lines(text: str) -> list[dict[str, str]]:
    r"""Candidates from the compact expander's reply: one question per line (numbering, quotes stripped; others
    skipped; JSON read too), type "unknown", no hint.

    >>> [c["question"] for c in parse_question_lines('1. Who played the Joker?\n- "Who directed it?"\nSure!')]
    ['Who played the Joker?', 'Who directed it?']
    >>> [c["question"] for c in parse_question_lines('Question 2: Who scored the film?')]
    ['Who scored the film?']
    """
    _, from_json = parse_counterfactual_reply(text or "")
    if from_json:
        return from_json
    out = []
    for line in (text or "").splitlines():
        question = _LIST_MARK.sub("", line, count=1).strip().strip('"\'`*').strip()
        if question.lower().startswith(("original question", "question:")):
            continue  # the model echoing the prompt's labels
        if "?" in question or len(question.split()) >= 3:
            out.append({"question": question, "type": "unknown", "answer_hint": ""})
    return out


__all__ = ["MAX_ANSWER_CHARS", "MAX_RATIONALE_CHARS", "extract_json", "parse_counterfactual_reply",
           "parse_draft_reply", "parse_question_lines"]
