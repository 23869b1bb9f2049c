"""Opening, saving and closing the document store a spec names, and the retriever that reads it.

`open_document_store` opens any kind of `haystack_cfrag.stores.specs` (in memory, FAISS,
pgvector, Qdrant). Opening a store to *read* (`ask`, `serve`) never creates or changes
anything: a missing JSON or FAISS file, table or collection is an error. Only `cfrag index`
(``create=True``) creates and writes. `embedding_retriever` gives the Haystack retriever
that reads a store of each kind.

Saving is atomic for every kind. A JSON store is one file: written beside it under a temporary
name, then renamed. A FAISS store is a pair (`PATH.faiss`, `PATH.json`): both are written into
a new temporary folder, then a commit record (`.PATH.cfrag-commit`, one rename) names that
folder, and only then are the two files moved in; a save killed between the two moves is
finished when the store is next opened or saved (the complete new pair moved in), and one
killed before its commit record leaves the old pair as it was. Temporary files a killed save
left beside a store are removed by the next save. pgvector writes in one transaction; Qdrant
keeps each vector with its document, so neither can hold documents without their vectors.

Opening never trusts what it opens: every file is read through `stores.safe_files` (a regular
file of bounded size, no FIFO, device or link out of its folder), a FAISS index is checked
against its size before faiss reads it (`stores.faiss_header`), and every network store has a
connect and a statement or request timeout (`stores.timeouts`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.common.files import replace_text
from haystack_cfrag.stores.safe_files import check_file, open_checked, read_json
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec, redact
from haystack_cfrag.stores.timeouts import QDRANT_SECONDS, pg_with_timeouts

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- FAISS scores
def faiss_cosine(score: float, index_string: str = "Flat") -> float:
    """Cosine similarity from a FAISS score, for unit-length embeddings.

    faiss returns the *squared* L2 distance D = |q - x|² = 2 - 2·cos for unit vectors;
    faiss-haystack reports 1 / (1 + D) for "Flat" indexes and D itself for the others, so
    cos = 1 - D / 2.
    """
    distance = (1.0 / score - 1.0) if index_string == "Flat" else score
    return 1.0 - distance / 2.0


# ---------------------------------------------------------------- opening
def open_document_store(spec: str | os.PathLike[str] | StoreSpec, *, embedding_dim: int | None = None,
                        create: bool = False, faiss_device: int | None = None) -> Any:
    """The document store a spec names.

    :param embedding_dim: needed to create a FAISS index, a table or a collection.
    :param create: create it when missing (indexing); otherwise a missing store is an error and
        nothing is created or changed.
    :param faiss_device: GPU for FAISS searches (None: GPU 0 when faiss has one; -1: CPU).
    :raises FileNotFoundError: the store does not exist and `create` is False.
    """
    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    if s.kind == "memory":
        return open_memory_store(Path(s.location), create=create)
    if s.kind == "faiss":
        return _open_faiss(s, embedding_dim, create, faiss_device)
    if s.kind == "pgvector":
        return _open_pgvector(s, embedding_dim, create)
    return _open_qdrant(s, embedding_dim, create)


def embedding_retriever(store: Any, *, top_k: int = 5) -> Any:
    """The embedding retriever that reads `store` (any of the four kinds)."""
    name = type(store).__name__
    if name == "InMemoryDocumentStore":
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever  # noqa: PLC0415

        return InMemoryEmbeddingRetriever(document_store=store, top_k=top_k)
    if name == "GpuFAISSDocumentStore":
        from haystack_cfrag.stores.faiss_gpu import GpuFAISSEmbeddingRetriever  # noqa: PLC0415

        return GpuFAISSEmbeddingRetriever(document_store=store, top_k=top_k)
    if name == "FAISSDocumentStore":
        from haystack_integrations.components.retrievers.faiss import FAISSEmbeddingRetriever  # noqa: PLC0415

        return FAISSEmbeddingRetriever(document_store=store, top_k=top_k)
    if name == "PgvectorDocumentStore":
        from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever  # noqa: PLC0415

        return PgvectorEmbeddingRetriever(document_store=store, top_k=top_k)
    if name == "QdrantDocumentStore":
        from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever  # noqa: PLC0415

        return QdrantEmbeddingRetriever(document_store=store, top_k=top_k, return_embedding=True)
    raise TypeError(f"No embedding retriever known for {name}; pass your own retriever instead.")


def save_document_store(store: Any, spec: str | os.PathLike[str] | StoreSpec) -> None:
    """Persist what needs persisting: the JSON of a memory store, the files of a FAISS store (atomically).

    pgvector and Qdrant write through at once; nothing to do.
    """
    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    if s.kind == "memory":
        save_memory_store(store, Path(s.location))
    elif s.kind == "faiss":
        save_faiss_store(store, Path(s.location))


def save_faiss_store(store: Any, base: Path) -> None:
    """Save a FAISS store's two files atomically (module doc): a new folder, a commit record, two moves."""
    base.parent.mkdir(parents=True, exist_ok=True)
    finish_interrupted_save(base)
    remove_leftovers(base)
    folder = Path(tempfile.mkdtemp(prefix=f".{base.name}.", suffix=".tmp", dir=base.parent))  # a new, unique name
    commit = _commit_record(base)
    committed = False
    try:
        store.save(folder / base.name)  # writes NAME.faiss and NAME.json
        replace_text(commit, json.dumps({"folder": folder.name}))  # from here on the new pair is the store
        committed = True
        _move_pair(folder, base)
        commit.unlink()
        committed = False
    finally:
        if not committed:  # a failure before the commit: the old pair stands; after it: finished on next open
            shutil.rmtree(folder, ignore_errors=True)


FAISS_SUFFIXES = (".json", ".faiss")
"""The files of a FAISS store, in the order they are moved in (the index last: a reader keys on .faiss)."""


def _commit_record(base: Path) -> Path:
    return base.parent / f".{base.name}.cfrag-commit"


def _temporary_name(base: Path, *, commit: bool = False) -> re.Pattern[str]:
    """The names `tempfile` gives a save's temporary file or folder beside `base` (8 random characters);
    with `commit`, the commit record's temporary file too."""
    name = re.escape(base.name)
    head = rf"(\.{name}|\.\.{name}\.cfrag-commit)" if commit else rf"\.{name}"
    return re.compile(rf"{head}\.[a-z0-9_]{{8}}\.tmp")


def finish_interrupted_save(base: Path) -> bool:
    """Complete a FAISS save that was killed after its commit record: move the rest of the new pair in.

    The commit record must name a real folder beside the store with a temporary save's name; its
    regular files are moved in (links are never followed) and the record and the folder removed.
    True when there was a save to finish.

    :raises ValueError: the record is not one this package wrote, or the files cannot be moved.
    """
    commit = _commit_record(base)
    try:
        name = read_json(commit, "meta")["folder"]  # a regular file of a few bytes: never a FIFO's endless wait
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{commit} is not a commit record cfrag wrote; move it away to open "
                         f"{base}.") from exc
    if not isinstance(name, str) or not _temporary_name(base).fullmatch(name):
        raise ValueError(f"{commit} is not a commit record cfrag wrote; move it away to open {base}.")
    folder = base.parent / name
    try:
        if _is_real_dir(folder):
            _move_pair(folder, base)
            logger.warning("{base}: finished an interrupted save (the new files moved in)", base=str(base))
        commit.unlink()
    except OSError as exc:
        raise ValueError(f"{base}: an interrupted save cannot be finished ({exc.strerror or exc}); "
                         "run cfrag index again with write access.") from exc
    if _is_real_dir(folder):
        shutil.rmtree(folder, ignore_errors=True)
    return True


def _move_pair(folder: Path, base: Path) -> None:
    for suffix in FAISS_SUFFIXES:
        source = (folder / base.name).with_suffix(suffix)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISREG(source.lstat().st_mode):
                os.replace(source, base.with_suffix(suffix))


def remove_leftovers(base: Path) -> list[Path]:
    """Remove the temporary files and folders killed saves left beside a store (this user's, never links)."""
    pattern, removed = _temporary_name(base, commit=True), []
    try:
        entries = list(base.parent.iterdir())
    except OSError:
        return []
    for path in entries:
        if not pattern.fullmatch(path.name):
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if info.st_uid != os.getuid() or stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        elif stat.S_ISREG(info.st_mode):
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def close_document_store(store: Any) -> None:
    """Release what a store holds open: a Qdrant client (local mode locks its folder), a Postgres connection."""
    client = getattr(store, "_client", None)  # qdrant-haystack
    if client is not None and hasattr(client, "close"):
        client.close()
        store._client = None
    conn = getattr(store, "_connection", None)  # pgvector-haystack (sync connection)
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001  (closing is best effort)
            logger.debug("Could not close the store's connection")
        store._connection = None


def open_memory_store(path: Path, *, create: bool = False) -> Any:
    """An `InMemoryDocumentStore` saved as JSON at `path` (cosine); a new, empty one when missing and `create`.

    :raises FileNotFoundError: no file at `path` and `create` is False.
    """
    from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415

    if path.exists() or path.is_symlink():
        check_memory_store_file(path)
        data = read_json(path, "json")
        try:  # what `InMemoryDocumentStore.load_from_disk` does, from the checked file
            from haystack import Document  # noqa: PLC0415
            from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

            documents = data.pop("documents")
            store = InMemoryDocumentStore.from_dict(data)
            store.write_documents([Document.from_dict(d) for d in documents], policy=DuplicatePolicy.OVERWRITE)
            return store
        except Exception as exc:  # noqa: BLE001  (Haystack raises KeyError, DocumentStoreError, TypeError …)
            raise ValueError(f"{path} is not a store cfrag index wrote (it does not load: {type(exc).__name__}); "
                             "name another file.") from exc
    if not create:
        raise FileNotFoundError(f"No store at {path}: create it with `cfrag index FILES --store {path}`.")
    return InMemoryDocumentStore(embedding_similarity_function="cosine")


_MEMORY_STORE_HEAD = re.compile(rb'\A\s*\{\s*"type"\s*:\s*"[A-Za-z0-9_.]*InMemoryDocumentStore"')


def check_memory_store_file(path: Path) -> None:
    """ValueError naming `path` unless it is a file that Haystack's `InMemoryDocumentStore.save_to_disk` wrote.

    Only the first bytes are read (a store can be large): the JSON object must begin with its
    `"type"`, the class of the in-memory store; a user's own JSON file, a folder or an empty
    file is refused before anything loads, embeds or writes.
    """
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a store file: name the .json file cfrag index wrote.")
    try:
        with open_checked(path, "json") as fh:  # a FIFO, a device, a link out or a huge file: refused unread
            head = fh.read(512)
    except OSError as exc:
        raise ValueError(f"{path} cannot be read ({exc.strerror or type(exc).__name__}).") from exc
    if not _MEMORY_STORE_HEAD.match(head):
        raise ValueError(f"{path} is not a store cfrag index wrote (no InMemoryDocumentStore JSON): "
                         "name another file; cfrag never replaces it.")


def save_memory_store(store: Any, path: Path) -> None:
    """Save an in-memory store as JSON atomically: a new temporary file beside it (a unique name), then rename.

    Temporary files of earlier saves that were killed are removed first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        store.save_to_disk(str(tmp))
        tmp.chmod(mode)  # mkstemp's file is private (0600): the store keeps the mode a plain write gives
        tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _open_faiss(s: StoreSpec, embedding_dim: int | None, create: bool, device: int | None) -> Any:
    from haystack_cfrag.stores.faiss_gpu import GpuFAISSDocumentStore, faiss_import, gpu_device  # noqa: PLC0415

    faiss_import.check()
    import faiss  # noqa: PLC0415

    base = Path(s.location)
    finish_interrupted_save(base)  # a save killed between its two moves: its complete pair, never a mixed one
    exists = base.with_suffix(".faiss").exists()
    if not exists and not create:
        raise FileNotFoundError(f"No FAISS store at {base.with_suffix('.faiss')}: create it with "
                                f"`cfrag index FILES --store {s}`.")
    if not exists and embedding_dim is None:
        raise ValueError("A new FAISS store needs embedding_dim.")
    kwargs = {"index_path": str(base), "index_string": s.name, "embedding_dim": embedding_dim or 768}
    if device is not None or gpu_device(None, faiss.get_num_gpus()) is not None:
        return GpuFAISSDocumentStore(**kwargs, device=device)  # loads through `faiss_files.load_store`
    from haystack_integrations.document_stores.faiss import FAISSDocumentStore  # noqa: PLC0415

    from haystack_cfrag.stores.faiss_files import load_store  # noqa: PLC0415

    store = FAISSDocumentStore(**{**kwargs, "index_path": None})  # an empty index: the files are read below
    store.index_path = str(base)
    if exists:
        load_store(store, base)
    return store


def pg_secret(url: str) -> Any:
    """A Haystack Secret for a Postgres URL that serialises by *name*, never by value.

    An empty URL is Haystack's default, ``PG_CONN_STR``. A given URL is put in this process's
    environment under a name derived from it, so a pipeline's YAML holds the variable's name
    and never the password. Either gets a connect and a statement timeout where it sets none
    (`timeouts.pg_with_timeouts`): a host that never answers is an error, not a wait.
    """
    from haystack.utils import Secret  # noqa: PLC0415

    if not url:
        if os.environ.get("PG_CONN_STR"):  # this process's connections get the timeouts too
            os.environ["PG_CONN_STR"] = pg_with_timeouts(os.environ["PG_CONN_STR"])
        return Secret.from_env_var("PG_CONN_STR")
    var = "CFRAG_PG_CONN_STR_" + hashlib.sha256(url.encode()).hexdigest()[:10].upper()
    os.environ[var] = pg_with_timeouts(url)
    return Secret.from_env_var(var)


def _pg_table_dim(url: str, table: str) -> int | None:
    """The `embedding` column's dimension of an existing table; None when the table does not exist."""
    with pg_connect(url) as conn:
        row = conn.execute("SELECT to_regclass(%s)::text", (f"public.{table}",)).fetchone()
        if row is None or row[0] is None:
            return None
        dim = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            (f"public.{table}",),
        ).fetchone()
    return int(dim[0]) if dim and dim[0] and dim[0] > 0 else 0


def pg_connect(url: str, **kwargs: Any) -> Any:
    """A psycopg connection to `url` (`pg_secret`'s value: with its timeouts); a failure to connect is one
    ValueError line naming the server (redacted), e.g. a host that accepts and never answers, after
    `timeouts.PG_CONNECT_SECONDS`."""
    import psycopg  # noqa: PLC0415

    try:
        return psycopg.connect(url, **kwargs)
    except psycopg.OperationalError as exc:
        where = redact(url.partition("?")[0]) if "://" in url else "the PG_CONN_STR database"
        why = redact(" ".join(str(exc).split()))[:160]
        raise ValueError(f"Postgres at {where} cannot be reached ({why}).") from None


def _open_pgvector(s: StoreSpec, embedding_dim: int | None, create: bool) -> Any:
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore  # noqa: PLC0415

    secret = pg_secret(s.location)
    url = secret.resolve_value()
    existing = _pg_table_dim(url, s.name)
    if existing is None and not create:
        raise FileNotFoundError(f"No table '{s.name}' in {redact(url)}: create it with "
                                f"`cfrag index FILES --store {redact(str(s))}`.")
    if existing:
        if embedding_dim and embedding_dim != existing:
            raise ValueError(f"Table '{s.name}' holds {existing}-dimensional embeddings, not {embedding_dim}.")
        embedding_dim = existing
    if embedding_dim is None:
        raise ValueError("A new pgvector table needs embedding_dim.")
    return PgvectorDocumentStore(
        connection_string=secret, table_name=s.name, embedding_dimension=embedding_dim,
        vector_function="cosine_similarity", create_extension=create,
        # index names are per schema: name them after the table so that tables can share a database
        keyword_index_name=f"{s.name}_keyword_index", hnsw_index_name=f"{s.name}_hnsw_index",
    )


def _open_qdrant(s: StoreSpec, embedding_dim: int | None, create: bool) -> Any:
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore  # noqa: PLC0415

    where: dict[str, Any]
    if s.location == ":memory:":
        where = {"location": ":memory:"}
    elif s.location.startswith(("http://", "https://")):
        where = {"url": s.location}
    else:
        where = {"path": s.location}
        check_qdrant_folder(Path(s.location))
    if "url" in where:
        where["timeout"] = int(QDRANT_SECONDS)
    if not create:
        if not _qdrant_collection_exists(where, s.name):
            raise FileNotFoundError(f"No Qdrant collection '{s.name}' at {redact(s.location)}: create it with "
                                    f"`cfrag index FILES --store {redact(str(s))}`.")
        if embedding_dim is None:
            embedding_dim = _qdrant_dim(where, s.name)
    elif embedding_dim is None:
        raise ValueError("A new Qdrant collection needs embedding_dim.")
    return QdrantDocumentStore(**where, index=s.name, embedding_dim=embedding_dim or 768, similarity="cosine",
                               return_embedding=True, recreate_index=False)


def _qdrant_collection_exists(where: dict[str, Any], name: str) -> bool:
    if "path" in where:  # local mode locks its folder: look at the files, open no client
        return (Path(where["path"]) / "collection" / name).is_dir()
    if where.get("location") == ":memory:":
        return False
    from qdrant_client import QdrantClient  # noqa: PLC0415

    client = QdrantClient(url=where["url"], timeout=int(QDRANT_SECONDS))
    try:
        return bool(client.collection_exists(name))
    finally:
        client.close()


def _qdrant_dim(where: dict[str, Any], name: str) -> int | None:
    if "path" in where:  # local mode keeps the collections' configuration in meta.json
        meta = read_json(Path(where["path"]) / "meta.json", "meta")
        return meta["collections"][name]["vectors"]["size"]
    if "url" not in where:
        return None
    from qdrant_client import QdrantClient  # noqa: PLC0415

    client = QdrantClient(url=where["url"], timeout=int(QDRANT_SECONDS))
    try:
        vectors = client.get_collection(name).config.params.vectors
        return getattr(vectors, "size", None)
    finally:
        client.close()


def check_qdrant_folder(folder: Path) -> None:
    """The files a local Qdrant client reads when it opens `folder` (its meta.json, each collection's storage):
    regular files of bounded size, before the client opens any (`safe_files`)."""
    if not folder.is_dir():
        return
    try:
        check_file(folder / "meta.json", "meta", folder=folder)
    except FileNotFoundError:
        return
    collections = folder / "collection"
    if not collections.is_dir() or collections.is_symlink():
        return
    for sub in list(collections.iterdir())[:1000]:
        if sub.is_symlink() or not sub.is_dir():
            raise ValueError(f"{sub} is not a folder of a local Qdrant store; nothing read.")
        for path in list(sub.iterdir())[:100]:
            check_file(path, "sqlite", folder=sub)
