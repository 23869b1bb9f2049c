"""Fingerprints of a document store's contents, to prove that a pipeline leaves the user's data alone.

Works with any Haystack DocumentStore (InMemory, pgvector, …): it reads every document
through `filter_documents()` and hashes id, content, meta, embedding, sparse embedding and
blob. Use `store_fingerprint` before and after, or the `unchanged` context manager.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def document_digest(doc: Any) -> str:
    """sha256 of one document's id, content, meta, embedding, sparse embedding and blob."""
    sparse = getattr(doc, "sparse_embedding", None)
    blob = getattr(doc, "blob", None)
    payload = {
        "id": doc.id,
        "content": doc.content,
        "meta": doc.meta,
        "embedding": None if doc.embedding is None else [_float(x) for x in doc.embedding],
        "sparse": None if sparse is None else [list(sparse.indices), [_float(x) for x in sparse.values]],
        "blob": None if blob is None else [base64.b64encode(blob.data).decode(), blob.mime_type, blob.meta],
    }
    text = json.dumps(payload, sort_keys=True, default=repr, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _float(x: Any) -> Any:
    x = float(x)
    return repr(x) if not math.isfinite(x) else x


def store_fingerprint(document_store: Any) -> dict[str, str]:
    """{document id: sha256} of every document in the store (duplicate ids would be an error)."""
    docs = document_store.filter_documents()
    out = {doc.id: document_digest(doc) for doc in docs}
    if len(out) != len(docs):
        raise AssertionError(f"the store returned {len(docs)} documents for {len(out)} ids")
    return out


def fingerprint_diff(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """Ids written, deleted and altered between two fingerprints (empty lists when nothing changed)."""
    return {
        "written": sorted(set(after) - set(before)),
        "deleted": sorted(set(before) - set(after)),
        "altered": sorted(i for i in set(before) & set(after) if before[i] != after[i]),
    }


@contextmanager
def unchanged(document_store: Any) -> Iterator[dict[str, str]]:
    """Assert on exit that no document was written, altered or deleted (also when the body raised)."""
    before = store_fingerprint(document_store)
    try:
        yield before
    finally:
        diff = fingerprint_diff(before, store_fingerprint(document_store))
        assert diff == {"written": [], "deleted": [], "altered": []}, f"the store changed: {diff}"
