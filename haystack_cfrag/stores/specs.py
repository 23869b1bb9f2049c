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
never show a URL's password.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

KINDS = ("memory", "faiss", "pgvector", "qdrant")
DEFAULT_TABLE = "haystack_documents"
DEFAULT_COLLECTION = "cfrag"


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
    elif kind == "faiss":
        if not location:
            raise ValueError(f"Store spec '{shown}': use faiss:PATH[#INDEX], e.g. faiss:stores/demo#Flat.")
        name = name or "Flat"
    elif kind == "pgvector":
        if location and not location.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"Store spec '{shown}': use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE].")
        name = name or DEFAULT_TABLE
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"Store spec '{shown}': table name '{name}' must be a plain SQL identifier.")
    elif kind == "qdrant":
        if not location:
            raise ValueError(f"Store spec '{shown}': use qdrant:PATH, qdrant:http://HOST:6333 or qdrant::memory:.")
        name = name or DEFAULT_COLLECTION
    return StoreSpec(kind, location, name)


def redact(text: str) -> str:
    """A URL with its password replaced by ***."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", text)
