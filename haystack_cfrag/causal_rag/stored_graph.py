"""CausalRAG's graph as data in the user's store: written by `cfrag index --graph`, loaded at start.

Where it lives, beside the passages (`graph_home`):

| passages | node vectors | nodes, edges, passages |
|---|---|---|
| ``memory:PATH.json`` | ``PATH.graph/nodes.json`` (in memory) | ``PATH.graph/graph.sqlite`` |
| ``faiss:PATH#INDEX`` | ``faiss:PATH.graph/nodes#INDEX`` (the same index kind) | ``PATH.graph/graph.sqlite`` |
| ``pgvector:URL#TABLE`` | table ``TABLE_graph_vectors`` | tables ``TABLE_graph_`` + meta, nodes, edges, passages |
| ``qdrant:PATH#COLL`` | collection ``COLL_graph_vectors`` | ``PATH.COLL.graph/graph.sqlite`` (a server: in the cache) |

`causal_rag.graph_write.write_graph` writes it in batches of passages; `open_stored_graph` opens both parts
(checked, never rebuilt); `CausalGraphRetriever` reads the edges from the tables. Opening never trusts the graph:
its folder is the package's (`causal_rag.graph_folder`), its SQLite file holds exactly the graph's tables, every
statement has a deadline (`causal_rag.sqlite_guard`), its node store's files are checked as the store's are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.causal_rag.graph_folder import check_folder, make_folder
from haystack_cfrag.causal_rag.graph_tables import GraphTables
from haystack_cfrag.causal_rag.sqlite_guard import open_tables
from haystack_cfrag.stores.kinds.base import Beside
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

logger = logging.getLogger(__name__)

INDEX_SECONDS = 3600
"""The statement timeout of the HNSW index build on a pgvector graph's node vectors (66 s at 132,355 nodes)."""


@dataclass(frozen=True)
class GraphHome(Beside):
    """Where a store's graph lives (its kind's `beside`): its node store's spec and its tables (an SQLite file, or
    a prefix in the node store's Postgres database)."""

    def exists(self) -> bool:
        """Whether a graph was written here (its tables; the node store is checked when opened).

        :raises ValueError: its folder is a link or not a folder.
        """
        if self.sqlite is not None:
            if self.folder is not None and not check_folder(self.folder, writing=False):
                return False
            return self.sqlite.exists() or self.sqlite.is_symlink()
        from haystack_cfrag.stores.kinds.pgvector import connect  # noqa: PLC0415

        with connect(self.nodes) as conn:
            row = conn.execute("SELECT to_regclass(%s)::text", (f"public.{self.postgres}_meta",)).fetchone()
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
        from haystack_cfrag.stores.kinds.pgvector import connect  # noqa: PLC0415

        return GraphTables.open_postgres(connect(self.nodes, autocommit=True), self.postgres, create=create,
                                         also=(self.nodes.name,))


def graph_home(spec: str | StoreSpec, cache_dir: Path | None = None) -> GraphHome:
    """Where the graph of the store `spec` lives (module table).

    >>> graph_home("faiss:stores/demo#HNSW32").nodes
    StoreSpec(kind='faiss', location='stores/demo.graph/nodes', name='HNSW32')
    >>> graph_home("pgvector:postgresql://u:p@h:5432/db#docs").postgres
    'docs_graph'
    """
    from haystack_cfrag import models  # noqa: PLC0415

    s = parse_store_spec(spec)
    beside = s.store_kind.beside(s, cache_dir or models.graph_cache_dir())
    return GraphHome(beside.nodes, beside.sqlite, beside.postgres, beside.folder)


def check_home(spec: str | StoreSpec, home: GraphHome) -> None:
    """Refuse a graph home whose files would be the passages' own (a node store saved over the store), or whose
    folder the package did not create (a user's folder, a link: `causal_rag.graph_folder`)."""
    s = parse_store_spec(spec)
    if home.folder is not None:
        check_folder(home.folder, writing=True)
    mine = home.nodes.store_kind.files(home.nodes) | ({home.sqlite.resolve()} if home.sqlite is not None else set())
    if mine & s.store_kind.files(s) or (s.kind, s.location, s.name) == (home.nodes.kind, home.nodes.location,
                                                                        home.nodes.name):
        raise ValueError(f"the graph of {s} would be written over the store itself; nothing written.")


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

    spec = parse_store_spec(spec)  # every message below shows the spec's text: never a password
    home = graph_home(spec)
    if not home.exists():
        return None
    tables = home.tables(readonly=True)
    try:
        nodes = open_document_store(home.nodes)
    except FileNotFoundError as exc:
        tables.close()
        raise ValueError(f"graph of {spec}: its tables exist but not its node store ({exc}); run "
                         "`cfrag index --graph` again.") from exc
    except ValueError as exc:  # the checks of `stores.safe_files` & co: one line that names the file and why
        tables.close()
        raise ValueError(f"graph of {spec}: {' '.join(str(exc).split())[:300]}") from exc
    except Exception as exc:  # a corrupt or foreign node store file: one line, nothing half-read
        tables.close()
        raise ValueError(f"graph of {spec}: its node store {home.nodes} does not open "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:120]}); nothing read.") from exc
    try:
        meta, counts = tables.meta(), tables.counts()
    except Exception as exc:  # a statement past its deadline, a corrupt page: one line, nothing half-read
        tables.close()
        close_document_store(nodes)
        raise ValueError(f"graph of {spec}: its tables {tables.where} do not read "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:100]}); nothing read.") from exc
    if meta.get("nodes") != str(counts["nodes"]):
        tables.close()
        raise ValueError(f"graph of {spec}: an index run did not finish ({counts['nodes']} nodes, "
                         f"{meta.get('nodes', 'none')} recorded); run `cfrag index --graph` again.")
    from haystack_cfrag.causal_rag.graph_state import graph_notice  # noqa: PLC0415  (issue 62: a stale graph is said)

    if (notice := graph_notice(meta, str(spec))) is not None:
        logger.warning("{notice}", notice=notice)
    return StoredGraph(nodes, tables, home)


def open_for_retrieval(spec: str | StoreSpec, *, node_top_k: int = 10,
                       passages: bool = True) -> tuple[StoredGraph, Any, Any]:
    """What `CausalGraphRetriever(graph=spec)` reads: the stored graph, a retriever of its node store's kind and,
    when `passages`, the store `spec` names (read only; else None).

    :raises ValueError: one line, when no graph is stored there, or it is foreign, corrupt or unfinished.
    """
    from haystack_cfrag.stores.opening import embedding_retriever, open_document_store  # noqa: PLC0415

    spec = parse_store_spec(spec)
    stored = open_stored_graph(spec)
    if stored is None:
        raise ValueError(f"CausalGraphRetriever: no graph is stored beside {spec}; write it with "
                         f"`cfrag index FILES --store {spec} --graph`.")
    try:
        store = open_document_store(spec) if passages else None
    except Exception:
        stored.close()
        raise
    return stored, embedding_retriever(stored.nodes, top_k=node_top_k), store


def _index_node_vectors(home: GraphHome) -> None:
    """pgvector: an HNSW index on the node vectors (cosine), so that a query's seeds are found without scanning every
    node; built once, kept up to date by later inserts."""
    from psycopg import sql  # noqa: PLC0415

    from haystack_cfrag.stores.kinds.pgvector import connect  # noqa: PLC0415

    table = home.nodes.name
    with connect(home.nodes, autocommit=True) as conn:
        conn.execute(f"SET statement_timeout = {int(INDEX_SECONDS * 1000)}")  # the one statement that runs long
        conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)").format(
            sql.Identifier(f"{table}_hnsw"), sql.Identifier(table)))


__all__ = ["GraphHome", "StoredGraph", "graph_home", "open_for_retrieval", "open_stored_graph"]
