"""QueryRefiner: CDF-RAG's query refinement (paper 002, §2.2): expand, simplify or decompose the question."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cdf_rag.math.refinement import (
    FIXED_ACTIONS,
    LONG_QUESTION_WORDS,
    MAX_REFINED_CHARS,
    MAX_SUB_QUERIES,
    MIN_SUB_QUERIES,
    NONE,
    SHORT_QUESTION_WORDS,
    Refinement,
    choose_action,
    fallback,
    parse_action,
    parse_refinement,
)
from haystack_cfrag.cdf_rag.prompts import REFINEMENT_FIELDS, REFINEMENT_PROMPTS, check_prompt_templates
from haystack_cfrag.common.asking import Asked, AsksChatGenerator
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, InjectedParts, degradation, prepare_query
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import (
    check_bool,
    check_choice,
    check_int,
    check_optional_int,
    check_optional_seconds,
)

COMPONENT = "QueryRefiner"
CHOICES = ("auto", "rule", *FIXED_ACTIONS)
"""`action`: "auto" (the reader chooses), "rule" (`choose_action`), or a fixed action, or "none"."""
MAX_TRACE_REPLY_CHARS = 500

_CHOOSE_CALL = LLMCall(stage="refinement_choice", component=COMPONENT)
_REFINE_CALL = LLMCall(stage="refinement", component=COMPONENT)
_OUTPUTS = {"refined_query": str, "queries": list[str], "action": str, "sub_queries": list[str],
            "trace": dict[str, Any], "degradations": list[dict[str, Any]]}

logger = logging.getLogger(__name__)


@component
class QueryRefiner(AsksChatGenerator, InjectedParts):
    """
    Rewrites a question for retrieval: expand it, simplify it, or decompose it into sub-questions.

    The action is the reader's choice (`"auto"`, one short call), the rule's (`"rule"`, `choose_action`; always in
    the trace) or fixed (`"expand"`, `"simplify"`, `"decompose"`, `"none"`: no call); one more call writes it with
    the paper's prompt (App. A.4). The paper's PPO policy is not reproduced.

    Outputs `refined_query`, `queries` (the sub-questions, else the refined question), `action`, `sub_queries`,
    `trace` and `degradations`; a failed call or unusable reply falls back to the original question.

    ### Usage example
    ```python
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.cdf_rag.components import QueryRefiner

    gen = MockChatGenerator(responses="Who wrote the novel Emma?\\nWho wrote the novel Jane Eyre?")
    refiner = QueryRefiner(chat_generator=gen, action="decompose")
    out = refiner.run(query="Were the authors of Emma and Jane Eyre born in the same country?")
    print(out["queries"])  # the two sub-questions
    ```
    """

    COMPONENT = COMPONENT
    _INJECTED = ("chat_generator",)

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator | None = None,
        action: str = "auto",
        max_sub_queries: int = MAX_SUB_QUERIES,
        max_refined_chars: int = MAX_REFINED_CHARS,
        rule_long_words: int = LONG_QUESTION_WORDS,
        rule_short_words: int = SHORT_QUESTION_WORDS,
        generation_kwargs: dict[str, Any] | None = None,
        raise_on_failure: bool = False,
        timeout_s: float | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        prompt_templates: dict[str, str] | None = None,
    ) -> None:
        """
        :param chat_generator: any Haystack ChatGenerator (chooses and writes the refinement); may be
            None only with `action="none"`.
        :param action: "auto" (the reader chooses), "rule", "expand", "simplify", "decompose" or "none".
        :param max_sub_queries: sub-questions kept from a decomposition, in [2, 10] (the paper asks for 2–4).
        :param max_refined_chars: a refined question or sub-question is cut to this many characters, in [20, 2000].
        :param rule_long_words: the rule simplifies questions of more words than this, in [1, 200].
        :param rule_short_words: the rule expands questions of at most this many words, in [0, rule_long_words].
        :param generation_kwargs: passed to generators that accept them.
        :param raise_on_failure: raise when a chat call fails instead of falling back to the question.
        :param timeout_s: seconds a chat call may take before it is abandoned (None = no limit).
        :param max_query_chars: longer questions are cut to this many characters, with a warning (None = whole).
        :param prompt_templates: replaces built-in prompts by key ("choose", "expand", "simplify", "decompose";
            placeholder {query}).
        """
        _check_action(action)
        if chat_generator is None and action != NONE:
            raise ValueError(f"{COMPONENT}: 'chat_generator' is required unless action is 'none'.")
        check_int("max_sub_queries", max_sub_queries, MIN_SUB_QUERIES, 10)
        check_int("max_refined_chars", max_refined_chars, 20, 2000)
        check_int("rule_long_words", rule_long_words, 1, 200)
        check_int("rule_short_words", rule_short_words, 0, rule_long_words)
        check_bool("raise_on_failure", raise_on_failure)
        check_optional_seconds("timeout_s", timeout_s)
        check_optional_int("max_query_chars", max_query_chars, 1)
        check_prompt_templates(prompt_templates, REFINEMENT_PROMPTS, REFINEMENT_FIELDS, component=COMPONENT)
        self.chat_generator = chat_generator
        self.action = action
        self.max_sub_queries = max_sub_queries
        self.max_refined_chars = max_refined_chars
        self.rule_long_words = rule_long_words
        self.rule_short_words = rule_short_words
        self.generation_kwargs = dict(generation_kwargs) if generation_kwargs is not None else None
        self.raise_on_failure = raise_on_failure
        self.timeout_s = timeout_s
        self.max_query_chars = max_query_chars
        self.prompt_templates = dict(prompt_templates) if prompt_templates is not None else None

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generator."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               action=self.action, max_sub_queries=self.max_sub_queries,
                               max_refined_chars=self.max_refined_chars, rule_long_words=self.rule_long_words,
                               rule_short_words=self.rule_short_words,
                               generation_kwargs=self.generation_kwargs,
                               raise_on_failure=self.raise_on_failure, timeout_s=self.timeout_s,
                               max_query_chars=self.max_query_chars, prompt_templates=self.prompt_templates)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueryRefiner:
        """Deserialise, including the injected generator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(**_OUTPUTS)
    def run(self, query: str, action: str | None = None) -> dict[str, Any]:
        """
        :param query: the user's question.
        :param action: overrides `action` for this call.
        :returns: `refined_query`, `queries`, `action`, `sub_queries`, `trace` and `degradations`.
        """
        run = _Run(self, query, action)
        if run.requested == "auto":
            run.chose(*self._reply(run, "choose"))
        if run.action not in (None, NONE):
            run.refined(*self._reply(run, run.action))
        return run.outputs()

    @component.output_types(**_OUTPUTS)
    async def run_async(self, query: str, action: str | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        run = _Run(self, query, action)
        if run.requested == "auto":
            run.chose(*(await self._reply_async(run, "choose")))
        if run.action not in (None, NONE):
            run.refined(*(await self._reply_async(run, run.action)))
        return run.outputs()

    # ------------------------------------------------------------------ calls
    def template(self, key: str) -> str:
        """The prompt in use for `key` ("choose" or an action): the user's, else the built-in one."""
        return (self.prompt_templates or {}).get(key, REFINEMENT_PROMPTS[key])

    def _request(self, run: _Run, key: str) -> tuple[str, LLMCall, str]:
        """The prompt for `key`, its call and its name: what `ask` and `ask_async` take."""
        return self.template(key).format(query=run.query), _CHOOSE_CALL if key == "choose" else _REFINE_CALL, key

    def _reply(self, run: _Run, key: str) -> Asked:
        return self.ask(*self._request(run, key))

    async def _reply_async(self, run: _Run, key: str) -> Asked:
        return await self.ask_async(*self._request(run, key))


class _Run:
    """One refinement: the decisions taken so far, shared by `run` and `run_async` (no I/O here)."""

    def __init__(self, refiner: QueryRefiner, query: Any, action: str | None) -> None:
        self.refiner = refiner
        self.query = prepare_query(query, COMPONENT, refiner.max_query_chars)
        self.requested = refiner.action if action is None else action
        _check_action(self.requested)
        if refiner.chat_generator is None and self.requested != NONE:
            raise ValueError(f"{COMPONENT}: action {self.requested!r} needs a chat_generator (none was given).")
        self.rule_action, self.rule_reason = choose_action(self.query, long_words=refiner.rule_long_words,
                                                           short_words=refiner.rule_short_words)
        self.replies: list[str] = []
        self.calls = 0
        self.reader_action: str | None = None
        self.degradations: list[dict[str, Any]] = []
        self.result: Refinement | None = None
        if self.requested == "auto":
            self.action, self.chosen_by = None, "reader"
        elif self.requested == "rule":
            self.action, self.chosen_by = self.rule_action, "rule"
        else:
            self.action, self.chosen_by = self.requested, "fixed"
        if self.action == NONE:
            self.result = Refinement(action=NONE, query=self.query)

    def _record(self, text: str | None, error: Exception | None) -> None:
        self.calls += 1
        if text is not None:
            self.replies.append(text[:MAX_TRACE_REPLY_CHARS])

    def chose(self, text: str | None, error: Exception | None) -> None:
        """Read the reader's choice of action (or fall back)."""
        self._record(text, error)
        if error is not None:
            return self._fall_back("choice", "generator failed", error=repr(error))
        self.reader_action = parse_action(text)
        if self.reader_action is None:
            return self._fall_back("choice", "reply named no single action", reply=(text or "")[:200])
        self.action = self.reader_action
        if self.action == NONE:
            self.result = Refinement(action=NONE, query=self.query)
        return None

    def refined(self, text: str | None, error: Exception | None) -> None:
        """Read the refinement (or fall back)."""
        self._record(text, error)
        if error is not None:
            return self._fall_back("refinement", "generator failed", error=repr(error))
        result = parse_refinement(text, self.action, self.query, max_sub_queries=self.refiner.max_sub_queries,
                                  max_chars=self.refiner.max_refined_chars, template=self.refiner.template(self.action))
        if result.fallback:
            return self._fall_back("refinement", result.reason, reply=(text or "")[:200])
        self.result = result
        return None

    def _fall_back(self, stage: str, reason: str, **details: Any) -> None:
        logger.warning("{component}: the {stage} fell back to the original question ({reason})",
                       component=COMPONENT, stage=stage, reason=reason)
        self.degradations.append(degradation(stage, reason, action=self.action, **details))
        self.result = fallback(self.query, reason)
        self.action = NONE

    def outputs(self) -> dict[str, Any]:
        result = self.result or fallback(self.query, "no refinement")
        trace = {
            "requested": self.requested,
            "chosen_by": self.chosen_by,
            "action": result.action,
            "reader_action": self.reader_action,
            "rule_action": self.rule_action,
            "rule_reason": self.rule_reason,
            "fallback": result.fallback,
            "fallback_reason": result.reason,
            "calls": self.calls,
            "replies": list(self.replies),
        }
        return {
            "refined_query": result.query,
            "queries": result.queries,
            "action": result.action,
            "sub_queries": list(result.sub_queries),
            "trace": trace,
            "degradations": list(self.degradations),
        }


def _check_action(action: Any) -> None:
    check_choice("action", action, CHOICES)
