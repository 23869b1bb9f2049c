"""CausalRAG's graph as tables: its nodes, its edges and the passages it was built from.

A stored graph keeps its node vectors in a store of the passages' kind (`stored_graph`) and the rest here, in SQLite
(file stores) or Postgres (pgvector: tables beside its table). Written one transaction a batch; read one indexed
query a hop (`node_documents`): a query reads a few hundred rows whatever the corpus.

Tables `PREFIX_meta`, `_nodes` (by key: first name, type, cited passages), `_edges` (by source, relation and target
keys: names, cue, cited passages) and `_passages` (id, content hash). Prefixes are checked identifiers; every value
is a bound parameter, never SQL text.

    >>> import tempfile, pathlib
    >>> from haystack_cfrag.causal_rag.math.graph import Graph
    >>> g = Graph(); _ = g.add_edge("Rain", "causes", "Flood", passage_id="p1")
    >>> tables = GraphTables.open_sqlite(pathlib.Path(tempfile.mkdtemp()) / "g.sqlite", create=True)
    >>> [name for name, _ in tables.merge(g, [("p1", "h1")])]
    ['Rain', 'Flood']
    >>> tables.node_documents(["flood"])[0].meta["edges_in"]
    [{'source': 'Rain', 'target': 'Flood', 'relation': 'causes', 'passage_ids': ['p1']}]
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from haystack import Document

from haystack_cfrag.causal_rag.math.graph import MAX_PASSAGES_PER_EDGE, MAX_PASSAGES_PER_NODE, Graph
from haystack_cfrag.causal_rag.math.names import NODE_FLAG, node_document_id, node_key, relation_key

FORMAT = "haystack-cfrag causal graph"
VERSION = "1"
SQLITE_MAGIC = b"SQLite format 3\x00"
PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,46}")
"""A table prefix: a plain SQL identifier short enough for Postgres's 63 characters with `_passages`."""
DEFAULT_PREFIX = "cfrag_graph"
IN_BATCH = 500
"""Keys per IN (…) list."""


class GraphTables:
    """The graph's tables over one DB-API connection (sqlite3 or psycopg), one statement at a time."""

    def __init__(self, connection: Any, *, dialect: str, prefix: str = DEFAULT_PREFIX, where: str = "") -> None:
        if dialect not in ("sqlite", "postgres"):
            raise ValueError(f"unknown graph table dialect {dialect!r:.40} (sqlite or postgres).")
        if not isinstance(prefix, str) or not PREFIX.fullmatch(prefix):
            raise ValueError(f"graph table prefix {prefix!r:.60} must be a plain SQL identifier of at most 47 "
                             "characters (letters, digits, _).")
        self.connection = connection
        self.dialect = dialect
        self.prefix = prefix
        self.where = where or prefix
        self.lock = threading.Lock()  # one statement at a time on the one connection
        self._p = "?" if dialect == "sqlite" else "%s"
        self._order = "" if dialect == "sqlite" else ' COLLATE "C"'  # code-point order, as Python sorts
        self.t = {name: f'"{prefix}_{name}"' for name in ("meta", "nodes", "edges", "passages")}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open_sqlite(cls, path: str | Path, *, create: bool = False) -> GraphTables:
        """The graph file at `path`: checked (an SQLite file holding this format), or created when `create`.

        :raises FileNotFoundError: no file and not `create`.
        :raises ValueError: one line, when the file is a link, not SQLite, another program's, or of another version.
        """
        from haystack_cfrag.stores.safe_files import open_checked  # noqa: PLC0415

        path = Path(path)
        if path.is_symlink():
            raise ValueError(f"graph file {path}: not a regular file (a link); nothing read.")
        fresh = not path.exists()
        if fresh and not create:
            raise FileNotFoundError(f"no graph file at {path}: run `cfrag index --graph`.")
        if not fresh:
            with open_checked(path, "sqlite") as fh:  # the one opener: a folder or a FIFO is one line, unread
                if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    raise ValueError(f"graph file {path}: not an SQLite database (a foreign or corrupt file); "
                                     "nothing read.")
        try:
            connection = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            tables = cls(connection, dialect="sqlite", where=str(path))
            if fresh:
                tables.create()
            tables.check()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"graph file {path}: unreadable ({exc}); nothing read.") from exc
        return tables

    @classmethod
    def open_postgres(cls, connection: Any, prefix: str, *, create: bool = False,
                      also: Sequence[str] = ()) -> GraphTables:
        """The graph's tables named `prefix_*` over a psycopg 3 connection (autocommit: `kinds.pgvector.connect`);
        `create` refuses in one line a table of its names (or `also`'s) without its meta: a user's own table."""
        try:
            tables = cls(connection, dialect="postgres", prefix=prefix, where=f"{prefix}_*")
        except ValueError:
            connection.close()
            raise
        try:
            if create:
                names = [f"{prefix}_{n}" for n in ("meta", "nodes", "edges", "passages")] + list(also)
                found = [n for n in names if tables._rows("SELECT to_regclass(%s)::text", (f"public.{n}",))[0][0]]
                if found and f"{prefix}_meta" not in found:
                    raise ValueError(f"table {found[0]} exists and is not part of a haystack-cfrag graph; "
                                     "nothing written (index into another table name).")
                tables.create()
            tables.check()
        except Exception:
            tables.close()
            raise
        return tables

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.connection.close()

    def create(self) -> None:
        """Create the tables (if missing) and stamp the format."""
        t, text = self.t, "TEXT"
        statements = [
            f"CREATE TABLE IF NOT EXISTS {t['meta']} (key {text} PRIMARY KEY, value {text} NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {t['nodes']} (key {text} PRIMARY KEY, node_id {text} NOT NULL, "
            f"node_type {text} NOT NULL, passage_ids {text} NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {t['edges']} (s_key {text} NOT NULL, r_key {text} NOT NULL, "
            f"t_key {text} NOT NULL, source {text} NOT NULL, relation {text} NOT NULL, target {text} NOT NULL, "
            f"cue {text} NOT NULL, passage_ids {text} NOT NULL, PRIMARY KEY (s_key, r_key, t_key))",
            f'CREATE INDEX IF NOT EXISTS "{self.prefix}_edges_t" ON {t["edges"]} (t_key)',
            f"CREATE TABLE IF NOT EXISTS {t['passages']} (id {text} PRIMARY KEY, hash {text} NOT NULL)",
        ]
        with self.transaction() as cur:
            for statement in statements:
                cur.execute(statement)
            for key, value in (("format", FORMAT), ("version", VERSION)):
                cur.execute(f"INSERT INTO {t['meta']} (key, value) VALUES ({self._p}, {self._p}) "
                            "ON CONFLICT (key) DO NOTHING", (key, value))

    def check(self) -> None:
        """Refuse (one line) tables that are not this format's, before anything else is read."""
        try:
            rows = dict(self._rows(f"SELECT key, value FROM {self.t['meta']}"))
        except Exception as exc:  # noqa: BLE001  (a missing table: another program's database)
            raise ValueError(f"graph tables {self.where}: not a haystack-cfrag graph ({_short(exc)}); "
                             "nothing read.") from exc
        if rows.get("format") != FORMAT:
            raise ValueError(f"graph tables {self.where}: not a haystack-cfrag graph (format "
                             f"{str(rows.get('format'))[:40]!r}); nothing read.")
        if rows.get("version") != VERSION:
            raise ValueError(f"graph tables {self.where}: format version {str(rows.get('version'))[:20]!r}, this "
                             f"haystack-cfrag reads {VERSION}: run `cfrag index --graph` again.")

    # ------------------------------------------------------------------ I/O helpers
    class _Transaction:
        def __init__(self, tables: GraphTables) -> None:
            self.tables = tables

        def __enter__(self) -> Any:
            self.tables.lock.acquire()
            self.cur = self.tables.connection.cursor()
            self.cur.execute("BEGIN")
            return self.cur

        def __exit__(self, kind: Any, *_: Any) -> None:
            try:
                self.cur.execute("COMMIT" if kind is None else "ROLLBACK")
            finally:
                self.cur.close()
                self.tables.lock.release()

    def transaction(self) -> GraphTables._Transaction:
        """`with tables.transaction() as cursor:` — all or nothing."""
        return GraphTables._Transaction(self)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            cur = self.connection.cursor()
            try:
                cur.execute(sql, tuple(params))
                return list(cur.fetchall())
            finally:
                cur.close()

    def _in(self, n: int) -> str:
        return ", ".join([self._p] * n)

    def _select_in(self, sql: str, keys: Sequence[str], cur: Any = None) -> Iterator[tuple[Any, ...]]:
        """`sql` (one `IN ({keys})` placeholder) over `keys` in batches of IN_BATCH."""
        for start in range(0, len(keys), IN_BATCH):
            batch = list(keys[start:start + IN_BATCH])
            statement = sql.format(keys=self._in(len(batch)))
            if cur is None:
                yield from self._rows(statement, batch)
            else:
                cur.execute(statement, batch)
                yield from cur.fetchall()

    # ------------------------------------------------------------------ writing
    def merge(self, graph: Graph, passages: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Merge a batch's graph (passages in store order) into the tables, as `Graph` merges: a node keeps its
        first name and type, an edge its first cue, both their first cited passages. One transaction.

        :returns: (name, type) of the nodes new to the tables, to embed.
        """
        names = graph.node_ids()
        keys = [node_key(n) for n in names]
        t, p = self.t, self._p
        new: list[tuple[str, str]] = []
        with self.transaction() as cur:
            stored = {row[0]: row for row in self._select_in(
                f"SELECT key, node_id, node_type, passage_ids FROM {t['nodes']} WHERE key IN ({{keys}})", keys, cur)}
            for name, key in zip(names, keys, strict=True):
                node_type, cited = graph.node_type(name), graph.node_passages(name)
                row = stored.get(key)
                if row is None:
                    cur.execute(f"INSERT INTO {t['nodes']} (key, node_id, node_type, passage_ids) "
                                f"VALUES ({p}, {p}, {p}, {p})", (key, name, node_type, json.dumps(cited)))
                    stored[key] = (key, name, node_type, json.dumps(cited))
                    new.append((name, node_type))
                    continue
                ids = _cited(json.loads(row[3]), cited, MAX_PASSAGES_PER_NODE)
                kind = row[2] or node_type
                if ids != json.loads(row[3]) or kind != row[2]:
                    cur.execute(f"UPDATE {t['nodes']} SET node_type = {p}, passage_ids = {p} WHERE key = {p}",
                                (kind, json.dumps(ids), key))
            edges = graph.edges()
            ekeys = [(node_key(e.source), relation_key(e.relation), node_key(e.target)) for e in edges]
            known = {(r[0], r[1], r[2]): r for r in self._select_in(
                f"SELECT s_key, r_key, t_key, cue, passage_ids FROM {t['edges']} WHERE s_key IN ({{keys}})",
                sorted({k[0] for k in ekeys}), cur)}
            for edge, key in zip(edges, ekeys, strict=True):
                row = known.get(key)
                if row is None:
                    cur.execute(f"INSERT INTO {t['edges']} (s_key, r_key, t_key, source, relation, target, cue, "
                                f"passage_ids) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})",
                                (*key, stored[key[0]][1], edge.relation, stored[key[2]][1], edge.cue,
                                 json.dumps(list(edge.passage_ids))))
                    known[key] = (*key, edge.cue, json.dumps(list(edge.passage_ids)))
                    continue
                ids = _cited(json.loads(row[4]), edge.passage_ids, MAX_PASSAGES_PER_EDGE)
                cue = row[3] or edge.cue
                if ids != json.loads(row[4]) or cue != row[3]:
                    cur.execute(f"UPDATE {t['edges']} SET cue = {p}, passage_ids = {p} "
                                f"WHERE s_key = {p} AND r_key = {p} AND t_key = {p}", (cue, json.dumps(ids), *key))
            for pid, digest in passages:
                cur.execute(f"INSERT INTO {t['passages']} (id, hash) VALUES ({p}, {p}) "
                            "ON CONFLICT (id) DO UPDATE SET hash = excluded.hash", (pid, digest))
        return new

    def clear(self) -> None:
        """Empty the nodes, edges and passages (a rebuild: passages were deleted or changed)."""
        with self.transaction() as cur:
            for name in ("nodes", "edges", "passages"):
                cur.execute(f"DELETE FROM {self.t[name]}")

    def set_meta(self, **values: str) -> None:
        """Record facts about the graph (its extractor, embedder, counts) in the meta table."""
        with self.transaction() as cur:
            for key, value in values.items():
                cur.execute(f"INSERT INTO {self.t['meta']} (key, value) VALUES ({self._p}, {self._p}) "
                            "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, str(value)))

    # ------------------------------------------------------------------ reading
    def meta(self) -> dict[str, str]:
        """The meta table."""
        return dict(self._rows(f"SELECT key, value FROM {self.t['meta']}"))

    def passages(self) -> dict[str, str]:
        """passage id -> content hash, of the passages the graph was built from."""
        return dict(self._rows(f"SELECT id, hash FROM {self.t['passages']}"))

    def counts(self) -> dict[str, int]:
        """Rows per table: nodes, edges, passages; and the edges a causal cue made (causal_edges)."""
        counts = {name: int(self._rows(f"SELECT COUNT(*) FROM {self.t[name]}")[0][0])
                  for name in ("nodes", "edges", "passages")}
        counts["causal_edges"] = int(self._rows(f"SELECT COUNT(*) FROM {self.t['edges']} WHERE cue <> ''")[0][0])
        return counts

    def node_names(self) -> dict[str, str]:
        """node key -> name, of every node (index time: which node vectors are stale, which can stay)."""
        return dict(self._rows(f"SELECT key, node_id FROM {self.t['nodes']}"))

    def node_rows(self) -> dict[str, tuple[str, str]]:
        """node key -> (name, type), of every node (a run that recovers: which node vectors are missing)."""
        return {r[0]: (r[1], r[2]) for r in self._rows(f"SELECT key, node_id, node_type FROM {self.t['nodes']}")}

    def node_documents(self, names: Sequence[str]) -> list[Document]:
        """The node Documents of `names` (any spelling; unknown ones left out), as `CausalGraphBuilder` makes them
        (`math.node_meta`), without an embedding (the node store has it)."""
        keys = list(dict.fromkeys(k for k in (node_key(n) for n in names) if k))
        if not keys:
            return []
        t, o = self.t, self._order
        nodes = {r[0]: r for r in self._select_in(
            f"SELECT key, node_id, node_type, passage_ids FROM {t['nodes']} WHERE key IN ({{keys}})", keys)}
        cols = "s_key, r_key, t_key, source, relation, target, cue, passage_ids"
        out: dict[str, list[dict[str, Any]]] = {}
        into: dict[str, list[dict[str, Any]]] = {}
        for r in self._select_in(f"SELECT {cols} FROM {t['edges']} WHERE s_key IN ({{keys}}) "
                                 f"ORDER BY t_key{o}, r_key{o}", keys):
            out.setdefault(r[0], []).append(_edge(r))
        for r in self._select_in(f"SELECT {cols} FROM {t['edges']} WHERE t_key IN ({{keys}}) "
                                 f"ORDER BY s_key{o}, r_key{o}", keys):
            into.setdefault(r[2], []).append(_edge(r))
        docs = []
        for key in keys:
            row = nodes.get(key)
            if row is None:
                continue
            meta = {NODE_FLAG: True, "node_id": row[1], "node_type": row[2], "edges_out": out.get(key, []),
                    "edges_in": into.get(key, []), "passage_ids": json.loads(row[3])}
            docs.append(Document(id=node_document_id(row[1]), content=row[1], meta=meta))
        return docs


def _edge(row: tuple[Any, ...]) -> dict[str, Any]:
    record = {"source": row[3], "target": row[5], "relation": row[4], "passage_ids": json.loads(row[7])}
    if row[6]:
        record["cue"] = row[6]
    return record


def _cited(ids: list[str], more: Iterable[Any], limit: int) -> list[str]:
    out = list(ids)
    for pid in more:
        if isinstance(pid, str) and pid and pid not in out and len(out) < limit:
            out.append(pid)
    return out


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:120]


__all__ = ["DEFAULT_PREFIX", "FORMAT", "GraphTables", "VERSION"]
