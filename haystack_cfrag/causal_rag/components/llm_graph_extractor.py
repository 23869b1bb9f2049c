"""LLMGraphExtractor: CausalRAG's extraction prompt behind the extractor socket, its reply schema JSON."""

from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from haystack_cfrag.causal_rag.math.extraction import Extraction, parse_extraction, result
from haystack_cfrag.causal_rag.math.names import MAX_NAME_CHARS, MAX_RELATION_CHARS
from haystack_cfrag.causal_rag.prompts import EXTRACTION_FIELDS, EXTRACTION_PROMPT, check_template
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import InjectedParts
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import deserialize_component, serialize_component
from haystack_cfrag.common.tracing import LLMCall, current_span, model_name, token_counts
from haystack_cfrag.common.validation import check_bool, check_int, check_optional_seconds

COMPONENT = "LLMGraphExtractor"
NAME_CHARS = 48
"""Characters a node name may have in the constrained reply (names.MAX_NAME_CHARS is the hard limit)."""
TYPE_CHARS = 16
RELATION_CHARS = 32
SPACE_TOKENS = 2
"""Whitespace tokens counted per JSON separator (indentation that small models write in JSON mode)."""


def extraction_schema(max_triples: int) -> dict[str, Any]:
    """A reply's JSON schema: at most `max_triples` {"head", "head_type", "relation", "tail", "tail_type"}.

    >>> extraction_schema(3)["maxItems"]
    3
    """
    text = {"type": "string", "minLength": 1}
    item = {
        "type": "object",
        "additionalProperties": False,
        "required": ["head", "head_type", "relation", "tail", "tail_type"],
        "properties": {
            "head": {**text, "maxLength": NAME_CHARS},
            "head_type": {**text, "maxLength": TYPE_CHARS},
            "relation": {**text, "maxLength": min(MAX_RELATION_CHARS, RELATION_CHARS)},
            "tail": {**text, "maxLength": NAME_CHARS},
            "tail_type": {**text, "maxLength": TYPE_CHARS},
        },
    }
    return {"type": "array", "maxItems": max_triples, "items": item}


def max_reply_tokens(schema: dict[str, Any]) -> int:
    """A token limit above the longest reply the schema allows (a token per character, plus separators), so no
    reply is cut mid-JSON (one that still is gets salvaged).

    >>> max_reply_tokens(extraction_schema(8))
    2030
    """
    item = schema["items"]
    per_item = 2 + 2 * SPACE_TOKENS  # braces
    for key, prop in item["properties"].items():
        per_item += (
            (len(key) + 3) + (prop["maxLength"] + 2) + 1 + 2 * SPACE_TOKENS
        )  # "key": "value", + spaces
    return 2 + 2 * SPACE_TOKENS + schema["maxItems"] * (per_item + 1 + SPACE_TOKENS)


@component
class LLMGraphExtractor(AsksChatGenerator, InjectedParts):
    """
    CausalRAG's extraction (the official prompt) as a graph extractor whose reply always parses: JSON constrained
    by `extraction_schema(max_triples)` (a llama.cpp grammar, or a server's `json_schema`), with a token limit of
    `max_reply_tokens(schema)`. `chat_generators`: a pool of servers used round-robin, `max_workers` at a time.

    ### Usage example
    ```python
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.causal_rag.components.llm_graph_extractor import LLMGraphExtractor

    reply = ('[{"head": "Rain", "head_type": "Event", "relation": "CAUSES", "tail": "Flood", '
             '"tail_type": "Event"}]')
    extractor = LLMGraphExtractor(chat_generator=MockChatGenerator(responses=reply))
    out = extractor.run(texts=["Rain caused a flood."])
    print(out["extractions"][0].triples[0].tail)   # Flood
    ```
    """

    _INJECTED = ("chat_generator",)
    COMPONENT = COMPONENT
    FAILURE = "{component}: the extraction call failed: {error}"
    raise_on_failure = True  # the builder skips a failed batch's passages, with a warning

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator,
        chat_generators: list[ChatGenerator] | None = None,
        max_triples: int = 8,
        prompt_template: str | None = None,
        constrained: bool = True,
        max_workers: int = 1,
        timeout_s: float | None = None,
    ) -> None:
        """
        :param chat_generator: the extraction model (any Haystack ChatGenerator).
        :param chat_generators: more generators of the same model (a pool of servers), used round-robin
            with it.
        :param max_triples: triples one reply may hold (the schema's bound), in [1, 50].
        :param prompt_template: replaces the extraction prompt ({text} placeholder).
        :param constrained: ask for schema-constrained JSON (False: the free-text reply, parsed as before).
        :param max_workers: calls in flight at once (servers only), in [1, 64].
        :param timeout_s: the time limit of one extraction call in seconds (None: none).
        """
        if chat_generator is None:
            raise ValueError(f"{COMPONENT}: 'chat_generator' is required.")
        check_int("max_triples", max_triples, 1, 50)
        check_template(prompt_template, EXTRACTION_FIELDS, component=COMPONENT)
        check_bool("constrained", constrained, component=COMPONENT)
        check_int("max_workers", max_workers, 1, 64)
        check_optional_seconds("timeout_s", timeout_s)
        self.chat_generator = chat_generator
        self.chat_generators = list(chat_generators or [])
        self.max_triples = max_triples
        self.prompt_template = prompt_template
        self.constrained = constrained
        self.max_workers = max_workers
        self.timeout_s = timeout_s
        self._next = itertools.count()
        self._lock = threading.Lock()

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generators."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               chat_generators=[serialize_component(g) for g in self.chat_generators],
                               max_triples=self.max_triples, prompt_template=self.prompt_template,
                               constrained=self.constrained, max_workers=self.max_workers,
                               timeout_s=self.timeout_s)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMGraphExtractor:
        """Deserialise, including the injected generators."""
        params = dict(data.get("init_parameters", {}))
        params["chat_generator"] = deserialize_component(params.get("chat_generator"))
        params["chat_generators"] = [deserialize_component(g) for g in params.get("chat_generators") or []]
        return default_from_dict(cls, {**data, "init_parameters": params})

    def warm_up(self) -> None:
        """Warm up every generator of the pool."""
        InjectedParts.warm_up(self)
        for gen in self.chat_generators:
            if hasattr(gen, "warm_up"):
                gen.warm_up()

    def fingerprint(self) -> str:
        """Prompt, schema bound, constrained or not, and the model: part of the cache key."""
        return json.dumps(
            [
                self.prompt_template or EXTRACTION_PROMPT,
                self.max_triples,
                self.constrained,
                model_name(self.chat_generator) or type(self.chat_generator).__name__,
            ],
            default=str,
        )

    def request_kwargs(self) -> dict[str, Any]:
        """The generator's kwargs: the JSON schema in the form its backend reads, and the safe token limit."""
        if not self.constrained:
            return {}
        schema = extraction_schema(self.max_triples)
        names = {cls.__name__ for cls in type(self.chat_generator).__mro__}
        if "LlamaCppChatGenerator" in names:
            fmt: dict[str, Any] = {"type": "json_object", "schema": schema}
        else:  # OpenAI-compatible servers (vLLM, llama.cpp's server) and others that follow OpenAI's API
            fmt = {
                "type": "json_schema",
                "json_schema": {"name": "triples", "schema": schema, "strict": True},
            }
        return {"response_format": fmt, "max_tokens": max_reply_tokens(schema)}

    @component.output_types(extractions=list[Extraction], meta=list[dict[str, Any]])
    def run(self, texts: list[str]) -> dict[str, Any]:
        """
        :param texts: chunks of passages (one call each).
        :returns: `extractions` and `meta` ({"prompt_tokens", "completion_tokens", "parsed"}), one per text.
        :raises RuntimeError: when a call fails (the builder then skips the batch's passages, with a warning).
        """
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"{COMPONENT}: 'texts' must be a list of strings.")
        pool = [self.chat_generator, *self.chat_generators]
        workers = min(self.max_workers, len(texts)) if len(texts) > 1 else 1
        call = LLMCall(stage="extract", component=COMPONENT, parent_span=current_span())
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as executor:
                done = list(executor.map(lambda t: self._one(t, pool, call), texts))
        else:
            done = [self._one(t, pool, call) for t in texts]
        return result([d[0] for d in done], [d[1] for d in done])

    def _one(self, text: str, pool: list[Any], call: LLMCall) -> tuple[Extraction, dict[str, Any]]:
        with self._lock:
            generator = pool[next(self._next) % len(pool)]
        prompt = (self.prompt_template or EXTRACTION_PROMPT).format(text=text)
        out, _ = self.ask_result(prompt, call, "extraction", generator=generator,
                                 generation_kwargs=self.request_kwargs() or None, exclusive=self.max_workers == 1)
        replies = (out or {}).get("replies") or []
        first = replies[0] if replies else None
        reply_text = getattr(first, "text", None)
        tokens_in, tokens_out = token_counts(
            [getattr(first, "meta", None) or {}] if first is not None else []
        )
        extraction = parse_extraction(reply_text if isinstance(reply_text, str) else None,
                                      max_triples=min(self.max_triples, 500))
        return extraction, {
            "prompt_tokens": tokens_in or 0,
            "completion_tokens": tokens_out or 0,
            "parsed": extraction.parsed,
        }


assert NAME_CHARS <= MAX_NAME_CHARS  # noqa: S101  (a schema-valid name is never refused by the graph)
