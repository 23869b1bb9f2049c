"""Writing what a family prepares over a store (CausalRAG's graph) beside it, in a child process.

`Runtime(keep_graph=True)` keeps the demo's graph in the cache: built once, then opened by every later
run. The build loads what the query never needs (spaCy, the builder's batches) and the heap it leaves
behind stays resident under the reader loaded next: measured on the demo, 2.35 GB at the first
`cfrag ask --pipeline causal_rag` when built in the process, 1.95 GB at every later one. In a child
process (spawned: a fork would copy the loaded torch threads) all of it is returned when the child ends.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from haystack import logging

from haystack_cfrag.common.timing import timed_on

logger = logging.getLogger(__name__)


def keeps(runtime: Any, preparation: Any) -> bool:
    """Whether `runtime`'s graph is the one kept beside its store: the default extractor's."""
    return (runtime.graph_extractor or preparation.default_extractor) == preparation.default_extractor


def keep(runtime: Any, preparation: Any, passages: list[Any], extractor: str) -> Any | None:
    """With `runtime.keep_graph`: write what `preparation` builds beside the spec's store, batch by batch (as `cfrag
    index --graph` does, in a child process: `index_apart`), and open it; None when not kept (then the runtime
    builds it in memory): another extractor, an LLM one, no spec or cache, or a write that failed (logged)."""
    if (not runtime.keep_graph or not keeps(runtime, preparation) or preparation.index is None
            or extractor not in preparation.parse_only or runtime.store_spec is None or runtime.graph_cache is None
            or runtime.store is not runtime._spec_store or not passages):  # noqa: SLF001  (the runtime's own check)
        return None
    start = time.perf_counter()
    try:  # in a child process: the build's heap (spaCy, its batches) never stays under the reader
        stats = index_apart(preparation, passages, text_embedder=runtime.text_embedder, cache_dir=runtime.graph_cache,
                            progress=None, extractor=extractor, engine="local", ray_address=None,
                            store_spec=runtime.store_spec)
        handle = runtime._stored(preparation)  # noqa: SLF001
    except (OSError, ValueError, RuntimeError) as exc:  # a full disk, another process writing it: kept in memory
        logger.warning("Could not store {what} beside {spec} ({error}); it is built in memory this time",
                       what=preparation.what, spec=str(runtime.store_spec), error=" ".join(str(exc).split())[:160])
        return None
    if handle is not None:
        logger.info("Stored {what} beside {spec} in {s:.1f} s; later runs open it", what=preparation.what,
                    spec=str(runtime.store_spec), s=time.perf_counter() - start)
        runtime.graph_stats.append({**stats, "kept": True, "built_on": timed_on()})
    return handle


def index_apart(preparation: Any, passages: list[Any], *, text_embedder: Any, **kwargs: Any) -> dict[str, Any]:
    """`preparation.index(passages, text_embedder=…, chat_generator=None, **kwargs)` in a spawned child process.

    The preparation is found again in the child by its family's name (its functions are module-level, a
    dataclass of them is not always picklable) and the embedder rebuilt from its `to_dict` (a configuration,
    not a loaded model). A parse-only extractor only: no chat generator crosses.

    :returns: what `index` returned (its plain values).
    :raises RuntimeError: the child died (`BrokenProcessPool`), or ValueError/OSError as `index` raised them.
    """
    from haystack_cfrag.registry import FAMILIES, preparation_of  # noqa: PLC0415

    family = next(name for name, f in FAMILIES.items() if preparation_of(f) is preparation)
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_index, family, passages, text_embedder.to_dict(), kwargs).result()


def _index(family: str, passages: list[Any], embedder: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    from haystack_cfrag.common.serialization import deserialize_component  # noqa: PLC0415
    from haystack_cfrag.registry import FAMILIES, preparation_of  # noqa: PLC0415

    text_embedder = deserialize_component(embedder)  # through Haystack's allowlist
    stats = preparation_of(FAMILIES[family]).index(passages, text_embedder=text_embedder, chat_generator=None,
                                                   **kwargs)
    return {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool))}


__all__ = ["index_apart", "keep", "keeps"]
