"""`cfrag serve --store` takes the store specs of `ask` and `index`: checked by the CLI, opened by the service.

The CLI runs up to starting the server (`run_children` is replaced); the service opens a
non-JSON spec through `haystack_cfrag.stores` with a fake store (no FAISS, Postgres or Qdrant).
"""

import logging

import pytest
from click.testing import CliRunner
from haystack import component
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

import haystack_cfrag.cli.serve as cli_serve
from haystack_cfrag import stores
from haystack_cfrag.cli import main
from haystack_cfrag.serving.service import CFRAGService, ServingConfig
from haystack_cfrag.stores import StoreSpec
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import HashingTextEmbedder
from tests.unit.serving.test_serving import dark_knight_store

PG_URL = "postgresql://cfrag:s3cret@db.example:5432/rag"


@pytest.fixture
def serve(tmp_path, monkeypatch):
    """`cfrag serve --mock ARGS` in tmp_path up to starting the server: (exit code, output, the server's env)."""
    started = []
    monkeypatch.setattr(cli_serve, "run_children", lambda commands, env: started.append(env) or 0)
    monkeypatch.delenv("PG_CONN_STR", raising=False)
    monkeypatch.chdir(tmp_path)

    def run(*args):
        result = CliRunner().invoke(main, ["serve", "--mock", *args])
        return result.exit_code, result.output, started[-1] if started else None

    return run


@pytest.mark.parametrize(("spec", "message"), [
    ("mongo://x", "unknown store kind 'mongo'"),
    ("missing.json", "no store at missing.json: create it with `cfrag index FILES --store missing.json`"),
    ("faiss:missing", "no store at missing.faiss"),
    ("qdrant:nofolder", "no store at nofolder"),
    ("pgvector:mysql://x", "use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]"),
    ("pgvector:", "PG_CONN_STR is not set"),
    (f"pgvector:{PG_URL}#drop table", "must be a plain SQL identifier"),
])
def test_a_bad_store_spec_is_refused_in_one_line_before_anything_starts(serve, spec, message):
    code, output, env = serve("--store", spec)
    assert code == 2 and env is None, output
    assert output.strip().splitlines() == [output.strip()] and output.startswith("Error: "), output
    assert message in output and "Invalid value for --store" in output
    assert "s3cret" not in output


@pytest.mark.parametrize("spec", ["faiss:stores/demo#HNSW32", "qdrant:qdrant", "qdrant:http://localhost:6333#docs",
                                  f"pgvector:{PG_URL}#docs", "memory:saved.json", "saved.json"])
def test_store_specs_of_ask_are_accepted_and_reach_the_server_as_they_are(serve, tmp_path, spec):
    (tmp_path / "stores").mkdir()
    (tmp_path / "stores" / "demo.faiss").write_bytes(b"")
    (tmp_path / "qdrant" / "collection" / "cfrag").mkdir(parents=True)  # a local Qdrant store with its collection
    (tmp_path / "saved.json").write_text(  # the head of a saved store (a user's own "{}" is refused: issue 23)
        '{"type": "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore", "init_parameters": {}, '
        '"documents": []}')
    code, output, env = serve("--store", spec)
    assert code == 0 and env is not None, output
    assert env["CFRAG_STORE"] == spec
    assert "s3cret" not in output


def test_yaml_pipelines_are_refused_over_a_store_that_is_not_in_memory(serve, tmp_path):
    (tmp_path / "demo.faiss").write_bytes(b"")
    code, output, env = serve("--store", "faiss:demo", "--yaml", "cf_rag")
    assert code == 2 and env is None and "--yaml pipelines read the in-memory store" in output, output


class FakeOpenedStore:
    """Stands in for a FAISS, pgvector or Qdrant store: not an InMemoryDocumentStore, read through its retriever."""

    def __init__(self):
        self.documents = dark_knight_store()

    def __getattr__(self, name):  # count_documents, embedding_retrieval, … of the documents it holds
        return getattr(self.documents, name)


@component
class FakeStoreRetriever(InMemoryEmbeddingRetriever):
    """What FAISS's, pgvector's and Qdrant's retrievers are to their stores, for `FakeOpenedStore`: the runtime
    hands its store in at construction, and this retriever reads the documents the fake holds."""

    def __init__(self, document_store, **kwargs):
        documents = getattr(document_store, "documents", document_store)
        InMemoryEmbeddingRetriever.__init__(self, document_store=documents, **kwargs)


@pytest.mark.parametrize("spec", ["faiss:stores/demo", f"pgvector:{PG_URL}#docs", "qdrant:http://localhost:6333"])
def test_the_service_opens_a_non_json_spec_through_the_stores_package(monkeypatch, caplog, spec):
    opened, fake = [], FakeOpenedStore()
    monkeypatch.setattr(stores.demo, "open_document_store", lambda s: opened.append(s) or fake)
    monkeypatch.setattr(stores, "embedding_retriever",
                        lambda store: FakeStoreRetriever(document_store=store, top_k=5))
    with caplog.at_level(logging.DEBUG):
        svc = CFRAGService(ServingConfig(generator="mock", store=spec), chat_generator=MockChatGenerator(),
                           text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])
        out = svc.answer("standard_rag", dk.QUESTION)
    assert opened == [stores.parse_store_spec(spec)] and isinstance(opened[0], StoreSpec)
    assert svc.runtime.store is fake  # used as it is, not copied into the in-memory index
    assert out["answer"] and out["documents"]
    assert "s3cret" not in caplog.text
