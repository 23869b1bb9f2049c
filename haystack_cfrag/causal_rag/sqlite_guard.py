"""The graph's SQLite file opened without trusting it: exactly its tables, and no statement without a deadline.

`open_tables` checks the file and its companions (`safe_files`) and magic, opens read-only when reading with
`trusted_schema` off, refuses in one line a `sqlite_master` other than `GraphTables.create`'s (a view, a
trigger…), and bounds every value and statement (`deadline`, `STATEMENT_SECONDS`)."""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from functools import cache
from pathlib import Path
from typing import Any

from haystack_cfrag.stores.safe_files import check_file, open_checked

STATEMENT_SECONDS = 30.0
"""The longest one statement on a graph file may run (a read at 100,468 passages takes milliseconds)."""
WRITE_STATEMENT_SECONDS = 600.0
"""The same for a connection that writes (a rebuild empties the tables in one statement)."""
MAX_VALUE_BYTES = 16 << 20
"""The longest text or blob a graph file's value may be (a node cites at most 50 passages)."""
PROGRESS_STEPS = 10_000
"""SQLite virtual-machine steps between two looks at the clock."""
COMPANIONS = ("-journal", "-wal", "-shm")
MAGIC = b"SQLite format 3\x00"


class Deadline:
    """A per-statement deadline on one sqlite3 connection: the trace callback marks each statement's start,
    the progress handler interrupts it (sqlite3.OperationalError 'interrupted') once `seconds` have passed."""

    def __init__(self, connection: sqlite3.Connection, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.expired = False
        connection.set_trace_callback(self._start)
        connection.set_progress_handler(self._check, PROGRESS_STEPS)

    def _start(self, _statement: str) -> None:
        self.started = time.monotonic()

    def _check(self) -> int:
        if time.monotonic() - self.started > self.seconds:
            self.expired = True
            return 1
        return 0


def deadline(connection: sqlite3.Connection, seconds: float | None = None) -> Deadline:
    """Bound every statement of `connection` (default `STATEMENT_SECONDS`) and every value it reads."""
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    return Deadline(connection, STATEMENT_SECONDS if seconds is None else seconds)


@cache
def expected_schema() -> tuple[tuple[str, str, str, str | None], ...]:
    """`sqlite_master` of a graph file `GraphTables.create` wrote: (type, name, table, SQL) sorted."""
    from haystack_cfrag.causal_rag.graph_tables import GraphTables  # noqa: PLC0415

    connection = sqlite3.connect(":memory:", isolation_level=None)
    try:
        GraphTables(connection, dialect="sqlite").create()
        return _schema(connection)
    finally:
        connection.close()


def _schema(connection: sqlite3.Connection) -> tuple[tuple[str, str, str, str | None], ...]:
    rows = connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchmany(1000)
    return tuple(sorted(rows, key=lambda r: tuple(str(v) for v in r)))


def check_schema(connection: sqlite3.Connection, path: Path) -> None:
    """Refuse (one line naming `path`) a file whose schema is not exactly the graph's."""
    found, want = _schema(connection), expected_schema()
    if found == want:
        return
    extra = [r for r in found if r not in want]
    if extra:
        kind, name = extra[0][0], extra[0][1]
        raise ValueError(f"graph file {path}: holds {kind} {str(name)[:60]!r}, which a haystack-cfrag graph does "
                         f"not (only its {len([r for r in want if r[0] == 'table'])} tables and their indexes); "
                         "nothing read.")
    missing = [r for r in want if r not in found]
    raise ValueError(f"graph file {path}: not a haystack-cfrag graph (no {missing[0][0]} {missing[0][1]!r}); "
                     "nothing read.")


def check_graph_file(path: Path) -> None:
    """Check the file and its companions (regular, bounded) and SQLite's magic: FileNotFoundError, or a
    one-line ValueError naming the file."""
    with open_checked(path, "sqlite") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise ValueError(f"graph file {path}: not an SQLite database (a foreign or corrupt file); nothing read.")
    for suffix in COMPANIONS:
        companion = path.with_name(path.name + suffix)
        try:
            check_file(companion, "sqlite", folder=path.parent)
        except FileNotFoundError:
            continue


def _read_only(path: Path) -> sqlite3.Connection:
    uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


def open_tables(path: str | Path, *, create: bool = False, readonly: bool = False) -> Any:
    """`GraphTables` over the graph file at `path`, checked (created when missing and `create`): FileNotFoundError,
    or a one-line ValueError naming the file."""
    from haystack_cfrag.causal_rag.graph_tables import GraphTables  # noqa: PLC0415

    path = Path(path)
    if path.is_symlink():
        raise ValueError(f"graph file {path}: a link, not a regular file; nothing read.")
    if not path.exists() and not path.is_symlink():
        if not create:
            raise FileNotFoundError(f"no graph file at {path}: run `cfrag index --graph`.")
        tables = GraphTables.open_sqlite(path, create=True)
        deadline(tables.connection, WRITE_STATEMENT_SECONDS)
        return tables
    check_graph_file(path)
    connection = _read_only(path)
    guard: Deadline | None = None
    try:
        connection.execute("PRAGMA trusted_schema = OFF")
        guard = deadline(connection)
        check_schema(connection, path)
        if readonly:
            tables = GraphTables(connection, dialect="sqlite", where=str(path))
            tables.check()
            return tables
    except sqlite3.DatabaseError as exc:
        connection.close()
        why = ("a statement ran past its deadline" if guard is not None and guard.expired
               else " ".join(str(exc).split())[:100])
        raise ValueError(f"graph file {path}: unreadable ({why}); nothing read.") from exc
    except BaseException:
        connection.close()
        raise
    connection.close()
    tables = GraphTables.open_sqlite(path, create=create)  # checked above: now opened to write
    try:
        tables.connection.execute("PRAGMA trusted_schema = OFF")
        deadline(tables.connection, WRITE_STATEMENT_SECONDS)
    except BaseException:
        tables.close()
        raise
    return tables


__all__ = ["STATEMENT_SECONDS", "Deadline", "check_graph_file", "check_schema", "deadline", "expected_schema",
           "open_tables"]
