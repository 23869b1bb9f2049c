"""The embedded default models, loaded for real, and the shipped pipelines end to end."""

import json

import numpy as np

from haystack_cfrag import models
from haystack_cfrag.runtime import pipeline_path

QUESTION = "Who is the lead actor in The Dark Knight?"


def test_embedded_embedder_gives_unit_vectors():
    emb = models.text_embedder()
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
    assert runtime.store.count_documents() >= 300


def test_cf_rag_end_to_end_on_real_models(runtime):
    result = runtime.ask(pipeline_path("cf_rag"), QUESTION)
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
        assert scores["confidence"] is not None, "llama.cpp token log-probabilities should reach φ_conf"
        assert 0 < scores["confidence"] <= 1
        assert d["evidence"] and all(e["causal_margin"] is not None for e in d["evidence"])
    assert result.llm["calls"] == 1 + len(trace["drafts"])
    assert result.llm["prompt_tokens"] > 0 and result.llm["completion_tokens"] > 0
    json.dumps(result.as_dict())
    print("\ncf_rag:", result.answer, "|", trace["decision"], "|", result.stages)


def test_standard_and_fast_pipelines_answer(runtime):
    std = runtime.ask(pipeline_path("standard_rag"), QUESTION)
    assert std.answer.strip() and std.llm["calls"] == 1 and len(std.documents) == 5
    fast = runtime.ask(pipeline_path("cf_rag_fast"), QUESTION)
    assert fast.answer.strip() and len(fast.trace["drafts"]) == 1
    assert fast.llm["calls"] == 2
    print("\nstandard_rag:", std.answer, "| cf_rag_fast:", fast.answer)
