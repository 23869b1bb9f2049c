"""The YAML pipelines end to end with deterministic fakes, round-trips and the allowlist."""


import pytest
import yaml
from haystack import Pipeline

from haystack_cfrag import load_pipeline
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.pipelines.loading import PipelineRefusedError, pipeline_from_dict
from haystack_cfrag.registry import resolve
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader, OutsideReader

CF_RAG = pipeline_path("cf_rag_paper")  # the paper's configuration; the default: test_default_mechanisms.py
STANDARD_RAG = pipeline_path("standard_rag")


def fakes():
    return HashingTextEmbedder(), KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)


def cf_rag(**params):
    emb, reader = fakes()
    overrides = {
        "expander.chat_generator": reader,
        "expander.text_embedder": emb,
        # the hashing fake is a bag-of-words: its cosines are lower than a sentence encoder's
        "expander.similarity_threshold": 0.3,
        "retriever.query_embedder": emb,
        "stratifier.text_embedder": emb,
        "drafter.chat_generator": reader,
        "ranker.text_embedder": emb,
        **params,
    }
    pipe = load_pipeline(CF_RAG, overrides=overrides, allowed_modules=["tests"])
    pipe.get_component("retriever").retriever.document_store.write_documents(
        HashingDocumentEmbedder().run(dk.documents())["documents"]
    )
    return pipe


def standard_rag():
    emb, reader = fakes()
    pipe = load_pipeline(STANDARD_RAG, overrides={"query_embedder": emb, "generator": reader},
                         allowed_modules=["tests"])
    pipe.get_component("retriever").document_store.write_documents(
        HashingDocumentEmbedder().run(dk.documents())["documents"]
    )
    return pipe


def ask(pipe, path):
    return pipe.run(resolve(path).run_data(query=dk.QUESTION))


def test_dark_knight_standard_rag_is_outvoted_by_volume():
    out = ask(standard_rag(), STANDARD_RAG)
    answer = out["answer_builder"]["answers"][0]
    assert answer.data == "Heath Ledger"
    assert sum(d.id.startswith("review") for d in answer.documents) == 4


def test_dark_knight_cf_rag_escapes_the_trap():
    out = ask(cf_rag(), CF_RAG)["duel"]
    trace = out["trace"]
    assert out["answer"] == "Christian Bale"
    assert [c for c in trace["counterfactuals"]] and "Who played the villain in The Dark Knight?" in trace[
        "counterfactuals"
    ]
    evidence = {e["id"]: e for d in trace["drafts"] for e in d["evidence"]}
    reviews = [e for i, e in evidence.items() if i.startswith("review")]
    assert reviews and all(e["causal_margin"] < 0 for e in reviews)  # the reviews lose on φ_causal
    assert evidence["cast"]["causal_margin"] > 0 and evidence["cast"]["causal_margin"] > max(
        e["causal_margin"] for e in reviews
    )
    assert trace["clusters"] and trace["decision"] in {"consensus", "best_score", "synthesis"}
    for d in trace["drafts"]:
        assert set(d["scores"]) == {"coherence", "causal", "confidence", "specificity"} and "psi" in d
    ledger = [d for d in trace["drafts"] if d["answer"] == "Heath Ledger"]
    bale = [d for d in trace["drafts"] if d["answer"] == "Christian Bale"]
    assert ledger, "with this seed one draft is written from the loud review cluster"
    assert all(lg["scores"]["causal"] < 0 < b["scores"]["causal"] for lg in ledger for b in bale)
    assert all(lg["psi"] < b["psi"] for lg in ledger for b in bale)


def test_dark_knight_over_seeds_and_evidence_readings():
    """How often CF-RAG escapes the trap over 10 sampler seeds, per reading of E_j (standard RAG: never).

    "cited" (default) scores each draft on the passages it cites; "subset" on everything it was
    shown, which every cluster reaches (n_m ≥ 1), so the loud cluster dilutes every draft.
    """
    wins = {}
    for evidence in ("cited", "subset"):
        wins[evidence] = sum(
            ask(cf_rag(**{"stratifier.random_state": seed, "ranker.evidence": evidence}), CF_RAG)["duel"]["answer"]
            == "Christian Bale"
            for seed in range(10)
        )
    print(f"\nChristian Bale in {wins['cited']}/10 seeds (cited), {wins['subset']}/10 (subset)")
    assert wins["cited"] == 10
    assert wins["subset"] < wins["cited"]


@pytest.mark.parametrize(
    ("override", "check"),
    [
        ({"expander.n_counterfactuals": 0}, lambda t: t["counterfactuals"] == [] and t["weights"]["causal"] == 0),
        ({"stratifier.n_clusters": 1}, lambda t: set(t["clusters"]) == {"0"}),
        ({"ranker.causal_weight": 0.0}, lambda t: t["weights"]["causal"] == 0 and t["weights"]["coherence"] == 1),
        ({"stratifier.n_subsets": 1, "drafter.max_workers": 1}, lambda t: len(t["drafts"]) == 1),
    ],
    ids=["N=0 w/o counterfactual", "K=1 w/o division", "lambda=0 w/o causal", "M=1"],
)
def test_ablations_run_through_the_pipeline(override, check):
    out = ask(cf_rag(**override), CF_RAG)["duel"]
    assert out["answer"]
    assert check(out["trace"])


def test_same_seed_same_answer_and_trace():
    a = ask(cf_rag(), CF_RAG)["duel"]
    b = ask(cf_rag(), CF_RAG)["duel"]
    assert a["trace"] == b["trace"]


@pytest.mark.parametrize("builder", [cf_rag, standard_rag], ids=["cf_rag", "standard_rag"])
def test_pipeline_roundtrip(builder):
    pipe = builder()
    data = pipe.to_dict()
    again = pipeline_from_dict(data, allowed_modules=["tests"])
    assert canonical(again.to_dict()) == canonical(data)
    # plain Haystack loading works too, given the allowlist for this package and the fakes
    again_yaml = Pipeline.loads(pipe.dumps(), **_allow(["haystack_cfrag", "tests"]))
    assert canonical(again_yaml.to_dict()) == canonical(data)


def canonical(data):
    return {**data, "connections": sorted(data["connections"], key=lambda c: (c["sender"], c["receiver"]))}


def _allow(modules):
    import inspect

    return {"allowed_modules": modules} if "allowed_modules" in inspect.signature(Pipeline.loads).parameters else {}


def test_yaml_files_load_without_overrides_checks_names_only():
    # every class the shipped files name is inside the trusted prefixes
    for path in (CF_RAG, STANDARD_RAG):
        data = yaml.safe_load(path.read_text())
        from haystack_cfrag.pipelines.loading import TRUSTED_PREFIXES, check_classes

        check_classes(data, TRUSTED_PREFIXES)


def test_module_outside_the_allowlist_is_refused(tmp_path):
    data = yaml.safe_load(CF_RAG.read_text())
    data["components"]["drafter"]["init_parameters"]["chat_generator"] = {
        "type": "evil_module.Generator",
        "init_parameters": {},
    }
    path = tmp_path / "evil.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PipelineRefusedError, match="evil_module"):
        load_pipeline(path)
    # and a class outside the allowlist (a test fake's subclass in `tests`) is refused unless the caller names it
    with pytest.raises(PipelineRefusedError, match="tests.fakes"):
        load_pipeline(CF_RAG, overrides={"drafter.chat_generator": OutsideReader(candidates=dk.CANDIDATES)})


def test_unknown_override_target():
    with pytest.raises(KeyError, match="nope"):
        load_pipeline(CF_RAG, overrides={"nope.chat_generator": 1})


@pytest.mark.parametrize("name", ["standard_rag", "closed_book"])
@pytest.mark.parametrize(("reply", "expected"), [
    ("Answer: Tulsa\nRationale: the band's page says so", "Tulsa"),
    ("Tulsa", "Tulsa"),  # small models often leave the label out: the baseline must not score that as empty
    ("\nRationale: first\nAnswer: Tulsa", "Tulsa"),
])
def test_baseline_answer_builders_read_labelled_and_bare_replies(name, reply, expected):
    from haystack.components.builders import AnswerBuilder
    from haystack.dataclasses import ChatMessage

    params = yaml.safe_load(pipeline_path(name).read_text())["components"]["answer_builder"]
    builder = AnswerBuilder(**params["init_parameters"])
    out = builder.run(query="q", replies=[ChatMessage.from_assistant(reply)])
    assert out["answers"][0].data == expected


def test_an_injected_reader_configured_as_a_node_is_that_node_in_each_pipeline():
    """One model and one KV cache per pipeline: CDF-RAG's checker and its scorer read with the generator
    node, so the scorer finds the prompt the node just answered; a second pipeline sharing the pool
    gets its own node, not the first pipeline's."""
    from haystack_cfrag.cdf_rag.components import HallucinationChecker
    from haystack_cfrag.pipelines.loading import share_injected_components
    from haystack_cfrag.support import ReaderSupportScorer
    from haystack_cfrag.testing import MockChatGenerator

    def build():
        pipe = Pipeline()
        pipe.add_component("generator", MockChatGenerator())
        pipe.add_component("checker", HallucinationChecker(
            support_scorer=ReaderSupportScorer(chat_generator=MockChatGenerator()), chat_generator=MockChatGenerator()))
        pipe.connect("generator.replies", "checker.replies")
        return pipe

    pool: dict = {}
    first, second = build(), build()
    for pipe in (first, second):
        share_injected_components(pipe, pool)
        node, checker = pipe.get_component("generator"), pipe.get_component("checker")
        assert checker.chat_generator is node and checker.support_scorer.chat_generator is node
    assert first.get_component("generator") is not second.get_component("generator")
    assert list(pool.values()).count(first.get_component("generator")) == 1  # the first node joined the pool
    lone = Pipeline()  # no node of that configuration: the injected parts share the pool's instance
    lone.add_component("checker", HallucinationChecker(
        support_scorer=ReaderSupportScorer(chat_generator=MockChatGenerator()), chat_generator=MockChatGenerator()))
    share_injected_components(lone, pool)
    assert lone.get_component("checker").chat_generator is first.get_component("generator")
