"""CounterfactualQueryExpander: nearby questions with different answers (paper 4.1.1)."""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.cfrag.counterfactual_selection import check_selection, output, select_counterfactuals
from haystack_cfrag.cfrag.math.replies import parse_counterfactual_reply, parse_question_lines
from haystack_cfrag.cfrag.prompts import (
    COUNTERFACTUAL_FIELDS,
    COUNTERFACTUAL_LINES_PROMPT,
    COUNTERFACTUAL_PROMPT,
    check_template,
)
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import (
    DEFAULT_MAX_QUERY_CHARS,
    InjectedParts,
    degradation,
    embed_texts,
    embed_texts_async,
    prepare_query,
)
from haystack_cfrag.common.protocols import ChatGenerator, TextEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import (
    check_bool,
    check_choice,
    check_optional_int,
    check_optional_seconds,
)

PROMPT_STYLES = ("json", "lines")

_LLM_CALL = LLMCall(stage="counterfactuals", component="CounterfactualQueryExpander")

logger = logging.getLogger(__name__)


@component
class CounterfactualQueryExpander(AsksChatGenerator, InjectedParts):
    """
    Generates N counterfactual questions: on the same topic as the query, with a different answer.

    One chat call asks for 2N candidates; those on topic (cosine > θ_sim, bag-of-words without a text embedder),
    not paraphrases and with another expected answer are kept, the N of highest Info(q, q') = α(1 − sim) +
    β·Div_ans + γ·sim_domain. An unusable reply or a timeout degrades to fewer; N = 0 makes no call.

    Outputs `queries` (the original first), `counterfactuals` (text, type, answer_hint, similarity, info) and
    `degradations`.

    ### Usage example
    ```python
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag import CounterfactualQueryExpander

    reply = ('{"original_answer_hint": "Christian Bale", "counterfactuals": ['
             '{"question": "Who played the villain in The Dark Knight?", "type": "role", '
             '"answer_hint": "Heath Ledger"}]}')
    expander = CounterfactualQueryExpander(chat_generator=MockChatGenerator(responses=reply),
                                           n_counterfactuals=1, similarity_threshold=0.2)
    out = expander.run(query="Who is the lead actor in The Dark Knight?")
    print(out["queries"])  # the original, then the villain question
    ```
    """

    COMPONENT = "CounterfactualQueryExpander"
    FAILURE = "{component}: the chat generator failed: {error}"
    _INJECTED = ("chat_generator", "text_embedder")

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator,
        text_embedder: TextEmbedder | None = None,
        n_counterfactuals: int = 3,
        similarity_threshold: float = 0.7,
        paraphrase_threshold: float = 0.97,
        n_candidates: int | None = None,
        info_weights: tuple[float, float, float] | list[float] = (1 / 3, 1 / 3, 1 / 3),
        generation_kwargs: dict[str, Any] | None = None,
        raise_on_failure: bool = False,
        timeout_s: float | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        prompt_style: str = "json",
        prompt_template: str | None = None,
        stop_after_lines: bool = False,
    ) -> None:
        """
        :param chat_generator: any Haystack ChatGenerator instance (writes the candidates).
        :param text_embedder: a Haystack text embedder for cosine(q, q'); None = bag-of-words cosine.
        :param n_counterfactuals: N, counterfactuals kept (0–10; 0 = ablation "w/o counterfactual").
        :param similarity_threshold: θ_sim in (0, 1]: minimum cosine for a candidate to be on topic.
        :param paraphrase_threshold: cosine at or above which a candidate is a paraphrase, in (0, 1].
        :param n_candidates: candidates asked of the model; default 2N ("json") or N ("lines").
        :param info_weights: (α, β, γ) of Info, non-negative, not all zero.
        :param generation_kwargs: passed to generators that accept them (2N candidates need e.g. 512 tokens).
        :param raise_on_failure: raise when the chat call fails instead of degrading to no counterfactuals.
        :param timeout_s: seconds the chat call may take before it is abandoned (None = no limit).
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param prompt_style: "json" (the paper's prompt, with types and hints) or "lines" (one short question per
            line, no hints: a third of the tokens).
        :param prompt_template: replaces the built-in prompt of `prompt_style` ({query}, {n_candidates}); the
            reply is still read as `prompt_style` says.
        :param stop_after_lines: "lines" only: stop the reply after the candidates asked for (`line_stops`;
            a generator that takes `stop`).
        """
        check_choice("prompt_style", prompt_style, PROMPT_STYLES)
        check_bool("stop_after_lines", stop_after_lines)
        if stop_after_lines and prompt_style != "lines":
            raise ValueError("'stop_after_lines' needs prompt_style 'lines' (a JSON reply has no numbered lines).")
        check_template(prompt_template, COUNTERFACTUAL_FIELDS, component="CounterfactualQueryExpander")
        check_optional_int("n_candidates", n_candidates, max(1, n_counterfactuals), 50)
        weights = check_selection(n_counterfactuals, similarity_threshold, paraphrase_threshold, info_weights)
        check_optional_seconds("timeout_s", timeout_s)
        check_optional_int("max_query_chars", max_query_chars, 1)
        self.chat_generator = chat_generator
        self.text_embedder = text_embedder
        self.n_counterfactuals = n_counterfactuals
        self.similarity_threshold = similarity_threshold
        self.paraphrase_threshold = paraphrase_threshold
        self.n_candidates = n_candidates
        self.info_weights = weights
        self.generation_kwargs = generation_kwargs
        self.raise_on_failure = raise_on_failure
        self.timeout_s = timeout_s
        self.max_query_chars = max_query_chars
        self.prompt_style = prompt_style
        self.prompt_template = prompt_template
        self.stop_after_lines = stop_after_lines


    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected components."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               text_embedder=serialize_component(self.text_embedder),
                               n_counterfactuals=self.n_counterfactuals,
                               similarity_threshold=self.similarity_threshold,
                               paraphrase_threshold=self.paraphrase_threshold, n_candidates=self.n_candidates,
                               info_weights=list(self.info_weights), generation_kwargs=self.generation_kwargs,
                               raise_on_failure=self.raise_on_failure, timeout_s=self.timeout_s,
                               max_query_chars=self.max_query_chars, prompt_style=self.prompt_style,
                               prompt_template=self.prompt_template, stop_after_lines=self.stop_after_lines)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CounterfactualQueryExpander:
        """Deserialise, including the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(queries=list[str], counterfactuals=list[dict[str, Any]],
                            degradations=list[dict[str, Any]])
    def run(self, query: str, n_counterfactuals: int | None = None) -> dict[str, Any]:
        """
        :param query: the user's question.
        :param n_counterfactuals: overrides N for this call.
        :returns: `queries` (original first), `counterfactuals` and `degradations`.
        """
        query, n = self._n(query, n_counterfactuals)
        if n == 0:
            return output(query, [], [])
        prompt, generation = self._request(query, n)
        text, exc = self.ask(prompt, _LLM_CALL, "counterfactuals", generation_kwargs=generation)
        if exc is not None:  # a failing model call degrades, see class doc
            return self._failed(query, exc)
        hint, candidates = self._parse(text)
        texts = [query] + [c["question"] for c in candidates]
        emb = embed_texts(self.text_embedder, texts) if self.text_embedder and candidates else None
        return self._select(query, hint, candidates, emb, n)

    @component.output_types(queries=list[str], counterfactuals=list[dict[str, Any]],
                            degradations=list[dict[str, Any]])
    async def run_async(self, query: str, n_counterfactuals: int | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        query, n = self._n(query, n_counterfactuals)
        if n == 0:
            return output(query, [], [])
        prompt, generation = self._request(query, n)
        text, exc = await self.ask_async(prompt, _LLM_CALL, "counterfactuals", generation_kwargs=generation)
        if exc is not None:
            return self._failed(query, exc)
        hint, candidates = self._parse(text)
        texts = [query] + [c["question"] for c in candidates]
        emb = await embed_texts_async(self.text_embedder, texts) if self.text_embedder and candidates else None
        return self._select(query, hint, candidates, emb, n)

    # ------------------------------------------------------------------ steps
    def _n(self, query: str, override: int | None) -> tuple[str, int]:
        query = prepare_query(query, "CounterfactualQueryExpander", self.max_query_chars)
        n = self.n_counterfactuals if override is None else override
        ranges.check("n_counterfactuals", n)
        return query, n

    def _request(self, query: str, n: int) -> tuple[str, dict[str, Any]]:
        """The prompt for n counterfactuals, and its generation arguments (the line stops with `stop_after_lines`)."""
        lines = self.prompt_style == "lines"
        n_candidates = self.n_candidates or (n if lines else 2 * n)
        template = self.prompt_template or (COUNTERFACTUAL_LINES_PROMPT if lines else COUNTERFACTUAL_PROMPT)
        generation = dict(self.generation_kwargs or {})
        if self.stop_after_lines:
            generation["stop"] = [*generation.get("stop", []), *line_stops(n_candidates)]
        return template.format(query=query, n_candidates=n_candidates), generation

    def _parse(self, text: str) -> tuple[str, list[dict[str, str]]]:
        if self.prompt_style == "lines":
            return "", parse_question_lines(text)
        return parse_counterfactual_reply(text)

    def _failed(self, query: str, exc: Exception) -> dict[str, Any]:
        logger.warning(
            "CounterfactualQueryExpander: the chat generator failed ({error}); continuing without counterfactuals",
            error=repr(exc),
        )
        return output(query, [], [degradation("counterfactuals", "generator failed", error=repr(exc))])

    def _select(
        self, query: str, hint: str, candidates: list[dict[str, str]], embeddings: np.ndarray | None, n: int
    ) -> dict[str, Any]:
        return select_counterfactuals(
            query, hint, candidates, embeddings, n, similarity_threshold=self.similarity_threshold,
            paraphrase_threshold=self.paraphrase_threshold, info_weights=self.info_weights, component=self.COMPONENT,
        )


def line_stops(n: int) -> list[str]:
    """Stop sequences that end a list after its n-th line: the next number, and for one line its end.

    >>> line_stops(3)
    ['\\n4.', '\\n4)']
    >>> line_stops(1)
    ['\\n2.', '\\n2)', '\\n']
    """
    return [f"\n{n + 1}.", f"\n{n + 1})"] + (["\n"] if n == 1 else [])
