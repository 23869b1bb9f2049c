"""CausalConsistencyChecker: CDF-RAG's causal graph check and fallback generation (paper 002, §2.4) after a reader."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cdf_rag.components._answers import ChecksAnswer, Correction, answer_text
from haystack_cfrag.cdf_rag.math.causal_check import TAU, as_edge, causal_consistency, should_regenerate
from haystack_cfrag.cdf_rag.prompts import REGENERATE_FIELDS, REGENERATE_PROMPT, render_edges
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, degradation, prepare_query
from haystack_cfrag.common.prompting import render_evidence
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import check_bool, check_int, check_range

COMPONENT = "CausalConsistencyChecker"
KEEP, REGENERATE, UNDEFINED = "keep", "regenerate", "undefined"
MAX_EDGES = 200
_OUTPUTS = {"answer": str, "replies": list[ChatMessage], "s_causal": float | None, "decision": str,
            "regenerated": bool, "verdicts": list[dict[str, Any]], "trace": dict[str, Any],
            "degradations": list[dict[str, Any]]}


@component
class CausalConsistencyChecker(ChecksAnswer):
    """
    Checks an answer against retrieved causal edges C → E; below τ, regenerates it once under stricter grounding.

    S_causal = respected / (respected + violated) over the edges the answer speaks to (`math.causal_check.edge_verdict`;
    none: undefined). Below τ, with a `chat_generator`, one regeneration answers from the evidence with the edges
    as constraints. Edges come as dicts, pairs, triples or "C -> E" strings (others counted in `degradations`).
    Outputs `answer`, `replies`, `s_causal`, `decision` ("keep", "regenerate", "undefined"), `regenerated`,
    `verdicts`, `trace`, `degradations`; a failed regeneration keeps the answer and says so.

    ### Usage example
    ```python
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.cdf_rag.components import CausalConsistencyChecker

    checker = CausalConsistencyChecker(
        chat_generator=MockChatGenerator(responses="Answer: Heavy rain caused the flood."))
    out = checker.run(query="Why did the river flood?", answer="The flood caused heavy rain.",
                      causal_edges=[("heavy rain", "flood")])
    print(out["s_causal"], out["decision"], out["answer"])  # 0.0 regenerate Heavy rain caused the flood.
    ```
    """

    COMPONENT = COMPONENT
    CALL = LLMCall(stage="regeneration", component=COMPONENT)
    FIELDS = REGENERATE_FIELDS
    _INJECTED = ("chat_generator",)

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator | None = None,
        tau: float = TAU,
        use_question: bool = True,
        max_edges: int = MAX_EDGES,
        max_evidence_chars: int | None = 2000,
        generation_kwargs: dict[str, Any] | None = None,
        raise_on_failure: bool = False,
        timeout_s: float | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        prompt_template: str | None = None,
    ) -> None:
        """
        :param chat_generator: writes the regeneration (None = check only: the decision is reported, the answer kept).
        :param tau: τ in [0, 1]: regenerate when S_causal < τ.
        :param use_question: read a short answer through a causal question ("What causes E?").
        :param max_edges: edges checked (the first given), in [1, 10000].
        :param max_evidence_chars: each passage is cut to this many characters in the prompt (None = whole).
        :param generation_kwargs: passed to generators that accept them.
        :param raise_on_failure: raise when the regeneration fails instead of keeping the answer.
        :param timeout_s: seconds the regeneration may take before it is abandoned (None = no limit).
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param prompt_template: replaces the regeneration prompt ({query}, {evidence}, {causal_edges}).
        """
        check_range("tau", tau, 0.0, 1.0)
        check_bool("use_question", use_question)
        check_int("max_edges", max_edges, 1, 10000)
        self._keep_settings(chat_generator=chat_generator, max_evidence_chars=max_evidence_chars,
                            generation_kwargs=generation_kwargs, raise_on_failure=raise_on_failure,
                            timeout_s=timeout_s, max_query_chars=max_query_chars, prompt_template=prompt_template)
        self.tau = tau
        self.use_question = use_question
        self.max_edges = max_edges

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generator."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator), tau=self.tau,
                               use_question=self.use_question, max_edges=self.max_edges, **self._settings())

    @component.output_types(**_OUTPUTS)
    def run(
        self,
        query: str,
        causal_edges: list[Any],
        documents: list[Document] | None = None,
        answer: str | None = None,
        replies: list[Any] | None = None,
    ) -> dict[str, Any]:
        """
        :param query: the question the answer answers.
        :param causal_edges: the retrieved causal edges C → E.
        :param documents: the retrieved passages (shown to the regeneration; may be None).
        :param answer: the answer to check (or give `replies`).
        :param replies: a generator's replies (ChatMessages or strings); the first is checked.
        :returns: `answer`, `replies`, `s_causal`, `decision`, `regenerated`, `verdicts`, `trace`, `degradations`.
        """
        check = _Check(self, query, causal_edges, documents, answer, replies)
        self._correct(check)
        return check.outputs()

    @component.output_types(**_OUTPUTS)
    async def run_async(
        self,
        query: str,
        causal_edges: list[Any],
        documents: list[Document] | None = None,
        answer: str | None = None,
        replies: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        check = _Check(self, query, causal_edges, documents, answer, replies)
        await self._correct_async(check)
        return check.outputs()


class _Check(Correction):
    """One check: the edges, the verdicts and the decision (no I/O here)."""

    def __init__(self, checker: CausalConsistencyChecker, query: Any, edges: Any, documents: Any, answer: Any,
                 replies: Any) -> None:
        super().__init__(checker)
        self.query = prepare_query(query, COMPONENT, checker.max_query_chars)
        if not isinstance(edges, list):
            raise ValueError(f"{COMPONENT}: 'causal_edges' must be a list, got {type(edges).__name__}.")
        if documents is not None and (
            not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents)
        ):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of documents or None.")
        self.documents = list(documents or [])
        parsed = [as_edge(e) for e in edges[: checker.max_edges]]
        self.edges = [e for e in parsed if e is not None]
        skipped = len(parsed) - len(self.edges)
        if skipped:
            self.degradations.append(degradation("causal_check", "edges not understood", skipped=skipped))
        if len(edges) > checker.max_edges:
            self.degradations.append(degradation("causal_check", "too many edges", kept=checker.max_edges,
                                                 given=len(edges)))
        self.original = answer_text(answer, replies, COMPONENT)
        self.answer = self.original
        question = self.query if checker.use_question else None
        self.check = causal_consistency(self.edges, self.original, question)
        self.after = None
        if self.check.score is None:
            self.decision = UNDEFINED
        elif should_regenerate(self.check.score, checker.tau):
            self.decision = REGENERATE
            self.wants_correction = checker.chat_generator is not None
            if not self.wants_correction:
                self.note = "no chat_generator: check only"
        else:
            self.decision = KEEP

    def prompt(self) -> str:
        template = self.checker.prompt_template or REGENERATE_PROMPT
        return template.format(query=self.query,
                               evidence=render_evidence(self.documents, self.checker.max_evidence_chars),
                               causal_edges=render_edges(self.edges))

    def replied(self, text: str) -> None:
        question = self.query if self.checker.use_question else None
        self.after = causal_consistency(self.edges, text, question).score

    def outputs(self) -> dict[str, Any]:
        verdicts = [{"cause": c, "effect": e, "verdict": v}
                    for (c, e), v in zip(self.edges, self.check.verdicts, strict=True)]
        trace = {
            "s_causal": self.check.score,
            "tau": self.checker.tau,
            "decision": self.decision,
            "edges": len(self.edges),
            "respected": self.check.respected,
            "violated": self.check.violated,
            "regenerated": self.changed,
            "s_causal_after": self.after,
            "note": self.note,
            "original_answer": self.original,
        }
        return self.answered(s_causal=self.check.score, decision=self.decision, regenerated=self.changed,
                             verdicts=verdicts, trace=trace)
