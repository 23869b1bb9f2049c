"""CausalArbitrationRanker: score drafts on coherence and causal discrimination (4.2.2–4.2.3, Alg. 1).

This module is the Haystack side: checks, s(q, e) from the scorer or the embeddings, the LLM
calls of the duel and the synthesis, the outputs. The decision itself is the pure
`core.algorithm.arbitrate`; the trace's schema, constructor and rendering are in
`haystack_cfrag.cfrag.trace`.
"""

from __future__ import annotations

import asyncio

from functools import cached_property
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage, ExtractedAnswer, GeneratedAnswer

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.common.asking import AskedResult, AsksChatGenerator
from haystack_cfrag.common.plumbing import (
    DEFAULT_MAX_QUERY_CHARS,
    InjectedParts,
    accepts,
    degradation,
    embed_texts,
    embed_texts_async,
    prepare_query,
    run_async_or_thread,
)
from haystack_cfrag.common.protocols import ChatGenerator, TextEmbedder
from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.math.algorithm import (
    MENTION_THRESHOLD,
    Arbitration,
    Override,
    Rules,
    arbitrate,
    confirm_duel,
    needs_confirmation,
    settle_duel,
)
from haystack_cfrag.cfrag.math.replies import parse_draft_reply
from haystack_cfrag.common.text import bag_of_words_matrix, mention_matrix
from haystack_cfrag.common.vectors import as_matrix, cosine_matrix, cosine_to_relevance, valid_embedding_mask
from haystack_cfrag.cfrag.dataclasses import BASELINE_SOURCES, NO_EVIDENCE, SOURCE_KEY, Draft
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.cfrag.prompts import (
    DRAFT_FIELDS,
    SHORT_DRAFT_PROMPT,
    SYNTHESIS_FIELDS,
    SYNTHESIS_PROMPT,
    check_template,
    render_drafts,
    render_plain_evidence,
)
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.cfrag.trace import (
    DraftEntry,
    DuelEntry,
    EvidenceEntry,
    FailedDraftEntry,
    MarginRuleEntry,
    OverrideEntry,
    Trace,
    TraceDecision,
    failed_draft_entry,
    make_trace,
)
from haystack_cfrag.common.validation import check_choice, check_int, check_range

logger = logging.getLogger(__name__)

SCORES_KEY = "cfrag_scores"
EVIDENCE_MODES = ("cited", "subset", "mentions")
DUEL_READINGS = ("generate", "support", "support_pmi")
"""How the duel is read: the synthesizer names an answer ("generate"), or each answer is scored on its own
passage by the reader's support ("support": log P(a | q, e)) or its evidence-erased contrast
("support_pmi": log P(a | q, e) − log P(a | q)), and the best score wins (haystack_cfrag.support)."""
CAUSAL_SCORES = ("biencoder", "reader")
"""Where φ_causal comes from: the bi-encoder's margins s(q, e) − max s(q', e) averaged over E_j ("biencoder"),
or the reader's counterfactual test on E_j, tanh(support(a_j | q, E_j) − max_j' support(a_j | q'_j', E_j))
("reader", `arbitration.reader_phi_causal`; haystack_cfrag.support)."""
READER_CAUSAL_PASSAGES = 2
"""Evidence passages of a draft the reader's counterfactual test reads (its first cited ones)."""

_DUEL = LLMCall(stage="duel", component="CausalArbitrationRanker", generator_name="synthesizer")
_SYNTHESIS = LLMCall(stage="synthesis", component="CausalArbitrationRanker", generator_name="synthesizer")


@component
class CausalArbitrationRanker(AsksChatGenerator, InjectedParts):
    """
    Ranks drafts by Ψ = Σ w_k φ_k and decides by consensus or synthesis (Algorithm 1).

    s(q, e) in [0, 1] is computed once for the original query and every counterfactual over
    the union of the drafts' evidence: with `scorer` (a Haystack ranker such as a
    cross-encoder; scores outside [0, 1] are squashed by a sigmoid), else the cosine of the
    `text_embedder`'s query embedding and the document embedding rescaled to [0, 1], else a
    bag-of-words cosine. Per draft j with evidence E_j:

    - φ_coh = mean_e [λ1·cos(Enc(a_j), Enc(e)) + λ2·s(q, e)·Mention(a_j, e)]  (λ1 = λ2 = 0.5)
    - φ_causal = mean_e [s(q, e) − max_q' s(q', e)]  (missing when there is no counterfactual)
    - φ_conf = exp(mean token log-prob)  (missing without log-probs)
    - φ_spec = 1 − H(keywords of a_j)/log |keywords of a_j|

    Weights default to (1 − λ, λ, 0, 0); weights of missing criteria are renormalised away.
    If the best draft's answer agrees (SQuAD-normalised equality or token F1 ≥ θ_agree) with
    at least `consensus_threshold` of the drafts, it wins ("consensus"); otherwise the
    `synthesizer` writes a final answer from the top 3 ("synthesis"), or without one the best
    draft wins ("best_score"). Outputs `answers` (GeneratedAnswer per draft, best first, with
    `meta["cfrag_scores"]`), `answer` and a JSON-serialisable `trace`.

    **Baseline and conservative override** (`override_margin` set; the shipped `cf_rag`): the
    drafter's baseline draft (standard RAG's prompt over the original query's top-k), or else
    the first answer that arrives on the `answers` socket (your pipeline's own answer), is the
    baseline. It stands unless the best-scoring draft that disagrees with it
    has Ψ at least `override_margin` above it and a higher φ_causal ("override"); otherwise
    "baseline" (always without counterfactuals: nothing then verifies a challenger). Agreement
    among the other drafts ends nothing. With `duel=True` (and a `synthesizer`) a disagreement in
    which fewer passages name the challenger's answer than the baseline's is settled by a
    volume-free re-reading instead: one passage per distinct answer, decisive-first, standard
    RAG's prompt; the answer it names wins. `consensus_min_causal` (paper mode) lets a consensus
    end arbitration only when the agreed draft's φ_causal reaches it.

    `trace["degradations"]` lists what gave less than asked — the upstream `degradations`
    (e.g. the expander's), failed or timed-out drafts, replies without an "Answer:" label,
    a failed synthesis — as {"stage", "reason", …}. When no draft is usable the answer is ""
    and `trace["decision"]` says why: "no_evidence" (nothing was retrieved), "all_drafts_failed"
    or "no_drafts".

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag import CausalArbitrationRanker
    from haystack_cfrag.cfrag.dataclasses import NO_EVIDENCE, Draft

    bale = Document(content="The Dark Knight stars Christian Bale as Bruce Wayne, the lead role.")
    joker = Document(content="Heath Ledger's Joker dominates The Dark Knight; the villain steals every scene.")
    drafts = [Draft(index=0, answer="Christian Bale", documents=[bale]),
              Draft(index=1, answer="Heath Ledger", documents=[joker])]
    out = CausalArbitrationRanker().run(query="Who is the lead actor in The Dark Knight?", drafts=drafts,
                                        queries=["Who is the lead actor in The Dark Knight?",
                                                 "Who played the villain in The Dark Knight?"])
    print(out["answer"], out["trace"]["decision"])
    ```
    """

    COMPONENT = "CausalArbitrationRanker"
    _INJECTED = ("text_embedder", "scorer", "synthesizer")

    def __init__(
        self,
        *,
        text_embedder: TextEmbedder | None = None,
        scorer: Any | None = None,  # a ranker: Haystack declares no ranker protocol
        causal_weight: float = 0.4,
        weights: dict[str, float] | None = None,
        agreement_threshold: float = 0.8,
        consensus_threshold: float = 2 / 3,
        coherence_weights: tuple[float, float] | list[float] = (0.5, 0.5),
        synthesizer: ChatGenerator | None = None,
        synthesis_top: int = 3,
        evidence: str = "cited",
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        override_margin: float | None = None,
        consensus_min_causal: float | None = None,
        duel: bool = False,
        duel_confirm: bool = False,
        duel_reading: str = "generate",
        causal_score: str = "biencoder",
        prompt_template: str | None = None,
        duel_prompt_template: str | None = None,
    ) -> None:
        """
        :param text_embedder: embeds queries and answers (and documents without embeddings).
        :param scorer: a Haystack ranker giving s(q, e) (e.g. a cross-encoder); None = embedding cosine.
        :param causal_weight: λ in [0, 1] (0 = ablation "w/o causal verification").
        :param weights: {"coherence", "causal", "confidence", "specificity"} ≥ 0, not all zero;
            overrides λ. None = (1 − λ, λ, 0, 0).
        :param agreement_threshold: θ_agree in (0, 1], token F1 at which two answers agree.
        :param consensus_threshold: share of agreeing drafts in (0, 1] that makes a consensus.
        :param coherence_weights: (λ1, λ2) of φ_coh, non-negative.
        :param synthesizer: optional ChatGenerator that writes the final answer without consensus.
        :param synthesis_top: drafts shown to the synthesizer (≥ 1).
        :param evidence: E_j of each draft: "cited" = the passages the draft names as key evidence
            (App. G), falling back to its whole subset when it names none; "subset" = always the
            whole subset it was shown; "mentions" = the passages of all drafts' evidence that mention
            the draft's answer (Mention ≥ 0.5), falling back to its subset.
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param override_margin: None = paper (consensus, synthesis or best Ψ). A number in [-1, 1]:
            the first `answers` input is the baseline, replaced only by a disagreeing draft whose Ψ
            exceeds the baseline's by at least this margin.
        :param consensus_min_causal: None = paper. A number in [-1, 1]: a consensus ends arbitration
            only when the best draft's φ_causal is at least this (when φ_causal exists).
        :param duel: with a baseline and `synthesizer`: when a challenger disagrees with the baseline
            and fewer passages name its answer than the baseline's (volume favours the baseline),
            the synthesizer reads ONE passage per distinct answer (the most relevant that names it,
            decisive-first) with standard RAG's prompt, and the answer it names wins ("duel").
            Volume cannot outvote the decisive passage there. Falls back to `override_margin`
            when fewer than two answers have a passage or the duel names none of them.
        :param duel_reading: how the duel is read (DUEL_READINGS): "generate" (the synthesizer
            reads the duel passages and names an answer), "support" or "support_pmi" (each answer
            scored on its own passage by the synthesizer's own log-probabilities, through
            `haystack_cfrag.support.ReaderSupportScorer`; no generation, no confirmation reading).
        :param duel_confirm: when the duel names a challenger, read the same passages once more in
            reverse order; the challenger replaces the baseline only when that reading names it
            again (a small reader tends to name the first passage's answer). One more call, only
            when a duel would replace the baseline.
        :param causal_score: φ_causal's source (CAUSAL_SCORES): "biencoder" (the paper's, from s(q, e))
            or "reader" (the synthesizer's own log-probabilities: each distinct answer scored on its
            draft's first READER_CAUSAL_PASSAGES evidence passages under q and every q'; 1 + N
            scorings per answer). Needs `synthesizer`; a failing scoring falls back to the bi-encoder's.
        :param prompt_template: replaces the synthesis prompt (None = `prompts.SYNTHESIS_PROMPT`): a
            `str.format` string with the placeholders {query} and {drafts}.
        :param duel_prompt_template: replaces the duel's prompt (None = standard RAG's,
            `prompts.SHORT_DRAFT_PROMPT`): a `str.format` string with the placeholders {query} and
            {evidence} (the duel passages as "[i] content" lines).
        """
        check_template(prompt_template, SYNTHESIS_FIELDS, component="CausalArbitrationRanker")
        check_template(duel_prompt_template, DRAFT_FIELDS, component="CausalArbitrationRanker",
                       parameter="duel_prompt_template")
        if duel and synthesizer is None:
            raise ValueError("'duel' needs a 'synthesizer' (a ChatGenerator) to read the duel passages.")
        if not isinstance(duel_confirm, bool):
            raise ValueError(f"'duel_confirm' must be true or false, got {duel_confirm!r}.")
        check_choice("duel_reading", duel_reading, DUEL_READINGS)
        check_choice("causal_score", causal_score, CAUSAL_SCORES)
        if causal_score == "reader" and synthesizer is None:
            raise ValueError("'causal_score' \"reader\" needs a 'synthesizer' (the reader whose log-probabilities score).")
        if override_margin is not None:
            ranges.check("override_margin", override_margin)
        if consensus_min_causal is not None:
            ranges.check("consensus_min_causal", consensus_min_causal)
        ranges.check("causal_weight", causal_weight)
        check_range("agreement_threshold", agreement_threshold, 0.0, 1.0, low_open=True)
        check_range("consensus_threshold", consensus_threshold, 0.0, 1.0, low_open=True)
        if weights is not None:
            unknown = set(weights) - set(arb.CRITERIA)
            if unknown or any(not isinstance(w, (int, float)) or w < 0 for w in weights.values()) or not any(
                weights.values()
            ):
                raise ValueError(
                    f"'weights' must map {list(arb.CRITERIA)} to non-negative numbers, not all zero, got {weights!r}."
                )
        lam = tuple(float(x) for x in coherence_weights)
        if len(lam) != 2 or any(x < 0 for x in lam):
            raise ValueError(f"'coherence_weights' must be two non-negative numbers, got {coherence_weights!r}.")
        check_choice("evidence", evidence, EVIDENCE_MODES)
        if not isinstance(synthesis_top, int) or synthesis_top < 1:
            raise ValueError(f"'synthesis_top' must be an integer ≥ 1, got {synthesis_top!r}.")
        if max_query_chars is not None:
            check_int("max_query_chars", max_query_chars, 1)
        self.text_embedder = text_embedder
        self.scorer = scorer
        self.causal_weight = causal_weight
        self.weights = dict(weights) if weights is not None else None
        self.agreement_threshold = agreement_threshold
        self.consensus_threshold = consensus_threshold
        self.coherence_weights = lam
        self.synthesizer = synthesizer
        self.synthesis_top = synthesis_top
        self.evidence = evidence
        self.max_query_chars = max_query_chars
        self.override_margin = override_margin
        self.consensus_min_causal = consensus_min_causal
        self.duel = duel
        self.duel_confirm = duel_confirm
        self.duel_reading = duel_reading
        self.causal_score = causal_score
        self._support: dict[bool, Any] = {}  # the reader's support scorers over the synthesizer, by
        # erased contrast (the "support_pmi" duel needs it, the φ_causal test does not), made on first use
        self.prompt_template = prompt_template
        self.duel_prompt_template = duel_prompt_template


    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected components."""
        return default_to_dict(
            self,
            text_embedder=serialize_component(self.text_embedder),
            scorer=serialize_component(self.scorer),
            causal_weight=self.causal_weight,
            weights=self.weights,
            agreement_threshold=self.agreement_threshold,
            consensus_threshold=self.consensus_threshold,
            coherence_weights=list(self.coherence_weights),
            synthesizer=serialize_component(self.synthesizer),
            synthesis_top=self.synthesis_top,
            evidence=self.evidence,
            max_query_chars=self.max_query_chars,
            override_margin=self.override_margin,
            consensus_min_causal=self.consensus_min_causal,
            duel=self.duel,
            duel_confirm=self.duel_confirm,
            duel_reading=self.duel_reading,
            causal_score=self.causal_score,
            prompt_template=self.prompt_template,
            duel_prompt_template=self.duel_prompt_template,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CausalArbitrationRanker:
        """Deserialise, including the injected components."""
        return default_from_dict(
            cls, deserialize_init_components(data, cls._INJECTED)
        )

    # ------------------------------------------------------------------ run
    @component.output_types(answers=list[GeneratedAnswer], answer=str, trace=dict[str, Any])
    def run(
        self,
        query: str,
        drafts: list[Draft] | None = None,
        counterfactuals: list[dict[str, Any]] | None = None,
        answers: list[GeneratedAnswer | ExtractedAnswer] | None = None,
        queries: list[str] | None = None,
        causal_weight: float | None = None,
        degradations: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """
        :param query: the original question.
        :param drafts: ParallelDraftGenerator's drafts …
        :param answers: … or answers your pipeline already drafted (e.g. AnswerBuilder/AnswerJoiner
            output): each GeneratedAnswer is a draft whose evidence is its `documents`.
        :param counterfactuals: the expander's counterfactuals (their "text" is used) …
        :param queries: … or its `queries` (original first); one of the two is enough.
        :param causal_weight: overrides λ for this call.
        :param degradations: what upstream stages gave up (the expander's `degradations`), copied into the trace.
        :returns: `answers` (best first), `answer` and `trace`.
        """
        case = self._case(query, drafts, answers, counterfactuals, queries, degradations)
        if case.empty:
            return self._no_drafts(case)
        case.relevance = self._relevance(case)
        case.embed(embed_texts(self.text_embedder, case.texts_to_embed()) if self.text_embedder is not None else None)
        if self.causal_score == "reader":
            self._reader_causal(case)
        arbitration = self._arbitrate(case, causal_weight)
        synthesis = None
        if arbitration.decision == "duel" and self.duel_reading != "generate":
            arbitration = self._settle_duel(case, arbitration, self._score_duel(case, arbitration))
        elif arbitration.decision == "duel":
            arbitration = self._settle_duel(case, arbitration, self._read_duel(case, arbitration))
            if self.duel_confirm and needs_confirmation(arbitration):
                arbitration = self._confirm_duel(case, arbitration, self._read_duel(case, arbitration, reverse=True))
        elif arbitration.decision == "synthesis":  # a failed call falls back to the best draft, see _finish
            synthesis = self._replies(self.ask_result(**self._synthesis_request(case, arbitration)))
        return self._finish(case, arbitration, synthesis)

    @component.output_types(answers=list[GeneratedAnswer], answer=str, trace=dict[str, Any])
    async def run_async(
        self,
        query: str,
        drafts: list[Draft] | None = None,
        counterfactuals: list[dict[str, Any]] | None = None,
        answers: list[GeneratedAnswer | ExtractedAnswer] | None = None,
        queries: list[str] | None = None,
        causal_weight: float | None = None,
        degradations: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        case = self._case(query, drafts, answers, counterfactuals, queries, degradations)
        if case.empty:
            return self._no_drafts(case)
        case.relevance = await self._relevance_async(case)
        embedded = await embed_texts_async(self.text_embedder, case.texts_to_embed()) if self.text_embedder else None
        case.embed(embedded)
        if self.causal_score == "reader":
            await asyncio.to_thread(self._reader_causal, case)
        arbitration = self._arbitrate(case, causal_weight)
        synthesis = None
        if arbitration.decision == "duel" and self.duel_reading != "generate":  # scoring: in a worker thread
            arbitration = self._settle_duel(case, arbitration, await asyncio.to_thread(self._score_duel, case,
                                                                                        arbitration))
        elif arbitration.decision == "duel":
            reply = await self._read_duel_async(case, arbitration)
            arbitration = self._settle_duel(case, arbitration, reply)
            if self.duel_confirm and needs_confirmation(arbitration):
                reply = await self._read_duel_async(case, arbitration, reverse=True)
                arbitration = self._confirm_duel(case, arbitration, reply)
        elif arbitration.decision == "synthesis":
            synthesis = self._replies(await self.ask_result_async(**self._synthesis_request(case, arbitration)))
        return self._finish(case, arbitration, synthesis)

    def _case(
        self,
        query: str,
        drafts: list[Draft] | None,
        answers: list[GeneratedAnswer | ExtractedAnswer] | None,
        counterfactuals: list[dict[str, Any]] | None,
        queries: list[str] | None,
        degradations: list[dict[str, Any]] | None,
    ) -> _Case:
        query = prepare_query(query, "CausalArbitrationRanker", self.max_query_chars)
        case = _Case.build(query, as_drafts(drafts, answers), counterfactuals, queries, cited=self.evidence == "cited")
        case.degradations = [dict(d) for d in degradations or []] + draft_degradations(case.drafts, case.failed)
        return case

    # ------------------------------------------------------------------ relevance s(q, e)
    def _relevance(self, case: _Case) -> np.ndarray | None:
        if self.scorer is None:
            return None  # computed from embeddings in case.embed
        kwargs = self._scorer_kwargs(case)
        return case.scores_to_matrix([self.scorer.run(query=q, **kwargs)["documents"] for q in case.queries])

    async def _relevance_async(self, case: _Case) -> np.ndarray | None:
        if self.scorer is None:
            return None
        kwargs = self._scorer_kwargs(case)
        results = [await run_async_or_thread(self.scorer, query=q, **kwargs) for q in case.queries]
        return case.scores_to_matrix([r["documents"] for r in results])

    def _scorer_kwargs(self, case: _Case) -> dict[str, Any]:
        """Every document must come back scored: ask rankers that take top_k for all of them."""
        kwargs: dict[str, Any] = {"documents": case.docs}
        if accepts(self.scorer, "top_k"):
            kwargs["top_k"] = len(case.docs)
        return kwargs

    # ------------------------------------------------------------------ decision
    def _weights(self, causal_weight: float | None) -> dict[str, float]:
        if self.weights is not None:
            return {k: float(self.weights.get(k, 0.0)) for k in arb.CRITERIA}
        lam = self.causal_weight if causal_weight is None else causal_weight
        ranges.check("causal_weight", lam)
        return arb.default_weights(lam)

    def _arbitrate(self, case: _Case, causal_weight: float | None) -> Arbitration:
        """Algorithm 1 over the case's matrices (`core.algorithm.arbitrate`)."""
        if self.evidence == "mentions":
            case.use_mentions()
        rules = Rules(
            weights=self._weights(causal_weight),
            coherence_weights=self.coherence_weights,
            agreement_threshold=self.agreement_threshold,
            consensus_threshold=self.consensus_threshold,
            consensus_min_causal=self.consensus_min_causal,
            synthesis=self.synthesizer is not None,
            override_margin=self.override_margin,
            duel=self.duel,
        )
        return arbitrate(
            case.answers,
            case.relevance,
            cosine_matrix(case.answer_emb, case.doc_emb),
            case.mentions,
            case.evidence,
            rules,
            indices=[d.index for d in case.drafts],
            token_logprobs=[d.token_logprobs for d in case.drafts],
            baseline=case.baseline(),
            causal_scores=[entry.get("phi_causal") for entry in case.reader_causal] if case.reader_causal else None,
        )

    def _reader(self, *, erased: bool = False) -> Any:
        if erased not in self._support:
            from haystack_cfrag.support.scorer import ReaderSupportScorer  # noqa: PLC0415

            self._support[erased] = ReaderSupportScorer(chat_generator=self.synthesizer, erased_contrast=erased)
        return self._support[erased]

    def _reader_causal(self, case: _Case) -> None:
        """The reader's counterfactual test per draft (`case.reader_causal`), one scoring run per distinct answer.

        Without counterfactuals there is nothing to contrast (φ_causal stays missing, as with the
        bi-encoder); a failing scorer leaves the bi-encoder's φ_causal, with a degradation.
        """
        cfs = case.queries[1:]
        if not cfs:
            return
        tested: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}  # (answer, passages) -> its test
        entries: list[dict[str, Any]] = []
        try:
            for j, draft in enumerate(case.drafts):
                docs = [case.docs[i] for i in dict.fromkeys(case.evidence[j])][:READER_CAUSAL_PASSAGES]
                key = (draft.answer.strip().lower(), tuple(d.id for d in docs))
                if key[0] and key not in tested:
                    out = self._reader().run(query=case.query, answers=[draft.answer], documents=docs,
                                             counterfactual_queries=cfs)
                    cost = out.get("trace") or {}
                    margin = float(out["margin"][0])
                    tested[key] = {"support": float(out["support"][0]), "margin": margin,
                                   "phi_causal": arb.reader_phi_causal(margin),
                                   "calls": cost.get("calls"), "tokens_evaluated": cost.get("tokens_evaluated")}
                entries.append({"draft": draft.index, "passages": list(key[1]),
                                **tested.get(key, {"phi_causal": None})})
        except Exception as exc:  # noqa: BLE001  (the bi-encoder's φ_causal stands, see the docstring)
            case.degradations.append(degradation("causal_score", f"the reader's scoring failed: {exc!r}; "
                                                 "the bi-encoder's φ_causal was used"))
            return
        case.reader_causal = entries

    def _read_duel(self, case: _Case, arbitration: Arbitration, *, reverse: bool = False) -> list[ChatMessage]:
        """The synthesizer's reading of the duel passages ([] when it fails: the margin rule decides)."""
        return self._replies(self.ask_result(**self._duel_request(case, arbitration, reverse)))

    def _score_duel(self, case: _Case, arbitration: Arbitration) -> list[ChatMessage]:
        """The duel read by the reader's support: each answer scored on its own passage; the best is "named".

        The scores go to the trace (`override.duel.support`); a failing scorer names nothing, so the
        margin rule decides (as when a generated reading fails).
        """
        erased = self.duel_reading == "support_pmi"
        support = self._reader(erased=erased)
        key = "pmi" if erased else "support"
        scored = []
        try:
            for candidate, column in arbitration.override.duel:
                out = support.run(query=case.query, answers=[case.answers[candidate]],
                                        documents=[case.docs[column]])
                cost = out.get("trace") or {}
                scored.append({"answer": case.answers[candidate], "passage": case.docs[column].id,
                               "score": float(out[key][0]), "calls": cost.get("calls"),
                               "tokens_evaluated": cost.get("tokens_evaluated")})
        except Exception as exc:  # noqa: BLE001  (the margin rule decides, see above)
            case.degradations.append(degradation("duel", f"support scoring failed: {exc!r}; the margin rule decided"))
            return []
        case.duel_support = scored
        best = max(scored, key=lambda s: s["score"]) if scored else None
        return [ChatMessage.from_assistant(f"Answer: {best['answer']}")] if best else []

    async def _read_duel_async(self, case: _Case, arbitration: Arbitration, *,
                               reverse: bool = False) -> list[ChatMessage]:
        """Async twin of `_read_duel`."""
        return self._replies(await self.ask_result_async(**self._duel_request(case, arbitration, reverse)))

    def _duel_request(self, case: _Case, arbitration: Arbitration, reverse: bool = False) -> dict[str, Any]:
        """`ask_result`'s arguments for the duel: the duel passages (in reverse order to confirm) to the synthesizer."""
        pairs = arbitration.override.duel
        docs = [case.docs[i] for _, i in (pairs[::-1] if reverse else pairs)]
        template = self.duel_prompt_template or SHORT_DRAFT_PROMPT
        return {"prompt": template.format(query=case.query, evidence=render_plain_evidence(docs)), "call": _DUEL,
                "what": "duel", "generator": self.synthesizer, "exclusive": False}

    def _settle_duel(self, case: _Case, arbitration: Arbitration, reply: list[ChatMessage]) -> Arbitration:
        """The duel's answer picks its candidate; without a usable one the margin rule's decision stands."""
        named = _named(reply)
        settled = settle_duel(arbitration, named, case.answers, self.agreement_threshold)
        if settled.override.duel_pick is None:
            case.degradations.append(degradation("duel", "the duel named none of the candidates; the margin rule decided",
                                                 answer=named))
        return settled

    def _confirm_duel(self, case: _Case, arbitration: Arbitration, reply: list[ChatMessage]) -> Arbitration:
        """The reverse-order reading keeps the duel's override only when it names the same challenger
        (the trace's `confirm_answer` shows what it named; a failed call confirms nothing)."""
        named = _named(reply)
        return confirm_duel(arbitration, named, case.answers, self.agreement_threshold)

    @staticmethod
    def _replies(asked: AskedResult) -> list[ChatMessage]:
        """The synthesizer's replies; [] when the call failed (with a warning)."""
        result, exc = asked
        if exc is None and "replies" not in result:
            exc = KeyError("replies")
        if exc is not None:
            logger.warning("CausalArbitrationRanker: the synthesizer failed ({error})", error=repr(exc))
            return []
        return result["replies"]

    def _synthesis_request(self, case: _Case, arbitration: Arbitration) -> dict[str, Any]:
        """`ask_result`'s arguments for the synthesis: the top drafts to the synthesizer."""
        top = arbitration.order[: self.synthesis_top]
        lines = render_drafts([(case.drafts[j].answer, case.drafts[j].rationale, arbitration.psi[j]) for j in top])
        template = self.prompt_template or SYNTHESIS_PROMPT
        return {"prompt": template.format(query=case.query, drafts=lines), "call": _SYNTHESIS, "what": "synthesis",
                "generator": self.synthesizer, "exclusive": False}

    # ------------------------------------------------------------------ outputs
    def _finish(
        self, case: _Case, arbitration: Arbitration, synthesis: list[ChatMessage] | None
    ) -> dict[str, Any]:
        answers = []
        for j in arbitration.order:
            draft = case.drafts[j]
            scores = arbitration.scores[j]
            meta = {
                SCORES_KEY: {**scores, "psi": arbitration.psi[j], "agreement": arbitration.agreements[j]},
                "cfrag_draft_index": draft.index,
                "rationale": draft.rationale,
            }
            answers.append(GeneratedAnswer(data=draft.answer, query=case.query, documents=draft.documents, meta=meta))
        final = answers[0].data
        decision: TraceDecision = arbitration.decision
        if synthesis is not None:
            text = synthesis[0].text if synthesis else ""
            parsed = parse_draft_reply(text or "")
            if parsed["answer"]:
                final = parsed["answer"]
                if parsed["parsed_by"] == "first_line":
                    case.degradations.append(
                        degradation("synthesis", "reply without an 'Answer:' label; its first line was taken")
                    )
                answers.insert(
                    0,
                    GeneratedAnswer(
                        data=final,
                        query=case.query,
                        documents=case.docs,
                        meta={"cfrag_decision": "synthesis", "rationale": parsed["rationale"]},
                    ),
                )
            else:
                logger.warning("CausalArbitrationRanker: no usable synthesis; the best-scoring draft wins")
                decision = "best_score"
                case.degradations.append(degradation("synthesis", "no usable synthesis; the best-scoring draft won"))
        trace = case.trace(arbitration, decision, final)
        duel = (trace.get("override") or {}).get("duel")
        if isinstance(duel, dict) and case.duel_support is not None:
            duel["reading"], duel["support"] = self.duel_reading, case.duel_support
        if case.reader_causal:
            trace["reader_causal"] = case.reader_causal
        return {"answers": answers, "answer": final, "trace": trace}

    def _no_drafts(self, case: _Case) -> dict[str, Any]:
        decision: TraceDecision
        if case.failed and all(d.error == NO_EVIDENCE for d in case.failed):
            decision = "no_evidence"
        else:
            decision = "all_drafts_failed" if case.failed else "no_drafts"
        if case.failed:
            case.degradations.append(
                degradation("drafts", f"every draft failed ({len(case.failed)} of {len(case.failed)})")
            )
        logger.warning("CausalArbitrationRanker: no usable draft ({decision})", decision=decision)
        trace = make_trace(query=case.query, counterfactuals=case.queries[1:], decision=decision, answer="",
                           drafts=[failed_draft_entry(d) for d in case.failed], degradations=case.degradations)
        return {"answers": [], "answer": "", "trace": trace}


class _Case:
    """The inputs of one arbitration, flattened into matrices over the union of the evidence."""

    def __init__(
        self,
        query: str,
        drafts: list[Draft],
        failed: list[Draft],
        queries: list[str],
        details: list[dict[str, Any]] | None = None,
        cited: bool = True,
    ) -> None:
        self.query = query
        self.details = details or []
        self.duel_support: list[dict[str, Any]] | None = None  # the support reading's scores, when held
        self.reader_causal: list[dict[str, Any]] | None = None  # causal_score="reader": per draft, in order
        self.drafts = drafts
        self.failed = failed
        self.queries = queries
        docs: dict[str, Document] = {}
        for d in drafts:
            for doc in d.documents:
                docs.setdefault(doc.id, doc)
        self.docs = list(docs.values())
        position = {doc_id: i for i, doc_id in enumerate(docs)}
        self.evidence = []
        self.evidence_kind = []
        for d in drafts:
            chosen = cited_documents(d) if cited else []
            self.evidence.append([position[doc.id] for doc in (chosen or d.documents)])
            self.evidence_kind.append("cited" if chosen else "subset")
        self.degradations: list[dict[str, Any]] = []
        self.relevance: np.ndarray | None = None
        self.answer_emb = np.zeros((len(drafts), 1))
        self.doc_emb = np.zeros((len(self.docs), 1))
        self.scorer_kind = "cross-encoder"

    @classmethod
    def build(
        cls,
        query: str,
        drafts: list[Draft],
        counterfactuals: list[dict[str, Any]] | None,
        queries: list[str] | None,
        cited: bool = True,
    ) -> _Case:
        if counterfactuals:
            cf = [str(c["text"]) if isinstance(c, dict) else str(c) for c in counterfactuals]
        else:
            cf = list(queries[1:]) if queries else []
        usable = [d for d in drafts if not d.failed]
        details = [dict(c) for c in counterfactuals or [] if isinstance(c, dict)]
        return cls(query, usable, [d for d in drafts if d.failed], [query] + cf, details, cited)

    def baseline(self) -> int | None:
        """Position of the first usable baseline draft (the drafter's baseline, or an `answers` input), if any."""
        return next((j for j, d in enumerate(self.drafts) if d.meta.get(SOURCE_KEY) in BASELINE_SOURCES), None)

    @property
    def answers(self) -> list[str]:
        return [d.answer for d in self.drafts]

    @cached_property
    def mentions(self) -> np.ndarray:
        """Mention(a_j, e_i) of each draft's answer in each document."""
        return mention_matrix(self.answers, [d.content or "" for d in self.docs])

    def use_mentions(self) -> None:
        """E_j := the documents that mention draft j's answer (its own subset when none does)."""
        mentions = self.mentions
        for j in range(len(self.drafts)):
            picked = arb.mention_evidence(mentions[j], self.evidence[j], MENTION_THRESHOLD)
            self.evidence_kind[j] = "mentions" if np.max(mentions[j], initial=0.0) >= MENTION_THRESHOLD else "subset"
            self.evidence[j] = picked

    @property
    def empty(self) -> bool:
        return not self.drafts

    def texts_to_embed(self) -> list[str]:
        """Queries, answers, then the content of documents without a usable embedding."""
        return self.queries + [d.answer for d in self.drafts] + [self.docs[i].content or "" for i in self._unembedded()]

    def _unembedded(self) -> list[int]:
        mask = valid_embedding_mask([d.embedding for d in self.docs])
        return [i for i, ok in enumerate(mask) if not ok]

    def embed(self, vectors: np.ndarray | None) -> None:
        """Fill the answer/document embeddings and, without a scorer, the relevance matrix."""
        nq, na = len(self.queries), len(self.drafts)
        if vectors is None:
            texts = self.queries + [d.answer for d in self.drafts] + [d.content or "" for d in self.docs]
            bow = bag_of_words_matrix(texts)
            q_emb, self.answer_emb, self.doc_emb = bow[:nq], bow[nq : nq + na], bow[nq + na :]
            kind = "lexical"
        else:
            q_emb, self.answer_emb = vectors[:nq], vectors[nq : nq + na]
            missing = self._unembedded()
            dim = vectors.shape[1]
            rows = [
                np.asarray(d.embedding, dtype=float) if i not in missing else None for i, d in enumerate(self.docs)
            ]
            for k, i in enumerate(missing):
                rows[i] = vectors[nq + na + k]
            self.doc_emb = as_matrix([r if r is not None and r.shape[0] == dim else np.zeros(dim) for r in rows])
            kind = "embedding"
        if self.relevance is None:
            self.relevance = cosine_to_relevance(cosine_matrix(q_emb, self.doc_emb)).reshape(nq, len(self.docs))
            self.scorer_kind = kind

    def scores_to_matrix(self, ranked: list[list[Document]]) -> np.ndarray:
        """Relevance matrix from a ranker's outputs, one list per query (scores squashed into [0, 1])."""
        mat = np.zeros((len(self.queries), len(self.docs)))
        position = {doc.id: i for i, doc in enumerate(self.docs)}
        for qi, docs in enumerate(ranked):
            for doc in docs:
                if doc.id in position and doc.score is not None:
                    mat[qi, position[doc.id]] = doc.score
        if mat.size and (mat.min() < 0 or mat.max() > 1):
            mat = 1.0 / (1.0 + np.exp(-mat))
        return mat

    def trace(self, arbitration: Arbitration, decision: TraceDecision, final: str) -> Trace:
        """The JSON-serialisable account of the decision."""
        rel, margins, mentions = self.relevance, arbitration.margins, self.mentions
        clusters: dict[str, list[str]] = {}
        for doc in self.docs:
            if "cfrag_cluster" in doc.meta:
                clusters.setdefault(str(doc.meta["cfrag_cluster"]), []).append(doc.id)
        entries: list[DraftEntry | FailedDraftEntry] = []
        for j, draft in enumerate(self.drafts):
            evidence = [
                EvidenceEntry(
                    id=self.docs[i].id,
                    title=self.docs[i].meta.get("title"),
                    cluster=self.docs[i].meta.get("cfrag_cluster"),
                    relevance=float(rel[0, i]),
                    max_counterfactual_relevance=float(rel[1:, i].max()) if rel.shape[0] > 1 else None,
                    causal_margin=float(margins[i]) if margins is not None else None,
                    mention=float(mentions[j, i]),
                )
                for i in dict.fromkeys(self.evidence[j])
            ]
            entries.append(
                DraftEntry(
                    index=draft.index,
                    answer=draft.answer,
                    rationale=draft.rationale,
                    parsed_by=draft.parsed_by,
                    evidence_kind=self.evidence_kind[j],
                    seen=len(draft.documents),
                    evidence=evidence,
                    scores=arbitration.scores[j],
                    psi=arbitration.psi[j],
                    agreement=arbitration.agreements[j],
                )
            )
        best = arbitration.best
        return make_trace(
            query=self.query,
            counterfactuals=self.queries[1:],
            counterfactual_details=self.details,
            scorer=self.scorer_kind,
            weights=arbitration.weights,
            clusters=clusters,
            drafts=entries + [failed_draft_entry(d) for d in self.failed],
            ranking=[self.drafts[j].index for j in arbitration.order],
            best_draft=self.drafts[best].index,
            agreement=arbitration.agreements[best],
            decision=decision,
            override=self._override_entry(arbitration.override),
            answer=final,
            degradations=self.degradations,
        )

    def _override_entry(self, override: Override | None) -> OverrideEntry | None:
        """The override's account with draft numbers and document ids (positions in `Override`)."""
        if override is None:
            return None
        entry = OverrideEntry(baseline_draft=self.drafts[override.baseline].index, margin=override.margin,
                              gap=override.gap)
        if override.duel:
            entry["duel"] = DuelEntry(
                passages=[self.docs[i].id for _, i in override.duel],
                candidates=[self.drafts[j].index for j, _ in override.duel],
                margin_rule=MarginRuleEntry(winner=self.drafts[override.winner].index, decision=override.decision),
                answer=override.duel_answer or "",
                winner=self.drafts[override.duel_winner].index,
            )
            if override.confirmed is not None:
                entry["duel"]["confirm_answer"] = override.confirm_answer or ""
        return entry


def _named(reply: list[ChatMessage]) -> str:
    """The answer a duel reading named ("" when the call failed or gave no answer)."""
    return parse_draft_reply((reply[0].text or "") if reply else "")["answer"]


def cited_documents(draft: Draft) -> list[Document]:
    """The passages a draft names as key evidence (1-based numbers into what it was shown)."""
    picked = []
    for n in dict.fromkeys(draft.key_evidence):
        if 1 <= n <= len(draft.documents):
            picked.append(draft.documents[n - 1])
    return picked


def as_drafts(
    drafts: list[Draft] | None, answers: list[GeneratedAnswer | ExtractedAnswer] | None
) -> list[Draft]:
    """Drafts from either socket; answers become drafts with their documents as evidence."""
    out = list(drafts or [])
    for i, ans in enumerate(answers or [], start=len(out)):
        if isinstance(ans, ExtractedAnswer):
            documents = [ans.document] if ans.document is not None else []
        else:
            documents = list(ans.documents or [])
        out.append(
            Draft(
                index=i,
                answer=(ans.data or "").strip(),
                rationale=str(ans.meta.get("rationale", "")),
                documents=documents,
                meta={**{k: v for k, v in ans.meta.items() if k != "rationale"}, SOURCE_KEY: "answers"},
            )
        )
    return out


def draft_degradations(usable: list[Draft], failed: list[Draft]) -> list[dict[str, Any]]:
    """Trace entries for failed drafts and for replies that had no "Answer:" label."""
    out = [degradation("drafts", draft.error or "empty answer", index=draft.index) for draft in failed]
    out += [
        degradation("drafts", "reply without an 'Answer:' label; its first line was taken", index=draft.index)
        for draft in usable
        if draft.parsed_by == "first_line"
    ]
    return out
