"""Store specs over real FAISS and Qdrant (local mode) stores, with the deterministic fake models.

Integration, not unit: they need the `stores` extra (the Haystack 2.x unit-test venv has only `test`).

pgvector needs a server: tests/integration/test_pgvector.py starts one.
"""

import json
import types

import numpy as np
import pytest
from click.testing import CliRunner
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.common.redaction import redact
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.stores import (
    StoreSpec,
    close_document_store,
    embedding_retriever,
    faiss_cosine,
    open_document_store,
    parse_store_spec,
    save_document_store,
)
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder
from tests.integration.fake_cf_rag import reader, run_cf_rag_over

DIM = 512  # HashingTextEmbedder's default


def embedded_docs():
    return HashingDocumentEmbedder().run(dk.documents())["documents"]


def build(spec, docs=None):
    store = open_document_store(spec, embedding_dim=DIM, create=True)
    store.write_documents(docs or embedded_docs())
    save_document_store(store, spec)
    return store


def close(store):
    close_document_store(store)  # qdrant local mode locks its folder until the client closes


# ---------------------------------------------------------------- specs (pure)
@pytest.mark.parametrize(("text", "expected"), [
    ("store.json", StoreSpec("memory", "store.json")),
    ("memory:s/store.json", StoreSpec("memory", "s/store.json")),
    ("memory:a:b.json", StoreSpec("memory", "a:b.json")),  # a ':' in a file name: say memory:
    ("C:\\stores\\s.json", StoreSpec("memory", "C:\\stores\\s.json")),
    ("faiss:stores/demo", StoreSpec("faiss", "stores/demo", "Flat")),
    ("faiss:stores/demo#HNSW32", StoreSpec("faiss", "stores/demo", "HNSW32")),
    ("pgvector:postgresql://u:p@h:5432/db#docs", StoreSpec("pgvector", "postgresql://u:p@h:5432/db", "docs")),
    ("pgvector:", StoreSpec("pgvector", "", "haystack_documents")),
    ("qdrant:/data/q", StoreSpec("qdrant", "/data/q", "cfrag")),
    ("qdrant:http://localhost:6333#wiki", StoreSpec("qdrant", "http://localhost:6333", "wiki")),
    ("qdrant::memory:", StoreSpec("qdrant", ":memory:", "cfrag")),
])
def test_store_specs_parse(text, expected):
    assert parse_store_spec(text) == expected


@pytest.mark.parametrize("bad", ["faiss:", "qdrant:", "memory:", "pgvector:mysql://x", "pgvector:#drop table",
                                 "mongo://x", "s3:bucket/store.json"])
def test_bad_store_specs_are_refused(bad):
    with pytest.raises(ValueError):
        parse_store_spec(bad)


def test_passwords_are_redacted():
    assert redact("pgvector:postgresql://me:s3cret@db:5432/x#t") == "pgvector:postgresql://me:***@db:5432/x#t"
    spec = parse_store_spec("pgvector:postgresql://me:s3cret@db:5432/x#t")  # parsed, the spec holds none in its text
    assert str(spec) == "pgvector:postgresql://me@db:5432/x#t" and spec.password.resolve_value() == "s3cret"


# ---------------------------------------------------------------- FAISS
def test_faiss_scores_map_to_cosine_and_rank_like_cosine(tmp_path):
    docs = embedded_docs()
    faiss_store = build(f"faiss:{tmp_path / 'f'}", docs)
    memory = InMemoryDocumentStore(embedding_similarity_function="cosine")
    memory.write_documents(docs)
    query = HashingTextEmbedder().run(text=dk.QUESTION)["embedding"]
    by_faiss = embedding_retriever(faiss_store, top_k=10).run(query_embedding=query)["documents"]
    by_cosine = embedding_retriever(memory, top_k=10).run(query_embedding=query, scale_score=False)["documents"]
    assert [d.id for d in by_faiss] == [d.id for d in by_cosine]
    for f, c in zip(by_faiss, by_cosine, strict=True):
        assert faiss_cosine(f.score) == pytest.approx(c.score, abs=1e-5)
        assert f.score == pytest.approx(1 / (1 + (2 - 2 * c.score)), abs=1e-5)


def test_faiss_store_saves_and_reloads(tmp_path):
    spec = f"faiss:{tmp_path / 'sub' / 'demo'}"
    docs = embedded_docs()
    build(spec, docs)
    assert (tmp_path / "sub" / "demo.faiss").exists() and (tmp_path / "sub" / "demo.json").exists()
    assert not list((tmp_path / "sub").glob("*.tmp*"))  # written atomically, nothing left behind
    again = open_document_store(spec)
    assert again.count_documents() == len(docs)
    stored = {d.id: d for d in again.filter_documents()}
    assert all(np.allclose(stored[d.id].embedding, d.embedding) and stored[d.id].content == d.content for d in docs)
    query = HashingTextEmbedder().run(text=dk.QUESTION)["embedding"]
    assert embedding_retriever(again, top_k=1).run(query_embedding=query)["documents"][0].id == "cast"


def test_reading_a_missing_store_fails_and_creates_nothing(tmp_path):
    for spec in (f"faiss:{tmp_path / 'none'}", f"qdrant:{tmp_path / 'none-q'}", str(tmp_path / "none.json")):
        with pytest.raises(FileNotFoundError, match="cfrag index"):
            open_document_store(spec)
    assert list(tmp_path.iterdir()) == []


class _GpuIndex:
    """Stands for a faiss GPU index: searches the CPU clone it was made from, counts searches."""

    def __init__(self, cpu, device):
        self.cpu, self.device, self.searches = cpu, device, 0
        self.ntotal = cpu.ntotal

    def search(self, x, k):
        self.searches += 1
        return self.cpu.search(x, k)


def fake_faiss(n_gpus):
    import faiss

    made = []

    def to_gpu(resources, device, index):
        assert isinstance(resources, FakeResources)
        made.append(_GpuIndex(faiss.clone_index(index), device))
        return made[-1]

    class FakeResources:
        pass

    module = types.SimpleNamespace(get_num_gpus=lambda: n_gpus, StandardGpuResources=FakeResources,
                                   index_cpu_to_gpu=to_gpu, made=made)
    return module


def test_faiss_searches_a_gpu_copy_when_faiss_has_gpus(tmp_path, monkeypatch):
    import haystack_cfrag.stores.kinds.faiss_gpu as fg

    fake = fake_faiss(n_gpus=2)
    monkeypatch.setattr(fg, "faiss", fake)
    monkeypatch.setattr("faiss.get_num_gpus", fake.get_num_gpus)  # what open_document_store asks
    spec = f"faiss:{tmp_path / 'g'}"
    docs = embedded_docs()
    store = build(spec, docs[:6])
    assert type(store).__name__ == "GpuFAISSDocumentStore"
    retriever = embedding_retriever(store, top_k=3)
    query = HashingTextEmbedder().run(text=dk.QUESTION)["embedding"]
    first = retriever.run(query_embedding=query)["documents"]
    assert store.on_gpu and len(fake.made) == 1 and fake.made[0].device == 0 and fake.made[0].searches == 1
    store.write_documents(docs[6:])  # a write goes to the CPU index and invalidates the GPU copy
    second = retriever.run(query_embedding=query)["documents"]
    assert len(fake.made) == 2 and fake.made[1].ntotal == len(docs) and [d.id for d in second][:1] == ["cast"]
    assert first[0].id == "cast"
    save_document_store(store, spec)  # faiss.write_index gets the CPU index (a GPU one could not be saved)
    # round trip through YAML: the retriever rebuilds the GPU-capable store, with its device
    data = retriever.to_dict()
    assert data["init_parameters"]["document_store"]["init_parameters"]["device"] is None
    rebuilt = type(retriever).from_dict(data)
    assert type(rebuilt.document_store).__name__ == "GpuFAISSDocumentStore"
    assert rebuilt.document_store.count_documents() == len(docs)


def test_faiss_gpu_device_choice():
    from haystack_cfrag.stores.kinds.faiss_gpu import gpu_device

    assert gpu_device(None, 0) is None and gpu_device(None, 2) == 0 and gpu_device(1, 2) == 1
    assert gpu_device(-1, 4) is None and gpu_device(0, 0) is None  # asked but none: CPU, with a warning
    with pytest.raises(ValueError, match="2 GPU"):
        gpu_device(3, 2)


def test_faiss_without_gpu_is_the_plain_integration(tmp_path, monkeypatch):
    import haystack_cfrag.stores.kinds.faiss_gpu as fg

    fake = fake_faiss(n_gpus=0)
    monkeypatch.setattr(fg, "faiss", fake)
    store = fg.GpuFAISSDocumentStore(embedding_dim=DIM, device=0)  # asked for GPU 0, none there
    store.write_documents(embedded_docs())
    query = HashingTextEmbedder().run(text=dk.QUESTION)["embedding"]
    assert store.search(query, top_k=1)[0].id == "cast" and not store.on_gpu and fake.made == []
    assert type(open_document_store(f"faiss:{_saved(tmp_path)}")).__name__ == "FAISSDocumentStore"


def _saved(tmp_path):
    build(f"faiss:{tmp_path / 'plain'}")
    return tmp_path / "plain"


# ---------------------------------------------------------------- pipelines over the stores
@pytest.mark.parametrize("kind", ["faiss", "qdrant"])
def test_runtime_runs_cf_rag_and_standard_rag_over_the_store(tmp_path, kind):
    spec = f"{kind}:{tmp_path / kind}"
    close(build(spec))
    store = open_document_store(spec)
    before = sorted((d.id, d.content) for d in store.filter_documents())
    rt = Runtime(store=store, chat_generator=reader(), text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])
    std = rt.ask("standard_rag", dk.QUESTION)
    cf = rt.ask("cf_rag", dk.QUESTION, {"random_state": 0})
    assert std.answer == "Heath Ledger" and std.documents[0]["id"] == "cast"
    assert cf.answer == "Christian Bale" and cf.trace["decision"]
    pipe = rt.pipeline(pipeline_path("cf_rag"))
    inner = pipe.get_component("retriever").retriever
    assert type(inner) is type(rt.stores.retriever) and getattr(inner, "document_store", None) in (store, None)
    assert rt.pipeline(pipeline_path("standard_rag")).get_component("retriever").to_dict()["init_parameters"][
        "top_k"] == 5  # the file's top_k is kept
    assert sorted((d.id, d.content) for d in store.filter_documents()) == before  # only read
    close(store)


def test_load_pipeline_with_a_faiss_retriever_override(tmp_path):
    spec = f"faiss:{tmp_path / 'f'}"
    build(spec)
    retriever = embedding_retriever(open_document_store(spec), top_k=5)
    pipe, out = run_cf_rag_over(retriever)
    assert out["duel"]["answer"] == "Christian Bale"
    assert type(pipe.get_component("retriever").retriever).__name__ == "FAISSEmbeddingRetriever"


def test_cli_index_and_ask_take_store_specs(tmp_path, monkeypatch):
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.cli import main

    class Embedder(HashingDocumentEmbedder):
        def warm_up(self):
            pass

    monkeypatch.setattr(factories, "document_embedder", lambda *a, **k: Embedder())
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": d.id, "content": d.content, "title": d.meta.get("title")})
                                for d in dk.documents()))
    runner = CliRunner()
    for spec in (f"faiss:{tmp_path / 'idx'}", f"qdrant:{tmp_path / 'q'}#demo"):
        for _ in range(2):  # a second run overwrites the same ids: the count stays
            result = runner.invoke(main, ["index", str(corpus), "--store", spec])
            assert result.exit_code == 0, result.output
            assert f"store has {len(dk.documents())}" in result.output
    result = runner.invoke(main, ["ask", dk.QUESTION, "--store", f"faiss:{tmp_path / 'missing'}"])
    assert result.exit_code != 0 and "cfrag index" in result.output


def test_example4_runs_cf_rag_over_faiss_and_qdrant(tmp_path):
    from tests.unit.docs.test_examples import load

    mod = load("04_stores.py")
    docs = embedded_docs()
    for spec in (f"faiss:{tmp_path / 'demo'}", f"qdrant:{tmp_path / 'q'}#demo"):
        store = mod.copy_into(spec, docs)
        answer, trace = mod.ask(mod.build(store, HashingTextEmbedder(), reader(), "cf_rag",
                                          allowed_modules=["tests"]), dk.QUESTION)
        assert answer == "Christian Bale" and trace["drafts"]
        assert store.count_documents() == len(docs)
        close_document_store(store)
