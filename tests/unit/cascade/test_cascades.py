"""The four cascades (`*_auto`): standard RAG answers alone behind a closed gate; an open gate runs the method
on standard RAG's passages and answer; the registry serves them with the gate's threshold as a request parameter."""

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.common.parameters import ParameterError
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder

CASCADES = {"cf_rag_auto": "cf_rag", "cer_auto": "cer", "causal_rag_auto": "causal_rag", "cdf_rag_auto": "cdf_rag"}
CLOSED, OPEN = 1.0, 0.0  # P(the method wins) never reaches 1 (a logistic model's output) and always reaches 0


@pytest.fixture(scope="module")
def runtime():
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                   allowed_modules=["tests"], graph_extractor="llm", graph_cache=None)


@pytest.mark.parametrize("name", CASCADES)
def test_a_closed_gate_answers_as_standard_rag_with_one_call(runtime, name):
    standard = runtime.ask("standard_rag", dk.QUESTION)
    out = runtime.ask(name, dk.QUESTION, {"gate_threshold": CLOSED})
    assert out.answer == standard.answer and out.llm["calls"] == 1
    assert out.gate["escalated"] is False and out.gate["because"].startswith("P(the method wins)")
    assert "< 1.00" in out.gate["because"]
    assert out.trace is None  # the method did not run


@pytest.mark.parametrize("name", CASCADES)
def test_an_open_gate_runs_the_method_after_standard_rag(runtime, name):
    out = runtime.ask(name, dk.QUESTION, {"gate_threshold": OPEN})
    assert out.gate["escalated"] is True and "≥ 0.00" in out.gate["because"]
    assert out.trace and out.answer and out.llm["calls"] > 1


def test_cf_rag_auto_reuses_standard_rags_answer_and_passages(runtime):
    """Its baseline draft is standard RAG's reply (no regeneration), its original query is not retrieved again:
    one call fewer than standard RAG followed by cf_rag on the same question."""
    standard = runtime.ask("standard_rag", dk.QUESTION)
    always = runtime.ask("cf_rag", dk.QUESTION)
    cascade = runtime.ask("cf_rag_auto", dk.QUESTION, {"gate_threshold": OPEN})
    assert cascade.llm["calls"] == standard.llm["calls"] + always.llm["calls"] - 1
    baseline = max(cascade.trace["drafts"], key=lambda d: d["index"])  # the baseline's index: after the strata
    assert baseline["answer"] == standard.answer


def test_cer_auto_measures_standard_rags_answer_without_drafting_it(runtime):
    always = runtime.ask("cer", dk.QUESTION)
    cascade = runtime.ask("cer_auto", dk.QUESTION, {"gate_threshold": OPEN})
    assert cascade.trace["answer"] == runtime.ask("standard_rag", dk.QUESTION).answer
    assert cascade.llm["calls"] == always.llm["calls"]  # standard RAG's call stands for the selector's draft


@pytest.mark.parametrize(("name", "family"), CASCADES.items())
def test_the_registry_serves_each_cascade_with_the_gate_as_a_request_parameter(name, family):
    entry = registry.REGISTRY[name]
    assert entry.family == family and entry.served and name in registry.served_pipelines()
    assert "gate_threshold" in entry.request_parameters
    resolved = registry.resolve(name)
    assert resolved.check({"gate_threshold": 0.5}, request=True) == {"gate_threshold": 0.5}
    with pytest.raises(ParameterError, match="'gate_threshold' must be a number in \\[0, 1\\]"):
        resolved.check({"gate_threshold": -0.5}, request=True)
    assert "gate_threshold" not in registry.REGISTRY[family].request_parameters  # only the cascades have a gate
    assert registry.sweep_names(registry.FAMILIES[family])["gate"] == "gate_threshold"


def test_nodes_of_one_configuration_read_with_one_loaded_model():
    """A cascade names the reader twice (Haystack wires one set of sockets per node): one model serves both."""
    from haystack import Pipeline, component

    from haystack_cfrag.pipelines.loading import share_node_models

    loads = []

    @component
    class Loaded:
        def __init__(self, name: str = "m"):
            self.name, self._model = name, None

        def to_dict(self):
            return {"type": "Loaded", "init_parameters": {"name": self.name}}

        def warm_up(self):
            if self._model is None:
                self._model = object()
                loads.append(self.name)

        @component.output_types(out=str)
        def run(self, text: str):
            return {"out": text}

    pipe = Pipeline()
    for name, model in (("a", "m"), ("b", "m"), ("c", "other")):
        pipe.add_component(name, Loaded(model))
    assert share_node_models(pipe) == 1
    pipe.warm_up()
    a, b, c = (pipe.get_component(n) for n in "abc")
    assert a._model is b._model and c._model is not a._model and sorted(loads) == ["m", "other"]


@pytest.mark.parametrize("name", CASCADES)
def test_each_shipped_gate_scores_without_keeping_earlier_prompts_states(name):
    """The gate scores one prompt a question: a kept KV copy (~28 KB a token) held 28 MB for nothing
    (the cascades' `cfrag ask` peak 2.01 → 1.98 GB); the method's own scorers keep theirs."""
    components = registry.resolve(name).data["components"]
    assert components["gate"]["init_parameters"]["support_scorer"]["init_parameters"]["prefix_states"] == 0


BAKER_HOUSE = {  # the temporal trap's shape: a pile states George Peter, one passage dates the question's period
    "peter": "George Peter lived in the Baker House from 1796 to 1827, who lived in the house.",
    "peter2": "George Peter lived in the Baker House after John Laird lived in the Baker House.",
    "peter3": "George Peter lived in the Baker House, the house in Washington where who lived.",
    "kennedy": "- 1964-1965 - Jacqueline Kennedy, the widow of the president, rented it.",
    "straight": "- 1965-1976 - Michael Straight, the publisher, rented it.",
}


def _mock_runtime(passages: dict[str, str]) -> Runtime:
    """A runtime over these passages (id: text), hashed vectors and the mock reader."""
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run([Document(id=k, content=v) for k, v in passages.items()])[
        "documents"])
    return Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                   allowed_modules=["tests"], graph_extractor="llm", graph_cache=None)


def test_cf_rag_auto_drafts_the_periods_passages_alone_where_the_period_rule_escalated():
    """The gate's period rule names the factor; the escalation intervenes on it alone: one challenger from the
    passages that date the period (strata_router → the stratifier's period_only), where cf_rag drafts two."""
    baker = _mock_runtime(BAKER_HOUSE)
    question = "Who lived in the Baker House from 1964 to 1965?"
    cascade = baker.ask("cf_rag_auto", question, {"gate_threshold": 0.99})
    assert cascade.gate["escalated"] is True and "dating_gap 1.00" in cascade.gate["because"]
    standard = baker.ask("standard_rag", question).answer
    challengers = [d["answer"] for d in cascade.trace["drafts"] if d["answer"] != standard]
    assert len(cascade.trace["drafts"]) == 2 and challengers == ["- 1964-1965 - Jacqueline"]  # and the baseline
    assert len(baker.ask("cf_rag", question).trace["drafts"]) == 3  # always on: two challengers and the baseline
    plain = baker.ask("cf_rag_auto", "Who lived in the Baker House?", {"gate_threshold": OPEN})
    assert "dating_gap" not in plain.gate["because"] and len(plain.trace["drafts"]) == 3  # the model: M = 2


YANKEES = {  # the temporal trap where no passage dates the question's period: a pile dated to later periods
    "stadium": "Yankee Stadium was home to the New York Yankees from 1923 to 1973.",
    "stadium2": "Yankee Stadium was home to the New York Yankees again from 1976 to 2008.",
    "hilltop": "Hilltop Park, the team's new ballpark, was built in Upper Manhattan.",
    "polo": "The Polo Grounds, shared with the Giants, saw the 1921 World Series.",
}


def test_cf_rag_auto_runs_cf_rag_as_shipped_where_the_elsewhere_rule_escalated(tmp_path):
    """No passage dates 1903-1912, so there is no period stratum to draft alone: the escalation is CF-RAG's M = 2.
    The rule ships on (with the scored duel it won the Yankees' Hilltop Park on TimeQA); a user's file turns it off."""
    yankees = _mock_runtime(YANKEES)
    question = "Which park was home to the New York Yankees from 1903 to 1912?"
    assert yankees.ask("standard_rag", question).answer == "Yankee Stadium was home"
    shipped = registry.resolve("cf_rag_auto").path.read_text(encoding="utf-8")
    assert "elsewhere_pile: true" in shipped
    mine = tmp_path / "my_cf_rag_auto.yml"
    mine.write_text(shipped.replace("elsewhere_pile: true", "elsewhere_pile: false"), encoding="utf-8")
    assert yankees.ask(str(mine), question, {"gate_threshold": 0.99}).gate["escalated"] is False  # off
    cascade = yankees.ask("cf_rag_auto", question, {"gate_threshold": 0.99})  # as shipped
    assert cascade.gate["escalated"] is True and "(elsewhere_pile)" in cascade.gate["because"]
    assert len(cascade.trace["drafts"]) == 3  # two challengers and the baseline, as cf_rag
