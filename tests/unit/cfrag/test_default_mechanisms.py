"""The default configuration's mechanisms (docs/method.md), each with deterministic fakes.

- generation arguments reach a generator whose `run` was wrapped (the usage counter's bug);
- the compact expander (one question per line, N asked, repeats and near-paraphrases dropped);
- strata of the original query's passages, whole clusters, decisive-first;
- the answer-only draft prompt is standard RAG's prompt;
- the baseline with a conservative override, and consensus that needs causal support;
- the shipped cf_rag.yml on the Dark Knight corpus.
"""

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from haystack import Document, component
from haystack.components.builders import ChatPromptBuilder
from haystack.dataclasses import ChatMessage, GeneratedAnswer

from haystack_cfrag import load_pipeline
from haystack_cfrag.cfrag.components.arbitration_duel import ArbitrationDuel
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.cfrag.components.multi_query_retriever import PROVENANCE_KEY
from haystack_cfrag.cfrag.components.parallel_draft_generator import ParallelDraftGenerator
from haystack_cfrag.cfrag.components.spectral_stratifier import MARGIN_KEY, SpectralStratifier
from haystack_cfrag.cfrag.dataclasses import Draft
from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.prompts import STANDARD_RAG_TEMPLATE
from haystack_cfrag.common.plumbing import accepts
from haystack_cfrag.common.timing import count_llm_usage
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.registry import resolve
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader

CF_RAG = pipeline_path("cf_rag")
CF_RAG_FAST = pipeline_path("cf_rag_fast")


@component
class RecordingGenerator:
    """Replies `reply` and records the generation_kwargs of every call."""

    def __init__(self, reply: str = "Answer: x") -> None:
        self.reply = reply
        self.kwargs: list[Any] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        self.kwargs.append(generation_kwargs)
        return {"replies": [ChatMessage.from_assistant(self.reply)]}


# ---------------------------------------------------------------- wrapped generators
def test_generation_kwargs_reach_a_generator_wrapped_by_the_usage_counter():
    gen = RecordingGenerator(reply="Who played the villain in The Dark Knight?")
    expander = CounterfactualQueryExpander(chat_generator=gen, n_counterfactuals=1, prompt_style="lines",
                                           similarity_threshold=0.1, generation_kwargs={"max_tokens": 512})
    drafter = ParallelDraftGenerator(chat_generator=gen, generation_kwargs={"max_tokens": 64})
    with count_llm_usage(gen) as usage:
        assert accepts(gen, "generation_kwargs")
        expander.run(query=dk.QUESTION)
        drafter.run(query=dk.QUESTION, subsets=[[Document(content=dk.CAST)]])
    assert gen.kwargs == [{"max_tokens": 512}, {"max_tokens": 64}]
    assert usage.calls == 2


def test_every_signature_check_sees_through_an_instance_wrapper():
    """accepts() is the one place that inspects a component's run; an instance wrapper must not hide it."""

    class Scorer:
        def run(self, query: str, documents: list, top_k: int | None = None) -> dict: ...

    class Retriever:
        def run(self, query_embedding: list, top_k: int = 5, return_embedding: bool = False) -> dict: ...

    scorer, retriever = Scorer(), Retriever()
    scorer.run = lambda *a, **k: None
    retriever.run = lambda *a, **k: None
    assert accepts(scorer, "top_k") and not accepts(scorer, "generation_kwargs")
    assert accepts(retriever, "query_embedding") and accepts(retriever, "return_embedding")


# ---------------------------------------------------------------- compact expander
def test_lines_expander_asks_n_and_drops_repeats_and_paraphrases():
    reply = ("1. Who played the villain in The Dark Knight?\n"
             "2. Who played the villain of The Dark Knight?\n"           # a near-copy of a kept one
             "3. Who is the lead actor of The Dark Knight?\n"            # a paraphrase of the question
             "4. Who directed The Dark Knight?\n"
             "5. Who directed The Dark Knight?")                         # a repeat
    gen = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=reply)
    expander = CounterfactualQueryExpander(chat_generator=gen, text_embedder=HashingTextEmbedder(),
                                           n_counterfactuals=3, prompt_style="lines", similarity_threshold=0.2,
                                           paraphrase_threshold=0.9)
    out = expander.run(query=dk.QUESTION)
    assert "Write 3 questions" in gen.prompts[0] and "JSON" not in gen.prompts[0]
    kept = [c["text"] for c in out["counterfactuals"]]
    assert sorted(kept) == ["Who directed The Dark Knight?", "Who played the villain in The Dark Knight?"]
    assert out["degradations"] and out["degradations"][0]["kept"] == 2
    assert CounterfactualQueryExpander.from_dict(expander.to_dict()).prompt_style == "lines"


# ---------------------------------------------------------------- strata
def _prov(doc: Document, *query_indices: int) -> Document:
    return Document(id=doc.id, content=doc.content, embedding=doc.embedding, meta={
        **doc.meta, PROVENANCE_KEY: [{"query_index": q, "rank": 0, "score": 1.0} for q in query_indices]})


def test_original_pool_whole_clusters_decisive_first():
    docs = HashingDocumentEmbedder().run(dk.documents())["documents"]
    by_id = {d.id: d for d in docs}
    original = [_prov(by_id[i], 0) for i in ("review-0", "review-1", "review-2", "cast", "review-3")]
    cf_only = [_prov(by_id["interview"], 2), _prov(by_id["filler-0"], 3)]
    stratifier = SpectralStratifier(n_clusters=2, n_subsets=2, pool="original", selection="clusters",
                                    order="causal", random_state=0, text_embedder=HashingTextEmbedder())
    queries = [dk.QUESTION, "Who played the villain in The Dark Knight?", "Who directed The Dark Knight?"]
    out = stratifier.run(documents=original + cf_only, query=dk.QUESTION, queries=queries)
    subsets = out["subsets"]
    drafted = {d.id for s in subsets for d in s}
    assert drafted == {d.id for d in original}              # counterfactual-only passages are not drafted from
    assert len(subsets) == 2 and not {d.id for d in subsets[0]} & {d.id for d in subsets[1]}
    margins = {d.id: d.meta[MARGIN_KEY] for d in out["documents"]}
    assert margins["cast"] > max(margins[i] for i in margins if i.startswith("review"))
    assert subsets[0][0].id == "cast"                        # the decisive cluster first, decisive passage first
    for s in subsets:
        assert [margins[d.id] for d in s] == sorted((margins[d.id] for d in s), reverse=True)
    # the paper's sampler over the whole pool still reaches counterfactual-only passages
    paper = SpectralStratifier(n_clusters=2, n_subsets=3, random_state=0, text_embedder=HashingTextEmbedder())
    assert {d.id for s in paper.run(documents=original + cf_only, query=dk.QUESTION)["subsets"] for d in s} & {
        "interview", "filler-0"}


# ---------------------------------------------------------------- the draft prompt
def test_short_draft_prompt_is_standard_rags_prompt():
    docs = [Document(content=t) for t in dk.REVIEWS[:2] + [dk.CAST]]
    gen = KeywordReader(candidates=dk.CANDIDATES)
    ParallelDraftGenerator(chat_generator=gen, prompt="short").run(query=dk.QUESTION, subsets=[docs])
    builder = ChatPromptBuilder(template=[ChatMessage.from_user(STANDARD_RAG_TEMPLATE)])
    expected = builder.run(query=dk.QUESTION, documents=docs)["prompt"][0].text
    assert gen.prompts == [expected]


def test_baseline_is_drafted_first_with_standard_rags_prompt_and_degrades_alone():
    docs = [Document(content=t) for t in dk.REVIEWS[:2] + [dk.CAST]]
    gen = KeywordReader(candidates=dk.CANDIDATES)
    drafter = ParallelDraftGenerator(chat_generator=gen, prompt="app_g")
    drafts = drafter.run(query=dk.QUESTION, subsets=[[docs[2]]], baseline_documents=docs)["drafts"]
    builder = ChatPromptBuilder(template=[ChatMessage.from_user(STANDARD_RAG_TEMPLATE)])
    assert gen.prompts[0] == builder.run(query=dk.QUESTION, documents=docs)["prompt"][0].text
    assert "Rationale:" in gen.prompts[1]                          # the challenger keeps the configured prompt
    assert [(d.index, d.meta.get("cfrag_source")) for d in drafts] == [(1, "baseline"), (0, None)]

    @component
    class FailsOnStandardPrompt:
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
            if "Rationale:" not in messages[0].text:
                raise RuntimeError("model server unavailable")
            return {"replies": [ChatMessage.from_assistant("Answer: Christian Bale")]}

    drafts = ParallelDraftGenerator(chat_generator=FailsOnStandardPrompt()).run(
        query=dk.QUESTION, subsets=[[docs[2]]], baseline_documents=docs)["drafts"]
    assert drafts[0].failed and "model server unavailable" in drafts[0].error and drafts[1].answer == "Christian Bale"
    out = CausalArbitrationRanker(override_margin=0.05).run(query=dk.QUESTION, drafts=drafts)
    assert out["answer"] == "Christian Bale" and out["trace"]["override"] is None   # no baseline left: paper path
    assert any(d["stage"] == "drafts" for d in out["trace"]["degradations"])


# ---------------------------------------------------------------- baseline and override
def _case(baseline: str, challengers: list[tuple[str, list[Document]]], *, duel: bool = False,
          duel_confirm: bool = False, duel_reading: str = "generate", ruling_only: bool = False, **ranker_kwargs):
    """The ranker, then the duel (`duel=True`: it reads with the ranker's synthesizer), as cf_rag.yml wires them
    (`ruling_only`: the ranker's ruling, unread)."""
    docs = HashingDocumentEmbedder().run(dk.documents())["documents"]
    top5 = [d for d in docs if d.id.startswith("review")] + [d for d in docs if d.id == "cast"]
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", **ranker_kwargs)
    reader = ArbitrationDuel(chat_generator=ranker_kwargs.get("synthesizer"), enabled=duel, confirm=duel_confirm,
                             reading=duel_reading)
    drafts = [Draft(index=i, answer=a, documents=ev) for i, (a, ev) in enumerate(challengers)]
    base = GeneratedAnswer(data=baseline, query=dk.QUESTION, documents=top5, meta={})
    queries = [dk.QUESTION, "Who played the villain in The Dark Knight?", "Who directed The Dark Knight?"]
    ruling = ranker.run(query=dk.QUESTION, drafts=drafts, answers=[base], queries=queries)["ruling"]
    if ruling_only:
        return ruling
    return reader.run(ruling=ruling), docs


def test_override_keeps_the_baseline_when_every_challenger_names_the_trap():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    out, _ = _case("Christian Bale", [("Heath Ledger", reviews[:2]), ("Heath Ledger", reviews[2:])],
                   override_margin=0.05)
    assert out["answer"] == "Christian Bale"
    assert out["trace"]["decision"] == "baseline" and out["trace"]["override"]["gap"] < 0.05


def test_override_replaces_the_trap_answer_when_the_challengers_evidence_is_decisive():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=0.05)
    trace = out["trace"]
    assert out["answer"] == "Christian Bale" and trace["decision"] == "override"
    assert trace["override"]["gap"] >= 0.05 and trace["override"]["margin"] == 0.05
    bale = next(d for d in trace["drafts"] if d["answer"] == "Christian Bale")
    assert bale["evidence_kind"] == "mentions" and [e["id"] for e in bale["evidence"]] == ["cast"]
    # a margin the gap does not reach leaves the baseline in place
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=trace["override"]["gap"] + 0.01)
    assert out["answer"] == "Heath Ledger" and out["trace"]["decision"] == "baseline"


def test_the_duel_shows_one_passage_per_answer_so_volume_cannot_outvote_the_decisive_one():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    reader = KeywordReader(candidates=dk.CANDIDATES)   # answers by volume: the trap reader
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=1.0, duel=True, synthesizer=reader)   # a margin no challenger reaches
    duel = out["trace"]["override"]["duel"]
    assert len(duel["passages"]) == 2 and "cast" in duel["passages"]
    assert sum(p.startswith("review") for p in duel["passages"]) == 1       # one of the four, not four
    assert "\n[2] " in reader.prompts[0] and "\n[3] " not in reader.prompts[0]   # exactly two passages shown
    assert out["answer"] == "Christian Bale" and out["trace"]["decision"] == "override"
    assert duel["margin_rule"]["decision"] == "baseline"
    assert duel["winner"] != out["trace"]["override"]["baseline_draft"]
    with pytest.raises(ValueError, match="chat_generator"):
        ArbitrationDuel(enabled=True)


def test_no_duel_against_a_louder_challenger():
    """The duel undoes volume: a challenger named by more passages than the baseline gets no re-reading."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    reader = KeywordReader(candidates=dk.CANDIDATES)
    out, _ = _case("Christian Bale", [("Heath Ledger", reviews)], override_margin=1.0, duel=True, synthesizer=reader)
    assert out["answer"] == "Christian Bale" and out["trace"]["decision"] == "baseline"
    assert "duel" not in out["trace"]["override"] and reader.prompts == []


def test_a_duel_that_names_no_candidate_leaves_the_margin_rule_in_charge():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]])], override_margin=1.0, duel=True,
                   synthesizer=RecordingGenerator(reply="Answer: Gary Oldman"))
    assert out["answer"] == "Heath Ledger" and out["trace"]["decision"] == "baseline"
    assert any(d["stage"] == "duel" for d in out["trace"]["degradations"])


def test_agreeing_challengers_do_not_outvote_the_baseline():
    causal = [0.0, 0.2, 0.2, 0.2]
    winner, decision, gap = arb.override_decision([0.6, 0.5, 0.5, 0.5], causal, [True, False, False, False], 0, 0.05)
    assert (winner, decision) == (0, "baseline") and gap == pytest.approx(-0.1)
    assert arb.override_decision([0.6, 0.6], [0.0, 0.1], [True, True], 0, 0.05) == (0, "baseline", None)


def test_no_override_without_causal_evidence():
    """Coherence alone favours the loud cluster: without counterfactuals the baseline stands."""
    assert arb.override_decision([0.5, 0.7], [None, None], [True, False], 0, 0.05)[:2] == (0, "baseline")
    assert arb.override_decision([0.5, 0.7], [0.1, 0.0], [True, False], 0, 0.05)[:2] == (0, "baseline")
    assert arb.override_decision([0.5, 0.7], [0.0, 0.1], [True, False], 0, 0.05)[:2] == (1, "override")


def test_consensus_on_causally_weak_evidence_does_not_end_arbitration():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    drafts = [Draft(index=i, answer="Heath Ledger", documents=[r]) for i, r in enumerate(reviews[:3])]
    synth = RecordingGenerator(reply="Answer: Christian Bale")
    queries = [dk.QUESTION, "Who played the villain in The Dark Knight?"]
    kwargs = {"text_embedder": HashingTextEmbedder(), "synthesizer": synth}
    paper = CausalArbitrationRanker(**kwargs).run(query=dk.QUESTION, drafts=drafts, queries=queries)
    assert paper["trace"]["decision"] == "consensus" and not synth.kwargs
    gated = CausalArbitrationRanker(consensus_min_causal=0.0, **kwargs).run(
        query=dk.QUESTION, drafts=drafts, queries=queries)
    assert all(d["scores"]["causal"] < 0 for d in gated["trace"]["drafts"])
    assert gated["trace"]["decision"] == "synthesis" and gated["answer"] == "Christian Bale"


def test_new_ranker_options_round_trip_and_are_checked():
    ranker = CausalArbitrationRanker(evidence="mentions", override_margin=0.1, consensus_min_causal=0.0)
    again = CausalArbitrationRanker.from_dict(ranker.to_dict())
    assert again.settings == ranker.settings
    assert (again.settings.evidence, again.settings.override_margin, again.settings.consensus_min_causal) == (
        "mentions", 0.1, 0.0)
    with pytest.raises(ValueError, match="override_margin"):
        CausalArbitrationRanker(override_margin=float("nan"))
    with pytest.raises(ValueError, match="'pool'"):
        SpectralStratifier(pool="everything")
    with pytest.raises(ValueError, match="'prompt'"):
        ParallelDraftGenerator(chat_generator=KeywordReader(candidates=[]), prompt="long")


# ---------------------------------------------------------------- the shipped default
def _default(path: Path, **params):
    emb = HashingTextEmbedder()
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply="\n".join(
        ["Who played the villain in The Dark Knight?", "Who directed The Dark Knight?",
         "Who is the lead actor in Inception?"]))
    overrides = {
        "expander.chat_generator": reader, "expander.text_embedder": emb,
        "expander.similarity_threshold": 0.3, "retriever.query_embedder": emb, "stratifier.text_embedder": emb,
        "drafter.chat_generator": reader, "ranker.synthesizer": reader, "ranker.text_embedder": emb,
        "duel.chat_generator": reader, **params,
    }
    pipe = load_pipeline(path, overrides=overrides, allowed_modules=["tests"])
    store = pipe.get_component("retriever").retriever.document_store
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return pipe, reader


def test_default_pipeline_overrides_standard_rags_trap_answer_on_the_dark_knight():
    pipe, _ = _default(CF_RAG)
    out = pipe.run(resolve(CF_RAG).run_data(query=dk.QUESTION))["duel"]
    trace = out["trace"]
    baseline = next(d for d in trace["drafts"] if d["index"] == trace["override"]["baseline_draft"])
    assert baseline["answer"] == "Heath Ledger"                  # standard RAG's reading falls into the trap
    assert out["answer"] == "Christian Bale" and trace["decision"] == "override"
    assert trace["counterfactuals"] == [] and len(trace["drafts"]) == 1 + 2   # N = 0: baseline, two challengers
    duel = trace["override"]["duel"]
    assert duel["winner"] != baseline["index"]                            # the duel read one passage per answer,
    assert duel["answer"] == duel["confirm_answer"] == "Christian Bale"   # in both orders
    # (this reader's log-probabilities cannot be read: the shipped support reading fell back to generation)
    assert any("read by generation" in d["reason"] for d in trace["degradations"] if d["stage"] == "duel")
    # the paper's N = 3 asks its questions and answers alike
    pipe, _ = _default(CF_RAG, **{"expander.n_counterfactuals": 3})
    asked = pipe.run(resolve(CF_RAG).run_data(query=dk.QUESTION))["duel"]
    assert len(asked["trace"]["counterfactuals"]) == 3 and asked["answer"] == "Christian Bale"
    # the ablation: no duel and a margin no challenger reaches: the default is standard RAG
    pipe, _ = _default(CF_RAG, **{"ranker.override_margin": 1.0, "duel.enabled": False})
    assert pipe.run(resolve(CF_RAG).run_data(query=dk.QUESTION))["duel"]["answer"] == "Heath Ledger"


def test_original_documents_are_what_standard_rag_reads():
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_cfrag.cfrag.components.multi_query_retriever import MultiQueryRetriever

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    emb = HashingTextEmbedder()
    plain = InMemoryEmbeddingRetriever(document_store=store, top_k=5)
    standard = plain.run(query_embedding=emb.run(text=dk.QUESTION)["embedding"])["documents"]
    out = MultiQueryRetriever(retriever=plain, query_embedder=emb).run(
        queries=[dk.QUESTION, "Who directed The Dark Knight?"])
    assert [d.id for d in out["original_documents"]] == [d.id for d in standard]
    assert len(out["documents"]) > len(out["original_documents"])


def test_fast_is_the_default_graph_with_fewer_calls():
    full, fast = (yaml.safe_load(p.read_text(encoding="utf-8")) for p in (CF_RAG, CF_RAG_FAST))
    assert fast["connections"] == full["connections"] and fast["inputs"] == full["inputs"]
    for comp in (fast, full):
        assert comp["components"]["expander"]["init_parameters"]["n_counterfactuals"] == 0
    assert fast["components"]["stratifier"]["init_parameters"]["n_subsets"] == 1
    confirms = [comp["components"]["duel"]["init_parameters"]["confirm"] for comp in (fast, full)]
    assert confirms == [False, True]   # the shipped default confirms its duel; fast is measured without
    for node in ("stratifier", "ranker"):   # the default reads the question's period; fast was measured without
        assert full["components"][node]["init_parameters"].pop("qualifier") == "period"
        assert "qualifier" not in fast["components"][node]["init_parameters"]
    # the default scores its duel by the reader's support; fast was measured with the generated reading
    assert full["components"]["duel"]["init_parameters"].pop("reading") == "support"
    assert "reading" not in fast["components"]["duel"]["init_parameters"]
    for comp in (fast, full):
        comp["components"]["stratifier"]["init_parameters"].pop("n_subsets")
        comp["components"]["duel"]["init_parameters"].pop("confirm")
    assert fast["components"] == full["components"]
    pipe, _ = _default(CF_RAG_FAST)
    trace = pipe.run(resolve(CF_RAG_FAST).run_data(query=dk.QUESTION))["ranker"]["trace"]
    assert trace["counterfactuals"] == [] and len(trace["drafts"]) == 1 + 1


def test_mention_evidence_falls_back_to_the_subset():
    assert arb.mention_evidence(np.array([0.2, 0.4]), [1]) == [1]
    assert arb.mention_evidence(np.array([1.0, 0.4, 0.5]), [1]) == [0, 2]


def test_every_parameter_in_the_table_reaches_a_real_init_parameter_of_the_default_graph():
    import importlib
    import inspect

    from haystack_cfrag.cfrag.parameters import PARAMETERS, ParameterError

    graph = yaml.safe_load(CF_RAG.read_text(encoding="utf-8"))["components"]
    for name, p in PARAMETERS.items():
        module, _, cls = graph[p.component]["type"].rpartition(".")
        init = inspect.signature(getattr(importlib.import_module(module), cls).__init__).parameters
        assert p.target in init, f"{name} → {p.component}.{p.target}"
    assert PARAMETERS["pool"].check("original") == "original" and PARAMETERS["duel"].check(False) is False
    for name, bad in (("pool", "everything"), ("pool", 1), ("duel", "true"), ("duel", 1), ("override_margin", "0.1")):
        with pytest.raises(ParameterError, match=f"'{name}'"):
            PARAMETERS[name].check(bad)


# ---------------------------------------------------------------- the duel's reverse-order confirmation
@component
class FirstPassageReader:
    """A reader with the position bias of a small model: it names the answer of the first passage it reads."""

    def __init__(self, candidates: list[str]) -> None:
        self.candidates = candidates
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        text = messages[0].text
        self.prompts.append(text)
        first = text.split("[1] ", 1)[1].split("\n", 1)[0]
        named = next((c for c in self.candidates if c.split()[-1] in first), "nobody")
        return {"replies": [ChatMessage.from_assistant(f"Answer: {named}")]}


def test_an_override_that_depends_on_passage_order_is_not_confirmed():
    """PopQA's failure: the duel named whatever its first passage said; read in reverse, it names the baseline."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    challengers = [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)]
    reader = FirstPassageReader(dk.CANDIDATES)
    unconfirmed, _ = _case("Heath Ledger", challengers, override_margin=1.0, duel=True, duel_confirm=True,
                           synthesizer=reader)
    duel = unconfirmed["trace"]["override"]["duel"]
    assert len(reader.prompts) == 2                                       # the duel, then the same passages reversed
    first, second = (p.split("Documents:\n", 1)[1].split("Question:")[0] for p in reader.prompts)
    assert first.split("\n")[0][4:] == second.split("\n")[1][4:] and first != second
    assert duel["answer"] != duel["confirm_answer"] == "Heath Ledger"
    assert unconfirmed["answer"] == "Heath Ledger" and unconfirmed["trace"]["decision"] == "baseline"
    assert duel["winner"] == unconfirmed["trace"]["override"]["baseline_draft"]
    # without the confirmation, the same biased reading replaces the baseline
    reader = FirstPassageReader(dk.CANDIDATES)
    unchecked, _ = _case("Heath Ledger", challengers, override_margin=1.0, duel=True, synthesizer=reader)
    assert unchecked["answer"] == duel["answer"] != "Heath Ledger" and len(reader.prompts) == 1
    assert "confirm_answer" not in unchecked["trace"]["override"]["duel"]


@component
class LastPassageReader(FirstPassageReader):
    """The other position bias seen in the 1.5B reader's duels: it names the answer of the last passage it reads."""

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        text = messages[0].text
        self.prompts.append(text)
        passages = [line for line in text.split("Question:")[0].split("\n") if line.startswith("[")]
        named = next((c for c in self.candidates if c.split()[-1] in passages[-1]), "nobody")
        return {"replies": [ChatMessage.from_assistant(f"Answer: {named}")]}


@component
class NamesOne:
    """A reader that names the same answer whatever the order (a decisive passage)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:  # noqa: ARG002
        return {"replies": [ChatMessage.from_assistant(f"Answer: {self.answer}")]}


@pytest.mark.parametrize(("reader", "answer"), [(FirstPassageReader(dk.CANDIDATES), "Heath Ledger"),
                                                (LastPassageReader(dk.CANDIDATES), "Heath Ledger"),
                                                (NamesOne("Christian Bale"), "Christian Bale"),
                                                (NamesOne("Heath Ledger"), "Heath Ledger")],
                         ids=["first-passage-bias", "last-passage-bias", "names-the-challenger", "names-the-baseline"])
def test_a_confirmed_duel_answers_alike_in_either_passage_order(reader, answer):
    """The shipped duel (confirm on): whichever order the ruling proposes (the causal margins' or relevance's,
    so whichever counterfactual questions were asked), a reader biased by position cannot replace the
    baseline, and one that names the challenger in both orders does."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    challengers = [("Christian Bale", [docs["cast"]]), ("Heath Ledger", [docs[f"review-{i}"] for i in range(4)])]
    ruling = _case("Heath Ledger", challengers, override_margin=1.0, synthesizer=reader, ruling_only=True)
    swapped = replace(ruling, arbitration=replace(ruling.arbitration, override=replace(
        ruling.arbitration.override, duel=ruling.arbitration.override.duel[::-1])))
    duel = ArbitrationDuel(chat_generator=reader, confirm=True)
    answers = [duel.run(ruling=r)["answer"] for r in (ruling, swapped)]
    assert answers == [answer, answer]
    unconfirmed = ArbitrationDuel(chat_generator=reader, confirm=False)
    if not isinstance(reader, NamesOne):   # without the confirmation the order picks the answer
        assert {unconfirmed.run(ruling=r)["answer"] for r in (ruling, swapped)} == {"Heath Ledger", "Christian Bale"}


def test_an_override_that_holds_in_either_order_stands():
    """The Dark Knight: a reader that weighs what the passages say names the cast entry in both orders."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    reader = KeywordReader(candidates=dk.CANDIDATES)
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=1.0, duel=True, duel_confirm=True, synthesizer=reader)
    duel = out["trace"]["override"]["duel"]
    assert len(reader.prompts) == 2 and duel["answer"] == duel["confirm_answer"] == "Christian Bale"
    assert out["answer"] == "Christian Bale" and out["trace"]["decision"] == "override"
    with pytest.raises(ValueError, match="confirm"):
        ArbitrationDuel(chat_generator=reader, confirm="yes")


def test_no_confirmation_is_asked_when_the_duel_keeps_the_baseline():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    reader = RecordingGenerator(reply="Answer: Heath Ledger")
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=1.0, duel=True, duel_confirm=True, synthesizer=reader)
    assert len(reader.kwargs) == 1 and out["trace"]["decision"] == "baseline"
    assert "confirm_answer" not in out["trace"]["override"]["duel"]


# ---------------------------------------------------------------- the expander stops after N lines
def test_the_expander_stops_its_reply_after_the_questions_asked_for():
    gen = RecordingGenerator(reply="1. Who played the villain in The Dark Knight?\n2. Who directed The Dark Knight?")
    kwargs = {"chat_generator": gen, "n_counterfactuals": 2, "prompt_style": "lines", "similarity_threshold": 0.1}
    CounterfactualQueryExpander(**kwargs, stop_after_lines=True, generation_kwargs={"stop": ["\n\n"]}).run(
        query=dk.QUESTION)
    CounterfactualQueryExpander(**kwargs, stop_after_lines=True).run(query=dk.QUESTION, n_counterfactuals=3)
    CounterfactualQueryExpander(**kwargs).run(query=dk.QUESTION)
    assert gen.kwargs == [{"stop": ["\n\n", "\n3.", "\n3)"]}, {"stop": ["\n4.", "\n4)"]}, None]
    with pytest.raises(ValueError, match="stop_after_lines"):
        CounterfactualQueryExpander(chat_generator=gen, prompt_style="json", stop_after_lines=True)
    shipped = yaml.safe_load(CF_RAG.read_text())["components"]
    assert shipped["expander"]["init_parameters"]["stop_after_lines"] is True
    assert shipped["duel"]["init_parameters"]["confirm"] is True   # with N = 0: no dev_a loss, 3 of 4 trap wins


class QuestionTermBackend:
    """log P(answer | prompt), made up: −0.5 per answer word the evidence holds near a question term
    ("lead"), −2.0 when it holds it without one, −4.0 when it does not hold it (no model)."""

    name = "fake"

    def warm_up(self) -> None:
        pass

    def __init__(self):
        self.prompts = []

    def answer_logprobs(self, prompt, answer: str, reply_prefix: str = ""):
        from haystack_cfrag.support.backends import AnswerLogprobs

        text = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)  # a turn, or messages
        self.prompts.append((text, answer, reply_prefix))
        evidence = text.lower().split("question:")[0]
        values = []
        for word in answer.lower().split():
            lines = [line for line in evidence.splitlines() if word in line]
            values.append(-4.0 if not lines else (-0.5 if any("lead" in line for line in lines) else -2.0))
        return AnswerLogprobs(tuple(values), len(prompt), 0, 0.0)


class SupportReader(KeywordReader):
    """The trap reader (answers by volume) whose log-probabilities the support scorer can read."""

    def support_backend(self):
        self.backend = QuestionTermBackend()
        return self.backend


@pytest.mark.parametrize("reading", ["support", "support_pmi", "support_reply"])
def test_the_duel_read_by_the_readers_support_picks_the_decisive_passages_answer_without_a_generation(reading):
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    reader = SupportReader(candidates=dk.CANDIDATES)
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=1.0, duel=True, synthesizer=reader, duel_reading=reading)
    duel = out["trace"]["override"]["duel"]
    assert out["answer"] == "Christian Bale" and out["trace"]["decision"] == "override"
    assert reader.prompts == []  # scored, not generated
    assert duel["reading"] == reading and {s["answer"] for s in duel["support"]} == {"Christian Bale", "Heath Ledger"}
    scores = {s["answer"]: s["score"] for s in duel["support"]}
    assert scores["Christian Bale"] > scores["Heath Ledger"]


def test_the_reply_reading_scores_each_answer_under_the_drafts_own_prompt_over_its_passage():
    """"support_reply": the prompt a draft from that one passage was read with (standard RAG's, `SHORT_DRAFT_PROMPT`),
    the answer after "Answer:", so the reader's kept state of that draft serves (integration: test_support_scorer)."""
    from haystack_cfrag.cfrag.components.parallel_draft_generator import ParallelDraftGenerator

    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reader = SupportReader(candidates=dk.CANDIDATES)
    reviews = [docs[f"review-{i}"] for i in range(4)]
    _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)], override_margin=1.0,
          duel=True, synthesizer=reader, duel_reading="support_reply")
    scored = {answer: (text, prefix) for text, answer, prefix in reader.backend.prompts}
    drafter = ParallelDraftGenerator(chat_generator=reader, prompt="short")
    assert scored[" Christian Bale"] == (drafter._prompt(dk.QUESTION, [docs["cast"]]), "Answer:")
    assert set(scored) == {" Christian Bale", " Heath Ledger"}


class FailingBackend(QuestionTermBackend):
    """A backend whose scoring breaks mid-duel (not a reader without log-probabilities)."""

    def answer_logprobs(self, prompt: str, answer: str):
        raise RuntimeError("the scorer's model went away")


class NoLogprobsServerBackend(QuestionTermBackend):
    """A server that answers but returns no prompt log-probabilities (llama.cpp's server)."""

    def answer_logprobs(self, prompt: str, answer: str):
        from haystack_cfrag.support.backend_common import NoPromptLogprobsError

        raise NoPromptLogprobsError("the server returned no prompt log-probabilities")


@pytest.mark.parametrize("reader_kind", ["no backend", "no prompt log-probabilities"])
def test_a_scored_duel_whose_reader_gives_no_log_probabilities_is_read_by_generation(reader_kind, caplog):
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reader = RecordingGenerator(reply="Answer: Christian Bale")
    if reader_kind != "no backend":
        reader.support_backend = NoLogprobsServerBackend
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]])], override_margin=1.0, duel=True,
                   synthesizer=reader, duel_reading="support")
    assert out["answer"] == "Christian Bale" and out["trace"]["decision"] == "override"  # the generated reading
    assert len(reader.kwargs) == 1 and "support" not in out["trace"]["override"]["duel"]
    assert any(d["stage"] == "duel" and "read by generation" in d["reason"] for d in out["trace"]["degradations"])
    assert "log-probabilities" in caplog.text


def test_the_shipped_duel_is_scored_by_the_readers_support_where_it_can_be_read():
    pipe, _ = _default(CF_RAG, **{"duel.chat_generator": SupportReader(candidates=dk.CANDIDATES)})
    out = pipe.run(resolve(CF_RAG).run_data(query=dk.QUESTION))["duel"]
    duel = out["trace"]["override"]["duel"]
    assert out["answer"] == "Christian Bale" and out["trace"]["decision"] == "override"
    assert duel["reading"] == "support" and "confirm_answer" not in duel
    scores = {s["answer"]: s["score"] for s in duel["support"]}
    assert scores["Christian Bale"] > scores["Heath Ledger"]
    assert not [d for d in out["trace"]["degradations"] if d["stage"] == "duel"]


def test_a_duel_whose_support_scoring_fails_leaves_the_margin_rule_in_charge():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reader = RecordingGenerator(reply="Answer: Christian Bale")
    reader.support_backend = FailingBackend
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]])], override_margin=1.0, duel=True,
                   synthesizer=reader, duel_reading="support")
    assert out["answer"] == "Heath Ledger" and out["trace"]["decision"] == "baseline"  # nothing named
    assert reader.kwargs == []  # no generation either
    assert any(d["stage"] == "duel" and "support scoring failed" in d["reason"] for d in out["trace"]["degradations"])
    with pytest.raises(ValueError, match="reading"):
        ArbitrationDuel(chat_generator=RecordingGenerator(reply=""), reading="vote")


# ---------------------------------------------------------------- φ_causal from the reader's counterfactual test
class RoleBackend:
    """log P(answer | prompt), made up: per answer word −0.5 when an evidence line holds it with the
    question's role word (lead / villain / directed), −3.0 when a line holds it without, −4.0 when none does."""

    name = "fake"

    def warm_up(self) -> None:
        pass

    def answer_logprobs(self, prompt: str, answer: str):
        from haystack_cfrag.support.backends import AnswerLogprobs

        evidence, question = prompt.lower().rsplit("question:", 1)
        role = next((r for r in ("lead", "villain", "directed") if r in question), "")
        values = []
        for word in answer.lower().split():
            lines = [line for line in evidence.splitlines() if word in line]
            values.append(-4.0 if not lines else (-0.5 if role and any(role in line for line in lines) else -3.0))
        return AnswerLogprobs(tuple(values), len(prompt), 0, 0.0)


class RoleReader(KeywordReader):
    def support_backend(self):
        return RoleBackend()


@pytest.mark.parametrize("duel_reading", ["generate", "support_pmi"])
def test_the_readers_counterfactual_test_is_phi_causal_and_lets_the_decisive_draft_override(duel_reading):
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    reader = RoleReader(candidates=dk.CANDIDATES)
    out, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]]), ("Heath Ledger", reviews)],
                   override_margin=0.05, synthesizer=reader, causal_score="reader", duel_reading=duel_reading)
    trace = out["trace"]
    tests = {d["draft"]: d for d in trace["reader_causal"]}
    by_answer = {d["answer"]: d for d in trace["drafts"]}
    bale, ledger = by_answer["Christian Bale"], by_answer["Heath Ledger"]
    # the cast passage makes "Christian Bale" specific to the lead question (−0.5 against −3.0 under
    # the villain and director questions); the reviews make "Heath Ledger" the villain's answer
    assert tests[bale["index"]]["margin"] == pytest.approx(2.5) and tests[bale["index"]]["passages"] == ["cast"]
    assert tests[ledger["index"]]["margin"] == pytest.approx(-2.5) and len(tests[ledger["index"]]["passages"]) == 2
    assert bale["scores"]["causal"] == pytest.approx(np.tanh(2.5)) and ledger["scores"]["causal"] < 0
    assert out["answer"] == "Christian Bale" and trace["decision"] == "override"
    assert reader.prompts == []  # scored, not generated: (1 + 2 questions) scorings per distinct draft
    assert all(t["calls"] == 3 for t in tests.values())  # no evidence-erased scoring, whatever the duel reads


def test_the_readers_test_needs_counterfactuals_a_reader_and_a_working_scorer():
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(),
                                     synthesizer=RoleReader(candidates=dk.CANDIDATES), causal_score="reader",
                                     override_margin=0.05)
    base = GeneratedAnswer(data="Heath Ledger", query=dk.QUESTION, documents=[docs["review-0"]], meta={})
    out = ranker.run(query=dk.QUESTION, drafts=[Draft(index=0, answer="Christian Bale", documents=[docs["cast"]])],
                     answers=[base], queries=[dk.QUESTION])
    assert "reader_causal" not in out["trace"] and out["trace"]["decision"] == "baseline"  # nothing to contrast
    # a reader without log-probabilities: the bi-encoder's φ_causal stands, and the trace says so
    bi, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]])], override_margin=0.05)
    failed, _ = _case("Heath Ledger", [("Christian Bale", [docs["cast"]])], override_margin=0.05,
                      synthesizer=RecordingGenerator(reply="Answer: x"), causal_score="reader")
    assert "reader_causal" not in failed["trace"] and failed["answer"] == bi["answer"]
    causal = [d["scores"]["causal"] for d in bi["trace"]["drafts"]]
    assert [d["scores"]["causal"] for d in failed["trace"]["drafts"]] == causal
    assert any(d["stage"] == "causal_score" for d in failed["trace"]["degradations"])
    with pytest.raises(ValueError, match="causal_score"):
        CausalArbitrationRanker(causal_score="oracle")
    with pytest.raises(ValueError, match="synthesizer"):
        CausalArbitrationRanker(causal_score="reader")
    ranker = CausalArbitrationRanker(synthesizer=RoleReader(candidates=dk.CANDIDATES), causal_score="reader")
    assert CausalArbitrationRanker.from_dict(ranker.to_dict()).settings.causal_score == "reader"
