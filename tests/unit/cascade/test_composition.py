"""Each shipped cascade is standard RAG + the gate + the method, pinned to their files (`cascade.contract`): a change
to `standard_rag.yml` or a method's YAML that its cascade does not follow fails here."""

import pytest

from haystack_cfrag import registry
from haystack_cfrag.cascade.contract import (
    GATE_INPUTS,
    GATE_NODE,
    GATE_OUTPUTS,
    GATE_RULE,
    JOINER_NODE,
    ROUTER_NODE,
    ROUTES,
    composed,
)
from haystack_cfrag.cascade.model import GateModel


def components(name):
    return registry.resolve(name).data["components"]


CASCADES = registry.cascades()  # each declared in its family's entry (`family.Cascade`)


@pytest.mark.parametrize("cascade", CASCADES)
def test_a_cascade_is_standard_rag_the_gate_and_its_method(cascade):
    declared = CASCADES[cascade]
    got = dict(components(cascade))
    gate, router, joiner = got.pop(GATE_NODE), got.pop(ROUTER_NODE), got.pop(JOINER_NODE)
    wires = {(c["sender"], c["receiver"]) for c in registry.resolve(cascade).data["connections"]}
    for name, socket in declared.routing.items():  # a router of its own on the gate's rule, into the method
        assert got.pop(name)["type"].endswith("ConditionalRouter")
        assert (f"{GATE_NODE}.{GATE_RULE}", f"{name}.{GATE_RULE}") in wires
        assert any(s.startswith(f"{name}.") and r == socket for s, r in wires)
    settings = declared.escalation  # the escalation's own settings (issue 61): the only differences
    assert got == composed(components("standard_rag"), components(declared.method), declared.prefix,
                           declared.shared, settings)
    assert gate["type"].endswith("EscalationGate") and GateModel.from_dict(gate["init_parameters"]["model"])
    names = [r["output_name"] if isinstance(r["output_name"], list) else [r["output_name"]]
             for r in router["init_parameters"]["routes"]]
    assert [n[0] for n in names] == list(ROUTES)  # CausalRAG's escalated route also hands on the query's embedding
    assert joiner["type"].endswith("AnswerJoiner")


@pytest.mark.parametrize("cascade", CASCADES)
def test_the_gate_reads_what_the_contract_says(cascade):
    wires = {(c["sender"], c["receiver"]) for c in registry.resolve(cascade).data["connections"]}
    for sender in GATE_INPUTS:  # generator.replies -> gate.replies, and so on
        assert (sender, f"{GATE_NODE}.{sender.split('.')[1]}") in wires
    assert (f"{GATE_NODE}.escalate", f"{ROUTER_NODE}.escalate") in wires


def test_every_cascade_is_declared_once():
    assert set(CASCADES) == {n for n in registry.REGISTRY if n.endswith("_auto")}
    assert {(c.method, c.prefix) for c in CASCADES.values()} == {  # the defaults filled in
        ("cf_rag", "cf"), ("cer", "cer"), ("causal_rag", "causal"), ("cdf_rag", "cdf")}


def test_the_escalation_settings_are_set_on_the_methods_nodes_and_nothing_else():
    method = {"refiner": {"type": "R", "init_parameters": {"chat_generator": {"type": "G", "init_parameters": {
        "model": "big"}}}}, "checker": {"type": "C", "init_parameters": {"mode": "correct"}}}
    settings = {"refiner.chat_generator.model": "small", "checker.mode": "follow_up"}
    got = composed({}, method, "m", settings=settings)
    assert got["refiner"]["init_parameters"]["chat_generator"]["init_parameters"]["model"] == "small"
    assert got["checker"]["init_parameters"]["mode"] == "follow_up"
    assert method["refiner"]["init_parameters"]["chat_generator"]["init_parameters"]["model"] == "big"  # as it was
    with pytest.raises(KeyError, match="no component 'ranker'"):
        composed({}, method, "m", settings={"ranker.top_k": 3})


def test_a_shared_node_that_differs_is_refused():
    with pytest.raises(ValueError, match="declared shared but differs"):
        composed({"retriever": {"type": "R", "init_parameters": {"top_k": 5}}},
                 {"retriever": {"type": "R", "init_parameters": {"top_k": 9}}}, "m", shared=("retriever",))


def test_the_gate_gives_what_the_contract_says():
    from haystack_cfrag.cascade.components import EscalationGate

    class Scorer:
        def score(self, query, answer, documents):
            return -0.1

    model = {"features": ["support"], "means": [0.0], "scales": [1.0], "weights": [1.0], "intercept": 0.0,
             "threshold": 0.5}
    gate = EscalationGate(support_scorer=Scorer(), model=model)
    assert set(gate.__haystack_output__._sockets_dict) == set(GATE_OUTPUTS)
