"""The graph as data beside the store: tables merged batch by batch, read as the in-memory graph, refused if foreign."""

import sqlite3

import pytest
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag import CausalGraphBuilder, CausalGraphRetriever
from haystack_cfrag.causal_rag.extraction_run import extract_passages, summary_line
from haystack_cfrag.causal_rag.graph_tables import GraphTables
from haystack_cfrag.causal_rag.math.graph import Graph
from haystack_cfrag.causal_rag.node_store import TextEmbedderForDocuments
from haystack_cfrag.causal_rag.stored_graph import graph_home, open_stored_graph
from haystack_cfrag.stores.specs import StoreSpec
from haystack_cfrag.testing.fakes import HashingTextEmbedder

from .fakes import ScriptedExtractor, TableEmbedder
from .test_causal_graph_retriever import DOCS, VECTORS

EDGES = [("Heavy rain", "CAUSES", "Flood", "p1"), ("the flood", "damages", "Crops", "p2"),
         ("Flood", "CLOSES", "Roads", "p2"), ("Drought", "DAMAGES", "crops", "p3"),
         ("Flood", "damages", "Crops", "p3"), ("Robert'); DROP TABLE x;--", "causes", "Flood", "p4")]


def graph_of(edges):
    g = Graph()
    for head, rel, tail, pid in edges:
        g.add_edge(head, rel, tail, passage_id=pid, cue="because" if pid == "p3" else "")
    return g


def expected_documents(g):
    """The node meta CausalGraphBuilder writes for a graph held in memory."""
    return {n: {"node_id": n, "node_type": g.node_type(n), "passage_ids": g.node_passages(n),
                "edges_out": [e.to_dict() for e in g.edges_out(n)], "edges_in": [e.to_dict() for e in g.edges_in(n)]}
            for n in g.node_ids()}


def read_back(tables, names):
    return {d.meta["node_id"]: {k: d.meta[k] for k in ("node_id", "node_type", "passage_ids", "edges_out", "edges_in")}
            for d in tables.node_documents(names)}


def test_batches_merged_into_tables_read_back_as_the_whole_graph_in_memory(tmp_path):
    tables = GraphTables.open_sqlite(tmp_path / "g.sqlite", create=True)
    first = tables.merge(graph_of(EDGES[:2]), [("p1", "h1"), ("p2", "h2")])
    second = tables.merge(graph_of(EDGES[2:]), [("p3", "h3"), ("p4", "h4")])
    whole = graph_of(EDGES)
    assert [n for n, _ in first] == ["Heavy rain", "Flood", "Crops"]
    assert [n for n, _ in second] == ["Roads", "Drought", "Robert'); DROP TABLE x"]  # only new nodes; names cleaned
    assert read_back(tables, whole.node_ids()) == expected_documents(whole)
    assert tables.counts() == {"nodes": 6, "edges": 5, "passages": 4, "causal_edges": 2}
    assert tables.passages() == {"p1": "h1", "p2": "h2", "p3": "h3", "p4": "h4"}
    assert tables.node_documents(["nobody", ""]) == []


def test_a_retriever_reading_the_tables_returns_what_the_node_meta_gave(tmp_path):
    out = CausalGraphBuilder(chat_generator=ScriptedExtractor(),
                             document_embedder=TableEmbedder(VECTORS, dimension=5)).run(documents=DOCS)
    with_meta = InMemoryDocumentStore()
    with_meta.write_documents(out["nodes"] + out["documents"], policy=DuplicatePolicy.OVERWRITE)
    # the stored graph: vectors only in the node store, passages in their own, edges in the tables
    vectors, passages = InMemoryDocumentStore(), InMemoryDocumentStore()
    vectors.write_documents([Document(id=n.id, content=n.content, embedding=n.embedding,
                                      meta={"cfrag_graph_node": True, "node_id": n.meta["node_id"]})
                             for n in out["nodes"]])
    passages.write_documents(out["documents"])
    graph = Graph()
    for n in out["nodes"]:
        for e in n.meta["edges_out"]:
            graph.add_edge_record(e)
    tables = GraphTables.open_sqlite(tmp_path / "g.sqlite", create=True)
    tables.merge(graph, [(d.id, "h") for d in DOCS])
    for hops in (1, 2, 3):
        for query in VECTORS.values():
            old = CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=with_meta),
                                       top_k=2, hops=hops).run(query_embedding=query)
            new = CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=vectors),
                                       document_store=passages, top_k=2, hops=hops)
            new.graph_tables = tables
            got = new.run(query_embedding=query)
            assert got["causal_edges"] == old["causal_edges"]
            assert [d.id for d in got["documents"]] == [d.id for d in old["documents"]]
            assert [n.content for n in got["nodes"]] == [n.content for n in old["nodes"]]
            assert got["degradations"] == old["degradations"] == []


def test_index_writes_the_graph_beside_the_store_incrementally(tmp_path, monkeypatch):
    spec = StoreSpec("memory", str(tmp_path / "s.json"))
    embedder = TableEmbedder(VECTORS, dimension=5)
    embedder.warm_up = lambda: None
    kwargs = {"chat_generator": ScriptedExtractor(), "cache_dir": tmp_path / "cache", "store_spec": spec,
              "text_embedder": None}

    import haystack_cfrag.causal_rag.node_store as node_store
    monkeypatch.setattr(node_store, "TextEmbedderForDocuments", lambda *_a: embedder)  # seeded vectors, in batches

    def index(docs):
        return extract_passages(docs, **kwargs)

    first = index(DOCS[:2])
    assert (first["nodes_embedded"], first["nodes"], first["rebuilt"]) == (4, 4, False)
    again = index(DOCS[:2])  # nothing new: no node embedded, nothing merged, no cached extraction read
    assert (again["nodes_embedded"], again["merged_passages"], again["nodes"]) == (0, 0, 4)
    assert (again["in_graph"], again["cached"], again["extracted"]) == (2, 0, 0)
    assert "2 passages (2 already in the graph, 0 cached)" in summary_line(again)
    more = index(DOCS)  # Drought is new
    assert (more["nodes_embedded"], more["merged_passages"], more["nodes"]) == (1, 2, 5)
    fewer = index([DOCS[0], DOCS[2]])  # p2 deleted: rebuilt from the cache, Roads gone from both parts
    assert fewer["rebuilt"] and fewer["nodes_deleted"] == 1 and fewer["nodes_embedded"] == 0
    stored = open_stored_graph(spec)
    assert stored is not None
    names = {d.meta["node_id"] for d in stored.nodes.filter_documents()}
    assert names == {"Heavy rain", "Flood", "Crops", "Drought"}
    flood = stored.tables.node_documents(["flood"])[0]
    assert flood.meta["edges_out"] == []  # its edges to Crops and Roads came from p2
    stored.close()


def test_no_graph_stored_is_none_and_an_unfinished_run_is_refused(tmp_path):
    spec = StoreSpec("memory", str(tmp_path / "s.json"))
    assert open_stored_graph(spec) is None
    home = graph_home(spec)
    tables = home.tables(create=True)
    tables.merge(graph_of(EDGES[:1]), [("p1", "h1")])  # merged, never stamped with its counts
    tables.close()
    InMemoryDocumentStore().save_to_disk(str(home.nodes.location))
    with pytest.raises(ValueError, match="did not finish"):
        open_stored_graph(spec)


@pytest.mark.parametrize("make, match", [
    (lambda p: p.write_text("name,age\nann,3\n"), "not an SQLite database"),
    (lambda p: sqlite3.connect(str(p)).execute("CREATE TABLE users (id INT)").connection.commit(),
     "not a haystack-cfrag graph"),
    (lambda p: _stamped(p, "haystack-cfrag causal graph", "99"), "version '99'"),
    (lambda p: _stamped(p, "someone else's", "1"), "not a haystack-cfrag graph"),
])
def test_foreign_or_corrupt_graph_files_are_refused_in_one_line_and_left_as_they_were(tmp_path, make, match):
    path = tmp_path / "g.sqlite"
    make(path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=match) as info:
        GraphTables.open_sqlite(path)
    assert "\n" not in str(info.value)
    assert path.read_bytes() == before


def test_links_folders_and_bad_prefixes_are_refused(tmp_path):
    target = tmp_path / "real.sqlite"
    GraphTables.open_sqlite(target, create=True).close()
    (tmp_path / "link.sqlite").symlink_to(target)
    with pytest.raises(ValueError, match="not a regular file"):
        GraphTables.open_sqlite(tmp_path / "link.sqlite")
    with pytest.raises(ValueError, match="not a regular file"):
        GraphTables.open_sqlite(tmp_path)
    with pytest.raises(FileNotFoundError, match="cfrag index --graph"):
        GraphTables.open_sqlite(tmp_path / "missing.sqlite")
    for prefix in ('x"; DROP TABLE y; --', "1abc", "a" * 48, ""):
        with pytest.raises(ValueError, match="plain SQL identifier"):
            GraphTables(sqlite3.connect(":memory:"), dialect="sqlite", prefix=prefix)


def test_graph_home_per_store_kind(tmp_path):
    assert graph_home("memory:/d/s.json").sqlite.as_posix() == "/d/s.graph/graph.sqlite"
    assert graph_home("faiss:/d/f#HNSW32").nodes == StoreSpec("faiss", "/d/f.graph/nodes", "HNSW32")
    pg = graph_home("pgvector:postgresql://u:p@h:5432/db#docs")
    assert (pg.nodes.name, pg.postgres, pg.sqlite) == ("docs_graph_vectors", "docs_graph", None)
    assert pg.nodes.password.resolve_value() == "p" and "p@" not in str(pg.nodes)  # the node store's connection
    assert graph_home("qdrant:/d/q#c").sqlite.as_posix() == "/d/q.c.graph/graph.sqlite"
    served = graph_home("qdrant:http://h:6333#c", cache_dir=tmp_path)
    assert served.sqlite.parent == tmp_path and served.sqlite.name.startswith("qdrant-")


@pytest.mark.parametrize("spec", ["faiss:/d/store", "faiss:/d/store.v2#HNSW32", "memory:/d/s.json", "memory:/d/s",
                                  "faiss:/d/store.graph-nodes"])
def test_the_graph_is_never_saved_over_the_store_it_belongs_to(spec):
    # faiss:PATH saves PATH.faiss + PATH.json with Path.with_suffix: a node store at PATH.graph-nodes was PATH.faiss
    from haystack_cfrag.causal_rag.stored_graph import check_home
    from haystack_cfrag.stores.specs import parse_store_spec
    home = graph_home(spec)
    check_home(spec, home)  # does not raise
    files = parse_store_spec(spec).store_kind.files
    assert not files(home.nodes) & files(parse_store_spec(spec))
    clash = type(home)(parse_store_spec(spec), sqlite=home.sqlite)
    with pytest.raises(ValueError, match="over the store itself"):
        check_home(spec, clash)


def test_nodes_are_embedded_in_batches_by_the_injected_document_embedder():
    from haystack import component

    @component
    class FakeTextEmbedder:
        @component.output_types(embedding=list[float])
        def run(self, text):
            raise AssertionError("one text at a time")

    @component
    class FakeDocumentEmbedder:
        calls: list = []

        @component.output_types(documents=list[Document])
        def run(self, documents):
            FakeDocumentEmbedder.calls.append(len(documents))
            return {"documents": [Document(id=d.id, content=d.content, embedding=[1.0]) for d in documents]}

    embedder = TextEmbedderForDocuments(FakeTextEmbedder(), FakeDocumentEmbedder(), batch_size=4)
    docs = [Document(content=f"n{i}") for i in range(10)]
    out = embedder.run(docs)["documents"]
    assert FakeDocumentEmbedder.calls == [4, 4, 2]
    assert len(out) == 10 and all(d.embedding == [1.0] for d in out) and docs[0].embedding is None
    # without one, the text embedder embeds one text at a time (nothing guessed from its class)
    alone = TextEmbedderForDocuments(HashingTextEmbedder()).run(docs[:2])["documents"]
    assert [d.embedding for d in alone] == [HashingTextEmbedder().run(text=d.content)["embedding"] for d in docs[:2]]


def _stamped(path, fmt, version):
    conn = sqlite3.connect(str(path))
    conn.execute('CREATE TABLE "cfrag_graph_meta" (key TEXT PRIMARY KEY, value TEXT)')
    conn.executemany('INSERT INTO "cfrag_graph_meta" VALUES (?, ?)', [("format", fmt), ("version", version)])
    conn.commit()
    conn.close()


def test_a_retriever_given_only_the_store_spec_opens_its_stored_graph_and_passages(tmp_path, monkeypatch):
    """`CausalGraphRetriever(graph=SPEC)`: what a YAML run without cfrag's runtime (Hayhooks) writes."""
    from haystack_cfrag.stores import save_memory_store

    path = tmp_path / "s.json"
    passages = InMemoryDocumentStore()
    passages.write_documents(DOCS)
    save_memory_store(passages, path)
    embedder = TableEmbedder(VECTORS, dimension=5)
    embedder.warm_up = lambda: None
    import haystack_cfrag.causal_rag.node_store as node_store
    monkeypatch.setattr(node_store, "TextEmbedderForDocuments", lambda *_a: embedder)
    extract_passages(DOCS, chat_generator=ScriptedExtractor(), cache_dir=tmp_path / "cache",
                     store_spec=StoreSpec("memory", str(path)), text_embedder=None)
    stored = open_stored_graph(StoreSpec("memory", str(path)))
    explicit = CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=stored.nodes),
                                    document_store=passages, top_k=2, hops=2)
    explicit.graph_tables = stored.tables
    spec = f"memory:{path}"
    data = CausalGraphRetriever(graph=spec, top_k=2, hops=2).to_dict()
    assert data["init_parameters"]["graph"] == spec and data["init_parameters"]["node_retriever"] is None
    by_spec = CausalGraphRetriever.from_dict(data)
    for query in VECTORS.values():  # opened on the first run, no warm_up called
        want, got = explicit.run(query_embedding=query), by_spec.run(query_embedding=query)
        assert got["causal_edges"] == want["causal_edges"] and got["degradations"] == []
        assert [d.id for d in got["documents"]] == [d.id for d in want["documents"]]
    assert by_spec.to_dict() == data  # the opened parts are not serialised
    by_spec.close()
    assert by_spec.graph_tables is None
    stored.close()


@pytest.mark.parametrize("graph, match", [
    (7, "'graph' must be a store spec string"),
    ("ftp://host/x", "ftp"),
])
def test_a_graph_spec_that_is_not_one_is_refused_at_construction(graph, match):
    with pytest.raises(ValueError, match=match):
        CausalGraphRetriever(graph=graph)


def test_a_store_without_a_stored_graph_is_one_line_naming_the_command(tmp_path):
    from haystack_cfrag.stores import save_memory_store

    save_memory_store(InMemoryDocumentStore(), tmp_path / "s.json")
    retriever = CausalGraphRetriever(graph=str(tmp_path / "s.json"))
    with pytest.raises(ValueError, match="no graph is stored beside .*cfrag index FILES --store .* --graph"):
        retriever.run(query_embedding=[1.0, 0, 0, 0, 0])


def test_without_node_retriever_or_graph_the_retriever_is_refused():
    with pytest.raises(ValueError, match="'node_retriever' is required .* or 'graph'"):
        CausalGraphRetriever()
