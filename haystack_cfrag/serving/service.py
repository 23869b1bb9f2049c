"""The CF-RAG service behind the Hayhooks wrappers: configuration, validation, answers.

One `CFRAGService` per process (`get_service()`), configured from the environment (`ServingConfig.from_env`), holds
a `Runtime` (models loaded once, shared by every pipeline). A pipeline's request parameters are its family's
(`registry`): run-time inputs never rebuild it, a build-time one (CER's θ) builds once per value. Requests are
checked by `serving.requests`; each answer reports its own request's LLM calls and tokens (`usage`). In-process
models are not thread-safe: requests then run one at a time; a mock or an OpenAI-compatible server, concurrently.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from haystack import logging

from haystack_cfrag import models
from haystack_cfrag.cascade.math import GATE_KEY
from haystack_cfrag.common.errors import one_line
from haystack_cfrag.common.redaction import redact
from haystack_cfrag.family import Reading
from haystack_cfrag.registry import Resolved, resolve, served_pipelines
from haystack_cfrag.serving.requests import RequestError, check_run_request

logger = logging.getLogger(__name__)

PIPELINES = served_pipelines()  # the registry's served pipelines

__all__ = ["PIPELINES", "CFRAGService", "PipelineFailedError", "RequestError", "ServingConfig", "get_service"]


class PipelineFailedError(RuntimeError):
    """The pipeline raised while answering: HTTP 503 with the reason."""


def _env_float(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}.") from exc


@dataclass(frozen=True)
class ServingConfig:
    """What the served process runs; every field has an environment variable (see `from_env`)."""

    llm: str = models.EMBEDDED_LLM
    embedder: str = models.EMBEDDED_EMBEDDER
    scorer: str | None = None
    store: str | None = None  # a store spec (haystack_cfrag.stores.specs); None: the demo corpus
    generator: str = "model"  # "model" (the llm spec) or "mock" (MockChatGenerator)
    mock_failure_rate: float = 0.0
    mock_delay_s: float = 0.0
    mock_seed: int = 0
    max_tokens: int = 256
    device: str | None = None
    store_index: str = "cfrag"
    pipelines: tuple[str, ...] = ()  # the wrappers': what they need of the store is built before the reader loads

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> ServingConfig:
        """CFRAG_LLM, CFRAG_EMBEDDER, CFRAG_SCORER, CFRAG_STORE, CFRAG_GENERATOR (model|mock),
        CFRAG_MOCK_FAILURE_RATE, CFRAG_MOCK_DELAY_S, CFRAG_MOCK_SEED, CFRAG_MAX_TOKENS, CFRAG_DEVICE,
        CFRAG_STORE_INDEX, CFRAG_PIPELINES (comma-separated served names; unknown ones are ignored)."""
        env = dict(os.environ if env is None else env)
        generator = env.get("CFRAG_GENERATOR", "model").strip().lower() or "model"
        if generator not in ("model", "mock"):
            raise ValueError(f"CFRAG_GENERATOR must be 'model' or 'mock', got {generator!r}.")
        return cls(
            llm=env.get("CFRAG_LLM") or models.EMBEDDED_LLM,
            embedder=env.get("CFRAG_EMBEDDER") or models.EMBEDDED_EMBEDDER,
            scorer=env.get("CFRAG_SCORER") or None,
            store=env.get("CFRAG_STORE") or None,
            generator=generator,
            mock_failure_rate=_env_float(env, "CFRAG_MOCK_FAILURE_RATE", 0.0),
            mock_delay_s=_env_float(env, "CFRAG_MOCK_DELAY_S", 0.0),
            mock_seed=int(_env_float(env, "CFRAG_MOCK_SEED", 0)),
            max_tokens=int(_env_float(env, "CFRAG_MAX_TOKENS", 256)),
            device=env.get("CFRAG_DEVICE") or None,
            store_index=env.get("CFRAG_STORE_INDEX") or "cfrag",
            pipelines=tuple(n for n in (env.get("CFRAG_PIPELINES") or "").split(",") if n in served_pipelines()),
        )

    def __repr__(self) -> str:
        """The fields, the store spec's password hidden (`common.redaction`)."""
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return redact(f"ServingConfig({fields})")

    def mock_generator(self) -> Any:
        """The MockChatGenerator this configuration asks for."""
        from haystack_cfrag.testing import MockChatGenerator  # noqa: PLC0415

        return MockChatGenerator(
            failure_rate=self.mock_failure_rate, delay_s=self.mock_delay_s, seed=self.mock_seed
        )


# ---------------------------------------------------------------- the service
class CFRAGService:
    """Models, store and built pipelines of one served process."""

    def __init__(
        self,
        config: ServingConfig,
        *,
        store: Any | None = None,
        chat_generator: Any | None = None,
        text_embedder: Any | None = None,
        allowed_modules: list[str] | None = None,
    ) -> None:
        """
        :param config: models, store and generator (see `ServingConfig.from_env`).
        :param store, chat_generator, text_embedder: ready instances instead of the config's (tests).
        :param allowed_modules: extra trusted modules for the pipeline files (your own components).
        """
        from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415
        from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

        from haystack_cfrag.runtime import Runtime  # noqa: PLC0415
        from haystack_cfrag.stores import kind_of, open_query_store, parse_store_spec  # noqa: PLC0415

        self.config = config
        start = time.perf_counter()
        # parsed once, here (a graph `cfrag index --graph` stored beside it is opened): the StoreSpec travels below
        store_spec = parse_store_spec(config.store) if store is None and config.store else None
        keep_graph = store is None and not config.store  # the demo's: its graph is kept beside it, in the cache
        if keep_graph:
            from haystack_cfrag.stores.demo import demo_spec  # noqa: PLC0415

            store_spec = parse_store_spec(demo_spec(config.embedder))
        if store is None:
            # any spec `cfrag ask` reads (haystack_cfrag.stores); FAISS, pgvector, Qdrant are used as they are
            store = open_query_store(store_spec if config.store else None, config.embedder, device=config.device)
            if (kind := kind_of(store)) is not None and kind.native:
                # one named in-memory index: YAML pipelines deployed in the same process
                # (`cfrag serve --yaml`) read the same documents through `index: <store_index>`
                loaded, store = store, InMemoryDocumentStore(index=config.store_index,
                                                             embedding_similarity_function="cosine")
                store.write_documents(loaded.filter_documents(), policy=DuplicatePolicy.OVERWRITE)
        generator = chat_generator or (config.mock_generator() if config.generator == "mock" else None)
        self.runtime = Runtime(
            store=store,
            llm=config.llm,
            embedder=config.embedder,
            scorer=config.scorer,
            device=config.device,
            max_tokens=config.max_tokens,
            chat_generator=generator,
            text_embedder=text_embedder,
            allowed_modules=allowed_modules,
            store_spec=store_spec,
            keep_graph=keep_graph,
        )
        self.runtime.prepare_stores(list(config.pipelines))  # the graph before the reader: their peaks never meet
        self.runtime.warm_up()
        logger.info(
            "CF-RAG service ready: {n} documents, generator {gen}, in {s:.1f} s",
            n=store.count_documents(),
            gen="mock" if generator is not None else config.llm,
            s=time.perf_counter() - start,
        )

    def pipeline(self, name: str) -> Any:
        """The warmed pipeline of a shipped pipeline name (the one `answer` runs), built on first use."""
        if name not in served_pipelines():  # the registry's now: a family registered later is served too
            raise RequestError(f"Unknown pipeline '{name}' (served: {', '.join(served_pipelines())}).")
        return self.runtime.built(name)

    def answer(self, name: str, question: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Answer one question, checked here (`requests.check_run_request`: a Python caller's door);
        RequestError for bad input, PipelineFailedError when the pipeline raises."""
        if name not in served_pipelines():  # the registry's now: a family registered later is served too
            raise RequestError(f"Unknown pipeline '{name}' (served: {', '.join(served_pipelines())}).")
        return self.answer_checked(name, *check_run_request({**(params or {}), "question": question},
                                                            resolve(name).request_table))

    def answer_checked(self, name: str, question: str, checked: dict[str, Any]) -> dict[str, Any]:
        """`answer` for a request its route checked (the wrapper: `requests.check_*`), through `Runtime.ask` untimed
        (requests against a server or the mock run concurrently)."""
        pipeline = resolve(name)
        try:
            result = self.runtime.ask(pipeline, question, checked, timed=False)
        except Exception as exc:  # a model or component failure the components did not absorb
            logger.warning("CF-RAG service: pipeline {pipeline} failed: {error}", pipeline=name, error=one_line(exc))
            raise PipelineFailedError(f"The pipeline '{name}' failed: {one_line(exc)}") from exc
        reading = pipeline.family.read(result.trace, result.outputs, result.answer, pipeline.values(checked))
        if reading.failure is not None:
            raise PipelineFailedError(f"The pipeline '{name}' failed: {reading.failure}")
        response = build_response(pipeline, question, result.answer, result.trace, result.documents, reading,
                                  result.seconds, gate=result.gate)
        response["usage"] = _usage_report(result.llm)
        return response


def _usage_report(usage: dict[str, Any]) -> dict[str, int] | None:
    """OpenAI-style usage of one request, or None when no generator reported tokens."""
    if not usage["reported"]:
        return None
    total = usage["prompt_tokens"] + usage["completion_tokens"]
    report = {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
              "total_tokens": total, "llm_calls": usage["calls"]}
    if usage.get("scorings"):  # the reader's support scorings: forward passes, not in the token counts above
        report["support_scorings"] = usage["scorings"]
    return report


def build_response(
    pipeline: Resolved,
    question: str,
    answer: str,
    trace: dict[str, Any] | None,
    documents: list[dict[str, Any]],
    reading: Reading,
    seconds: float,
    gate: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON answer: the answer, ranked alternatives, the trace, and whether it is degraded (the family's reading);
    a cascade's gate reading too (`escalated`, `because`, its signals): whether the method ran and why."""
    warnings = list(reading.warnings)
    if gate is not None:
        warnings += [f"{d.get('stage', 'gate')}: {d.get('reason', 'degraded')}" for d in gate.get("degradations") or []]
    return {
        "pipeline": pipeline.name,
        "question": question,
        "answer": answer,
        "degraded": bool(warnings),
        "warnings": warnings,
        "alternatives": list(reading.alternatives),
        "documents": documents,
        "seconds": round(seconds, 3),
        "trace": trace,
        **({GATE_KEY: gate} if gate is not None else {}),
    }


_SERVICE: CFRAGService | None = None
_SERVICE_LOCK = threading.Lock()


def get_service() -> CFRAGService:
    """The process-wide service (built from the environment on first call; wrappers share it)."""
    global _SERVICE  # noqa: PLW0603
    with _SERVICE_LOCK:
        if _SERVICE is None:
            _SERVICE = CFRAGService(ServingConfig.from_env())
        return _SERVICE


def reset_service() -> None:
    """Forget the process-wide service (tests)."""
    global _SERVICE  # noqa: PLW0603
    with _SERVICE_LOCK:
        _SERVICE = None
