"""Store specs: one string names a document store (`parse_store_spec`), for every command and the server.

Specs (`cfrag index/ask/compare/serve --store SPEC`, `CFRAG_STORE`, `open_document_store`):

- ``memory:PATH.json`` or a bare path — Haystack's `InMemoryDocumentStore`, saved as JSON (cosine);
- ``faiss:PATH[#INDEX]`` — faiss-haystack's `FAISSDocumentStore`, saved as ``PATH.faiss`` +
  ``PATH.json``; INDEX is a faiss factory string (default ``Flat``, exact; e.g. ``HNSW32``).
  L2 on normalised embeddings, so its ranks are cosine ranks (see `haystack_cfrag.stores.faiss_cosine`); searches run
  on a GPU when faiss reports one (`haystack_cfrag.stores.faiss_gpu`);
- ``pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]`` — pgvector-haystack, cosine
  (``pgvector:#TABLE`` or ``pgvector:`` reads the URL from ``PG_CONN_STR``);
- ``qdrant:PATH[#COLLECTION]`` (local mode, a folder), ``qdrant:http://HOST:6333[#COLLECTION]``
  (a server) or ``qdrant::memory:`` — qdrant-haystack, cosine.

Parsing opens nothing (`haystack_cfrag.stores.opening` does); error messages and `redact`
never show a URL's password. Every name is checked here, before anything embeds: a FAISS path
must name a file (not ``DIR/`` nor ``.``) and its INDEX a kind `stores.faiss_header` can check
(``Flat`` or ``HNSWm``); a pgvector table must leave room for its graph's tables and indexes in
Postgres's 63 characters (`MAX_TABLE`); a Qdrant collection is a plain name (no ``/``, no
``..``), since a local store keeps it as a folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

KINDS = ("memory", "faiss", "pgvector", "qdrant")
DEFAULT_TABLE = "haystack_documents"
DEFAULT_COLLECTION = "cfrag"
NODE_SUFFIX = "_graph_vectors"
"""A store's graph's node vectors: table or collection NAME_graph_vectors (the tables are NAME_graph_meta, …)."""
PG_NAME_LIMIT = 63
"""Postgres's longest identifier (NAMEDATALEN - 1): a longer name is cut, so two names may become one."""
LONGEST_SUFFIX = NODE_SUFFIX + "_keyword_index"
"""The longest name made from a table's: its graph's node vectors' keyword index (`opening._open_pgvector`)."""
MAX_TABLE = PG_NAME_LIMIT - len(LONGEST_SUFFIX)
"""The longest pgvector table name (35)."""
MAX_COLLECTION = 100
FAISS_INDEX = re.compile(r"Flat|HNSW[1-9][0-9]{0,2}")
"""The FAISS index kinds a store may be created with: those `faiss_header` checks before reading."""
_COLLECTION = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class StoreSpec:
    """A parsed store spec: `kind`, `location` (path or URL, "" for the default) and `name` (table, collection, index)."""

    kind: str
    location: str
    name: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.location}" + (f"#{self.name}" if self.name else "")


def parse_store_spec(spec: str | os.PathLike[str]) -> StoreSpec:
    """Parse a store spec (see the module doc); a bare path is a saved in-memory store.

    :raises ValueError: an unknown kind (``mongo://…``), or a spec missing its required path.
    """
    text = os.fspath(spec).strip()
    shown = redact(text)  # errors never show a password
    kind, sep, rest = text.partition(":")
    if not sep or re.fullmatch(r"[A-Za-z]", kind):  # "C:\\…" is a path
        return StoreSpec("memory", text)
    if kind not in KINDS:
        if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", kind):  # a scheme we do not know, e.g. mongo://…
            raise ValueError(f"Store spec '{shown}': unknown store kind '{kind}' (known: {', '.join(KINDS)}; "
                             f"a file name with ':' is memory:{shown}).")
        return StoreSpec("memory", text)
    location, _, name = rest.rpartition("#") if "#" in rest else (rest, "", "")
    if kind == "memory":
        if not location or name:
            raise ValueError(f"Store spec '{shown}': use memory:PATH.json.")
        _file_path(location, shown, "memory:PATH.json")
    elif kind == "faiss":
        if not location:
            raise ValueError(f"Store spec '{shown}': use faiss:PATH[#INDEX], e.g. faiss:stores/demo#Flat.")
        _file_path(location, shown, "faiss:DIR/NAME[#INDEX]")
        name = name or "Flat"
        if not FAISS_INDEX.fullmatch(name):
            raise ValueError(f"Store spec '{shown}': FAISS index '{name[:40]}' is not one cfrag can check when it "
                             "opens the store: use #Flat or #HNSW32 (HNSW with 1-999 links).")
    elif kind == "pgvector":
        if location and not location.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"Store spec '{shown}': use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE].")
        name = name or DEFAULT_TABLE
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"Store spec '{shown}': table name '{name[:70]}' must be a plain SQL identifier.")
        if len(name) > MAX_TABLE:
            raise ValueError(f"Store spec '{shown[:120]}': table name '{name[:70]}' is {len(name)} characters, at most "
                             f"{MAX_TABLE}: its graph's names ('{name[:8]}…{LONGEST_SUFFIX}') must fit Postgres's "
                             f"{PG_NAME_LIMIT}.")
    elif kind == "qdrant":
        if not location:
            raise ValueError(f"Store spec '{shown}': use qdrant:PATH, qdrant:http://HOST:6333 or qdrant::memory:.")
        if location != ":memory:" and not location.startswith(("http://", "https://")):
            location = location.rstrip("/") or location  # a local store is a folder: qdrant:DIR/ is qdrant:DIR
            _file_path(location, shown, "qdrant:DIR[#COLLECTION]")
        name = name or DEFAULT_COLLECTION
        if len(name) > MAX_COLLECTION or not _COLLECTION.fullmatch(name) or ".." in name:
            raise ValueError(f"Store spec '{shown[:120]}': collection name '{name[:70]}' must be letters, digits, "
                             f"'_', '-' and single dots, at most {MAX_COLLECTION} characters (no '/' or '..': a "
                             "local store keeps it as a folder).")
    return StoreSpec(kind, location, name)


def _file_path(location: str, shown: str, usage: str) -> None:
    """Refuse a path that names no file: ``DIR/`` (its files would be written beside the folder), ``.``, ``..``."""
    if location.endswith(("/", os.sep)):
        raise ValueError(f"Store spec '{shown}': '{location}' ends with '/', a folder; name the store inside it: "
                         f"{usage}.")
    if Path(location).name in ("", ".", ".."):
        raise ValueError(f"Store spec '{shown}': '{location}' names a folder, not a store; use {usage}.")


def redact(text: str) -> str:
    """A URL with its password replaced by ***: the package's one redaction (`common.redaction.redact`)."""
    from haystack_cfrag.common.redaction import redact as redacted  # noqa: PLC0415

    return redacted(text)
