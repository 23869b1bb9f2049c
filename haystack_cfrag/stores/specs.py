"""Store specs: one string names a document store (`parse_store_spec`), for every command and the server.

One form per kind of `haystack_cfrag.stores.kinds` (`cfrag index/ask/compare/serve --store SPEC`,
``CFRAG_STORE``, `open_document_store`):

- ``memory:PATH.json`` or a bare path — Haystack's `InMemoryDocumentStore`, saved as JSON (cosine);
- ``faiss:PATH[#INDEX]`` — faiss-haystack, saved as ``PATH.faiss`` + ``PATH.json``; INDEX ``Flat`` (exact, the
  default) or ``HNSWm``; L2 on normalised embeddings (cosine ranks); searched on a GPU when faiss has one;
- ``pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]`` — pgvector-haystack, cosine
  (``pgvector:#TABLE`` or ``pgvector:`` reads the URL from ``PG_CONN_STR``);
- ``qdrant:PATH[#COLLECTION]`` (local mode, a folder), ``qdrant:http://HOST:6333[#COLLECTION]`` (a server) or
  ``qdrant::memory:`` — qdrant-haystack, cosine.

A spec is parsed once, where it comes in, into a `StoreSpec` for the layers below; parsing opens nothing (each kind
checks its names: `StoreKind.parse`). A URL's password (its user part's or a ``password=`` parameter's) is held as a
Haystack `Secret` (`StoreSpec.password`): the spec's text, repr and messages never hold it.

>>> spec = parse_store_spec("pgvector:postgresql://me:s3cr%40t@db:5432/rag#docs")
>>> str(spec), spec.password.resolve_value()
('pgvector:postgresql://me@db:5432/rag#docs', 's3cr@t')
>>> parse_store_spec("stores/demo.json")
StoreSpec(kind='memory', location='stores/demo.json', name='')
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from haystack.utils import Secret

from haystack_cfrag.common.redaction import redact

KINDS: dict[str, Any] = {}
"""Kind name (a spec's ``KIND:``) -> its `stores.kinds.StoreKind`: filled by `stores.kinds` (imported with the
`stores` package, before this module), so that this module needs none of the kinds."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_QUERY_PASSWORD = re.compile(r"(?<=[?&])password=([^&#]*)(&|(?=#)|$)")


@dataclass(frozen=True)
class StoreSpec:
    """A parsed store spec: `kind`, `location` (path or URL, "" for the default), `name` (table, collection,
    index) and `password`, a `Secret` taken out of a URL (a location given with one is split as it is made)."""

    kind: str
    location: str
    name: str = ""
    password: Secret | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.password is None and _SCHEME.match(self.location):
            location, password = without_password(self.location)
            if password is not None:
                object.__setattr__(self, "location", location)
                object.__setattr__(self, "password", Secret.from_token(unquote(password)) if password else None)

    def __str__(self) -> str:
        return self.store_kind.text(self)

    @property
    def store_kind(self) -> Any:
        """The `stores.kinds.StoreKind` of this spec (ValueError for a kind no longer registered)."""
        if self.kind not in KINDS:
            raise ValueError(f"unknown store kind '{self.kind}' (known: {', '.join(KINDS)})")
        return KINDS[self.kind]


def without_password(url: str) -> tuple[str, str | None]:
    """`url` without its password (its user part's, or a ``password=`` parameter's), and the password as written.

    >>> without_password("postgresql://:p%40ss@db/x?sslmode=require&password=q")
    ('postgresql://db/x?sslmode=require', 'p%40ss')
    """
    scheme = _SCHEME.match(url)
    if scheme is None:
        return url, None
    head, rest = url[:scheme.end()], url[scheme.end():]
    password = None
    at = rest.rfind("@")  # a raw '@' in the password is refused below, never shown
    if at >= 0 and ":" in rest[:at]:
        user, _, password = rest[:at].partition(":")
        rest = (f"{user}@" if user else "") + rest[at + 1:]
    query = _QUERY_PASSWORD.search(rest)
    if query is not None:
        password = password if password is not None else query[1]
        rest = re.sub(r"[?&](?=#|$)", "", rest[:query.start()] + rest[query.end():])
    return head + rest, password


def parse_store_spec(spec: str | os.PathLike[str] | StoreSpec) -> StoreSpec:
    """Parse a store spec (module doc); a bare path is a saved in-memory store, a `StoreSpec` is itself.

    :raises ValueError: an unknown kind (``mongo://…``), or a spec its kind refuses, in one line without its password.
    """
    if isinstance(spec, StoreSpec):
        return spec
    text = os.fspath(spec).strip()
    kind, sep, rest = text.partition(":")
    if not sep or re.fullmatch(r"[A-Za-z]", kind):  # "C:\\…" is a path
        kind, rest = "memory", text
    elif kind not in KINDS:
        if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", kind):  # a scheme we do not know, e.g. mongo://…
            raise ValueError(f"Store spec '{kind}:…': unknown store kind '{kind}' (known: {', '.join(KINDS)}; a file "
                             "name with ':' is written memory:PATH).")
        kind, rest = "memory", text
    rest, password = without_password(rest)  # before the '#': a password may hold one
    location, _, name = rest.rpartition("#") if "#" in rest else (rest, "", "")
    location, in_query = without_password(location)
    password = password if password is not None else in_query
    shown = redact(f"{kind}:{location}" + (f"#{name[:70]}" if name else ""))  # a URL not read as one may hold it
    if password is not None and re.search(r"[@/\s]", password):
        raise ValueError(f"Store spec '{shown}': percent-encode the password's '@' as %40, '/' as %2F and spaces as "
                         "%20 (a URL's rule, which libpq reads by).")
    parsed = KINDS[kind].parse(location, name, shown)
    return StoreSpec(parsed.kind, parsed.location, parsed.name,
                     Secret.from_token(unquote(password)) if password else None)  # "me:@" is no password


__all__ = ["KINDS", "StoreSpec", "parse_store_spec", "without_password"]
