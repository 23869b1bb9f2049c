"""Haystack components for model specs (`haystack_cfrag.models` resolves them): chat generators, embedders and
cross-encoders.

>>> from haystack_cfrag.adapters import factories
>>> type(factories.chat_generator("openai:http://127.0.0.1:8000/v1#m")).__name__
'OpenAIChatGenerator'
"""

from __future__ import annotations

import os
from typing import Any

from haystack_cfrag.models import EMBEDDED_EMBEDDER, EMBEDDED_LLM, resolve_model


def text_embedder(spec: str = EMBEDDED_EMBEDDER, device: str | None = None) -> Any:
    """A sentence-transformers text embedder for `spec` (normalised embeddings)."""
    from haystack_integrations.components.embedders.sentence_transformers import (  # noqa: PLC0415
        SentenceTransformersTextEmbedder,
    )

    return SentenceTransformersTextEmbedder(model=resolve_model(spec), normalize_embeddings=True,
                                            progress_bar=False, **_device(device))


def document_embedder(spec: str = EMBEDDED_EMBEDDER, device: str | None = None, progress_bar: bool = False) -> Any:
    """A sentence-transformers document embedder for `spec` (normalised embeddings)."""
    from haystack_integrations.components.embedders.sentence_transformers import (  # noqa: PLC0415
        SentenceTransformersDocumentEmbedder,
    )

    return SentenceTransformersDocumentEmbedder(model=resolve_model(spec), normalize_embeddings=True,
                                                progress_bar=progress_bar, **_device(device))


def scorer(spec: str, device: str | None = None) -> Any:
    """A cross-encoder ranker giving s(q, e) in [0, 1] (sigmoid-scaled scores)."""
    from haystack_integrations.components.rankers.sentence_transformers import (  # noqa: PLC0415
        SentenceTransformersSimilarityRanker,
    )

    return SentenceTransformersSimilarityRanker(model=resolve_model(spec), scale_score=True, **_device(device))


def chat_generator(
    spec: str = EMBEDDED_LLM,
    *,
    max_tokens: int = 256,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    seed: int = 0,
    logprobs: bool = False,
    device: str | None = None,
    prefix_states: int | None = None,
) -> Any:
    """A Haystack ChatGenerator for `spec`, greedy decoding; `logprobs=True` asks for token log-probabilities
    (slower with llama.cpp). A GGUF is read, not mapped (docs/deployment.md); `prefix_states`: the KV states of
    earlier prompts llama.cpp keeps (None: the generator's default)."""
    if spec.startswith("openai:"):
        from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: PLC0415
        from haystack.utils import Secret  # noqa: PLC0415

        url, _, model = spec[len("openai:") :].partition("#")
        return OpenAIChatGenerator(
            api_base_url=url,
            model=model or "local-model",
            api_key=Secret.from_env_var("CFRAG_LLM_API_KEY") if os.environ.get("CFRAG_LLM_API_KEY") else _no_key(),
            # a busy server queues concurrent drafts: the OpenAI client's 30 s default is too short
            timeout=float(os.environ.get("OPENAI_TIMEOUT", "300")),
            generation_kwargs={"temperature": 0.0, "max_tokens": max_tokens, "seed": seed}
            | ({"logprobs": True} if logprobs else {}),
        )
    if spec.startswith("hf:"):
        return _transformers_generator(spec[3:], max_tokens, device)
    from haystack_cfrag.adapters.llama_cpp_logprobs import LlamaCppLogprobsChatGenerator  # noqa: PLC0415
    from haystack_cfrag.adapters.token_reads import READ_TOKENS  # noqa: PLC0415

    return LlamaCppLogprobsChatGenerator(
        model=resolve_model(spec),
        n_ctx=n_ctx,
        model_kwargs={
            "n_threads": n_threads or max(1, os.cpu_count() or 1),
            "verbose": False,
            "seed": seed,
            "logits_all": logprobs,  # llama.cpp needs it to return token log-probabilities
            # read, not mapped: llama.cpp repacks the Q4_K weights for AVX2 into memory of its own, so a mapped
            # file is held twice (1.06 GB of file pages + 0.8 GB); read, the process holds 1.35 GB in all
            "use_mmap": False,
        }
        | _llama_cpp_offload(device),
        generation_kwargs={"max_tokens": max_tokens, "temperature": 0.0}
        | ({"logprobs": True, "top_logprobs": 1} if logprobs else {}),
        **({} if prefix_states is None else {"prefix_states": prefix_states}),
        read_tokens=READ_TOKENS,  # a cascade's gate then reads the answer from the reply, evaluating nothing
    )


def _no_key() -> Any:
    """A placeholder key for servers that need none, as an env-var Secret (a token Secret cannot serialise)."""
    from haystack.utils import Secret  # noqa: PLC0415

    os.environ.setdefault("CFRAG_LLM_NO_API_KEY", "not-needed")
    return Secret.from_env_var("CFRAG_LLM_NO_API_KEY")


def _transformers_generator(model: str, max_tokens: int, device: str | None) -> Any:
    try:  # Haystack 3: the transformers-haystack integration
        from haystack_integrations.components.generators.transformers import (  # noqa: PLC0415
            TransformersChatGenerator as LocalChatGenerator,
        )
    except ImportError:  # Haystack 2.x ships it in core
        from haystack.components.generators.chat import HuggingFaceLocalChatGenerator as LocalChatGenerator  # noqa: PLC0415
    return LocalChatGenerator(
        model=model,
        task="text-generation",  # named, so that nothing asks the hub for the task
        generation_kwargs={"max_new_tokens": max_tokens, "do_sample": False},
        **_device(device),
    )


def _llama_cpp_offload(device: str | None) -> dict[str, Any]:
    """llama.cpp's offload settings for `--device`: every layer on the named GPU (`split_mode` 0 keeps it on that
    one), none for `cpu`.

    >>> _llama_cpp_offload("cuda:1"), _llama_cpp_offload("cpu"), _llama_cpp_offload(None)
    ({'n_gpu_layers': -1, 'split_mode': 0, 'main_gpu': 1}, {'n_gpu_layers': 0}, {})
    """
    if device is None:
        return {}
    from haystack.utils import ComponentDevice  # noqa: PLC0415

    single = ComponentDevice.from_str(device).to_torch_str()  # validates: 'cuda:1', 'mps', 'cpu'
    if single == "cpu":
        return {"n_gpu_layers": 0}
    return {"n_gpu_layers": -1, "split_mode": 0, "main_gpu": int(single.partition(":")[2] or 0)}


def _device(device: str | None) -> dict[str, Any]:
    if device is None:
        return {}
    from haystack.utils import ComponentDevice  # noqa: PLC0415

    return {"device": ComponentDevice.from_str(device)}
