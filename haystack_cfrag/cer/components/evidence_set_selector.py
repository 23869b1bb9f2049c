"""EvidenceSetSelector: CER's minimal sufficient evidence set, read from the reader's support (docs/cer.md)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cer.components.set_scoring import (
    VERIFY_QUESTION,  # noqa: F401  (importable from here too)
    SetScoring,
)
from haystack_cfrag.cer.math.hard_negatives import hard_negatives
from haystack_cfrag.cer.math.search import (
    MemoisedQuality,
    minimal_sufficient_set,
    set_effects,
    unmeasured_effects,
)
from haystack_cfrag.cer.math.settings import (
    ALPHA,
    DELTA,
    EPSILON,
    K_MAX,
    KAPPA,
    MU,
    THETA,
    WEIGHTS,
    CerSettings,
)
from haystack_cfrag.cer.trace import selection_trace
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import (
    DEFAULT_MAX_QUERY_CHARS,
    InjectedParts,
    degradation,
    prepare_query,
    warm_up_all,
    with_meta,
)
from haystack_cfrag.common.prompting import SHORT_DRAFT_PROMPT, render_plain_evidence
from haystack_cfrag.common.protocols import ChatGenerator, SupportScorer
from haystack_cfrag.common.replies import parse_draft_reply
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall, current_span
from haystack_cfrag.common.validation import (
    check_bool,
    check_choice,
    check_int,
    check_optional_int,
    check_range,
)

logger = logging.getLogger(__name__)

COMPONENT = "EvidenceSetSelector"
ENTAILMENT = ("support", "pmi")
CONTRADICTION = ("off", "yes_no")

NECESSITY_KEY = "cer_necessity"
DELETION_KEY = "cer_deletion_effect"
RANK_KEY = "cer_rank"


@component
class EvidenceSetSelector(AsksChatGenerator, InjectedParts):
    """
    Keeps the smallest set of the given passages whose quality F̂ reaches θ (CER, Algorithm 1).

    The reader drafts an answer a from the top `draft_top_k` passages (or pass `answer`); a forward greedy search
    over the first `k_max` documents adds the passage of largest measured gain in F̂, less μ·|d|/1000, until
    F̂ ≥ θ with gains below δ for two rounds; reverse pruning removes passages while F̂ stays ≥ θ + ε.
    F̂ = (w1·p_entail + w2·p_cov − w3·p_contra − w4·|S|/K_max) / (w1 + w2) (`cer.math.quality`).

    `documents` are the kept passages, most useful first (meta `cer_necessity`, `cer_deletion_effect`,
    `cer_rank`); `trace` has the search's steps and effects. θ not reached: the set anyway, in `degradations`;
    a failed draft or scoring: the top `draft_top_k` passages (or raised with `raise_on_failure`).

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.cer.components import EvidenceSetSelector

    class NameScorer:  # a stand-in for ReaderSupportScorer: high support when a passage names the answer
        def score(self, query, answer, documents):
            return -0.05 if any(answer in (d.content or "") for d in documents) else -3.0

    selector = EvidenceSetSelector(
        support_scorer=NameScorer(), chat_generator=MockChatGenerator(responses="Answer: Christian Bale")
    )
    docs = [Document(content="Heath Ledger's Joker dominates the film."),
            Document(content="Cast: lead actor Christian Bale stars as Bruce Wayne.")]
    out = selector.run(query="Who is the lead actor in The Dark Knight?", documents=docs)
    print([d.content for d in out["documents"]])
    ```
    """

    COMPONENT = COMPONENT
    FAILURE = "{component}: the answer draft failed: {reason}"
    _INJECTED = ("support_scorer", "chat_generator")

    def __init__(
        self,
        *,
        support_scorer: SupportScorer,
        chat_generator: ChatGenerator | None = None,
        theta: float = THETA,
        epsilon: float = EPSILON,
        mu: float = MU,
        kappa: float = KAPPA,
        delta: float = DELTA,
        k_max: int = K_MAX,
        alpha: float = ALPHA,
        weights: Sequence[float] = WEIGHTS,
        draft_top_k: int = 5,
        entailment: str = "support",
        pmi_scale: float = 1.0,
        contradiction: str = "off",
        replacement: bool = False,
        min_size: int = 1,
        prune_unnecessary: bool = True,
        best_prefix: bool = True,
        skip_decided: bool = True,
        max_rounds: int | None = None,
        raise_on_failure: bool = False,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
    ) -> None:
        """
        :param support_scorer: anything with `score(query, answer, documents) -> float` (a log-probability).
        :param chat_generator: drafts the answer whose support is measured (None: `answer` must be given to `run`).
        :param theta: F̂ a sufficient set reaches, in (0, 1].
        :param epsilon: pruning margin, in [0, 0.5].
        :param mu: length cost per 1000 words of a passage, in [0, 1].
        :param kappa: uncertainty bonus, in [0, 1]; unused here (σ̂ = 0), kept for the paper's table.
        :param delta: gain under which a round counts towards the two-round stop, in [0, 0.5].
        :param k_max: pool size and largest set, ≥ 1 (also p_len's normaliser).
        :param alpha: deletion against replacement effect in the fused effect (Eq. 7), in [0, 1].
        :param weights: (w1, w2, w3, w4) of F̂, each in [0, 1], w1 + w2 > 0.
        :param draft_top_k: passages the answer is drafted from (the first of the pool), ≥ 1.
        :param entailment: "support" (p_entail = exp of the support) or "pmi" (σ of support(S) − support(∅)).
        :param pmi_scale: the PMI in nats per token that maps to σ(1), > 0 (with "pmi").
        :param contradiction: "off" (p_contra = 0) or "yes_no" (the reader's share of "no"; two more scorings per set).
        :param replacement: report each kept passage's replacement effect (one more scoring each; off).
        :param min_size: pruning keeps at least this many passages, ≥ 0.
        :param prune_unnecessary: also prune passages whose removal does not lower F̂ (docs/cer.md).
        :param best_prefix: when the two-round stop never fires, prune from the best forward prefix that reached θ.
        :param skip_decided: do not score a set whose outcome F̂'s free upper bound decides (same selection).
        :param max_rounds: the search's forward rounds, at most (None: Algorithm 1's stops); a set short of θ is
            then the whole pool, most useful first, without effects (docs/cer.md).
        :param raise_on_failure: raise when the draft or a scoring fails instead of degrading to the top passages.
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        """
        self.settings = CerSettings(theta=theta, epsilon=epsilon, mu=mu, kappa=kappa, delta=delta,
                                    k_max=k_max, alpha=alpha, weights=weights)
        if not callable(getattr(support_scorer, "score", None)):
            raise ValueError(
                f"'support_scorer' must have a score(query, answer, documents) method, got {support_scorer!r}."
            )
        check_choice("entailment", entailment, ENTAILMENT)
        check_choice("contradiction", contradiction, CONTRADICTION)
        check_int("draft_top_k", draft_top_k, 1)
        check_range("pmi_scale", pmi_scale, 0.0, 1e6, low_open=True)
        check_int("min_size", min_size, 0)
        check_optional_int("max_query_chars", max_query_chars, 1)
        self.support_scorer = support_scorer
        self.chat_generator = chat_generator
        self.draft_top_k = draft_top_k
        self.entailment = entailment
        self.pmi_scale = pmi_scale
        self.contradiction = contradiction
        self.replacement = replacement
        self.min_size = min_size
        self.prune_unnecessary = prune_unnecessary
        check_bool("best_prefix", best_prefix)
        self.best_prefix = best_prefix
        check_bool("skip_decided", skip_decided)
        self.skip_decided = skip_decided
        check_optional_int("max_rounds", max_rounds, 1)
        self.max_rounds = max_rounds
        self.raise_on_failure = raise_on_failure
        self.max_query_chars = max_query_chars

    def warm_up(self) -> None:
        """Warm up the injected scorer and generator."""
        warm_up_all(self.support_scorer, self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected scorer and generator."""
        return default_to_dict(self, support_scorer=serialize_component(self.support_scorer),
                               chat_generator=serialize_component(self.chat_generator),
                               **self.settings.init_parameters(), draft_top_k=self.draft_top_k,
                               entailment=self.entailment, pmi_scale=self.pmi_scale,
                               contradiction=self.contradiction, replacement=self.replacement,
                               min_size=self.min_size, prune_unnecessary=self.prune_unnecessary,
                               best_prefix=self.best_prefix, skip_decided=self.skip_decided,
                               max_rounds=self.max_rounds, raise_on_failure=self.raise_on_failure,
                               max_query_chars=self.max_query_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceSetSelector:
        """Deserialise, including the injected scorer and generator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(documents=list[Document], answer=str, trace=dict[str, Any],
                            degradations=list[dict[str, Any]])
    def run(self, query: str, documents: list[Document], answer: str | None = None) -> dict[str, Any]:
        """
        :param query: the question.
        :param documents: the retrieved passages, best first (only the first `k_max` are considered).
        :param answer: the answer whose support is measured (None = draft one with the chat generator).
        :returns: `documents` (the minimal set, most useful first), `answer` (the answer measured),
            `trace` and `degradations`.
        """
        query, pool, answer = self._check(query, documents, answer)
        if not pool:
            return self._outputs([], answer or "", {"pool": []}, [])
        degradations: list[dict[str, Any]] = []
        if answer is None:
            answer = self._draft(query, pool, degradations)
        if not answer:
            return self._fallback(pool, "", degradations)
        return self._select(query, pool, answer, degradations)

    @component.output_types(documents=list[Document], answer=str, trace=dict[str, Any],
                            degradations=list[dict[str, Any]])
    async def run_async(
        self, query: str, documents: list[Document], answer: str | None = None
    ) -> dict[str, Any]:
        """Async twin of `run`: the draft through the generator's run_async, the search in a worker thread."""
        query, pool, answer = self._check(query, documents, answer)
        if not pool:
            return self._outputs([], answer or "", {"pool": []}, [])
        degradations: list[dict[str, Any]] = []
        if answer is None:
            answer = await self._draft_async(query, pool, degradations)
        if not answer:
            return self._fallback(pool, "", degradations)
        return await asyncio.to_thread(self._select, query, pool, answer, degradations)

    # ------------------------------------------------------------------ steps
    def _check(self, query: Any, documents: Any, answer: Any) -> tuple[str, list[Document], str | None]:
        query = prepare_query(query, COMPONENT, self.max_query_chars)
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of documents.")
        if answer is not None and not (isinstance(answer, str) and answer.strip()):
            raise ValueError(f"{COMPONENT}: 'answer' must be a non-empty string or None.")
        if answer is None and self.chat_generator is None:
            raise ValueError(f"{COMPONENT}: without a chat_generator, 'answer' must be given.")
        return query, list(documents[: self.settings.k_max]), None if answer is None else answer.strip()

    def _draft_prompt(self, query: str, pool: list[Document]) -> str:
        evidence = render_plain_evidence(pool[: self.draft_top_k])
        return SHORT_DRAFT_PROMPT.format(query=query, evidence=evidence)

    def _draft(self, query: str, pool: list[Document], degradations: list[dict[str, Any]]) -> str:
        text, exc = self.ask(self._draft_prompt(query, pool), _llm_call(), "answer draft", exclusive=False)
        return self._read_draft(text, exc, degradations)

    async def _draft_async(self, query: str, pool: list[Document], degradations: list[dict[str, Any]]) -> str:
        text, exc = await self.ask_async(self._draft_prompt(query, pool), _llm_call(), "answer draft",
                                         exclusive=False)
        return self._read_draft(text, exc, degradations)

    def _read_draft(self, text: str | None, exc: Exception | None, degradations: list[dict[str, Any]]) -> str:
        """The drafted answer, or "" when the call failed or the reply has none (degrades, see class doc)."""
        if exc is not None:
            return self._draft_failed(repr(exc), degradations)
        answer = parse_draft_reply(text or "")["answer"].strip()
        return answer or self._draft_failed("empty reply", degradations)

    def _draft_failed(self, reason: str, degradations: list[dict[str, Any]]) -> str:
        if self.raise_on_failure:  # a failed call has raised already (`ask`): this is an empty reply
            raise self.failure("answer draft", reason)
        logger.warning("{component}: the answer draft failed ({reason}); keeping the top passages",
                       component=COMPONENT, reason=reason)
        degradations.append(
            degradation("cer_draft", f"the answer draft failed: {reason}; the top passages are kept")
        )
        return ""

    def _select(
        self, query: str, pool: list[Document], answer: str, degradations: list[dict[str, Any]]
    ) -> dict[str, Any]:
        started = time.monotonic()
        scoring = SetScoring(self.support_scorer, query, answer, pool, settings=self.settings,
                             entailment=self.entailment, pmi_scale=self.pmi_scale,
                             contradiction=self.contradiction)
        quality = MemoisedQuality(scoring.quality)
        try:
            result = minimal_sufficient_set(len(pool), quality,
                                            lengths=[len((d.content or "").split()) for d in pool],
                                            settings=self.settings, min_size=self.min_size,
                                            prune_unnecessary=self.prune_unnecessary,
                                            best_prefix=self.best_prefix,
                                            bound=scoring.bound if self.skip_decided else None,
                                            max_rounds=self.max_rounds)
            if result.unscored:  # the unscored set's effects would cost the scorings max_rounds saved
                replacements, effects = {}, unmeasured_effects(result.kept)
            else:
                texts = [d.content or "" for d in pool]
                replacements = hard_negatives(texts, result.kept) if self.replacement else {}
                effects = set_effects(result.kept, quality, replacements=replacements,
                                      alpha=self.settings.alpha)
        except Exception as exc:
            if self.raise_on_failure:
                raise RuntimeError(f"{COMPONENT}: support scoring failed: {exc}") from exc
            logger.warning("{component}: support scoring failed ({error}); keeping the top passages",
                           component=COMPONENT, error=repr(exc))
            degradations.append(
                degradation("cer_search", f"support scoring failed: {exc!r}; the top passages are kept")
            )
            return self._fallback(pool, answer, degradations, scorer_calls=scoring.calls)
        if not result.reached:
            degradations.append(
                degradation("cer_search",
                            "the quality threshold θ was not reached; the set is returned anyway",
                            quality=result.quality, theta=self.settings.theta)
            )
        trace = selection_trace([d.id for d in pool], answer, result, effects, replacements,
                                quality_calls=scoring.sets, scorer_calls=scoring.calls,
                                seconds=time.monotonic() - started)
        kept = [
            with_meta(pool[i], **{NECESSITY_KEY: nec, DELETION_KEY: dele, RANK_KEY: rank})
            for rank, (i, nec, dele) in enumerate(
                zip(result.kept, effects.necessity, effects.deletion, strict=True)
            )
        ]
        return self._outputs(kept, answer, trace, degradations)

    def _fallback(
        self, pool: list[Document], answer: str, degradations: list[dict[str, Any]], scorer_calls: int = 0
    ) -> dict[str, Any]:
        top = pool[: self.draft_top_k]
        trace = {
            "pool": [d.id for d in pool],
            "kept": [d.id for d in top],
            "fallback": True,
            "scorer_calls": scorer_calls,
        }
        return self._outputs(list(top), answer, trace, degradations)

    @staticmethod
    def _outputs(
        docs: list[Document], answer: str, trace: dict[str, Any], degradations: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "documents": docs,
            "answer": answer,
            "trace": {**trace, "degradations": list(degradations)},
            "degradations": degradations,
        }


def _llm_call() -> LLMCall:
    return LLMCall(stage="cer_draft", component=COMPONENT, parent_span=current_span())


__all__ = ["EvidenceSetSelector", "SupportScorer"]
