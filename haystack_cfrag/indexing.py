"""Files to passages for indexing: text, Markdown, PDF and JSONL files read and split.

Text, Markdown and PDF files go through Haystack's converters; JSONL lines are passages
already (`read_jsonl`). `split_documents` cuts the rest into ~250-token passages with overlap
(Haystack's `DocumentSplitter`). `cfrag index` embeds them and writes them to a store
(`haystack_cfrag.stores`); the demo store is built from `read_jsonl` of the shipped corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from haystack import Document, logging

logger = logging.getLogger(__name__)


def read_jsonl(path: Path) -> list[Document]:
    """Documents from JSONL lines with `content` (or `text`), optional `id`, `title` and `meta`.

    :raises ValueError: naming the file and line: not UTF-8, not JSON, not an object, no text.
    """
    docs = []
    for n, raw in enumerate(path.read_bytes().splitlines(), start=1):
        where = f"{path}:{n}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: not UTF-8 text (byte {exc.start + 1} of the line); convert the file to "
                             "UTF-8.") from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno}).") from exc
        if not isinstance(row, dict):
            raise ValueError(f"{where}: a line must be a JSON object with 'content', got {type(row).__name__}.")
        content = row.get("content") or row.get("text")
        if not isinstance(content, str) or not content.strip():
            raise ValueError(f"{where}: a line needs 'content' (or 'text'): a non-empty string.")
        if not isinstance(row.get("meta") or {}, dict) or not isinstance(row.get("id") or "", str):
            raise ValueError(f"{where}: 'meta' must be an object and 'id' a string.")
        meta = dict(row.get("meta") or {})
        for key in ("title", "source"):
            if key in row:
                meta[key] = row[key]
        docs.append(Document(id=row.get("id") or Document(content=content, meta=meta).id, content=content, meta=meta))
    return docs


TEXT_SUFFIXES = (".txt", ".text", ".md", ".markdown", "")
SUFFIXES = (*TEXT_SUFFIXES, ".pdf", ".jsonl")


def convert_files(paths: Iterable[Path]) -> tuple[list[Document], list[Path]]:
    """Documents from files: .txt, .md, .pdf through Haystack's converters; .jsonl as passages.

    :returns: the documents with text, and the files that gave none (empty, or a PDF without
        extractable text), each logged as a warning.
    :raises ValueError: naming the file: an unsupported type, text that is not UTF-8, a bad JSONL line.
    """
    docs: list[Document] = []
    no_text: list[Path] = []
    for path in paths:
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            raise ValueError(f"{path}: unsupported file type '{suffix}' (use .txt, .md, .pdf or .jsonl).")
        if suffix == ".jsonl":
            found = read_jsonl(path)
        else:
            if suffix in TEXT_SUFFIXES:
                _check_utf8(path)
            found = [d for d in _converter(suffix).run(sources=[path])["documents"] if (d.content or "").strip()]
            for doc in found:
                doc.meta.setdefault("title", path.stem)
        if not found:
            logger.warning("{path}: no text found; skipped", path=str(path))
            no_text.append(path)
        docs += found
    return docs, no_text


def _converter(suffix: str) -> Any:
    if suffix in (".md", ".markdown"):
        from haystack.components.converters import MarkdownToDocument  # noqa: PLC0415

        return MarkdownToDocument()
    if suffix == ".pdf":
        from haystack.components.converters import PyPDFToDocument  # noqa: PLC0415

        return PyPDFToDocument()
    from haystack.components.converters import TextFileToDocument  # noqa: PLC0415

    return TextFileToDocument()


def _check_utf8(path: Path) -> None:
    """ValueError naming the file and line when a text file is not UTF-8 (Haystack's converter would skip it)."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text; convert the file to UTF-8.") from exc


def split_documents(docs: list[Document], *, words: int = 190, overlap: int = 30) -> list[Document]:
    """~250-token passages (≈ 190 words) with overlap, through Haystack's DocumentSplitter.

    JSONL passages (already passage-sized, carrying an id) are kept as they are.
    """
    from haystack.components.preprocessors import DocumentSplitter  # noqa: PLC0415

    splitter = DocumentSplitter(split_by="word", split_length=words, split_overlap=overlap)
    if hasattr(splitter, "warm_up"):
        splitter.warm_up()
    small = [("source" in d.meta and len((d.content or "").split()) <= words) for d in docs]
    keep = [d for d, s in zip(docs, small, strict=True) if s]
    to_split = [d for d, s in zip(docs, small, strict=True) if not s]
    return keep + (splitter.run(documents=to_split)["documents"] if to_split else [])
