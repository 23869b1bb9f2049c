"""The demo store and the store questions are answered from (`cfrag ask/compare`, `cfrag serve`).

Without `--store`, the demo corpus shipped in `haystack_cfrag/data`, embedded on first use with the configured
embedder and cached as a saved `InMemoryDocumentStore` (`default_store_path`); its first build goes through
`stores.update.update_store` (two processes starting at once embed it once). Any other spec is opened read-only.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.adapters import factories
from haystack_cfrag.models import EMBEDDED_EMBEDDER, cache_dir
from haystack_cfrag.stores.kinds.memory import open_memory_store
from haystack_cfrag.stores.opening import open_document_store
from haystack_cfrag.stores.sources import read_jsonl
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

logger = logging.getLogger(__name__)

DEMO_CORPUS = Path(__file__).resolve().parent.parent / "data" / "demo_corpus.jsonl"


def default_store_path(embedder: str = EMBEDDED_EMBEDDER) -> Path:
    """The cached demo store embedded with `embedder`: its name changes with the corpus and the model."""
    key = hashlib.sha256(DEMO_CORPUS.read_bytes() + embedder.encode()).hexdigest()[:12]
    return cache_dir() / "stores" / f"demo_{key}.json"


def demo_spec(embedder: str = EMBEDDED_EMBEDDER) -> str:
    """The demo store's spec (``memory:`` its cached JSON): what the runtime keeps the demo's graph beside."""
    return f"memory:{default_store_path(embedder)}"


def open_store(
    path: Path | None,
    embed_documents: Callable[[list[Document]], list[Document]],
    embedder: str = EMBEDDED_EMBEDDER,
) -> InMemoryDocumentStore:
    """Load a saved store; without a path, the demo corpus embedded with `embedder` (built on first use)."""
    path = Path(path) if path else default_store_path(embedder)
    if path.exists() or path != default_store_path(embedder):
        return open_memory_store(path)
    from haystack_cfrag.stores.update import update_store  # noqa: PLC0415

    logger.info("Embedding the demo corpus into {path} (first use)", path=str(path))
    update_store(f"memory:{path}", read_jsonl(DEMO_CORPUS), embedder=embed_documents)  # locked: built once
    return open_memory_store(path)


def open_model_store(
    path: Path | None = None,
    embedder: str = EMBEDDED_EMBEDDER,
    *,
    device: str | None = None,
    progress_bar: bool = False,
) -> InMemoryDocumentStore:
    """`open_store` with the document embedder of `embedder`, loaded only when the store must be built."""

    def embed(docs: list[Document]) -> list[Document]:
        doc_embedder = factories.document_embedder(embedder, device=device, progress_bar=progress_bar)
        doc_embedder.warm_up()
        return doc_embedder.run(documents=docs)["documents"]

    return open_store(path, embed, embedder)


def open_query_store(
    spec: str | os.PathLike[str] | StoreSpec | None,
    embedder: str = EMBEDDED_EMBEDDER,
    *,
    device: str | None = None,
    progress_bar: bool = False,
) -> Any:
    """The store questions are answered from: a saved JSON store, the demo (no spec), or any other spec, read-only.

    :raises FileNotFoundError: the store a spec names does not exist (nothing is created).
    :raises ValueError: a spec that does not parse (see `haystack_cfrag.stores.specs`).
    """
    if spec is None:
        return open_model_store(None, embedder, device=device, progress_bar=progress_bar)
    return open_document_store(parse_store_spec(spec))
