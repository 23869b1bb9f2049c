"""CausalArbitrationRanker: score drafts on coherence and causal discrimination (4.2.2–4.2.3, Alg. 1).

The Haystack side: s(q, e) from the scorer or the embeddings, the reader's φ_causal, the synthesis
call and the outputs. The case's matrices: `cfrag.case`; the settings: `cfrag.settings`; the decision:
the pure `cfrag.math.algorithm.arbitrate`; the answers and trace: `cfrag.ruling`. A duel the ruling
proposes is read by the next component, `ArbitrationDuel`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ExtractedAnswer, GeneratedAnswer

from haystack_cfrag.cfrag.case import ArbitrationCase, as_drafts, draft_degradations
from haystack_cfrag.cfrag.dataclasses import Draft
from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.math.algorithm import Arbitration, arbitrate
from haystack_cfrag.cfrag.prompts import SYNTHESIS_FIELDS, SYNTHESIS_PROMPT, check_template, render_drafts
from haystack_cfrag.cfrag.ruling import SCORES_KEY, Ruling
from haystack_cfrag.cfrag.settings import CAUSAL_SCORES, EVIDENCE_MODES, RankerSettings
from haystack_cfrag.common.asking import AsksChatGenerator
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
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.vectors import cosine_matrix

READER_CAUSAL_PASSAGES = 2
"""Evidence passages of a draft the reader's counterfactual test reads (its first cited ones)."""
MOVED_TO_DUEL = ("duel", "duel_confirm", "duel_reading", "duel_prompt_template")
"""Init parameters of the single-component ranker before 0.2, now `ArbitrationDuel`'s (see `from_dict`)."""

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
    `synthesizer` writes a final answer from the top drafts ("synthesis"), or without one the
    best draft wins ("best_score"). Outputs `answers` (GeneratedAnswer per draft, best first,
    with `meta["cfrag_scores"]`), `answer`, a JSON-serialisable `trace`, and the `ruling` for
    the next component.

    **Baseline and conservative override** (`override_margin` set; the shipped `cf_rag`): the
    drafter's baseline draft, or else the first answer on the `answers` socket, is the baseline.
    It stands unless the best-scoring draft that disagrees with it has Ψ at least
    `override_margin` above it and a higher φ_causal ("override"); otherwise "baseline". Where
    fewer passages name the challenger's answer than the baseline's, the ruling proposes a duel,
    which `ArbitrationDuel` reads (connect `ruling` to it and take its outputs); this component's
    own outputs are then the margin rule's.

    `trace["degradations"]` lists what gave less than asked (the upstream `degradations`, failed
    drafts, replies without an "Answer:" label, a failed synthesis) as {"stage", "reason", …}.
    When no draft is usable the answer is "" and `trace["decision"]` says why: "no_evidence",
    "all_drafts_failed" or "no_drafts".

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag import CausalArbitrationRanker
    from haystack_cfrag.cfrag.dataclasses import Draft

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
        synthesizer: ChatGenerator | None = None,
        causal_weight: float = 0.4,
        weights: dict[str, float] | None = None,
        agreement_threshold: float = 0.8,
        consensus_threshold: float = 2 / 3,
        coherence_weights: tuple[float, float] | list[float] = (0.5, 0.5),
        synthesis_top: int = 3,
        evidence: str = "cited",
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        override_margin: float | None = None,
        consensus_min_causal: float | None = None,
        causal_score: str = "biencoder",
        qualifier: str = "none",
        prompt_template: str | None = None,
    ) -> None:
        """
        :param text_embedder: embeds queries and answers (and documents without embeddings).
        :param scorer: a Haystack ranker giving s(q, e) (e.g. a cross-encoder); None = embedding cosine.
        :param synthesizer: optional ChatGenerator that writes the final answer without consensus.
        :param causal_weight: λ in [0, 1] (0 = ablation "w/o causal verification").
        :param weights: {"coherence", "causal", "confidence", "specificity"} ≥ 0, not all zero;
            overrides λ. None = (1 − λ, λ, 0, 0).
        :param agreement_threshold: θ_agree in (0, 1], token F1 at which two answers agree.
        :param consensus_threshold: share of agreeing drafts in (0, 1] that makes a consensus.
        :param coherence_weights: (λ1, λ2) of φ_coh, non-negative.
        :param synthesis_top: drafts shown to the synthesizer (≥ 1).
        :param evidence: E_j of each draft (EVIDENCE_MODES): "cited" = the passages the draft names
            as key evidence (App. G), else its whole subset; "subset" = always its whole subset;
            "mentions" = the passages of all drafts' evidence that mention its answer (Mention ≥ 0.5),
            else its subset.
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param override_margin: None = paper (consensus, synthesis or best Ψ). A number in [-1, 1]:
            the baseline is replaced only by a disagreeing draft whose Ψ exceeds its own by this margin.
        :param consensus_min_causal: None = paper. A number in [-1, 1]: a consensus ends arbitration
            only when the best draft's φ_causal is at least this (when φ_causal exists).
        :param causal_score: φ_causal's source (CAUSAL_SCORES): "biencoder" (the paper's, from s(q, e))
            or "reader" (the synthesizer's log-probabilities: each distinct answer scored on its draft's
            first READER_CAUSAL_PASSAGES evidence passages under q and every q'). Needs `synthesizer`;
            a failing scoring falls back to the bi-encoder's.
        :param qualifier: what decides the answer besides the topic (`settings.QUALIFIERS`): "none", or
            "period": when the question states one ("from 1964 to 1965"), the duel reads each answer's
            passage that best dates it to that period, first, and also challenges an answer as often named
            as the baseline's whose passage dates the period better (`common.qualifiers`; no model call).
        :param prompt_template: replaces the synthesis prompt (None = `prompts.SYNTHESIS_PROMPT`): a
            `str.format` string with the placeholders {query} and {drafts}.
        """
        check_template(prompt_template, SYNTHESIS_FIELDS, component="CausalArbitrationRanker")
        self.settings = RankerSettings(
            causal_weight=causal_weight, weights=weights, agreement_threshold=agreement_threshold,
            consensus_threshold=consensus_threshold, coherence_weights=tuple(coherence_weights),
            synthesis_top=synthesis_top, evidence=evidence, max_query_chars=max_query_chars,
            override_margin=override_margin, consensus_min_causal=consensus_min_causal, causal_score=causal_score,
            qualifier=qualifier,
        )
        if causal_score == "reader" and synthesizer is None:
            raise ValueError("'causal_score' \"reader\" needs a 'synthesizer' "
                             "(the reader whose log-probabilities score).")
        self.text_embedder = text_embedder
        self.scorer = scorer
        self.synthesizer = synthesizer
        self.prompt_template = prompt_template
        self._support: Any = None  # the reader's support scorer over the synthesizer, made on first use

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected components."""
        return default_to_dict(
            self,
            text_embedder=serialize_component(self.text_embedder),
            scorer=serialize_component(self.scorer),
            synthesizer=serialize_component(self.synthesizer),
            **self.settings.to_dict(),
            prompt_template=self.prompt_template,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CausalArbitrationRanker:
        """Deserialise, including the injected components.

        A file written for the single-component ranker (before 0.2) names the duel here; it is
        refused with one line that says what to change.
        """
        moved = [key for key in MOVED_TO_DUEL if key in data.get("init_parameters", {})]
        if moved:
            raise ValueError(
                f"CausalArbitrationRanker: {', '.join(moved)} moved to ArbitrationDuel "
                "(haystack_cfrag.cfrag.components.arbitration_duel): add a 'duel' component with them, "
                "connect ranker.ruling to duel.ruling and take answer/answers/trace from it (as pipelines/cf_rag.yml)."
            )
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    # ------------------------------------------------------------------ run
    @component.output_types(answers=list[GeneratedAnswer], answer=str, trace=dict[str, Any], ruling=Ruling)
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
        :returns: `answers` (best first), `answer`, `trace`, and the `ruling` (for `ArbitrationDuel`).
        """
        case = self._case(query, drafts, answers, counterfactuals, queries, degradations)
        if case.empty:
            return self._outputs(Ruling(case, None))
        case.relevance = self._relevance(case)
        case.embed(embed_texts(self.text_embedder, case.texts_to_embed()) if self.text_embedder is not None else None)
        if self.settings.causal_score == "reader":
            self._reader_causal(case)
        arbitration = self._arbitrate(case, causal_weight)
        synthesis = None
        if arbitration.decision == "synthesis":  # a failed call falls back to the best draft (Ruling.outputs)
            synthesis = self.replies(self.ask_result(**self._synthesis_request(case, arbitration)), "synthesizer")
        return self._outputs(Ruling(case, arbitration, self.settings.agreement_threshold, synthesis))

    @component.output_types(answers=list[GeneratedAnswer], answer=str, trace=dict[str, Any], ruling=Ruling)
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
            return self._outputs(Ruling(case, None))
        case.relevance = await self._relevance_async(case)
        embedded = await embed_texts_async(self.text_embedder, case.texts_to_embed()) if self.text_embedder else None
        case.embed(embedded)
        if self.settings.causal_score == "reader":
            await asyncio.to_thread(self._reader_causal, case)
        arbitration = self._arbitrate(case, causal_weight)
        synthesis = None
        if arbitration.decision == "synthesis":
            synthesis = self.replies(await self.ask_result_async(**self._synthesis_request(case, arbitration)),
                                    "synthesizer")
        return self._outputs(Ruling(case, arbitration, self.settings.agreement_threshold, synthesis))

    @staticmethod
    def _outputs(ruling: Ruling) -> dict[str, Any]:
        return {**ruling.outputs, "ruling": ruling}

    def _case(
        self,
        query: str,
        drafts: list[Draft] | None,
        answers: list[GeneratedAnswer | ExtractedAnswer] | None,
        counterfactuals: list[dict[str, Any]] | None,
        queries: list[str] | None,
        degradations: list[dict[str, Any]] | None,
    ) -> ArbitrationCase:
        query = prepare_query(query, "CausalArbitrationRanker", self.settings.max_query_chars)
        case = ArbitrationCase.build(query, as_drafts(drafts, answers), counterfactuals, queries,
                                     cited=self.settings.evidence == "cited")
        case.degradations = [dict(d) for d in degradations or []] + draft_degradations(case.drafts, case.failed)
        return case

    # ------------------------------------------------------------------ relevance s(q, e)
    def _relevance(self, case: ArbitrationCase) -> np.ndarray | None:
        if self.scorer is None:
            return None  # computed from embeddings in case.embed
        kwargs = self._scorer_kwargs(case)
        return case.scores_to_matrix([self.scorer.run(query=q, **kwargs)["documents"] for q in case.queries])

    async def _relevance_async(self, case: ArbitrationCase) -> np.ndarray | None:
        if self.scorer is None:
            return None
        kwargs = self._scorer_kwargs(case)
        results = [await run_async_or_thread(self.scorer, query=q, **kwargs) for q in case.queries]
        return case.scores_to_matrix([r["documents"] for r in results])

    def _scorer_kwargs(self, case: ArbitrationCase) -> dict[str, Any]:
        """Every document must come back scored: ask rankers that take top_k for all of them."""
        kwargs: dict[str, Any] = {"documents": case.docs}
        if accepts(self.scorer, "top_k"):
            kwargs["top_k"] = len(case.docs)
        return kwargs

    # ------------------------------------------------------------------ decision
    def _arbitrate(self, case: ArbitrationCase, causal_weight: float | None) -> Arbitration:
        """Algorithm 1 over the case's matrices (`cfrag.math.algorithm.arbitrate`)."""
        if self.settings.evidence == "mentions":
            case.use_mentions()
        return arbitrate(
            case.answers,
            case.relevance,
            cosine_matrix(case.answer_emb, case.doc_emb),
            case.mentions,
            case.evidence,
            self.settings.rules(causal_weight=causal_weight, synthesis=self.synthesizer is not None),
            indices=[d.index for d in case.drafts],
            token_logprobs=[d.token_logprobs for d in case.drafts],
            baseline=case.baseline(),
            causal_scores=[entry.get("phi_causal") for entry in case.reader_causal] if case.reader_causal else None,
            dating=case.dating() if self.settings.qualifier == "period" else None,
        )

    def _reader_causal(self, case: ArbitrationCase) -> None:
        """The reader's counterfactual test per draft (`case.reader_causal`), one scoring run per distinct answer.

        Without counterfactuals there is nothing to contrast (φ_causal stays missing, as with the
        bi-encoder); a failing scorer leaves the bi-encoder's φ_causal, with a degradation.
        """
        cfs = case.queries[1:]
        if not cfs:
            return
        if self._support is None:
            from haystack_cfrag.support.scorer import ReaderSupportScorer  # noqa: PLC0415

            self._support = ReaderSupportScorer(chat_generator=self.synthesizer, erased_contrast=False)
        tested: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}  # (answer, passages) -> its test
        entries: list[dict[str, Any]] = []
        try:
            for j, draft in enumerate(case.drafts):
                docs = [case.docs[i] for i in dict.fromkeys(case.evidence[j])][:READER_CAUSAL_PASSAGES]
                key = (draft.answer.strip().lower(), tuple(d.id for d in docs))
                if key[0] and key not in tested:
                    out = self._support.run(query=case.query, answers=[draft.answer], documents=docs,
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

    # ------------------------------------------------------------------ synthesis
    def _synthesis_request(self, case: ArbitrationCase, arbitration: Arbitration) -> dict[str, Any]:
        """`ask_result`'s arguments for the synthesis: the top drafts to the synthesizer."""
        top = arbitration.order[: self.settings.synthesis_top]
        lines = render_drafts([(case.drafts[j].answer, case.drafts[j].rationale, arbitration.psi[j]) for j in top])
        template = self.prompt_template or SYNTHESIS_PROMPT
        return {"prompt": template.format(query=case.query, drafts=lines), "call": _SYNTHESIS, "what": "synthesis",
                "generator": self.synthesizer, "exclusive": False}


__all__ = ["CAUSAL_SCORES", "EVIDENCE_MODES", "MOVED_TO_DUEL", "SCORES_KEY", "CausalArbitrationRanker"]
