"""Plumbing the components share: query cleaning, injected-component calls with a time limit, embeddings."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, logging

from haystack_cfrag.common.errors import squash
from haystack_cfrag.common.text import clean_query, truncate_text
from haystack_cfrag.common.tracing import LLMCall, llm_span
from haystack_cfrag.common.vectors import as_matrix, valid_embedding_mask

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- queries
DEFAULT_MAX_QUERY_CHARS = 2000


def prepare_query(query: Any, component: str, max_chars: int | None, *, required: bool = True) -> str | None:
    """The query cleaned and cut to `max_chars` (warned); ValueError naming the component when a required query
    is not a string or empty after cleaning (an optional one gives None)."""
    if query is None and not required:
        return None
    if not isinstance(query, str):
        raise ValueError(f"{component}: 'query' must be a non-empty string, got {type(query).__name__}.")
    text = clean_query(query)
    if not text:
        if not required:
            return None
        raise ValueError(
            f"{component}: 'query' must be a non-empty string (it is empty or only white space/control characters)."
        )
    if max_chars is not None and len(text) > max_chars:
        logger.warning("{component}: the query has {n} characters; truncated to max_query_chars={limit}",
                       component=component, n=len(text), limit=max_chars)
        text = truncate_text(text, max_chars)
    return text


# ---------------------------------------------------------------- calls with a time limit
class CallTimeoutError(TimeoutError):
    """An injected component did not answer within its time limit (the call was abandoned)."""


def remaining(deadline: float | None, timeout_s: float | None) -> float | None:
    """Seconds a call may take: the smaller of `timeout_s` and the time left before `deadline` (monotonic)."""
    left = None if deadline is None else deadline - time.monotonic()
    if left is None:
        return timeout_s
    return left if timeout_s is None else min(left, timeout_s)


_EXCLUSIVE: dict[int, threading.Lock] = {}
_EXCLUSIVE_GUARD = threading.Lock()


def _exclusive_lock(comp: Any) -> threading.Lock:
    with _EXCLUSIVE_GUARD:
        return _EXCLUSIVE.setdefault(id(comp), threading.Lock())


def call_with_timeout(
    comp: Any,
    timeout_s: float | None,
    *,
    exclusive: bool = False,
    llm_call: LLMCall | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """`comp.run(**kwargs)` in a daemon thread, abandoned with CallTimeoutError after `timeout_s` (None: no limit).

    `exclusive=True` holds a per-component lock for the whole call (a model that is not thread-safe; the wait
    counts against `timeout_s`); `llm_call` wraps the call in a child span of the caller's."""
    with llm_span(comp, llm_call, kwargs) as traced:
        return traced.reply(_call_with_timeout(comp, timeout_s, exclusive, kwargs))


def _call_with_timeout(
    comp: Any, timeout_s: float | None, exclusive: bool, kwargs: dict[str, Any]
) -> dict[str, Any]:
    if timeout_s is None:
        return comp.run(**kwargs)
    if timeout_s <= 0:
        raise CallTimeoutError("no time left in the time budget")
    future = _daemon_future(comp, kwargs, exclusive)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeoutError as exc:
        future.cancel()  # not started yet (waiting for the lock): it never will
        raise CallTimeoutError(f"no reply within {timeout_s:.3g} s; the call was abandoned") from exc


async def call_async_with_timeout(
    comp: Any,
    timeout_s: float | None,
    *,
    exclusive: bool = False,
    llm_call: LLMCall | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Async twin of `call_with_timeout`: `run_async` under `asyncio.wait_for`, or `run` in a daemon thread."""
    with llm_span(comp, llm_call, kwargs) as traced:
        return traced.reply(await _call_async_with_timeout(comp, timeout_s, exclusive, kwargs))


async def _call_async_with_timeout(
    comp: Any, timeout_s: float | None, exclusive: bool, kwargs: dict[str, Any]
) -> dict[str, Any]:
    if timeout_s is None:
        return await run_async_or_thread(comp, **kwargs)
    if timeout_s <= 0:
        raise CallTimeoutError("no time left in the time budget")
    run_async = getattr(comp, "run_async", None)
    if run_async is not None and inspect.iscoroutinefunction(run_async):
        awaitable: Any = run_async(**kwargs)
    else:
        awaitable = asyncio.wrap_future(_daemon_future(comp, kwargs, exclusive))
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError as exc:
        raise CallTimeoutError(f"no reply within {timeout_s:.3g} s; the call was abandoned") from exc


def _daemon_future(comp: Any, kwargs: dict[str, Any], exclusive: bool) -> Future:
    """A Future for `comp.run(**kwargs)` in a daemon thread (no executor waits for it at shutdown), run in a copy
    of the caller's contextvars (so a tracer sees the caller's span)."""
    future: Future = Future()
    context = contextvars.copy_context()
    lock = _exclusive_lock(comp) if exclusive else contextlib.nullcontext()

    def target() -> None:
        with lock:
            if not future.set_running_or_notify_cancel():
                return  # the caller gave up while waiting for the lock
            try:
                future.set_result(context.run(comp.run, **kwargs))
            except BaseException as exc:  # noqa: BLE001  (re-raised in the caller)
                future.set_exception(exc)

    threading.Thread(target=target, daemon=True, name="cfrag-call").start()
    return future


def first_reply_text(result: dict[str, Any] | None) -> str:
    """The text of a chat generator's first reply ("" when there is none).

    >>> from haystack.dataclasses import ChatMessage
    >>> first_reply_text({"replies": [ChatMessage.from_assistant("Answer: Bale")]}), first_reply_text({})
    ('Answer: Bale', '')
    """
    replies = (result or {}).get("replies") or []
    first = replies[0] if replies else None
    return (getattr(first, "text", None) or "") if first is not None else ""


def degradation(stage: str, reason: str, **details: Any) -> dict[str, Any]:
    """One entry of `trace["degradations"]`: what stage gave less than asked, and why (the reason and an `error`
    detail each squashed to one redacted line).

    >>> entry = degradation("gate", "support scorer failed: " + "x" * 1000 + "\\n  at line 3", error="a\\nb")
    >>> len(entry["reason"]) <= 300, "\\n" in entry["reason"], entry["error"]
    (True, False, 'a b')
    """
    if isinstance(details.get("error"), str):
        details["error"] = squash(details["error"])
    return {"stage": stage, "reason": squash(str(reason)), **details}


# ---------------------------------------------------------------- injected components
def warm_up_all(*components: Any) -> None:
    """Call warm_up on every injected component that has one."""
    for comp in components:
        if comp is not None and hasattr(comp, "warm_up"):
            comp.warm_up()


def _closable(components: tuple[Any, ...]) -> list[Any]:
    """The components that are not None, each once (one generator is often injected in several roles)."""
    seen: dict[int, Any] = {}
    for comp in components:
        if comp is not None:
            seen.setdefault(id(comp), comp)
    return list(seen.values())


def close_all(*components: Any) -> None:
    """Call close on every injected component that has one, each once."""
    for comp in _closable(components):
        if hasattr(comp, "close"):
            comp.close()


async def close_all_async(*components: Any) -> None:
    """Async twin of `close_all`: `close_async` where a component has one, else `close`."""
    for comp in _closable(components):
        if hasattr(comp, "close_async"):
            await comp.close_async()
        elif hasattr(comp, "close"):
            comp.close()


class InjectedParts:
    """Mixin: `warm_up`, `close` and `close_async` over the injected components named in `_INJECTED` (the tuple
    the loader also shares identical parts by)."""

    _INJECTED: tuple[str, ...] = ()

    def warm_up(self) -> None:
        """Warm up every injected component (each loads its model once)."""
        warm_up_all(*(getattr(self, name) for name in self._INJECTED))

    def close(self) -> None:
        """Release what the injected components hold; as safe to call again as their `close` (Haystack's are)."""
        close_all(*(getattr(self, name) for name in self._INJECTED))

    async def close_async(self) -> None:
        """Async twin of `close`: an injected component's `close_async` where it has one."""
        await close_all_async(*(getattr(self, name) for name in self._INJECTED))


def accepts(comp: Any, parameter: str) -> bool:
    """Whether the class's `run` (unwrapped) takes a named keyword `parameter`, even when the instance's `run` is
    wrapped with `(*args, **kwargs)`.

    >>> class Gen:
    ...     def run(self, messages, generation_kwargs=None): ...
    >>> gen = Gen()
    >>> gen.run = lambda *args, **kwargs: None     # an instance-level wrapper, as usage counters do
    >>> accepts(gen, "generation_kwargs"), accepts(gen, "top_k")
    (True, False)
    """
    method = getattr(type(comp), "run", None)
    target = method if callable(method) else getattr(comp, "run", None)
    try:
        params = inspect.signature(inspect.unwrap(target)).parameters
    except (TypeError, ValueError):
        return False
    return parameter in params


async def run_async_or_thread(comp: Any, **kwargs: Any) -> dict[str, Any]:
    """Await the component's run_async when it has one, else run `run` in a worker thread."""
    run_async = getattr(comp, "run_async", None)
    if run_async is not None and inspect.iscoroutinefunction(run_async):
        return await run_async(**kwargs)
    return await asyncio.to_thread(comp.run, **kwargs)


# ---------------------------------------------------------------- embeddings
def embed_texts(text_embedder: Any, texts: list[str]) -> np.ndarray:
    """Embed texts one by one with a Haystack text embedder (n × d matrix)."""
    return as_matrix([text_embedder.run(text=t)["embedding"] for t in texts])


async def embed_texts_async(text_embedder: Any, texts: list[str]) -> np.ndarray:
    """Async twin of `embed_texts`: the texts are embedded concurrently."""
    results = await asyncio.gather(*(run_async_or_thread(text_embedder, text=t) for t in texts))
    return as_matrix([r["embedding"] for r in results])


def missing_embeddings(documents: list[Document]) -> list[int]:
    """Indices of documents without an embedding."""
    return [i for i, d in enumerate(documents) if d.embedding is None]


def merge_embedded(documents: list[Document], idx: list[int], embedded: list[Document]) -> list[Document]:
    """Documents with the embeddings of `embedded` copied onto positions `idx` (inputs untouched)."""
    out = list(documents)
    for i, doc in zip(idx, embedded, strict=True):
        out[i] = replace(documents[i], embedding=doc.embedding)
    return out


def ensure_embeddings(documents: list[Document], document_embedder: Any | None) -> list[Document]:
    """Embed the documents that lack an embedding through the injected document embedder."""
    idx = missing_embeddings(documents)
    if not idx or document_embedder is None:
        return documents
    embedded = document_embedder.run(documents=[documents[i] for i in idx])["documents"]
    return merge_embedded(documents, idx, embedded)


async def ensure_embeddings_async(documents: list[Document], document_embedder: Any | None) -> list[Document]:
    """Async twin of `ensure_embeddings`."""
    idx = missing_embeddings(documents)
    if not idx or document_embedder is None:
        return documents
    result = await run_async_or_thread(document_embedder, documents=[documents[i] for i in idx])
    return merge_embedded(documents, idx, result["documents"])


def split_by_embedding(documents: list[Document], component: str) -> tuple[list[Document], list[Document]]:
    """(usable, skipped): skipped documents (each warned) lack an embedding or have a NaN/inf/zero/wrong-size one."""
    mask = valid_embedding_mask([d.embedding for d in documents])
    usable = [d for d, ok in zip(documents, mask, strict=True) if ok]
    skipped = [d for d, ok in zip(documents, mask, strict=True) if not ok]
    for doc in skipped:
        logger.warning(
            "{component}: skipping document {doc_id}: its embedding is missing, not finite, all zeros "
            "or of another dimension than the other documents",
            component=component,
            doc_id=doc.id,
        )
    return usable, skipped


def with_meta(doc: Document, **meta: Any) -> Document:
    """A copy of `doc` with extra meta keys (the input document is not changed)."""
    return replace(doc, meta={**doc.meta, **meta})
