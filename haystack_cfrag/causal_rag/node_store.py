"""CausalRAG's graph for a store of passages: `build_node_store` runs `CausalGraphBuilder` over them (extraction
cached per passage hash) into a node store of their own, embedded with the query embedder's model.

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


NODE_BATCH = 256
"""Node names embedded per call of the document embedder."""


class TextEmbedderForDocuments:
    """Embeds Documents into the query's vector space: by the document embedder handed in (the same model), in
    batches of `batch_size`, else one by one through the text embedder.

        >>> from haystack_cfrag.testing.fakes import HashingDocumentEmbedder, HashingTextEmbedder
        >>> nodes = [Document(content="flood"), Document(content="rain")]
        >>> batched = TextEmbedderForDocuments(HashingTextEmbedder(), HashingDocumentEmbedder())
        >>> one_by_one = TextEmbedderForDocuments(HashingTextEmbedder())
        >>> [d.embedding == e.embedding for d, e in zip(batched.run(nodes)["documents"],
        ...                                         one_by_one.run(nodes)["documents"])]
        [True, True]
    """

    def __init__(self, text_embedder: Any, document_embedder: Any = None, *,
                 batch_size: int = NODE_BATCH) -> None:
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self.batch_size = batch_size

    def warm_up(self) -> None:
        """Warm up the embedders (a document embedder of the text embedder's model shares its loaded model
        where the integration caches it)."""
        for part in (self.text_embedder, self.document_embedder):
            if part is not None and hasattr(part, "warm_up"):
                part.warm_up()

    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Copies of `documents` with their embeddings (inputs untouched)."""
        copies = [Document(id=d.id, content=d.content or "", meta=dict(d.meta)) for d in documents]
        if self.document_embedder is not None:
            out: list[Document] = []
            for start in range(0, len(copies), self.batch_size):
                batch = copies[start:start + self.batch_size]
                out.extend(self.document_embedder.run(documents=batch)["documents"])
            return {"documents": out}
        return {"documents": [Document(id=d.id, content=d.content, meta=d.meta,
                                       embedding=list(self.text_embedder.run(text=d.content)["embedding"]))
                              for d in copies]}


def build_node_store(
    passages: list[Document],
    *,
    chat_generator: Any,
    text_embedder: Any,
    document_embedder: Any = None,
    cache_dir: str | Path | None = None,
    extractor: Any | None = None,
    builder_settings: dict[str, Any] | None = None,
) -> tuple[InMemoryDocumentStore, dict[str, Any]]:
    """The node store of `passages`' causal graph, and the builder's stats with `passage_costs`.

    `document_embedder`: embeds the nodes in batches; `extractor`: a graph extractor instead of the chat
    generator's recipe; `builder_settings`: more `CausalGraphBuilder` init parameters."""
    builder = CausalGraphBuilder(chat_generator=chat_generator,
                                 document_embedder=TextEmbedderForDocuments(text_embedder, document_embedder),
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


__all__ = ["NODE_BATCH", "NODE_INDEX", "TextEmbedderForDocuments", "build_node_store", "release_node_store"]
