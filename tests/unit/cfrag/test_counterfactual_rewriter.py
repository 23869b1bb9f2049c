"""CounterfactualRewriter and its rules: counterfactual questions with no model call (issue 61)."""

import asyncio

import pytest
import yaml
from haystack import Pipeline

from haystack_cfrag import CounterfactualRewriter
from haystack_cfrag.cfrag.math.rewrites import rewrite_candidates
from haystack_cfrag.loading import pipeline_from_dict
from tests.fakes import HashingTextEmbedder


@pytest.mark.parametrize(
    ("query", "expected", "kind"),
    [
        ("What is the largest desert in the world?", "What is the smallest desert in the world?", "categorical"),
        ("What is the smallest ocean?", "What is the largest ocean?", "categorical"),
        ("Who directed the film Kong?", "Who produced the film Kong?", "role"),
        ("In which city was the author of Ulysses born?", "In which city was the illustrator of Ulysses born?",
         "role"),
        ("In which city was Pope Francis born?", "In which city was Pope Francis buried?", "role"),
        ("What is the capital of Peru?", "What is the largest city of Peru?", "role"),
        ("Who won the Tour de France in 1903?", "Who won the Tour de France in 1893?", "temporal"),
        ("Who won the 67th Academy Award?", "Who won the 66th Academy Award?", "temporal"),
        ("Who won the 1st Academy Award?", "Who won the 2nd Academy Award?", "temporal"),
        ("Who won the 12th Academy Award?", "Who won the 11th Academy Award?", "temporal"),
    ],
)
def test_each_rule_writes_its_counterfactual(query, expected, kind):
    found = {c["question"]: c["type"] for c in rewrite_candidates(query)}
    assert found.get(expected) == kind


def test_rules_keep_case_and_rewrite_a_phrase_once():
    out = [c["question"] for c in rewrite_candidates("Largest CAPITAL of Peru?")]
    assert out[0] == "Smallest CAPITAL of Peru?"
    assert "Largest LARGEST CITY of Peru?" in out
    # "largest city" is one slot: its "largest" is not also flipped to "smallest"
    assert all("smallest city" not in q.lower() for q in rewrite_candidates("What is the largest city of Peru?")
               for q in [q["question"]])


def test_no_rule_no_candidate_and_never_the_query_itself():
    assert rewrite_candidates("Are Cryptanthus and Gagea both a genus?") == []
    for query in ("Who directed Kong?", "What is the first and last city?"):
        questions = [c["question"] for c in rewrite_candidates(query)]
        assert query not in questions and len(questions) == len(set(questions))
        assert all(c["answer_hint"] == "" for c in rewrite_candidates(query))


def test_per_slot_caps_the_siblings():
    assert len(rewrite_candidates("Who directed Kong?", per_slot=1)) == 1
    assert len(rewrite_candidates("Who directed Kong?", per_slot=3)) == 3


def test_rewriter_outputs_the_expanders_shape_and_never_calls_a_model():
    rewriter = CounterfactualRewriter(n_counterfactuals=2, similarity_threshold=0.2)
    out = rewriter.run(query="  Who directed the 1993 film Kong?  ")
    assert out["queries"][0] == "Who directed the 1993 film Kong?"
    assert len(out["queries"]) == 3 and out["degradations"] == []
    assert [c["text"] for c in out["counterfactuals"]] == out["queries"][1:]
    assert {c["type"] for c in out["counterfactuals"]} <= {"role", "temporal"}
    assert all(0.2 < c["similarity"] < 0.97 for c in out["counterfactuals"])


def test_rewriter_with_an_embedder_and_async_agree():
    rewriter = CounterfactualRewriter(text_embedder=HashingTextEmbedder(), n_counterfactuals=3, similarity_threshold=0.1)
    sync = rewriter.run(query="Who was the first president of France?")
    assert asyncio.run(rewriter.run_async(query="Who was the first president of France?")) == sync
    assert len(sync["counterfactuals"]) >= 1


def test_no_rule_degrades_to_the_original_query():
    out = CounterfactualRewriter(n_counterfactuals=3).run(query="Are Cryptanthus and Gagea both a genus?")
    assert out["queries"] == ["Are Cryptanthus and Gagea both a genus?"]
    assert out["degradations"][0]["reason"] == "no rewrite rule matched the question"


def test_n_zero_and_override():
    rewriter = CounterfactualRewriter(n_counterfactuals=3, similarity_threshold=0.2)
    assert rewriter.run(query="Who directed Kong?", n_counterfactuals=0) == {
        "queries": ["Who directed Kong?"], "counterfactuals": [], "degradations": []}
    assert len(rewriter.run(query="Who directed Kong?", n_counterfactuals=1)["counterfactuals"]) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n_counterfactuals": 11}, "n_counterfactuals"), ({"per_slot": 0}, "per_slot"),
     ({"similarity_threshold": 0.0}, "similarity_threshold"), ({"info_weights": [0, 0, 0]}, "info_weights")],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CounterfactualRewriter(**kwargs)


def test_empty_query_is_refused():
    with pytest.raises(ValueError, match="CounterfactualRewriter"):
        CounterfactualRewriter().run(query="   ")


def test_round_trip_in_a_pipeline():
    pipe = Pipeline()
    pipe.add_component("expander", CounterfactualRewriter(text_embedder=HashingTextEmbedder(), per_slot=3))
    again = pipeline_from_dict(yaml.safe_load(pipe.dumps()), allowed_modules=["tests"])
    component = again.get_component("expander")
    assert isinstance(component, CounterfactualRewriter)
    assert component.per_slot == 3 and isinstance(component.text_embedder, HashingTextEmbedder)
    query = "What is the highest mountain in the Alps?"
    assert again.run({"expander": {"query": query}})["expander"] == pipe.run({"expander": {"query": query}})["expander"]
