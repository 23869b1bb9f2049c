"""A runtime's store and what is built over it: the retrievers, BM25's copy, a family's index-time parts.

A family's parts (CausalRAG's graph) are opened where `cfrag index --graph` stored them, else built in memory, or
with `keep_graph` written beside the store in a spawned child process (whose memory is returned when it ends).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag import stores
from haystack_cfrag.common.timing import timed_on
from haystack_cfrag.common.validation import check_bool
from haystack_cfrag.models import graph_cache_dir
from haystack_cfrag.registry import FAMILIES, Resolved, preparation_of, resolve

logger = logging.getLogger(__name__)

GRAPH_CACHE = "auto"
"""CausalRAG's extraction cache (per passage hash, prompt, chunking and model): "auto" = `models.graph_cache_dir()`."""


class StoreParts:
    """The store a runtime's pipelines read and what is built over it (see `Runtime` for the parameters).

    :param models: the runtime's `ModelParts`: what builds a family's parts over the store.
    """

    def __init__(self, store: Any, *, models: Any, retriever: Any | None = None,
                 graph_cache: str | Path | None = GRAPH_CACHE, graph_extractor: str | None = None,
                 store_spec: str | stores.StoreSpec | None = None, keep_graph: bool = False) -> None:
        check_bool("keep_graph", keep_graph)
        self.models = models
        self.store = store
        self.retriever = retriever if retriever is not None else default_retriever(store)
        self.graph_cache = graph_cache_dir() if graph_cache == GRAPH_CACHE else graph_cache
        self.graph_extractor = graph_extractor  # checked by the family's preparation (an unknown name: ValueError)
        self.store_spec = None if store_spec is None else stores.parse_store_spec(store_spec)
        self.spec_store = store
        """The store `store_spec` names (the evaluation's per-question stores are others)."""
        self.keep_graph = keep_graph
        self.graph_stats: list[dict[str, Any]] = []
        """One entry per index-time build or opening (CausalRAG's graph: its cost)."""
        self._prepared: dict[int, tuple[Any, Any, Any]] = {}  # id(preparation) -> (it, the store, its handle)
        self._keyword: tuple[Any, Any] | None = None  # (the store, what BM25 reads for it)

    def keyword_retriever(self) -> Any | None:
        """The store's own keyword retriever (pgvector's), or None."""
        return stores.keyword_retriever(self.store)

    def keyword_store(self) -> Any:
        """The store BM25 in memory reads for the current store (itself, or a copy once per store: `stores.opening`)."""
        if self._keyword is None or self._keyword[0] is not self.store:
            self._keyword = (self.store, stores.keyword_store(self.store))
        return self._keyword[1]

    def prepared(self, preparation: Any) -> Any:
        """What a family's `StorePreparation` built over the current store (CausalRAG's graph), built once per store."""
        held = self._prepared.get(id(preparation))
        if held is None or held[1] is not self.store:  # the store itself, not its id: ids are reused
            handle = self.stored(preparation)
            if handle is None:
                handle = self._build(preparation)
            if held is not None:  # one build per preparation at a time: the evaluation moves from store to store
                preparation.release(held[2])
            self._prepared[id(preparation)] = (preparation, self.store, handle)
        return self._prepared[id(preparation)][2]

    def prepare(self, paths: list[str | Path | Resolved]) -> None:
        """Build (or open) what these pipelines need over the store now, before the reader loads."""
        built = False
        for path in paths:
            resolved = resolve(path)
            preparation = resolved.preparation()
            if preparation is not None and preparation.needed_by(resolved.data):  # grounded_rag_lite: no graph
                self.prepared(preparation)
                built = True
        if built:
            _release_freed_memory()

    def graph_store(self) -> Any:
        """The index-time parts of the current store of the first family that declares some (CausalRAG's graph)."""
        return self.prepared(next(p for f in FAMILIES.values() if (p := preparation_of(f)) is not None))

    def stored(self, preparation: Any) -> Any | None:
        """What `cfrag index --graph` stored beside the spec's store for `preparation`, opened; None: none stored."""
        if self.store_spec is None or self.store is not self.spec_store:
            return None
        if self.keep_graph and not self.keeps(preparation):  # the demo keeps its default extractor's graph only
            return None
        start = time.perf_counter()
        handle = preparation.load(self.store_spec)
        if handle is not None:
            logger.info("Opened the stored {what} in {s:.2f} s", what=preparation.what, s=time.perf_counter() - start)
            self.graph_stats.append({"stored": True, "seconds": round(time.perf_counter() - start, 3),
                                     "built_on": timed_on()})
        return handle

    def keeps(self, preparation: Any) -> bool:
        """Whether the graph built here is the one kept beside the store: the default extractor's."""
        return (self.graph_extractor or preparation.default_extractor) == preparation.default_extractor

    def _build(self, preparation: Any) -> Any:
        passages = [d for d in self.store.filter_documents() if d.content]
        extractor = self.graph_extractor or preparation.default_extractor
        logger.warning("Building {what} over {n} passages with the '{extractor}' extractor: passages not yet in the "
                       "cache are extracted ({cache})", what=preparation.what, n=len(passages), extractor=extractor,
                       cache=self.graph_cache or "no cache")
        if extractor not in preparation.parse_only:  # an LLM extracts: the reader loads first
            self.models.warm_up()
        handle = self._keep(preparation, passages, extractor)
        if handle is None:
            handle, stats = preparation.build(passages, chat_generator=self.models.generator,
                                              text_embedder=self.models.text_embedder,
                                              document_embedder=self.models.document_embedder,
                                              cache_dir=self.graph_cache, graph_extractor=extractor)
            self.graph_stats.append({**stats, "built_on": timed_on()})
        return handle

    def _keep(self, preparation: Any, passages: list[Any], extractor: str) -> Any | None:
        """With `keep_graph`: write what `preparation` builds beside the spec's store (`index_apart`) and open it;
        None when not kept (then it is built in memory)."""
        if (not self.keep_graph or not self.keeps(preparation) or extractor not in preparation.parse_only
                or self.store_spec is None or self.graph_cache is None or self.store is not self.spec_store
                or not passages):
            return None
        start = time.perf_counter()
        try:  # in a child process: the build's heap (spaCy, its batches) never stays under the reader
            stats = index_apart(preparation, passages, text_embedder=self.models.text_embedder,
                                document_embedder=self.models.document_embedder, cache_dir=self.graph_cache,
                                progress=None, extractor=extractor, engine="local", ray_address=None,
                                store_spec=self.store_spec)
            handle = self.stored(preparation)
        except (OSError, ValueError, RuntimeError) as exc:  # a full disk, another process writing it: in memory
            logger.warning("Could not store {what} beside {spec} ({error}); it is built in memory this time",
                           what=preparation.what, spec=str(self.store_spec), error=" ".join(str(exc).split())[:160])
            return None
        if handle is not None:
            logger.info("Stored {what} beside {spec} in {s:.1f} s; later runs open it", what=preparation.what,
                        spec=str(self.store_spec), s=time.perf_counter() - start)
            self.graph_stats.append({**stats, "kept": True, "built_on": timed_on()})
        return handle


def index_apart(preparation: Any, passages: list[Any], *, text_embedder: Any, document_embedder: Any = None,
                **kwargs: Any) -> dict[str, Any]:
    """`preparation.index(passages, …, chat_generator=None, **kwargs)` in a spawned child process (the family and
    embedders found again there by name and `to_dict`); what `index` returned.

    :raises RuntimeError: the child died, or ValueError/OSError as `index` raised them.
    """
    family = next(name for name, f in FAMILIES.items() if preparation_of(f) is preparation)
    embedders = [e.to_dict() if e is not None else None for e in (text_embedder, document_embedder)]
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_index, family, passages, embedders, kwargs).result()


def _index(family: str, passages: list[Any], embedders: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    from haystack_cfrag.common.serialization import deserialize_component  # noqa: PLC0415

    text, document = (deserialize_component(e) if e is not None else None for e in embedders)  # Haystack's allowlist
    stats = preparation_of(FAMILIES[family]).index(passages, text_embedder=text, document_embedder=document,
                                                   chat_generator=None, **kwargs)
    return {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool))}


def default_retriever(store: Any) -> Any | None:
    """None for a store Haystack's in-memory components read as it is (the pipeline files' own retriever reads
    it: `StoreKind.native`), else the matching one."""
    kind = stores.kind_of(store)
    return None if kind is not None and kind.native else stores.embedding_retriever(store)


def _release_freed_memory() -> None:
    """Collect, then hand the C heap's free pages back to the system (glibc `malloc_trim`), so that what a
    graph build freed is not still resident when the reader's 1.4 GB load on top of it (a no-op elsewhere)."""
    import ctypes  # noqa: PLC0415
    import gc  # noqa: PLC0415

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


__all__ = ["GRAPH_CACHE", "StoreParts", "default_retriever", "index_apart"]
