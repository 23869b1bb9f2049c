"""The reader's own support score, shared by every causal-RAG family of the package.

support(a | q, E) = log P(a | q, E), length-normalised over a's tokens, read from the
generator's token log-probabilities for a *given* answer (`docs/support.md`):

- `math`: pure equations (token alignment, normalisation, counterfactual margin, PMI,
  option reading over orders, calibration);
- `backends`: reading log P(answer | prompt) from llama-cpp-python in process, transformers,
  or an OpenAI-compatible server that returns prompt log-probabilities (vLLM): `backend_for` picks
  one, and re-exports what the backends are made of: `backend_common` (the prompt type, the
  result, the protocol, the errors), `llama_cpp_backend`, `transformers_backend`, `openai_backend`;
- `scorer`: the `ReaderSupportScorer` component.

Importing this package imports no model library; the component is exported lazily.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ReaderSupportScorer"]


def __getattr__(name: str) -> Any:
    if name == "ReaderSupportScorer":
        from haystack_cfrag.support.scorer import ReaderSupportScorer  # noqa: PLC0415

        return ReaderSupportScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
