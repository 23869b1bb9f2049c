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

import inspect
import sys
import uuid
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
from haystack_cfrag.models import resolve_model

logger = logging.getLogger(__name__)

NODE_INDEX = "cfrag_graph_nodes"


NODE_BATCH = 256
"""Node names embedded per call of the document-embedder twin."""


class TextEmbedderForDocuments:
    """Embeds Documents with a text embedder's configuration: nodes land in the query's vector space.

    The text embedder's document twin in its own integration (`SentenceTransformersTextEmbedder` ->
    `SentenceTransformersDocumentEmbedder`, `OpenAITextEmbedder` -> `OpenAIDocumentEmbedder`, …), built
    with the same init parameters (model, prefix, normalisation), embeds them in batches of `batch_size`
    (the graph of the 405-passage demo corpus: 5,369 names, 12 s instead of minutes one at a time). A text
    embedder without a twin (a mock, a custom one) embeds one text at a time, as it would a query.
    """

    def __init__(self, text_embedder: Any, *, batch_size: int = NODE_BATCH) -> None:
        self.text_embedder = text_embedder
        self.batch_size = batch_size
        self.twin = document_twin(text_embedder, batch_size)

    def warm_up(self) -> None:
        """Warm up the text embedder (and its twin, which shares its loaded model where the integration caches it)."""
        for part in (self.text_embedder, self.twin):
            if part is not None and hasattr(part, "warm_up"):
                part.warm_up()

    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Copies of `documents` with their embeddings (inputs untouched)."""
        copies = [Document(id=d.id, content=d.content or "", meta=dict(d.meta)) for d in documents]
        if self.twin is not None:
            out: list[Document] = []
            for start in range(0, len(copies), self.batch_size):
                out.extend(self.twin.run(documents=copies[start:start + self.batch_size])["documents"])
            return {"documents": out}
        for doc in copies:
            doc.embedding = list(self.text_embedder.run(text=doc.content or "")["embedding"])
        return {"documents": copies}


def document_twin(text_embedder: Any, batch_size: int = NODE_BATCH) -> Any | None:
    """The document embedder of `text_embedder`'s integration with its init parameters, or None (no twin).

    >>> from haystack_cfrag.testing.fakes import HashingTextEmbedder
    >>> document_twin(HashingTextEmbedder()) is None
    True
    """
    to_dict = getattr(text_embedder, "to_dict", None)
    if to_dict is None:
        return None
    for cls in type(text_embedder).__mro__:
        if not cls.__name__.endswith("TextEmbedder"):
            continue
        name = cls.__name__[: -len("TextEmbedder")] + "DocumentEmbedder"
        # its own module, or the package that exports both (haystack_integrations.…sentence_transformers)
        homes = (cls.__module__, cls.__module__.rpartition(".")[0])
        twin = next((t for home in homes if (t := getattr(sys.modules.get(home), name, None)) is not None), None)
        if twin is None:
            continue
        try:
            params = dict(to_dict().get("init_parameters", {}))
            accepted = inspect.signature(twin.__init__).parameters
            params = {k: v for k, v in params.items() if k in accepted}
            if "batch_size" in accepted:
                params["batch_size"] = batch_size
            if "progress_bar" in accepted:
                params["progress_bar"] = False
            if isinstance(params.get("model"), str) and params["model"].startswith("embedded:"):
                params["model"] = resolve_model(params["model"])
            return twin.from_dict({"type": f"{twin.__module__}.{twin.__name__}", "init_parameters": params})
        except Exception as exc:  # noqa: BLE001  (no twin: one text at a time, said once)
            logger.warning("No batched twin for {cls}: {error}; graph nodes are embedded one at a time",
                           cls=type(text_embedder).__name__, error=repr(exc))
            return None
    return None


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


__all__ = ["NODE_BATCH", "NODE_INDEX", "TextEmbedderForDocuments", "document_twin", "build_node_store", "release_node_store"]
