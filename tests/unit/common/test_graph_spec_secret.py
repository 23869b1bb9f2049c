"""A `graph:` spec holding a password serialises through a Haystack Secret, never by value (issue 62, D13).

On 6dca1af the password of `CausalGraphRetriever(graph="pgvector:postgresql://me:PASSWORD@…")` stayed in
`to_dict()`/`dumps()` and appeared in Haystack's DeserializationError (which quotes the component's data)
when any other init parameter was wrong. The spec is now an environment variable of the process, as the
store spec is (`stores.opening.pg_secret`); `graph` also takes a Secret, read when the graph is opened.
"""

import inspect
import os

import pytest
from haystack import Pipeline
from haystack.core.errors import DeserializationError
from haystack.utils import Secret

from haystack_cfrag.causal_rag import CausalGraphRetriever

PASSWORD = "s3cr3t-P4ss"
SPEC = f"pgvector:postgresql://me:{PASSWORD}@127.0.0.1:1/rag#docs"

YAML = """
components:
  graph_retriever:
    type: haystack_cfrag.causal_rag.components.causal_graph_retriever.CausalGraphRetriever
    init_parameters: {{graph: "{spec}", top_k: {top_k}}}
connections: []
"""


def load(spec=SPEC, top_k=3):
    text = YAML.format(spec=spec, top_k=top_k)
    if "allowed_modules" in inspect.signature(Pipeline.loads).parameters:  # Haystack 3's allowlist
        return Pipeline.loads(text, allowed_modules=["haystack_cfrag"])
    return Pipeline.loads(text)  # Haystack 2.x: no allowlist


def test_a_spec_with_a_password_serialises_by_the_name_of_its_variable():
    retriever = CausalGraphRetriever(graph=SPEC)
    data = retriever.to_dict()["init_parameters"]["graph"]
    assert data["type"] == "env_var" and PASSWORD not in str(data)
    assert os.environ[data["env_vars"][0]] == SPEC  # this process reads it back
    again = CausalGraphRetriever.from_dict(retriever.to_dict())
    assert again.to_dict() == retriever.to_dict()


def test_a_yaml_spec_with_a_password_is_not_in_dumps():
    dumped = load().dumps()
    assert PASSWORD not in dumped and "CFRAG_GRAPH_SPEC_" in dumped
    assert PASSWORD not in load().dumps()  # and reloads


def test_haystacks_deserialization_error_does_not_show_the_password():
    with pytest.raises(DeserializationError) as caught:
        load(top_k=0)
    assert "'top_k' must be" in str(caught.value.__cause__) and PASSWORD not in str(caught.value)


@pytest.mark.parametrize("spec", [f"pgvector:postgresql://me:{PASSWORD}@[::1/rag",
                                  f"pgvector:postgresql:/me:{PASSWORD}@db",
                                  "pgvector:postgresql://me:s3cr@t-P4ss@127.0.0.1:1/rag"])
def test_a_spec_that_does_not_parse_is_refused_redacted(spec):
    pytest.importorskip("psycopg", reason="libpq's own parser refuses these (haystack-cfrag[stores])")
    with pytest.raises(ValueError) as caught:
        CausalGraphRetriever(graph=spec)
    assert "s3cr" not in str(caught.value) and "P4ss" not in str(caught.value)
    with pytest.raises(DeserializationError) as caught:
        load(spec=spec)
    assert "s3cr" not in str(caught.value) and "P4ss" not in str(caught.value)


def test_a_secret_is_read_when_the_graph_opens(monkeypatch, tmp_path):
    monkeypatch.setenv("MY_GRAPH", str(tmp_path / "none.json"))
    retriever = CausalGraphRetriever(graph=Secret.from_env_var("MY_GRAPH"))
    assert retriever.to_dict()["init_parameters"]["graph"] == {"type": "env_var", "env_vars": ["MY_GRAPH"],
                                                               "strict": True}
    with pytest.raises(Exception, match="none"):  # opened from the variable's value: no store there
        retriever.warm_up()
    monkeypatch.delenv("MY_GRAPH")
    with pytest.raises(ValueError, match="MY_GRAPH"):
        CausalGraphRetriever(graph=Secret.from_env_var("MY_GRAPH")).warm_up()


def test_a_store_that_does_not_answer_is_an_error_without_the_password():
    retriever = CausalGraphRetriever(graph=SPEC)
    with pytest.raises(Exception) as caught:
        retriever.warm_up()
    assert PASSWORD not in str(caught.value) and PASSWORD not in repr(caught.value.__cause__)
