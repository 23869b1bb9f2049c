"""The reader's own support score, log P(a | q, E) length-normalised over a's tokens (`docs/support.md`):
pure `math`, the `backends` that read it (llama.cpp, transformers, a vLLM-style server) and the
`ReaderSupportScorer` component (exported lazily; importing this package imports no model library)."""

from __future__ import annotations

from typing import Any

__all__ = ["ReaderSupportScorer"]


def __getattr__(name: str) -> Any:
    if name == "ReaderSupportScorer":
        from haystack_cfrag.support.scorer import ReaderSupportScorer  # noqa: PLC0415

        return ReaderSupportScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
