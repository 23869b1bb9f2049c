"""Evaluation rows read into one shape (`EvalItem`): `hotpotqa` (distractor rows), `popqa` (with CRAG passages
cut to ~100 words), `trap` (Correlation-Trap rows) and `generic` (`question`, `answers`, `documents`).

Usage:
    >>> item = parse_row({"question": "Who?", "answers": ["Ann"],
    ...                   "documents": [{"title": "A", "content": "Ann did it.", "gold": True}]}, "generic", 0)
    >>> item.answers, item.gold_titles, len(item.passages)
    (['Ann'], ['A'], 1)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMATS = ("hotpotqa", "popqa", "trap", "generic")


@dataclass(frozen=True)
class Passage:
    """One retrievable passage; `id` is a hash of title and content, so equal passages merge."""

    title: str
    content: str

    @property
    def id(self) -> str:
        return hashlib.sha256(f"{self.title}\n{self.content}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class EvalItem:
    """A question with its gold answers, its own passages and what the metrics need."""

    id: str
    question: str
    answers: list[str]
    passages: list[Passage]
    gold_titles: list[str] = field(default_factory=list)
    qtype: str | None = None
    failure_mode: str | None = None
    trap_answer: str | None = None


def detect_format(row: dict[str, Any]) -> str:
    """The format of a row, from the keys it has."""
    if "context" in row and "supporting_facts" in row:
        return "hotpotqa"
    if "crag_internal_knowledge" in row or "crag_web_knowledge" in row:
        return "popqa"
    if "failure_mode" in row and "gold_docs" in row:
        return "trap"
    if "documents" in row:
        return "generic"
    raise ValueError(f"Unknown evaluation row format (keys: {sorted(row)}); expected one of {FORMATS}.")


def _chunks(text: str, words: int = 100) -> list[str]:
    tokens = text.split()
    return [" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]


def parse_row(row: dict[str, Any], fmt: str, line: int) -> EvalItem:
    """One row of a known format as an `EvalItem`."""
    if fmt == "hotpotqa":
        ctx = row["context"]
        passages = [Passage(t, "".join(s).strip()) for t, s in zip(ctx["title"], ctx["sentences"], strict=True)]
        gold = list(dict.fromkeys(row["supporting_facts"]["title"]))
        return EvalItem(str(row["id"]), row["question"], [row["answer"]], passages, gold, row.get("type"))
    if fmt == "popqa":
        passages = [Passage(row.get("s_wiki_title") or "internal", c)
                    for c in _chunks(row.get("crag_internal_knowledge") or "")]
        for part in (row.get("crag_web_knowledge") or "").split(" ; "):
            title, _, content = part.partition(": ")
            if content.strip():
                passages.append(Passage(title.strip(), content.strip()))
        return EvalItem(str(row.get("id", line)), row["question"], list(row["answers"]), passages,
                        [row["s_wiki_title"]] if row.get("s_wiki_title") else [], row.get("prop"))
    if fmt == "trap":
        gold = [Passage(d["title"], d["content"]) for d in row["gold_docs"]]
        spurious = [Passage(d["title"], d["content"]) for d in row.get("spurious_docs", [])]
        return EvalItem(str(row["id"]), row["question"], [row["answer"], *row.get("aliases", [])], gold + spurious,
                        [p.title for p in gold], row.get("axis"), row["failure_mode"], row.get("trap_answer"))
    if fmt == "generic":
        answers = row.get("answers") or ([row["answer"]] if row.get("answer") else [])
        if not answers:
            raise ValueError(f"line {line}: a generic row needs 'answers' (a list) or 'answer'.")
        docs = row["documents"]
        passages = [Passage(str(d.get("title") or d.get("id") or f"doc{i}"), d["content"]) for i, d in enumerate(docs)]
        gold = [p.title for p, d in zip(passages, docs, strict=True) if d.get("gold")]
        return EvalItem(str(row.get("id", line)), row["question"], list(answers), passages, gold, row.get("type"))
    raise ValueError(f"Unknown format '{fmt}'; expected one of {FORMATS}.")


def load_items(path: str | Path, fmt: str = "auto", *, limit: int | None = None, offset: int = 0) -> list[EvalItem]:
    """Rows `offset … offset+limit` of a JSONL file (the file's order: samples are fixed by the file)."""
    if fmt != "auto" and fmt not in FORMATS:
        raise ValueError(f"format must be 'auto' or one of {FORMATS}, got '{fmt}'.")
    if offset < 0 or (limit is not None and limit < 1):
        raise ValueError("offset must be >= 0 and limit >= 1.")
    items: list[EvalItem] = []
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            if n <= offset:
                continue
            row = json.loads(line)
            items.append(parse_row(row, detect_format(row) if fmt == "auto" else fmt, n))
            if limit is not None and len(items) == limit:
                break
    if not items:
        raise ValueError(f"{path}: no rows after offset {offset}.")
    return items
