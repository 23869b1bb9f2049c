"""Document stores for the CLI: the embedded demo store, saved stores, and indexing files.

The CLI keeps an `InMemoryDocumentStore` saved as JSON (`--store PATH`); the default is the
demo corpus shipped in `haystack_cfrag/data`, embedded on first use and cached. Indexing
reads text, Markdown, PDF (Haystack's converters) or JSONL files, splits them into
~250-token passages with overlap (Haystack's `DocumentSplitter`), embeds and writes them.
Stores are only ever written by `index`; pipelines read them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag import models
from haystack_cfrag.models import EMBEDDED_EMBEDDER, cache_dir

logger = logging.getLogger(__name__)

DEMO_CORPUS = Path(__file__).parent / "data" / "demo_corpus.jsonl"


def default_store_path(embedder: str = EMBEDDED_EMBEDDER) -> Path:
    """The cached demo store embedded with `embedder`: its name changes with the corpus and the model."""
    key = hashlib.sha256(DEMO_CORPUS.read_bytes() + embedder.encode()).hexdigest()[:12]
    return cache_dir() / "stores" / f"demo_{key}.json"


def read_jsonl(path: Path) -> list[Document]:
    """Documents from JSONL lines with `content` (or `text`), optional `id`, `title` and `meta`."""
    docs = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            content = row.get("content") or row.get("text")
            if not content:
                raise ValueError(f"{path}:{n}: a line needs 'content' or 'text'.")
            meta = dict(row.get("meta") or {})
            for key in ("title", "source"):
                if key in row:
                    meta[key] = row[key]
            docs.append(Document(id=row.get("id") or Document(content=content, meta=meta).id, content=content, meta=meta))
    return docs


def open_store(
    path: Path | None,
    embed_documents: Callable[[list[Document]], list[Document]],
    embedder: str = EMBEDDED_EMBEDDER,
) -> InMemoryDocumentStore:
    """Load a saved store; without a path, the demo corpus embedded with `embedder` (built on first use)."""
    path = Path(path) if path else default_store_path(embedder)
    if path.exists():
        return InMemoryDocumentStore.load_from_disk(str(path))
    if path != default_store_path(embedder):
        raise FileNotFoundError(f"No store at {path}: create it with `cfrag index FILES --store {path}`.")
    logger.info("Embedding the demo corpus into {path} (first use)", path=str(path))
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(embed_documents(read_jsonl(DEMO_CORPUS)), policy=DuplicatePolicy.OVERWRITE)
    save_store(store, path)
    return store


def open_model_store(
    path: Path | None = None,
    embedder: str = EMBEDDED_EMBEDDER,
    *,
    device: str | None = None,
    progress_bar: bool = False,
) -> InMemoryDocumentStore:
    """`open_store` with the document embedder of `embedder`, loaded only when the store must be built."""

    def embed(docs: list[Document]) -> list[Document]:
        doc_embedder = models.document_embedder(embedder, device=device, progress_bar=progress_bar)
        doc_embedder.warm_up()
        return doc_embedder.run(documents=docs)["documents"]

    return open_store(path, embed, embedder)


def save_store(store: InMemoryDocumentStore, path: Path) -> None:
    """Save atomically (write a temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    store.save_to_disk(str(tmp))
    tmp.replace(path)


def convert_files(paths: Iterable[Path]) -> list[Document]:
    """Documents from files: .txt, .md, .pdf through Haystack's converters; .jsonl as passages."""
    from haystack.components.converters import TextFileToDocument  # noqa: PLC0415

    docs: list[Document] = []
    for path in paths:
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            docs += read_jsonl(path)
            continue
        if suffix in (".md", ".markdown"):
            from haystack.components.converters import MarkdownToDocument  # noqa: PLC0415

            converter: Any = MarkdownToDocument()
        elif suffix == ".pdf":
            from haystack.components.converters import PyPDFToDocument  # noqa: PLC0415

            converter = PyPDFToDocument()
        elif suffix in (".txt", ".text", ""):
            converter = TextFileToDocument()
        else:
            raise ValueError(f"{path}: unsupported file type '{suffix}' (use .txt, .md, .pdf or .jsonl).")
        for doc in converter.run(sources=[path])["documents"]:
            doc.meta.setdefault("title", path.stem)
            docs.append(doc)
    return docs


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
