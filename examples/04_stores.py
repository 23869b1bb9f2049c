"""Example 4: the same CF-RAG pipeline over FAISS and Qdrant (local mode) instead of the in-memory store.

The pipeline file is unchanged; only its inner retriever is swapped for the one that reads your
store (`haystack_cfrag.stores.embedding_retriever`). The demo passages are copied with their
embeddings into a FAISS index and a Qdrant collection (nothing is embedded again), then read.
Postgres: `pgvector:postgresql://USER:PASSWORD@HOST:5432/DB#TABLE` works the same way; a Qdrant
server: `qdrant:http://HOST:6333#COLLECTION` (docs/deployment.md).
    python examples/04_stores.py [FOLDER]      # default: a temporary folder
"""

import sys
import tempfile
import time
from pathlib import Path

from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag import load_pipeline
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.stores import close_document_store, embedding_retriever, open_document_store, save_document_store


def copy_into(spec, documents):
    """Create the store a spec names (if needed) and write documents that already carry embeddings."""
    store = open_document_store(spec, embedding_dim=len(documents[0].embedding), create=True)
    store.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)
    save_document_store(store, spec)
    return store


def build(store, text_embedder, generator, pipeline="cf_rag_fast", allowed_modules=None):
    """The shipped pipeline with its retriever reading `store`, and your embedder and generator."""
    retriever = embedding_retriever(store, top_k=5)
    overrides = {"retriever.retriever": retriever,
                 "drafter.chat_generator": generator, "expander.chat_generator": generator}
    for where in ("expander.text_embedder", "retriever.query_embedder", "stratifier.text_embedder",
                  "ranker.text_embedder"):
        overrides[where] = text_embedder
    pipe = load_pipeline(pipeline_path(pipeline), overrides=overrides, allowed_modules=allowed_modules)
    # The file now names your retriever and store (pipe.dumps() shows them). Keep *your* instance in
    # the running pipeline: a local Qdrant folder admits one client, and a store is best opened once.
    pipe.get_component("retriever").retriever = retriever
    return pipe


def ask(pipe, question):
    out = pipe.run({name: {"query": question} for name in ("expander", "stratifier", "drafter", "ranker")})
    return out["duel"]["answer"], out["duel"]["trace"]


if __name__ == "__main__":
    from _demo import QUESTION, demo_components

    folder = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="cfrag-stores-"))
    memory, text_embedder, generator = demo_components()
    documents = memory.filter_documents()
    for spec in (f"faiss:{folder / 'demo'}", f"qdrant:{folder / 'qdrant'}#demo"):
        store = copy_into(spec, documents)
        start = time.perf_counter()
        answer, trace = ask(build(store, text_embedder, generator), QUESTION)
        print(f"{spec}: {store.count_documents()} passages → {answer!r} ({trace['decision']}, "
              f"{time.perf_counter() - start:.1f} s)")
        close_document_store(store)
