"""Writing a store's causal graph so that a writer killed at any moment is finished by the next run.

`write_graph` is the one writer (under the store's lock) of the graph beside the store: tables committed batch
by batch, a node store saved once at the end, and a `state` of `writing` until then, `complete` after, `stale`
when `cfrag index` without `--graph` changed the passages. A run that finds the graph not `complete` merges
what the tables lack and reconciles the node vectors (`_reconcile`); `graph_notice` warns a reader."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any

from haystack import Document, logging
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag.graph_state import COMPLETE, STALE, STATE, WRITING, graph_notice  # noqa: F401
from haystack_cfrag.stores import checkpoints
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

logger = logging.getLogger(__name__)

PASSAGE_BATCH = 1000
"""Passages assembled and merged per transaction."""


def _where(home: Any) -> str:
    return str(home.sqlite) if home.sqlite is not None else f"tables {home.postgres}_*"


_marked: set[str] = set()
"""The graphs this process marked `writing` in the run under way (`prepare_graph`, then `write_graph`)."""


def _mark(home: Any, state: str, *, create: bool) -> None:
    """Set the graph's state (the run's first write, refused in one line when it cannot be written); `writing`
    records `repair` = 1 over a graph an unfinished run left."""
    where = _where(home)
    if state == WRITING and where in _marked:
        return
    if home.sqlite is not None:
        folder = home.sqlite.parent
        if folder.exists() and not os.access(folder, os.W_OK):
            raise ValueError(f"graph folder {folder} is not writable; nothing written (make it writable, or index "
                             "without --graph).")
    tables = home.tables(create=create)
    try:
        values = {STATE: state}
        if state == WRITING:
            meta, counts = tables.meta(), tables.counts()
            if (meta.get(STATE, COMPLETE) == WRITING or meta.get("repair") == "1"
                    or meta.get("nodes", "0") != str(counts["nodes"])):
                values["repair"] = "1"
        tables.set_meta(**values)
    except (sqlite3.Error, OSError) as exc:
        raise ValueError(f"graph {where} cannot be written ({' '.join(str(exc).split())[:100]}); "
                         "nothing written (make it writable, or index without --graph).") from exc
    except Exception as exc:  # psycopg's errors: a table of another owner, a read-only role
        if type(exc).__module__.split(".")[0] != "psycopg":
            raise
        raise ValueError(f"graph {where} cannot be written ({' '.join(str(exc).split())[:100]}); "
                         "nothing written.") from exc
    finally:
        tables.close()
    if state == WRITING:
        _marked.add(where)


def forget_marks() -> None:
    """End of a run: the next run marks its graphs `writing` again (a process that runs `cfrag index` twice)."""
    _marked.clear()


def check_graph_writable(spec: str | StoreSpec) -> None:
    """Refuse in one line, before any model loads, a graph beside a file store whose files or folder this user
    cannot write (nothing written)."""
    from haystack_cfrag.causal_rag.stored_graph import check_home, graph_home  # noqa: PLC0415

    home = graph_home(spec)
    check_home(spec, home)
    if home.sqlite is None:
        return
    for path in (home.sqlite, *home.nodes.store_kind.files(home.nodes)):
        if path.exists() and not os.access(path, os.W_OK):
            raise ValueError(f"graph file {path} is read-only; nothing written (make it writable, or index "
                             "without --graph).")
    folder = home.sqlite.parent
    if folder.exists() and not os.access(folder, os.W_OK):
        raise ValueError(f"graph folder {folder} is not writable; nothing written (make it writable, or index "
                         "without --graph).")


def prepare_graph(spec: str | StoreSpec) -> None:
    """Before `cfrag index --graph` writes anything: the graph's home checked, created, and marked `writing`.

    :raises ValueError: one line naming the graph, when it would be the store's own, foreign, or not writable.
    """
    from haystack_cfrag.causal_rag.stored_graph import check_home, graph_home  # noqa: PLC0415

    home = graph_home(spec)
    check_home(spec, home)
    _mark(home, WRITING, create=True)


def mark_stale(spec: str | StoreSpec) -> bool:
    """Before `cfrag index` without --graph changes a store's passages: its graph, if it has one, marked `stale`.

    :returns: whether the store has a graph.
    :raises ValueError: one line, when the graph cannot be written (it would go stale without a mark).
    """
    from haystack_cfrag.causal_rag.stored_graph import graph_home  # noqa: PLC0415

    home = graph_home(spec)
    if not home.exists():
        return False
    _mark(home, STALE, create=False)
    return True


class GraphWrites:
    """What `cfrag index` asks of the graph beside a store while it writes it (`family.StoreWrites`)."""

    check_graph_writable = staticmethod(check_graph_writable)
    prepare_graph = staticmethod(prepare_graph)
    mark_stale = staticmethod(mark_stale)
    forget_marks = staticmethod(forget_marks)


def write_graph(
    passages: list[Document],
    spec: str | StoreSpec,
    *,
    builder: Any,
    embedder: Any,
    progress: Callable[[str], None] | None = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """Write the graph of `passages` (every one already in the extraction cache) beside the store `spec`.

    :param builder: a `CausalGraphBuilder` of the extractor and cache the passages were extracted with.
    :param embedder: embeds node Documents in batches (`node_store.TextEmbedderForDocuments`).
    :returns: the seconds, the graph's size, `nodes_embedded`, `merged_passages`, `rebuilt`, `recovered`,
        `nodes_deleted`.
    """
    from haystack_cfrag.causal_rag.math.extraction import passage_hash  # noqa: PLC0415
    from haystack_cfrag.causal_rag.stored_graph import check_home, graph_home  # noqa: PLC0415
    from haystack_cfrag.stores.lock import store_lock  # noqa: PLC0415

    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    home = graph_home(s)
    check_home(s, home)
    batch = batch or PASSAGE_BATCH
    with store_lock(s):
        try:
            _mark(home, WRITING, create=True)
            tables = home.tables()
        except BaseException:
            forget_marks()
            raise
        stats: dict[str, Any] = {"assemble_seconds": 0.0, "edge_seconds": 0.0, "node_embedding_seconds": 0.0,
                                 "nodes_embedded": 0, "nodes_deleted": 0, "rebuilt": False,
                                 "recovered": tables.meta().get("repair") == "1"}
        try:
            nodes = _NodeVectors(home, embedder, stats)
        except BaseException:
            tables.close()
            forget_marks()
            raise
        try:
            digests = [(d.id, passage_hash(d.content or "")) for d in passages]
            recorded = tables.passages()
            current = dict(digests)
            if any(current.get(pid) != h for pid, h in recorded.items()):  # deleted or changed: rebuilt from the cache
                tables.clear()
                recorded = {}
                stats["rebuilt"] = True
            todo = [(d, h) for d, (_, h) in zip(passages, digests, strict=True) if recorded.get(d.id) != h]
            for start in range(0, len(todo), batch):
                part = todo[start:start + batch]
                t0 = time.perf_counter()
                graph = builder.assemble_graph([d for d, _ in part])
                t1 = time.perf_counter()
                new = tables.merge(graph, [(d.id, h) for d, h in part])
                t2 = time.perf_counter()
                stats["assemble_seconds"] += t1 - t0
                stats["edge_seconds"] += t2 - t1
                checkpoints.reached("graph batch merged")
                nodes.embed_missing(new)
                stats["node_embedding_seconds"] += time.perf_counter() - t2
                checkpoints.reached("node vectors embedded")
                if progress is not None:
                    progress(f"graph tables: passage {min(start + batch, len(todo))}/{len(todo)}, "
                             f"{stats['nodes_embedded']} nodes embedded")
            if stats["recovered"] or stats["rebuilt"]:
                t3 = time.perf_counter()
                nodes.reconcile(tables.node_rows())
                stats["node_embedding_seconds"] += time.perf_counter() - t3
            checkpoints.reached("node vectors saving")
            nodes.save(stats)
            checkpoints.reached("node vectors saved")
            counts = tables.counts()
            tables.set_meta(nodes=str(counts["nodes"]), edges=str(counts["edges"]), passages=str(counts["passages"]),
                            repair="0", **{STATE: COMPLETE})
            stats.update(counts)
            stats["merged_passages"] = len(todo)
        finally:
            tables.close()
            nodes.close()
            forget_marks()
    return stats


class _NodeVectors:
    """The graph's node store during a run: opened once, vectors written for nodes that lack them, saved once."""

    def __init__(self, home: Any, embedder: Any, stats: dict[str, Any]) -> None:
        from haystack_cfrag.stores.opening import open_document_store  # noqa: PLC0415

        self.home, self.embedder, self.stats = home, embedder, stats
        self.changed = False
        try:
            self.store = open_document_store(home.nodes)
        except FileNotFoundError:
            self.store = None

    def embed_missing(self, named: Iterable[tuple[str, str]]) -> None:
        """Embed the nodes among `named` (name, type) whose vector is missing or was made from another name."""
        from haystack_cfrag.causal_rag.math.names import NODE_FLAG, node_document_id  # noqa: PLC0415
        from haystack_cfrag.stores.existing import stored_documents  # noqa: PLC0415

        wanted = {node_document_id(name): (name, kind) for name, kind in named}
        if not wanted:
            return
        held = stored_documents(self.store, list(wanted)) if self.store is not None else {}
        todo = [(i, nk) for i, nk in wanted.items() if i not in held or held[i].content != nk[0]]
        if not todo:
            return
        docs = [Document(id=i, content=name, meta={NODE_FLAG: True, "node_id": name, "node_type": kind})
                for i, (name, kind) in todo]
        embedded = self.embedder.run(documents=docs)["documents"]
        if self.store is None:
            from haystack_cfrag.stores.opening import open_document_store  # noqa: PLC0415

            self.store = open_document_store(self.home.nodes, embedding_dim=len(embedded[0].embedding), create=True)
        stale = [d.id for d in embedded if d.id in held]
        if stale:  # a vector of another spelling: replaced (a FAISS index that cannot remove one is rebuilt)
            from haystack_cfrag.stores.removal import delete_documents  # noqa: PLC0415

            delete_documents(self.store, stale)
        self.store.write_documents(embedded, policy=DuplicatePolicy.OVERWRITE)
        self.stats["nodes_embedded"] += len(embedded)
        self.changed = True

    def reconcile(self, rows: dict[str, tuple[str, str]]) -> None:
        """Make the node store hold exactly one vector per node of the tables (`rows`: key -> (name, type))."""
        from haystack_cfrag.causal_rag.math.names import node_document_id  # noqa: PLC0415
        from haystack_cfrag.stores.removal import delete_documents  # noqa: PLC0415

        self.embed_missing(rows.values())
        if self.store is None:
            return
        wanted = {node_document_id(name) for name, _ in rows.values()}
        gone = [i for i in _all_ids(self.store) if i not in wanted]
        if gone:
            self.stats["nodes_deleted"] += delete_documents(self.store, gone)
            self.changed = True

    def save(self, stats: dict[str, Any]) -> None:
        from haystack_cfrag.causal_rag.stored_graph import _index_node_vectors  # noqa: PLC0415
        from haystack_cfrag.stores.opening import save_document_store  # noqa: PLC0415

        if self.store is None or not self.changed:
            return
        t0 = time.perf_counter()
        self.home.nodes.store_kind.slim(self.store)
        save_document_store(self.store, self.home.nodes)
        stats["node_save_seconds"] = time.perf_counter() - t0
        if self.home.postgres is not None:
            t1 = time.perf_counter()
            _index_node_vectors(self.home)
            stats["node_index_seconds"] = time.perf_counter() - t1

    def close(self) -> None:
        from haystack_cfrag.stores.opening import close_document_store  # noqa: PLC0415

        if self.store is not None:
            close_document_store(self.store)
            self.store = None


def _all_ids(store: Any) -> list[str]:
    for attribute in ("documents", "storage"):
        held = getattr(store, attribute, None)
        if isinstance(held, dict):
            return list(held)
    return [d.id for d in store.filter_documents()]


__all__ = ["COMPLETE", "PASSAGE_BATCH", "STALE", "STATE", "WRITING", "GraphWrites", "check_graph_writable",
           "forget_marks", "graph_notice", "mark_stale", "prepare_graph", "write_graph"]
