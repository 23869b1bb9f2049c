"""ArbitrationDuel: settle the ranker's duel by one passage per answer (the conservative override's duel)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage, GeneratedAnswer

from haystack_cfrag.cfrag.math.algorithm import Arbitration, confirm_duel, needs_confirmation, settle_duel
from haystack_cfrag.cfrag.math.replies import parse_draft_reply
from haystack_cfrag.cfrag.prompts import DRAFT_FIELDS, SHORT_DRAFT_PROMPT, check_template, render_plain_evidence
from haystack_cfrag.cfrag.ruling import Ruling
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import InjectedParts, degradation
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.replies import reply_text
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import check_choice
from haystack_cfrag.support.backend_common import NoPromptLogprobsError, UnsupportedGeneratorError

logger = logging.getLogger(__name__)

DUEL_READINGS = ("generate", "support", "support_pmi", "support_reply")
"""How the duel is read: the generator names an answer ("generate"), or each answer is scored on its own
passage by the reader's support ("support": log P(a | q, e)) or its evidence-erased contrast
("support_pmi": log P(a | q, e) − log P(a | q)), or as the reader's reply to the drafts' own prompt over that
passage, after its "Answer:" ("support_reply": the prompt a one-passage draft was read with, whose kept KV state
then serves: only the answer's tokens are read), and the best score wins (haystack_cfrag.support). A reader
whose log-probabilities cannot be read (an API that returns none) reads the scored duels by generation."""

REPLY_PREFIX = "Answer:"
"""What the drafts' prompt (`prompts.SHORT_DRAFT_PROMPT`) has the reader write before its answer."""

_DUEL = LLMCall(stage="duel", component="ArbitrationDuel")


@component
class ArbitrationDuel(AsksChatGenerator, InjectedParts):
    """
    Reads the duel a `CausalArbitrationRanker` ruling proposes, and outputs the settled `answers`, `answer`, `trace`.

    The ranker proposes a duel when a challenger disagrees with the baseline and fewer passages
    name its answer than the baseline's (volume favours the baseline). The `chat_generator` then
    reads ONE passage per distinct answer (the most relevant that names it, decisive-first) with
    standard RAG's prompt, and the answer it names wins (`trace["decision"]` "baseline" or
    "override", `trace["override"]["duel"]` the account): volume cannot outvote the decisive
    passage. A pick of a challenger is read once more with the passages reversed and stands only if
    named again (`confirm`). When the reading names none of the candidates, or fails, the margin
    rule's decision stands (with a degradation). A ruling without a duel, or `enabled=False`,
    passes through as the ranker's own outputs.

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag import ArbitrationDuel, CausalArbitrationRanker
    from haystack_cfrag.cfrag.dataclasses import Draft

    joker = [Document(content=f"Heath Ledger's Joker dominates The Dark Knight ({i}).") for i in range(3)]
    bale = Document(content="The lead role of The Dark Knight is Bruce Wayne, played by Christian Bale.")
    drafts = [Draft(index=0, answer="Heath Ledger", documents=joker + [bale], meta={"cfrag_source": "baseline"}),
              Draft(index=1, answer="Christian Bale", documents=[bale])]
    ranker = CausalArbitrationRanker(evidence="mentions", override_margin=1.0)
    ruling = ranker.run(query="Who is the lead actor in The Dark Knight?", drafts=drafts)["ruling"]
    duel = ArbitrationDuel(chat_generator=MockChatGenerator(responses="Answer: Christian Bale"))
    out = duel.run(ruling=ruling)
    print(out["answer"], out["trace"]["decision"])   # Christian Bale override
    ```
    """

    COMPONENT = "ArbitrationDuel"
    _INJECTED = ("chat_generator",)

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator | None = None,
        enabled: bool = True,
        reading: str = "generate",
        confirm: bool = True,
        prompt_template: str | None = None,
    ) -> None:
        """
        :param chat_generator: reads the duel passages (the reader; its log-probabilities for the support readings).
            Needed when `enabled`.
        :param enabled: read the duels the ruling proposes; False = the margin rule decides (the ablation).
        :param reading: how the duel is read (DUEL_READINGS): "generate" (the generator reads the duel
            passages and names an answer), "support", "support_pmi" or "support_reply" (each answer scored on its
            own passage by the generator's log-probabilities, through `haystack_cfrag.support.ReaderSupportScorer`;
            no generation, no confirmation reading; "support_reply" under the drafts' prompt, `prompt_template`'s
            when given, after "Answer:").
        :param confirm: when the duel names a challenger, read the same passages once more in reverse
            order; the challenger replaces the baseline only when that reading names it again. With two
            candidates the outcome is then the same in either order: the 1.5B reader's pick follows the
            passages' order (the first or the last passage's answer), and which order a ruling proposes
            depends on which counterfactual questions were asked. One more call, only then. False = one
            reading, whose pick may be the order's.
        :param prompt_template: replaces the duel's prompt (None = standard RAG's, `prompts.SHORT_DRAFT_PROMPT`):
            a `str.format` string with the placeholders {query} and {evidence} (the passages as "[i] content" lines).
        """
        check_template(prompt_template, DRAFT_FIELDS, component="ArbitrationDuel", parameter="prompt_template")
        for name, value in (("enabled", enabled), ("confirm", confirm)):
            if not isinstance(value, bool):
                raise ValueError(f"'{name}' must be true or false, got {value!r}.")
        check_choice("reading", reading, DUEL_READINGS)
        if enabled and chat_generator is None:
            raise ValueError("ArbitrationDuel: 'enabled' needs a 'chat_generator' to read the duel passages "
                             "(or enabled: false).")
        self.chat_generator = chat_generator
        self.enabled = enabled
        self.reading = reading
        self.confirm = confirm
        self.prompt_template = prompt_template
        self._support: Any = None  # the reader's support scorer over the generator, made on first use
        self._no_logprobs: str | None = None  # why the reader's log-probabilities cannot be read, once found

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the chat generator."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator), enabled=self.enabled,
                               reading=self.reading, confirm=self.confirm, prompt_template=self.prompt_template)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArbitrationDuel:
        """Deserialise, including the chat generator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(answers=list[GeneratedAnswer], answer=str, trace=dict[str, Any])
    def run(self, ruling: Ruling) -> dict[str, Any]:
        """
        :param ruling: the ranker's `ruling`.
        :returns: `answers` (best first), `answer` and `trace`, with the duel settled.
        """
        if not (self.enabled and ruling.open_duel):
            return dict(ruling.outputs)
        if self.reading != "generate":
            scored = self._scored(ruling)
            if scored is not None:
                return scored.outputs
            ruling = self._unscorable(ruling)  # read by generation (below), said in the trace
        settled = self._settle(ruling, self._read(ruling))
        if self.confirm and needs_confirmation(settled.arbitration):
            settled = self._confirm(settled, self._read(settled, reverse=True))
        return settled.outputs

    @component.output_types(answers=list[GeneratedAnswer], answer=str, trace=dict[str, Any])
    async def run_async(self, ruling: Ruling) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        if not (self.enabled and ruling.open_duel):
            return dict(ruling.outputs)
        if self.reading != "generate":  # scoring: in a worker thread
            scored = await asyncio.to_thread(self._scored, ruling)
            if scored is not None:
                return scored.outputs
            ruling = self._unscorable(ruling)
        settled = self._settle(ruling, await self._read_async(ruling))
        if self.confirm and needs_confirmation(settled.arbitration):
            settled = self._confirm(settled, await self._read_async(settled, reverse=True))
        return settled.outputs

    # ------------------------------------------------------------------ readings
    def _read(self, ruling: Ruling, *, reverse: bool = False) -> list[ChatMessage]:
        """The generator's reading of the duel passages ([] when it fails: the margin rule decides)."""
        return self.replies(self.ask_result(**self._request(ruling, reverse)))

    async def _read_async(self, ruling: Ruling, *, reverse: bool = False) -> list[ChatMessage]:
        """Async twin of `_read`."""
        return self.replies(await self.ask_result_async(**self._request(ruling, reverse)))

    def _request(self, ruling: Ruling, reverse: bool) -> dict[str, Any]:
        """`ask_result`'s arguments: the duel passages (in reverse order to confirm) to the generator."""
        case, pairs = ruling.case, _arbitration(ruling).override.duel
        docs = [case.docs[i] for _, i in (pairs[::-1] if reverse else pairs)]
        return {"prompt": self._prompt(case.query, docs), "call": _DUEL, "what": "duel", "exclusive": False}

    def _prompt(self, query: str, docs: list[Any]) -> str:
        """The drafts' prompt (standard RAG's, or `prompt_template`) over `docs`."""
        return (self.prompt_template or SHORT_DRAFT_PROMPT).format(query=query, evidence=render_plain_evidence(docs))

    def _scored(self, ruling: Ruling) -> Ruling | None:
        """The duel read by the reader's support: each answer scored on its own passage; the best is "named".

        The scores go to the trace (`override.duel.support`); a failing scorer names nothing, so the
        margin rule decides (as when a generated reading fails). None when the reader's log-probabilities
        cannot be read at all (its kind, or a server that returns none): the duel is then read by generation,
        and so is every later one (one warning).
        """
        if self._no_logprobs is not None:
            return None
        erased = self.reading == "support_pmi"
        if self._support is None:
            from haystack_cfrag.support.scorer import ReaderSupportScorer  # noqa: PLC0415

            self._support = ReaderSupportScorer(chat_generator=self.chat_generator, erased_contrast=erased)
        case, key, scored = ruling.case, "pmi" if erased else "support", []
        try:
            for candidate, column in _arbitration(ruling).override.duel:
                answer, doc = case.answers[candidate], case.docs[column]
                if self.reading == "support_reply":
                    out = self._support.read_reply(self._prompt(case.query, [doc]), reply_text(REPLY_PREFIX, answer),
                                                   REPLY_PREFIX)
                    cost = {"calls": 1, "tokens_evaluated": out.get("tokens_evaluated")}
                    score = float(out["support"])
                else:
                    out = self._support.run(query=case.query, answers=[answer], documents=[doc])
                    cost, score = out.get("trace") or {}, float(out[key][0])
                scored.append({"answer": answer, "passage": doc.id, "score": score, "calls": cost.get("calls"),
                               "tokens_evaluated": cost.get("tokens_evaluated")})
        except (UnsupportedGeneratorError, NoPromptLogprobsError) as exc:
            self._no_logprobs = str(exc)
            logger.warning("ArbitrationDuel: the duel's '{reading}' reading needs the reader's log-probabilities "
                           "({error}); duels are read by generation instead", reading=self.reading, error=str(exc))
            return None
        except Exception as exc:  # noqa: BLE001  (the margin rule decides, see above)
            failed = degradation("duel", f"support scoring failed: {exc!r}; the margin rule decided")
            return self._settle(replace(ruling, degradations=(*ruling.degradations, failed)), [])
        best = max(scored, key=lambda s: s["score"]) if scored else None
        reply = [ChatMessage.from_assistant(f"Answer: {best['answer']}")] if best else []
        return self._settle(replace(ruling, duel_reading=self.reading, duel_support=scored), reply)

    def _unscorable(self, ruling: Ruling) -> Ruling:
        """The ruling with the degradation that says its scored reading fell back to a generated one."""
        fell_back = degradation("duel", f"the '{self.reading}' reading needs the reader's log-probabilities; "
                                        "read by generation", error=self._no_logprobs)
        return replace(ruling, degradations=(*ruling.degradations, fell_back))

    # ------------------------------------------------------------------ outcomes (cfrag.math.algorithm)
    @staticmethod
    def _settle(ruling: Ruling, reply: list[ChatMessage]) -> Ruling:
        """The duel's answer picks its candidate; without a usable one the margin rule's decision stands."""
        named = _named(reply)
        settled = settle_duel(_arbitration(ruling), named, ruling.case.answers, ruling.agreement_threshold)
        added = ruling.degradations
        if settled.override.duel_pick is None:
            added += (degradation("duel", "the duel named none of the candidates; the margin rule decided",
                                  answer=named),)
        return replace(ruling, arbitration=settled, degradations=added)

    @staticmethod
    def _confirm(ruling: Ruling, reply: list[ChatMessage]) -> Ruling:
        """The reverse-order reading keeps the duel's override only when it names the same challenger
        (the trace's `confirm_answer` shows what it named; a failed call confirms nothing)."""
        confirmed = confirm_duel(_arbitration(ruling), _named(reply), ruling.case.answers, ruling.agreement_threshold)
        return replace(ruling, arbitration=confirmed)


def _arbitration(ruling: Ruling) -> Arbitration:
    """The ruling's arbitration (a duel is read only where there is one)."""
    assert ruling.arbitration is not None  # noqa: S101  (open_duel was checked)
    return ruling.arbitration


def _named(reply: list[ChatMessage]) -> str:
    """The answer a duel reading named ("" when the call failed or gave no answer)."""
    return parse_draft_reply((reply[0].text or "") if reply else "")["answer"]


__all__ = ["DUEL_READINGS", "REPLY_PREFIX", "ArbitrationDuel"]
