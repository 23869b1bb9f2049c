r"""Reading a model's reply (pure): its JSON (fenced or bare), and a draft answer (JSON, labelled lines, first line).

    >>> parse_draft_reply('Answer: Christian Bale\nRationale: he plays Batman')["answer"]
    'Christian Bale'
    >>> extract_json('```json\n{"a": 1}\n```')
    {'a': 1}
"""

from __future__ import annotations

import json
import re
from typing import Any

from haystack_cfrag.common.text import truncate_text

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_LABEL = re.compile(r"^\s*\**\s*(answer|final answer|rationale|key evidence|conflicts)\s*\**\s*[:：]\s*(.*)$",
                    re.IGNORECASE)


def extract_json(text: str) -> Any | None:
    """The top-level JSON object or array of a reply (inside ``` fences or bare); None if it does not parse
    (only each chunk's first bracket is tried: a truncated outer object is not read as an inner one)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        start = next((i for i, ch in enumerate(chunk) if ch in "{["), None)
        if start is None:
            continue
        try:
            value, _ = decoder.raw_decode(chunk[start:])
        except json.JSONDecodeError:
            continue
        return value
    return None


MAX_ANSWER_CHARS = 500
MAX_RATIONALE_CHARS = 2000


def parse_draft_reply(text: str) -> dict[str, Any]:
    """{"answer", "rationale", "key_evidence" (1-based ints), "conflicts", "parsed_by"} from a draft (answer and
    rationale cut to `MAX_ANSWER_CHARS` and `MAX_RATIONALE_CHARS`)."""
    parsed = _parse_draft_reply(text)
    parsed["answer"] = truncate_text(parsed["answer"], MAX_ANSWER_CHARS)
    parsed["rationale"] = truncate_text(parsed["rationale"], MAX_RATIONALE_CHARS)
    return parsed


def _parse_draft_reply(text: str) -> dict[str, Any]:
    text = (text or "").strip()
    data = extract_json(text) if text.startswith(("{", "```")) else None
    if isinstance(data, dict) and str(data.get("answer") or "").strip():
        return {
            "answer": str(data["answer"]).strip(),
            "rationale": str(data.get("rationale") or "").strip(),
            "key_evidence": _ints(data.get("key_evidence")),
            "conflicts": str(data.get("conflicts") or "").strip(),
            "parsed_by": "json",
        }
    fields: dict[str, str] = {}
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m:
            key = m.group(1).lower().replace("final answer", "answer")
            fields.setdefault(key, m.group(2).strip())
    if fields.get("answer"):
        return {
            "answer": fields["answer"].strip().strip('"').strip(),
            "rationale": fields.get("rationale", ""),
            "key_evidence": _ints(fields.get("key evidence")),
            "conflicts": fields.get("conflicts", ""),
            "parsed_by": "labels",
        }
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return {"answer": first, "rationale": "", "key_evidence": [], "conflicts": "", "parsed_by": "first_line"}


def _ints(value: Any) -> list[int]:
    if isinstance(value, list):
        return [int(v) for v in value if isinstance(v, int) or (isinstance(v, str) and v.strip().isdigit())]
    if isinstance(value, str):
        return [int(v) for v in re.findall(r"\d+", value)]
    return []


def reply_text(answer_prefix: str, claim: str) -> str:
    """A claim as the reply continues after `answer_prefix`: one space between unless the prefix ends in one.

    >>> reply_text("Answer:", "Paris"), reply_text("", "Paris"), reply_text("A:\\n", "Paris")
    (' Paris', 'Paris', 'Paris')
    """
    return " " + claim if answer_prefix and not answer_prefix[-1].isspace() else claim


__all__ = ["MAX_ANSWER_CHARS", "MAX_RATIONALE_CHARS", "extract_json", "parse_draft_reply", "reply_text"]
