"""`close()` (Haystack's convention): a component releases what its injected components hold
(a client, a loaded model, a store connection), and a second call is safe."""

import asyncio

import pytest
from haystack import component
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

import haystack_cfrag as cfrag
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


class Holds:
    """Holds a resource the way Haystack's generators hold a client: `close` releases it, again is a no-op."""

    resource: object | None = "open"
    closes = 0
    async_closes = 0

    def close(self) -> None:
        self.closes += 1
        self.resource = None

    async def close_async(self) -> None:
        self.async_closes += 1
        self.resource = None


@component
class HoldingReader(Holds, KeywordReader):
    pass


@component
class HoldingTextEmbedder(Holds, HashingTextEmbedder):
    pass


@component
class HoldingDocumentEmbedder(Holds, HashingDocumentEmbedder):
    pass


@component
class HoldingRetriever(Holds, InMemoryEmbeddingRetriever):
    pass


def holders():
    return {
        "chat_generator": HoldingReader(candidates=dk.CANDIDATES),
        "text_embedder": HoldingTextEmbedder(),
        "document_embedder": HoldingDocumentEmbedder(),
        "retriever": HoldingRetriever(document_store=InMemoryDocumentStore()),
    }


COMPONENTS = {
    "expander": (cfrag.CounterfactualQueryExpander, ("chat_generator", "text_embedder")),
    "drafter": (cfrag.ParallelDraftGenerator, ("chat_generator",)),
    "dedup": (cfrag.EmbeddingDeduplicator, ("document_embedder", "text_embedder")),
    "stratifier": (cfrag.SpectralStratifier, ("text_embedder", "document_embedder")),
    "retriever": (cfrag.MultiQueryRetriever, ("retriever", "query_embedder")),
    "ranker": (cfrag.CausalArbitrationRanker, ("text_embedder", "scorer", "synthesizer")),
    "duel": (cfrag.ArbitrationDuel, ("chat_generator",)),
}


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_close_releases_the_injected_components_and_is_safe_twice(name):
    cls, keys = COMPONENTS[name]
    held = holders()
    held["query_embedder"] = held["text_embedder"]
    held["scorer"], held["synthesizer"] = Holds(), HoldingReader(candidates=dk.CANDIDATES)
    comp = cls(**{key: held[key] for key in keys})
    comp.close()
    comp.close()
    assert all(held[key].resource is None and held[key].closes == 2 for key in keys)
    asyncio.run(comp.close_async())
    assert all(held[key].async_closes == 1 for key in keys)
    # injected components without close (or none at all) are left alone
    cls(**{key: (HashingTextEmbedder() if "embedder" in key else held[key]) for key in keys}).close()
    if name in ("dedup", "stratifier", "ranker"):
        cls().close()


def test_counterfactual_rag_closes_its_inner_components_and_the_ranker_s_too():
    held = holders()
    scorer, synthesizer = Holds(), HoldingReader(candidates=dk.CANDIDATES)
    rag = cfrag.CounterfactualRAG(**held, scorer=scorer, synthesizer=synthesizer)
    rag.close()
    closed = [*held.values(), scorer, synthesizer]
    assert all(comp.resource is None for comp in closed)
    # the generator is held by the expander and the drafter and injected: each of them closed it
    assert held["chat_generator"].closes == 3
    rag.close()                                       # a second call is safe
    asyncio.run(rag.close_async())
    assert all(comp.async_closes >= 1 for comp in closed)
    cfrag.CounterfactualRAG(chat_generator=KeywordReader(candidates=dk.CANDIDATES)).close()   # nothing to release
