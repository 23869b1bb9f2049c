"""pgvector-haystack: ``pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]`` (``pgvector:``: ``PG_CONN_STR``).

The password (a `Secret` since parsing) is put back only into the connection string libpq reads (`conninfo`, with
the timeouts where the URL sets none), which the store takes through an environment variable's `Secret` (`secret`)
and the package through `connect`. A table is locked for one writer by an advisory lock keyed by its name
(`acquire`; `application_name` names the holder's pid); its name leaves room for its graph's tables (`MAX_TABLE`).

>>> PGVECTOR.parse("postgresql://me@db:5432/rag", "docs", "pgvector:…").name
'docs'
>>> MAX_TABLE
35
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.stores.kinds.base import NODE_SUFFIX, Beside, StoreKind, instance_of
from haystack_cfrag.stores.specs import StoreSpec
from haystack_cfrag.stores.timeouts import PG_CONNECT_SECONDS, PG_STATEMENT_SECONDS

logger = logging.getLogger(__name__)

DEFAULT_TABLE = "haystack_documents"
PG_NAME_LIMIT = 63
"""Postgres's longest identifier (NAMEDATALEN - 1): a longer name is cut, so two names may become one."""
LONGEST_SUFFIX = NODE_SUFFIX + "_keyword_index"
"""The longest name made from a table's: its graph's node vectors' keyword index."""
MAX_TABLE = PG_NAME_LIMIT - len(LONGEST_SUFFIX)
"""The longest pgvector table name (35)."""
_VARIABLES: dict[str, str] = {}
"""Connection string -> the environment variable of this process that holds it (`secret`)."""


def _where(spec: StoreSpec) -> str:
    return spec.location.partition("?")[0] if spec.location else "the PG_CONN_STR database"


def _read(conninfo_text: str, shown: str, *, quote: bool = True) -> dict[str, Any]:
    """libpq's reading of a URL or keyword string (psycopg's `conninfo_to_dict`); ValueError naming `shown`."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

    try:
        return conninfo_to_dict(conninfo_text)
    except Exception as exc:  # noqa: BLE001  (psycopg.ProgrammingError: libpq's message quotes the part it cannot read)
        why = f" ({' '.join(str(exc).split())[:120]})" if quote else ""
        raise ValueError(f"'{shown}' is not a Postgres URL libpq reads{why}: use "
                         "pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE], the password percent-encoded"
                         ) from None


def conninfo(spec: StoreSpec) -> str:
    """The libpq connection string of `spec`: its URL (or ``PG_CONN_STR``) with its password, and the package's
    connect and statement timeouts where it sets none.

    >>> text = conninfo(StoreSpec("pgvector", "postgresql://me:pw@db/rag?connect_timeout=3", "docs"))
    >>> "connect_timeout=3" in text, "options='-c statement_timeout=300000'" in text, "password=pw" in text
    (True, True, True)
    """
    from psycopg.conninfo import make_conninfo  # noqa: PLC0415

    # PG_CONN_STR is not a spec: it may hold its password, so libpq's message (which may quote it) is not shown
    params = _read(spec.location or os.environ.get("PG_CONN_STR", ""), str(spec), quote=bool(spec.location))
    params.setdefault("connect_timeout", str(max(2, int(PG_CONNECT_SECONDS))))
    params.setdefault("options", f"-c statement_timeout={int(1000 * PG_STATEMENT_SECONDS)}")
    if spec.password is not None:
        params["password"] = spec.password.resolve_value()
    return make_conninfo("", **params)


def connect(spec: StoreSpec, *, autocommit: bool = False, application_name: str | None = None) -> Any:
    """A psycopg connection to the database of `spec` (`conninfo`); failing, one ValueError line naming the
    server, e.g. a host that accepts and never answers, after `timeouts.PG_CONNECT_SECONDS`."""
    import psycopg  # noqa: PLC0415

    extra = {"application_name": application_name} if application_name else {}
    try:
        return psycopg.connect(conninfo(spec), autocommit=autocommit, **extra)
    except psycopg.OperationalError as exc:
        raise ValueError(f"Postgres at {_where(spec)} cannot be reached ({' '.join(str(exc).split())[:160]})"
                         ) from None


class PgvectorKind(StoreKind):
    """The pgvector store (module doc)."""

    name = "pgvector"
    usage = "pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]"

    def parse(self, location: str, name: str, shown: str) -> StoreSpec:
        if location and not location.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"Store spec '{shown}': use {self.usage}.")
        name = name or DEFAULT_TABLE
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"Store spec '{shown}': table name '{name[:70]}' must be a plain SQL identifier.")
        if len(name) > MAX_TABLE:
            raise ValueError(f"Store spec '{shown[:120]}': table name '{name[:70]}' is {len(name)} characters, at most "
                             f"{MAX_TABLE}: its graph's names ('{name[:8]}…{LONGEST_SUFFIX}') must fit Postgres's "
                             f"{PG_NAME_LIMIT}.")
        if location:
            with contextlib.suppress(ImportError):  # libpq reads the URL as it is meant (without psycopg, nothing can)
                _read(location, shown)
        return StoreSpec(self.name, location, name)

    def check(self, spec: StoreSpec, *, create: bool) -> None:
        if not spec.location and not os.environ.get("PG_CONN_STR"):
            raise ValueError(f"'{spec}' names no database and PG_CONN_STR is not set: use {self.usage}")

    def secret(self, spec: StoreSpec) -> Any:
        """A Haystack `Secret` of the connection string (`conninfo`) that serialises by an environment variable's
        name, never by value: ``PG_CONN_STR`` for ``pgvector:``, else a variable of this process."""
        from haystack.utils import Secret  # noqa: PLC0415

        value = conninfo(spec)
        var = _VARIABLES.setdefault(value, "CFRAG_PG_CONN_STR_" + secrets.token_hex(5).upper()) if spec.location \
            else "PG_CONN_STR"
        os.environ[var] = value
        return Secret.from_env_var(var)

    def _table_dim(self, spec: StoreSpec) -> int | None:
        """The `embedding` column's dimension of an existing table; None when the table does not exist."""
        with connect(spec) as conn:
            row = conn.execute("SELECT to_regclass(%s)::text", (f"public.{spec.name}",)).fetchone()
            if row is None or row[0] is None:
                return None
            dim = conn.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
                (f"public.{spec.name}",)).fetchone()
        return int(dim[0]) if dim and dim[0] and dim[0] > 0 else 0

    def open(self, spec: StoreSpec, *, embedding_dim: int | None = None, create: bool = False,
             device: int | None = None) -> Any:
        from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore  # noqa: PLC0415

        existing = self._table_dim(spec)
        if existing is None and not create:
            raise FileNotFoundError(f"No table '{spec.name}' in {_where(spec)}: create it with "
                                    f"`cfrag index FILES --store {spec}`.")
        if existing:
            if embedding_dim and embedding_dim != existing:
                raise ValueError(f"Table '{spec.name}' holds {existing}-dimensional embeddings, not {embedding_dim}.")
            embedding_dim = existing
        if embedding_dim is None:
            raise ValueError("A new pgvector table needs embedding_dim.")
        return PgvectorDocumentStore(
            connection_string=self.secret(spec), table_name=spec.name, embedding_dimension=embedding_dim,
            vector_function="cosine_similarity", create_extension=create,
            # index names are per schema: name them after the table so that tables can share a database
            keyword_index_name=f"{spec.name}_keyword_index", hnsw_index_name=f"{spec.name}_hnsw_index",
        )

    def close(self, store: Any) -> None:
        conn = getattr(store, "_connection", None)  # pgvector-haystack's sync connection
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001  (closing is best effort)
                logger.debug("Could not close the store's connection")
            store._connection = None

    def embedding_retriever(self, store: Any, *, top_k: int = 5) -> Any:
        from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever  # noqa: PLC0415

        return PgvectorEmbeddingRetriever(document_store=store, top_k=top_k)

    def keyword_retriever(self, store: Any, *, top_k: int = 5) -> Any:
        from haystack_integrations.components.retrievers.pgvector import PgvectorKeywordRetriever  # noqa: PLC0415

        return PgvectorKeywordRetriever(document_store=store, top_k=top_k)

    def acquire(self, spec: StoreSpec, wait: float, notify: Callable[[str], None] | None) -> Callable[[], None]:
        """The table's advisory lock (`advisory_key`), on a connection of its own (module doc)."""
        from haystack_cfrag.stores.lock import POLL, busy  # noqa: PLC0415

        key = advisory_key(spec.name)
        try:
            conn = connect(spec, autocommit=True, application_name=f"cfrag index (pid {os.getpid()})")
        except ValueError as exc:
            raise ValueError(f"cannot lock {spec} for writing: {str(exc).rstrip('.')}; nothing written.") from None
        deadline = time.monotonic() + wait
        told = False
        try:
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                holder = _advisory_holder(conn, key)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise busy(spec, holder, wait)
                if not told and notify is not None:
                    notify(f"waiting for another cfrag index ({holder}) to finish writing {spec} (at most {wait:g} s)")
                    told = True
                time.sleep(min(POLL, left))
        except BaseException:
            conn.close()
            raise

        def release() -> None:
            with contextlib.suppress(Exception):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            conn.close()  # ending the session releases it too

        return release

    def owns(self, store: Any) -> bool:
        return instance_of(store, "haystack_integrations.document_stores.pgvector", "PgvectorDocumentStore")

    def beside(self, spec: StoreSpec, cache_dir: Path) -> Beside:
        return Beside(replace(spec, name=spec.name + NODE_SUFFIX), postgres=f"{spec.name}_graph")


def advisory_key(table: str) -> int:
    """The 64-bit Postgres advisory lock key of a pgvector table (signed, as `pg_try_advisory_lock` takes it).

    >>> advisory_key("docs") == advisory_key("docs") != advisory_key("docs2")
    True
    """
    return int.from_bytes(hashlib.sha256(f"haystack-cfrag index {table}".encode()).digest()[:8], "big", signed=True)


def _advisory_holder(conn: Any, key: int) -> str:
    """The holder's `application_name` ("cfrag index (pid N)"), as far as the server says."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    try:
        row = conn.execute(
            "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s AND l.objid::bigint = %s "
            "AND l.objsubid = 1 LIMIT 1", (unsigned >> 32, unsigned & 0xFFFFFFFF)).fetchone()
    except Exception:  # noqa: BLE001  (the holder is a courtesy; the refusal stands without it)
        return "pid unknown"
    if row is None:
        return "pid unknown"
    name = str(row[0] or "")
    if name.startswith("cfrag index (pid ") and name.endswith(")"):
        return name[len("cfrag index ("):-1]
    return f"server pid {row[1]}"


PGVECTOR = PgvectorKind()

__all__ = ["DEFAULT_TABLE", "MAX_TABLE", "PGVECTOR", "PgvectorKind", "advisory_key", "conninfo", "connect"]
