"""The graph extractor socket (`GraphExtractor`): passage text -> nodes and edges, in the graph's one schema.

An extractor has `run(texts) -> {"extractions": [Extraction], "meta": [dict]}` (one per text; a meta may say
`prompt_tokens`, `completion_tokens`, `rejected`), `fingerprint()` (part of every extraction-cache key) and an
optional `warm_up()`. By name: `spacy` (default, `SpacyGraphExtractor`: parsing only), `llm` (the builder's
chat-generator recipe) and `llm-json` (`LLMGraphExtractor`: the same prompt, JSON-schema constrained)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from haystack_cfrag.causal_rag.math.extraction import Extraction, result  # noqa: F401  (the socket's output)

EXTRACTOR_NAMES = ("llm", "llm-json", "spacy")
"""The extractors chosen by name (`make_extractor`); "llm" is the builder's chat-generator path."""
DEFAULT_EXTRACTOR = "spacy"
PARSE_ONLY = ("spacy",)
"""The extractors that need no LLM."""
SCALE_OUT = ("llm-json", "spacy")
"""The extractors `--engine ray` runs (components; "llm" is the builder's own chat-generator path)."""


@runtime_checkable
class GraphExtractor(Protocol):
    """Passage texts -> one `Extraction` each (see the module doc)."""

    def run(self, texts: list[str]) -> dict[str, Any]:
        """{"extractions": list[Extraction], "meta": list[dict]}, one of each per text, in order."""

    def fingerprint(self) -> str:
        """What decides the output besides the text: part of the extraction cache's key."""


def check_extractor_name(name: Any) -> str:
    """`name` if it is one of EXTRACTOR_NAMES; a one-line ValueError naming them otherwise.

    >>> check_extractor_name("spacy")
    'spacy'
    """
    if name not in EXTRACTOR_NAMES:
        raise ValueError(f"unknown graph extractor {name!r:.40}; choose one of {', '.join(EXTRACTOR_NAMES)}.")
    return name


def make_extractor(name: str, *, chat_generator: Any | None = None, **kwargs: Any) -> Any | None:
    """The extractor called `name`: None for "llm" (the builder's own path), else a component whose LLM
    (for "llm-json", or spaCy's `validate=True`) is `chat_generator`."""
    check_extractor_name(name)
    if name == "llm":
        return None
    if name == "llm-json":
        from haystack_cfrag.causal_rag.components.llm_graph_extractor import LLMGraphExtractor  # noqa: PLC0415

        if chat_generator is None:
            raise ValueError("the 'llm-json' graph extractor needs a chat generator.")
        return LLMGraphExtractor(chat_generator=chat_generator, **kwargs)
    from haystack_cfrag.causal_rag.components.spacy_graph_extractor import SpacyGraphExtractor  # noqa: PLC0415

    validate = kwargs.pop("validate", False)
    return SpacyGraphExtractor(validator=chat_generator if validate else None, **kwargs)


BUILDER_SETTINGS: dict[str, dict[str, Any]] = {"spacy": {"chunk_chars": 20_000, "chunk_overlap": 0}}
"""`CausalGraphBuilder` settings an extractor wants (a parser reads whole passages)."""


__all__ = ["BUILDER_SETTINGS", "DEFAULT_EXTRACTOR", "EXTRACTOR_NAMES", "PARSE_ONLY", "SCALE_OUT",
           "GraphExtractor", "check_extractor_name", "make_extractor", "result"]
