"""The embedded default models, loaded for real, and the shipped pipelines end to end."""

import json

import numpy as np

from haystack_cfrag import models
from haystack_cfrag.adapters import factories
from haystack_cfrag.cfrag.trace import duel_readings
from haystack_cfrag.pipelines import pipeline_path

QUESTION = "Who is the lead actor in The Dark Knight?"
DEMO_QUESTION = "Which is the tallest mountain on Earth when measured from base to summit?"  # the Makefile's


def test_embedded_embedder_gives_unit_vectors():
    emb = factories.text_embedder()
    emb.warm_up()
    vec = np.asarray(emb.run(text=QUESTION)["embedding"])
    assert vec.shape == (384,)
    assert abs(np.linalg.norm(vec) - 1.0) < 1e-3


def test_gguf_is_assembled_and_hash_checked():
    path = models.resolve_model(models.EMBEDDED_LLM)
    spec = models.GGUF_MODELS[models.EMBEDDED_LLM]
    assert path.endswith(spec.name)
    assert models.sha256_of(__import__("pathlib").Path(path)) == spec.sha256


def test_demo_store_holds_the_dark_knight_case(runtime):
    ids = {d.id for d in runtime.store.filter_documents()}
    assert {"dark-knight-0", "dark-knight-1", "dark-knight-interview"} <= ids
    assert {f"mauna-kea-{i}" for i in range(5)} <= ids   # the README demo's case (make demo)
    assert runtime.store.count_documents() >= 300


def test_readme_demo_standard_rag_falls_for_the_trap_and_cf_rag_does_not(runtime):
    """`make demo`'s question, as the README shows it: four Everest passages outvote the one on Mauna Kea."""
    standard = runtime.ask(pipeline_path("standard_rag"), DEMO_QUESTION)
    result = runtime.ask(pipeline_path("cf_rag"), DEMO_QUESTION)
    assert "everest" in standard.answer.lower()
    assert "mauna kea" in result.answer.lower() and result.trace["decision"] == "override"


def test_default_cf_rag_end_to_end_on_real_models(runtime):
    """The default: standard RAG's answer as the baseline, challengers from the original query's strata."""
    result = runtime.ask(pipeline_path("cf_rag"), QUESTION)
    trace = result.trace
    assert result.answer.strip() and trace["decision"] in {"baseline", "override"}
    baseline = [d for d in trace["drafts"] if d["index"] == trace["override"]["baseline_draft"]]
    assert len(baseline) == 1 and baseline[0]["answer"]
    assert trace["counterfactuals"] == []                     # N = 0 as shipped: no expander call
    # baseline + challengers, the duel's readings
    assert result.llm["calls"] == len(trace["drafts"]) + duel_readings(trace)
    assert result.llm["prompt_tokens"] > 0 and result.llm["completion_tokens"] > 0
    json.dumps(result.as_dict())
    print("\ncf_rag:", result.answer, "|", trace["decision"], trace["override"], "|", result.stages)


def test_paper_cf_rag_end_to_end_on_real_models(runtime):
    result = runtime.ask(pipeline_path("cf_rag_paper"), QUESTION)
    trace = result.trace
    assert result.answer.strip()
    assert trace["counterfactuals"], "the real model should produce counterfactuals"
    assert trace["clusters"]
    assert trace["decision"] in {"consensus", "best_score", "synthesis"}
    drafts = [d for d in trace["drafts"] if not d.get("error")]
    assert drafts
    for d in drafts:
        scores = d["scores"]
        assert all(scores[k] is not None for k in ("coherence", "causal", "specificity"))
        assert d["evidence"] and all(e["causal_margin"] is not None for e in d["evidence"])
    assert result.llm["calls"] == 1 + len(trace["drafts"])
    assert result.llm["prompt_tokens"] > 0 and result.llm["completion_tokens"] > 0
    json.dumps(result.as_dict())
    print("\ncf_rag_paper:", result.answer, "|", trace["decision"], "|", result.stages)


def test_standard_pipeline_answers(runtime):
    std = runtime.ask(pipeline_path("standard_rag"), QUESTION)
    assert std.answer.strip() and std.llm["calls"] == 1 and len(std.documents) == 5
    print("\nstandard_rag:", std.answer, std.seconds)


def test_fast_pipeline_uses_llama_cpp_token_logprobs(runtime):
    """With logprobs on, llama.cpp's token log-probabilities reach φ_conf (cf_rag_fast: a baseline, one challenger)."""
    from haystack_cfrag.runtime import Runtime

    rt = Runtime(store=runtime.store, max_tokens=160, logprobs=True)
    fast = rt.ask(pipeline_path("cf_rag_fast"), QUESTION)
    assert fast.answer.strip() and len(fast.trace["drafts"]) == 2
    assert fast.llm["calls"] == 2 + duel_readings(fast.trace)  # baseline, a challenger (and the duel); N=0: no expander
    challenger = next(d for d in fast.trace["drafts"] if d["index"] != fast.trace["override"]["baseline_draft"])
    conf = challenger["scores"]["confidence"]
    assert conf is not None and 0 < conf <= 1
    assert fast.trace["weights"]["confidence"] == 0.0  # present, but weight 0 by default (Algorithm 1)
    print("\ncf_rag_fast:", fast.answer, "φ_conf", round(conf, 3), fast.seconds)


def test_shipped_yaml_runs_as_it_is(runtime):
    """load_pipeline on the file itself: embedded:… names resolved, models shared, nothing swapped."""
    from haystack_cfrag import load_pipeline
    from haystack_cfrag.registry import resolve

    path = pipeline_path("cf_rag_fast")
    pipe = load_pipeline(path)
    expander, drafter = pipe.get_component("expander"), pipe.get_component("drafter")
    assert expander.chat_generator is drafter.chat_generator  # one llama instance
    pipe.get_component("retriever").retriever.document_store.write_documents(runtime.store.filter_documents())
    pipe.warm_up()
    out = pipe.run(resolve(path).run_data(query=QUESTION))["duel"]
    assert out["answer"].strip() and out["trace"]["drafts"]
    print("\ncf_rag_fast.yml as shipped:", out["answer"])
