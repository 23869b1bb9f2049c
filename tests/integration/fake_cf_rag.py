"""The shipped cf_rag_paper.yml (its six components), fake models around a real store's retriever (store tests)."""

from typing import Any

from haystack_cfrag import load_pipeline
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.registry import resolve
from tests import dark_knight as dk
from tests.fakes import HashingTextEmbedder, KeywordReader


def reader() -> KeywordReader:
    """The Dark Knight reader: answers by volume, with a fixed counterfactual reply."""
    return KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)


def run_cf_rag_over(retriever: Any) -> tuple[Any, dict[str, Any]]:
    """Load cf_rag_paper.yml with `retriever` and fake models swapped in, ask the Dark Knight question."""
    emb, gen = HashingTextEmbedder(), reader()
    path = pipeline_path("cf_rag_paper")
    pipe = load_pipeline(path, allowed_modules=["tests"], overrides={
        "retriever.retriever": retriever, "retriever.query_embedder": emb, "expander.text_embedder": emb,
        "stratifier.text_embedder": emb, "ranker.text_embedder": emb, "expander.chat_generator": gen,
        "drafter.chat_generator": gen})
    return pipe, pipe.run(resolve(path).run_data(query=dk.QUESTION))
