"""CausalRAG's graph for a store of passages, built where `cfrag` and the evaluation need it.

`build_node_store` runs `CausalGraphBuilder` over every passage of a store (extraction cached
per passage hash in `cache_dir`, so a second build, or a resumed one, costs no LLM call for the
passages already seen) and writes the node Documents, embedded with the query embedder's
model, into a store of their own: no other retriever of the user's pipelines ever sees a node.

    >>> from haystack import Document
    >>> from haystack_cfrag.testing import MockChatGenerator
    >>> from haystack_cfrag.testing.fakes import HashingTextEmbedder
    >>> nodes, stats = build_node_store([Document(id="p", content="Rain causes floods.")],
    ...                                 chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder())
    >>> stats["passages"]
    1
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder

logger = logging.getLogger(__name__)

NODE_INDEX = "cfrag_graph_nodes"


class TextEmbedderForDocuments:
    """Embeds Documents one text at a time with a text embedder: nodes land in the query's vector space."""

    def __init__(self, text_embedder: Any) -> None:
        self.text_embedder = text_embedder

    def warm_up(self) -> None:
        """Warm up the text embedder."""
        if hasattr(self.text_embedder, "warm_up"):
            self.text_embedder.warm_up()

    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Copies of `documents` with their embeddings (inputs untouched)."""
        return {"documents": [Document(id=d.id, content=d.content, meta=dict(d.meta),
                                       embedding=list(self.text_embedder.run(text=d.content or "")["embedding"]))
                              for d in documents]}


def build_node_store(
    passages: list[Document],
    *,
    chat_generator: Any,
    text_embedder: Any,
    cache_dir: str | Path | None = None,
    extractor: Any | None = None,
    builder_settings: dict[str, Any] | None = None,
) -> tuple[InMemoryDocumentStore, dict[str, Any]]:
    """The node store of `passages`' causal graph, and the builder's stats (passages, calls, tokens, seconds) with
    each distinct passage's extraction cost (`passage_costs`: the builder's `costs`).

    `extractor`: a graph extractor (`causal_rag.extractors`) instead of the chat generator's recipe;
    `builder_settings`: more `CausalGraphBuilder` init parameters (`extractors.BUILDER_SETTINGS`)."""
    builder = CausalGraphBuilder(chat_generator=chat_generator, document_embedder=TextEmbedderForDocuments(text_embedder),
                                 cache_dir=str(cache_dir) if cache_dir is not None else None,
                                 extractor=extractor, **(builder_settings or {}))
    builder.warm_up()
    out = builder.run(documents=passages)
    # InMemoryDocumentStore shares its data between instances of one `index` name: a fresh name per
    # graph, or two stores' graphs would mix in one process (the evaluation builds one per store)
    store = InMemoryDocumentStore(index=f"{NODE_INDEX}_{uuid.uuid4().hex}", embedding_similarity_function="cosine")
    store.write_documents(out["nodes"], policy=DuplicatePolicy.OVERWRITE)
    stats = dict(out["stats"])
    logger.info("CausalRAG graph: {nodes} nodes from {passages} passages ({stats})",
                nodes=len(out["nodes"]), passages=len(passages), stats=stats)
    return store, {**stats, "passage_costs": out["costs"]}


def release_node_store(store: InMemoryDocumentStore) -> None:
    """Free a node store's documents (its index name is never used again)."""
    ids = [d.id for d in store.filter_documents()]
    if ids:
        store.delete_documents(ids)


__all__ = ["NODE_INDEX", "TextEmbedderForDocuments", "build_node_store", "release_node_store"]
