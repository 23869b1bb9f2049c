"""CausalRAG's graph as data in the user's store: written by `cfrag index --graph`, loaded at start.

Where it lives, beside the passages (`graph_home`):

| passages | node vectors | nodes, edges, passages |
|---|---|---|
| ``memory:PATH.json`` | ``PATH.graph/nodes.json`` (in memory) | ``PATH.graph/graph.sqlite`` |
| ``faiss:PATH#INDEX`` | ``faiss:PATH.graph/nodes#INDEX`` (the same index kind) | ``PATH.graph/graph.sqlite`` |
| ``pgvector:URL#TABLE`` | table ``TABLE_graph_vectors`` | tables ``TABLE_graph_meta``, ``_nodes``, ``_edges``, ``_passages`` |
| ``qdrant:PATH#COLL`` | collection ``COLL_graph_vectors`` | ``PATH.COLL.graph/graph.sqlite`` (a server: in the cache) |

`causal_rag.graph_write.write_graph` assembles the graph from the extraction cache in batches of passages (no
whole graph in memory), merges each batch into the tables in one transaction, embeds the nodes without a vector
into the node store and finishes what a killed run left. `open_stored_graph` opens both parts (checked, never
rebuilt); `CausalGraphRetriever` reads the edges from the tables.

Opening never trusts the graph: its folder is the package's (`causal_rag.graph_folder`: created with a
marker, never a link or a user's folder), its SQLite file holds exactly the graph's tables and
every statement has a deadline (`causal_rag.sqlite_guard`; read-only when only reading), its node
store's files are checked as the store's are, and Postgres connections carry timeouts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.causal_rag.graph_tables import GraphTables
from haystack_cfrag.causal_rag.graph_folder import check_folder, make_folder
from haystack_cfrag.stores.specs import NODE_SUFFIX, StoreSpec, parse_store_spec, redact
from haystack_cfrag.causal_rag.sqlite_guard import open_tables

logger = logging.getLogger(__name__)

INDEX_SECONDS = 3600
"""The statement timeout of the HNSW index build on a pgvector graph's node vectors (66 s at 132,355 nodes)."""


@dataclass(frozen=True)
class GraphHome:
    """Where a store's graph lives: its node store's spec and its tables (an SQLite file, or a Postgres prefix)."""

    nodes: StoreSpec
    sqlite: Path | None = None
    postgres: tuple[str, str] | None = None  # (the URL, the table prefix)
    folder: Path | None = None  # the package's own folder the files live in (`causal_rag.graph_folder`)

    def exists(self) -> bool:
        """Whether a graph was written here (its tables; the node store is checked when opened).

        :raises ValueError: its folder is a link or not a folder.
        """
        if self.sqlite is not None:
            if self.folder is not None and not check_folder(self.folder, writing=False):
                return False
            return self.sqlite.exists() or self.sqlite.is_symlink()
        from haystack_cfrag.stores.opening import pg_connect, pg_secret  # noqa: PLC0415

        url, prefix = self.postgres  # type: ignore[misc]
        with pg_connect(pg_secret(url).resolve_value()) as conn:
            row = conn.execute("SELECT to_regclass(%s)::text", (f"public.{prefix}_meta",)).fetchone()
        return row is not None and row[0] is not None

    def tables(self, *, create: bool = False, readonly: bool = False) -> GraphTables:
        """The graph's tables, checked (created when `create`; an SQLite file opened read-only when `readonly`)."""
        if self.sqlite is not None:
            if create and self.folder is not None:
                make_folder(self.folder)
            elif create:
                self.sqlite.parent.mkdir(parents=True, exist_ok=True)
            elif self.folder is not None:
                check_folder(self.folder, writing=not readonly)
            return open_tables(self.sqlite, create=create, readonly=readonly and not create)
        from haystack_cfrag.stores.opening import pg_secret  # noqa: PLC0415

        url, prefix = self.postgres  # type: ignore[misc]
        return GraphTables.open_postgres(pg_secret(url).resolve_value(), prefix, create=create,
                                         also=(self.nodes.name,))


def graph_home(spec: str | StoreSpec, cache_dir: Path | None = None) -> GraphHome:
    """Where the graph of the store `spec` lives (module table).

    >>> graph_home("faiss:stores/demo#HNSW32").nodes
    StoreSpec(kind='faiss', location='stores/demo.graph/nodes', name='HNSW32')
    >>> graph_home("pgvector:postgresql://u:p@h:5432/db#docs").postgres[1]
    'docs_graph'
    """
    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    if s.kind == "memory":
        base = Path(s.location)
        folder = Path(f"{base.with_suffix('') if base.suffix == '.json' else base}.graph")
        return GraphHome(StoreSpec("memory", str(folder / "nodes.json")), sqlite=folder / "graph.sqlite",
                         folder=folder)
    if s.kind == "faiss":  # a folder of its own: `PATH.graph-nodes` would be saved as PATH.faiss, over the passages
        folder = Path(f"{s.location}.graph")
        return GraphHome(StoreSpec("faiss", str(folder / "nodes"), s.name), sqlite=folder / "graph.sqlite",
                         folder=folder)
    if s.kind == "pgvector":
        return GraphHome(StoreSpec("pgvector", s.location, s.name + NODE_SUFFIX), postgres=(s.location, f"{s.name}_graph"))
    nodes = StoreSpec("qdrant", s.location, s.name + NODE_SUFFIX)
    if s.location == ":memory:" or s.location.startswith(("http://", "https://")):
        from haystack_cfrag import models  # noqa: PLC0415

        digest = hashlib.sha256(f"{s.location}#{s.name}".encode()).hexdigest()[:16]
        return GraphHome(nodes, sqlite=(cache_dir or models.graph_cache_dir()) / f"qdrant-{digest}.graph.sqlite")
    folder = Path(f"{s.location}.{s.name}.graph")
    return GraphHome(nodes, sqlite=folder / "graph.sqlite", folder=folder)


def store_files(spec: StoreSpec) -> set[Path]:
    """The files a file store is saved as (memory: its JSON; FAISS: PATH.faiss and PATH.json), resolved."""
    if spec.kind == "memory":
        return {Path(spec.location).resolve()}
    if spec.kind == "faiss":
        base = Path(spec.location)
        return {base.with_suffix(".faiss").resolve(), base.with_suffix(".json").resolve()}
    return set()


def check_home(spec: str | StoreSpec, home: GraphHome) -> None:
    """Refuse a graph home whose files would be the passages' own (a node store saved over the store), or whose
    folder the package did not create (a user's folder, a link: `causal_rag.graph_folder`)."""
    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    if home.folder is not None:
        check_folder(home.folder, writing=True)
    mine = store_files(home.nodes) | ({home.sqlite.resolve()} if home.sqlite is not None else set())
    if mine & store_files(s) or (s.kind == home.nodes.kind and s.location == home.nodes.location
                                 and s.name == home.nodes.name):
        raise ValueError(f"the graph of {redact(str(s))} would be written over the store itself; nothing written.")


@dataclass
class StoredGraph:
    """A graph opened from the user's store: the node store (vectors) and the tables (everything else)."""

    nodes: Any
    tables: GraphTables
    home: GraphHome

    def close(self) -> None:
        """Close the tables and the node store's connections."""
        from haystack_cfrag.stores.opening import close_document_store  # noqa: PLC0415

        self.tables.close()
        close_document_store(self.nodes)


def open_stored_graph(spec: str | StoreSpec) -> StoredGraph | None:
    """The stored graph of the store `spec`, or None when none was written (`cfrag index --graph`).

    :raises ValueError: one line, when its tables are foreign, corrupt or of another version.
    """
    from haystack_cfrag.stores.opening import close_document_store, open_document_store  # noqa: PLC0415

    home = graph_home(spec)
    if not home.exists():
        return None
    tables = home.tables(readonly=True)
    try:
        nodes = open_document_store(home.nodes)
    except FileNotFoundError as exc:
        tables.close()
        raise ValueError(f"graph of {redact(str(spec))}: its tables exist but not its node store ({redact(str(exc))}); run "
                         "`cfrag index --graph` again.") from exc
    except ValueError as exc:  # the checks of `stores.safe_files` & co: one line that names the file and why
        tables.close()
        raise ValueError(f"graph of {redact(str(spec))}: {' '.join(str(exc).split())[:300]}") from exc
    except Exception as exc:  # a corrupt or foreign node store file: one line, nothing half-read
        tables.close()
        raise ValueError(f"graph of {redact(str(spec))}: its node store {home.nodes} does not open "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:120]}); nothing read.") from exc
    try:
        meta, counts = tables.meta(), tables.counts()
    except Exception as exc:  # a statement past its deadline, a corrupt page: one line, nothing half-read
        tables.close()
        close_document_store(nodes)
        raise ValueError(f"graph of {redact(str(spec))}: its tables {tables.where} do not read "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:100]}); nothing read.") from exc
    if meta.get("nodes") != str(counts["nodes"]):
        tables.close()
        raise ValueError(f"graph of {redact(str(spec))}: an index run did not finish ({counts['nodes']} nodes, "
                         f"{meta.get('nodes', 'none')} recorded); run `cfrag index --graph` again.")
    from haystack_cfrag.causal_rag.graph_state import graph_notice  # noqa: PLC0415  (issue 62: a stale graph is said)

    if (notice := graph_notice(meta, redact(str(spec)))) is not None:
        logger.warning("{notice}", notice=notice)
    return StoredGraph(nodes, tables, home)


def open_for_retrieval(spec: str, *, node_top_k: int = 10, passages: bool = True) -> tuple[StoredGraph, Any, Any]:
    """What `CausalGraphRetriever(graph=spec)` reads: the stored graph, a retriever of its node store's kind and,
    when `passages`, the store `spec` names (read only; else None).

    :raises ValueError: one line, when no graph is stored there, or it is foreign, corrupt or unfinished.
    """
    from haystack_cfrag.stores.opening import embedding_retriever, open_document_store  # noqa: PLC0415

    stored = open_stored_graph(spec)
    if stored is None:
        raise ValueError(f"CausalGraphRetriever: no graph is stored beside {redact(spec)}; write it with "
                         f"`cfrag index FILES --store {redact(spec)} --graph`.")
    try:
        store = open_document_store(spec) if passages else None
    except Exception:
        stored.close()
        raise
    return stored, embedding_retriever(stored.nodes, top_k=node_top_k), store


def _index_node_vectors(home: GraphHome) -> None:
    """pgvector: an HNSW index on the node vectors (cosine, the store's similarity), so that a query's seeds are
    found without scanning every node: 100 ms → 8 ms a seed query, graph retrieval median 407 → 226 ms at
    132,355 nodes (the scale run). Built once (66 s there), kept up to date by later inserts; names quoted."""
    import psycopg  # noqa: PLC0415
    from psycopg import sql  # noqa: PLC0415

    from haystack_cfrag.stores.opening import pg_secret  # noqa: PLC0415

    url, _ = home.postgres  # type: ignore[misc]
    table = home.nodes.name
    with psycopg.connect(pg_secret(url).resolve_value(), autocommit=True) as conn:
        conn.execute(f"SET statement_timeout = {int(INDEX_SECONDS * 1000)}")  # the one statement that runs long
        conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)").format(
            sql.Identifier(f"{table}_hnsw"), sql.Identifier(table)))


def _names_only(node_store: Any) -> None:
    """A FAISS node store keeps each node Document without its vector: the index holds the vectors, and
    faiss-haystack saves its `documents` as JSON (with vectors, 65 MB and 7.5 s to open for the demo graph's
    7,377 nodes; without, a tenth). Retrieval returns Documents from that dict; nothing reads their vectors."""
    docs = getattr(node_store, "documents", None)
    if type(node_store).__name__.endswith("FAISSDocumentStore") and isinstance(docs, dict):
        node_store.documents = {k: replace(d, embedding=None) if d.embedding is not None else d
                                for k, d in docs.items()}


__all__ = ["GraphHome", "StoredGraph", "graph_home", "open_for_retrieval", "open_stored_graph"]
