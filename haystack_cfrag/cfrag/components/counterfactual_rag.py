"""CounterfactualRAG: the six components as one SuperComponent that stands where a generator stands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from haystack import Document, Pipeline, default_from_dict, default_to_dict, super_component
from haystack.components.joiners import DocumentJoiner
from haystack.dataclasses import GeneratedAnswer

from haystack_cfrag.cfrag.components.arbitration_duel import ArbitrationDuel
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.cfrag.components.embedding_deduplicator import EmbeddingDeduplicator
from haystack_cfrag.cfrag.components.multi_query_retriever import MultiQueryRetriever
from haystack_cfrag.cfrag.components.parallel_draft_generator import ParallelDraftGenerator
from haystack_cfrag.cfrag.components.spectral_stratifier import SpectralStratifier
from haystack_cfrag.cfrag.wiring import (
    BASELINE_EDGE,
    DEDUP,
    DRAFTER,
    DUEL,
    EXPANDER,
    OUTPUTS,
    QUERY_INPUTS,
    RANKER,
    RETRIEVER,
    STRATIFIER,
    Edge,
    cf_rag_connections,
)
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, close_all, close_all_async
from haystack_cfrag.common.protocols import ChatGenerator, DocumentEmbedder, Retriever, TextEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component


def _pipeline_class() -> type:
    """Haystack 3's Pipeline runs async itself; on 2.x, SuperComponent.run_async needs an AsyncPipeline."""
    if hasattr(Pipeline, "run_async"):
        return Pipeline
    from haystack import AsyncPipeline  # noqa: PLC0415

    return AsyncPipeline


PAPER: dict[str, Any] = {
    "n_counterfactuals": 3, "similarity_threshold": 0.7, "n_clusters": 4, "n_subsets": 3, "baseline": False,
    "override_margin": None, "prompt_style": "json", "paraphrase_threshold": 0.97, "pool": "all",
    "selection": "sampled", "order": "relevance", "draft_prompt": "app_g", "evidence": "cited", "duel": False,
    "duel_confirm": False, "stop_after_lines": False,
}
"""The paper's configuration (shipped as `cf_rag_paper`): `CounterfactualRAG(**PAPER, chat_generator=…)`."""

_JOINER = "joiner"  # not in the shipped graph: your `documents` and the retriever's meet here

_INJECTED = ("chat_generator", "retriever", "text_embedder", "document_embedder", "scorer", "synthesizer")


@super_component
class CounterfactualRAG:
    """
    CF-RAG in one component: `query` (and optionally your retrieved `documents`) → `answers`, `answer`, `trace`.

    **Full** (a `retriever`): the retriever runs for the query and every counterfactual, then dedup → stratify →
    draft → arbitrate; it reads your store, never writes it. **Verify-only** (no `retriever`): pass your
    retrieved `documents`; with both, the counterfactuals' results are joined to yours.

    The defaults are the shipped `cf_rag` (docs/method.md): a baseline draft (standard RAG's answer), M drafts
    over whole clusters, and a challenger replaces the baseline only by `override_margin` with a higher
    φ_causal or by a confirmed `duel`; N = 0 (set `n_counterfactuals` to ask them). `CounterfactualRAG(**PAPER)`
    is the paper's configuration. Cost: N > 0 adds one call and N retrievals; 1 + M draft calls; a synthesis
    only when drafts disagree, a synthesizer is set and no baseline decides.

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.cfrag.components.counterfactual_rag import CounterfactualRAG

    rag = CounterfactualRAG(chat_generator=MockChatGenerator(responses="Answer: Christian Bale"),
                            n_counterfactuals=0, n_subsets=1, random_state=0)   # N=0: the baseline stands
    docs = [Document(content="Christian Bale stars as Bruce Wayne, the lead of The Dark Knight.",
                     embedding=[1.0, 0.0])]
    print(rag.run(query="Who is the lead actor in The Dark Knight?", documents=docs)["answer"])
    ```
    """

    _INJECTED = _INJECTED  # the loader shares identical injected parts through this tuple

    def __init__(  # noqa: PLR0913  (one keyword per paper parameter)
        self,
        *,
        chat_generator: ChatGenerator,
        retriever: Retriever | None = None,
        text_embedder: TextEmbedder | None = None,
        document_embedder: DocumentEmbedder | None = None,
        scorer: Any | None = None,  # a ranker: Haystack declares no ranker protocol
        synthesizer: ChatGenerator | None = None,
        n_counterfactuals: int = 0,
        similarity_threshold: float = 0.5,
        top_k: int | None = None,
        dedup_threshold: float = 0.95,
        n_clusters: int = 2,
        n_subsets: int = 2,
        sampling_ratio: float = 0.5,
        anchors: int = 0,
        causal_weight: float = 0.4,
        agreement_threshold: float = 0.8,
        baseline: bool = True,
        override_margin: float | None = 1.0,
        prompt_style: str = "lines",
        paraphrase_threshold: float = 0.9,
        pool: str = "original",
        selection: str = "clusters",
        order: str = "causal",
        draft_prompt: str = "short",
        evidence: str = "mentions",
        duel: bool = True,
        duel_confirm: bool = True,
        stop_after_lines: bool = True,
        max_workers: int = 4,
        random_state: int | None = None,
        timeout_s: float | None = None,
        time_budget_s: float | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        raise_on_failure: bool = False,
        counterfactual_prompt_template: str | None = None,
        draft_prompt_template: str | None = None,
        synthesis_prompt_template: str | None = None,
        duel_prompt_template: str | None = None,
    ) -> None:
        """
        :param chat_generator: writes counterfactuals and drafts (any Haystack ChatGenerator).
        :param retriever: your retriever; None = verify-only (pass `documents` at run time).
        :param text_embedder: query/answer encoder; required for an embedding retriever.
        :param document_embedder: embeds documents that arrive without embeddings.
        :param scorer: a ranker (e.g. cross-encoder) for s(q, e); None = embedding cosine.
        :param synthesizer: ChatGenerator for the final answer when drafts disagree.
        :param max_workers: concurrent retrievals and drafts (1 for in-process models that are not thread-safe).
        :param timeout_s: seconds one LLM call (counterfactuals, each draft) may take before it is abandoned.
        :param time_budget_s: seconds for all drafts together; drafts not done in time are dropped.
        :param max_query_chars: longer queries are cut to this many characters, with a warning.
        :param raise_on_failure: raise on a failed LLM call instead of degrading (in `trace["degradations"]`).
        :param baseline: draft standard RAG's answer first and let the ranker protect it (see `override_margin`).
        :param duel: settle a disagreement with the baseline by one passage per answer, read by the
            `synthesizer` (else `chat_generator`).
        :param duel_confirm: a duel wins only when a reverse-order reading names the same answer.
        :param stop_after_lines: the expander's `stop_after_lines`.
        :param counterfactual_prompt_template: the expander's `prompt_template` (None = its built-in prompt).
        :param draft_prompt_template: the drafter's `prompt_template` (the baseline keeps standard RAG's).
        :param synthesis_prompt_template: the ranker's `prompt_template`, for the synthesis.
        :param duel_prompt_template: the duel's `prompt_template`.
        Other parameters: the six components' (N, θ_sim, θ_dedup, K, M, ρ, λ, θ_agree; `draft_prompt` is the
        drafter's `prompt`); docs/method.md.
        """
        self.chat_generator = chat_generator
        self.retriever = retriever
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self.scorer = scorer
        self.synthesizer = synthesizer
        self.n_counterfactuals = n_counterfactuals
        self.similarity_threshold = similarity_threshold
        self.top_k = top_k
        self.dedup_threshold = dedup_threshold
        self.n_clusters = n_clusters
        self.n_subsets = n_subsets
        self.sampling_ratio = sampling_ratio
        self.anchors = anchors
        self.causal_weight = causal_weight
        self.agreement_threshold = agreement_threshold
        self.max_workers = max_workers
        self.random_state = random_state
        self.timeout_s = timeout_s
        self.time_budget_s = time_budget_s
        self.max_query_chars = max_query_chars
        self.raise_on_failure = raise_on_failure
        self.baseline = baseline
        self.override_margin = override_margin
        self.prompt_style = prompt_style
        self.paraphrase_threshold = paraphrase_threshold
        self.pool = pool
        self.selection = selection
        self.order = order
        self.draft_prompt = draft_prompt
        self.evidence = evidence
        self.duel = duel
        self.duel_confirm = duel_confirm
        self.stop_after_lines = stop_after_lines
        self.counterfactual_prompt_template = counterfactual_prompt_template
        self.draft_prompt_template = draft_prompt_template
        self.synthesis_prompt_template = synthesis_prompt_template
        self.duel_prompt_template = duel_prompt_template
        self.pipeline = self._build()
        documents = [f"{_JOINER}.documents"]
        if baseline and retriever is None:
            documents.append(BASELINE_EDGE[1])  # verify-only: your retrieval is the baseline's
        self.input_mapping = {"query": list(QUERY_INPUTS), "documents": documents}
        self.output_mapping = {socket: name for name, socket in OUTPUTS.items()}

    def _build(self) -> Pipeline:
        pipe = _pipeline_class()()
        pipe.add_component(
            EXPANDER,
            CounterfactualQueryExpander(
                chat_generator=self.chat_generator,
                text_embedder=self.text_embedder,
                n_counterfactuals=self.n_counterfactuals,
                similarity_threshold=self.similarity_threshold,
                paraphrase_threshold=self.paraphrase_threshold,
                prompt_style=self.prompt_style,
                stop_after_lines=self.stop_after_lines and self.prompt_style == "lines",
                timeout_s=self.timeout_s,
                max_query_chars=self.max_query_chars,
                raise_on_failure=self.raise_on_failure,
                prompt_template=self.counterfactual_prompt_template,
            ),
        )
        pipe.add_component(_JOINER, DocumentJoiner(join_mode="concatenate", sort_by_score=False))
        pipe.add_component(
            DEDUP, EmbeddingDeduplicator(document_embedder=self.document_embedder, threshold=self.dedup_threshold)
        )
        pipe.add_component(
            STRATIFIER,
            SpectralStratifier(n_clusters=self.n_clusters, n_subsets=self.n_subsets,
                               sampling_ratio=self.sampling_ratio, anchors=self.anchors,
                               random_state=self.random_state, pool=self.pool, selection=self.selection,
                               order=self.order, text_embedder=self.text_embedder,
                               document_embedder=self.document_embedder,
                               max_query_chars=self.max_query_chars),
        )
        pipe.add_component(
            DRAFTER,
            ParallelDraftGenerator(chat_generator=self.chat_generator, max_workers=self.max_workers,
                                   timeout_s=self.timeout_s, time_budget_s=self.time_budget_s,
                                   max_query_chars=self.max_query_chars,
                                   raise_on_failure=self.raise_on_failure, prompt=self.draft_prompt,
                                   prompt_template=self.draft_prompt_template),
        )
        pipe.add_component(
            RANKER,
            CausalArbitrationRanker(
                text_embedder=self.text_embedder,
                scorer=self.scorer,
                causal_weight=self.causal_weight,
                agreement_threshold=self.agreement_threshold,
                synthesizer=self.synthesizer or (self.chat_generator if self.duel and self.baseline else None),
                max_query_chars=self.max_query_chars,
                evidence=self.evidence,
                override_margin=self.override_margin if self.baseline else None,
                prompt_template=self.synthesis_prompt_template,
            ),
        )
        pipe.add_component(
            DUEL,
            ArbitrationDuel(chat_generator=self.synthesizer or self.chat_generator,
                            enabled=self.duel and self.baseline, confirm=self.duel_confirm,
                            prompt_template=self.duel_prompt_template),
        )
        if self.retriever is not None:
            pipe.add_component(
                RETRIEVER,
                MultiQueryRetriever(retriever=self.retriever, query_embedder=self.text_embedder,
                                    top_k=self.top_k, max_workers=self.max_workers),
            )
        for sender, receiver in self._connections():
            pipe.connect(sender, receiver)
        return pipe

    def _connections(self) -> list[Edge]:
        """The shipped graph (`cfrag.wiring`) for this configuration, with the joiner in front of `dedup.documents`
        (verify-only drops the retriever's edges)."""
        joined = f"{_JOINER}.documents"
        edges = [(joined, f"{DEDUP}.documents")]
        for sender, receiver in cf_rag_connections(baseline=self.baseline, causal_order=self.order == "causal"):
            if receiver == f"{DEDUP}.documents":
                receiver = joined
            if self.retriever is not None or RETRIEVER not in (sender.split(".")[0], receiver.split(".")[0]):
                edges.append((sender, receiver))
        return edges

    def close(self) -> None:
        """Release what its components hold: each inner component's `close`, then the injected ones' directly."""
        close_all(*self._holders())

    async def close_async(self) -> None:
        """Async twin of `close`: `close_async` where a component has one."""
        await close_all_async(*self._holders())

    def _holders(self) -> list[Any]:
        return [instance for _, instance in self.pipeline.walk()] + [getattr(self, key) for key in _INJECTED]

    if TYPE_CHECKING:

        def run(self, *, query: str, documents: list[Document] | None = None) -> dict[str, Any]:  # noqa: D102
            ...

        def warm_up(self) -> None:  # noqa: D102
            ...

        answers: list[GeneratedAnswer]

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the injected components, like any Haystack component."""
        return default_to_dict(self, **{key: serialize_component(getattr(self, key)) for key in _INJECTED},
                               n_counterfactuals=self.n_counterfactuals,
                               similarity_threshold=self.similarity_threshold, top_k=self.top_k,
                               dedup_threshold=self.dedup_threshold, n_clusters=self.n_clusters,
                               n_subsets=self.n_subsets, sampling_ratio=self.sampling_ratio,
                               anchors=self.anchors, causal_weight=self.causal_weight,
                               agreement_threshold=self.agreement_threshold, max_workers=self.max_workers,
                               random_state=self.random_state, timeout_s=self.timeout_s,
                               time_budget_s=self.time_budget_s, max_query_chars=self.max_query_chars,
                               raise_on_failure=self.raise_on_failure, baseline=self.baseline,
                               override_margin=self.override_margin, prompt_style=self.prompt_style,
                               paraphrase_threshold=self.paraphrase_threshold, pool=self.pool,
                               selection=self.selection, order=self.order, draft_prompt=self.draft_prompt,
                               evidence=self.evidence, duel=self.duel, duel_confirm=self.duel_confirm,
                               stop_after_lines=self.stop_after_lines,
                               counterfactual_prompt_template=self.counterfactual_prompt_template,
                               draft_prompt_template=self.draft_prompt_template,
                               synthesis_prompt_template=self.synthesis_prompt_template,
                               duel_prompt_template=self.duel_prompt_template)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CounterfactualRAG:
        """Deserialise with the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, _INJECTED))
