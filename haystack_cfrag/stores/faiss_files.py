"""A FAISS store's two files (`PATH.faiss`, `PATH.json`) read checked, into a faiss-haystack store.

What `FAISSDocumentStore.load` does, with the files read through `stores.faiss_header.read_index`
(the index's header checked against its size) and `stores.safe_files.read_json` (a regular file
of bounded size, with no NUL byte): both files are checked before either is parsed, so a FIFO, a
device, a link out of the folder or an index whose header claims more than the file holds is one
line naming the file, and nothing is allocated for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.stores.faiss_header import read_index
from haystack_cfrag.stores.safe_files import check_file, read_json

logger = logging.getLogger(__name__)


def load_store(store: Any, base: str | Path) -> None:
    """Read `base`.faiss and `base`.json into `store` (a `FAISSDocumentStore`), checked.

    :raises FileNotFoundError: a file is missing.
    :raises ValueError: one line naming the file that is not a store's.
    """
    from haystack import Document  # noqa: PLC0415

    base = Path(base)
    index_path, json_path = base.with_suffix(".faiss"), base.with_suffix(".json")
    check_file(json_path, "json")  # both looked at before either is read
    index = read_index(index_path)
    data = read_json(json_path, "json")
    try:
        documents = {d["id"]: Document.from_dict(d) for d in data["documents"]}
        id_map = {int(k): str(v) for k, v in data["id_map"].items()}
        inverse = {str(k): int(v) for k, v in data["inverse_id_map"].items()}
        next_id = int(data["next_id"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{json_path} is not the documents of a FAISS store cfrag index wrote "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:80]}); nothing read.") from exc
    if len(id_map) != index.ntotal:  # as faiss-haystack's own load: said, not refused
        logger.warning("{base}: {index} holds {n} vectors, {docs} maps {m}: the pair may be out of step",
                       base=str(base), index=index_path.name, n=index.ntotal, docs=json_path.name, m=len(id_map))
    store.index = index
    store.documents, store.id_map, store.inverse_id_map, store._next_id = documents, id_map, inverse, next_id


__all__ = ["load_store"]
