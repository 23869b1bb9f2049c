"""Every method served by a real Hayhooks process (`cfrag serve`), as issue 44 asks.

- `cfrag serve --mock` with every served pipeline of the registry starts; each `/X/run` answers 200
  with one of its own request parameters and 422 naming another family's; no answer of another
  family carries CF-RAG's warnings (mock LLM, real embedder, demo store, a fresh cache folder so
  the mock's graph extractions never reach the user's cache).
- CER, CausalRAG and CDF-RAG served with the real embedded models on a small store (its graph
  built while the wrappers deploy) each give an answer.
"""

import json

import httpx
import pytest

from haystack_cfrag.registry import REGISTRY, served_pipelines
from tests.families import foreign_parameter, own_value
from tests.server import served

QUESTION = "Who is the lead actor in The Dark Knight?"


@pytest.fixture(scope="module")
def every_pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    args = ["--mock", *(a for name in served_pipelines() for a in ("--pipeline", name)),
            "--deploy-dir", str(root / "deploy")]
    with served(args, expect=list(served_pipelines()), timeout=600,
                env={"CFRAG_CACHE_DIR": str(root / "cache")}) as server:
        yield server


@pytest.mark.parametrize("name", served_pipelines())
def test_each_served_pipeline_takes_its_own_parameter_and_refuses_another_familys(every_pipeline, name):
    entry = REGISTRY[name]
    own = {p: own_value(entry.parameters[p]) for p in entry.request_parameters[:1]}
    ok = httpx.post(f"{every_pipeline.url}/{name}/run", json={"question": QUESTION, **own}, timeout=300)
    assert ok.status_code == 200, ok.text
    result = ok.json()["result"]
    assert result["pipeline"] == name and isinstance(result["answer"], str)
    if entry.family != "cf_rag":
        assert not any("draft" in w or "counterfactual" in w for w in result["warnings"]), result["warnings"]
    foreign = foreign_parameter(name)
    refused = httpx.post(f"{every_pipeline.url}/{name}/run", json={"question": QUESTION, foreign: 1}, timeout=60)
    assert refused.status_code == 422 and repr(foreign) in refused.text


SMALL_STORE = [
    {"title": "The Dark Knight", "content": "The Dark Knight is a 2008 superhero film directed by Christopher Nolan. "
     "Christian Bale stars as Bruce Wayne, whose fight against crime leads to the Joker's rise."},
    {"title": "Heath Ledger", "content": "Heath Ledger played the Joker in The Dark Knight; his performance won "
     "a posthumous Academy Award because critics praised its intensity."},
    {"title": "Batman Begins", "content": "Batman Begins (2005) starred Christian Bale as Batman. Its success "
     "caused Warner Bros. to commission the sequel, The Dark Knight."},
]


@pytest.fixture(scope="module")
def real_models(tmp_path_factory):
    from click.testing import CliRunner

    from haystack_cfrag.cli.app import main

    root = tmp_path_factory.mktemp("real")
    passages = root / "small.jsonl"
    passages.write_text("\n".join(json.dumps(p) for p in SMALL_STORE) + "\n")
    store = root / "small_store.json"
    indexed = CliRunner().invoke(main, ["index", str(passages), "--store", str(store)])
    assert indexed.exit_code == 0, indexed.output
    args = ["--store", str(store), "--pipeline", "cer", "--pipeline", "causal_rag", "--pipeline", "cdf_rag",
            "--deploy-dir", str(root / "deploy")]
    # the user's cache: the assembled GGUF, and the real extractions of these passages (what `cfrag ask` would keep);
    # the graph is built while the wrappers deploy (one extraction call per passage: minutes each on 2 busy cores)
    with served(args, expect=["cer", "causal_rag", "cdf_rag"], timeout=3600) as server:
        yield server


@pytest.mark.parametrize(("name", "params"), [("cer", {"theta": 0.6}), ("causal_rag", {"hops": 1}),
                                              ("cdf_rag", {"refinement": "none"})])
def test_the_three_graph_and_evidence_families_answer_with_the_real_models(real_models, name, params):
    out = httpx.post(f"{real_models.url}/{name}/run", json={"question": QUESTION, **params}, timeout=1800)
    assert out.status_code == 200, out.text
    result = out.json()["result"]
    assert result["answer"].strip() and result["pipeline"] == name
    assert not any("counterfactual" in w for w in result["warnings"])
