"""Issue 44: families side by side, the layers above read only their declarations, every method served.

- the import rule, read from every module's imports (ast): no family imports another family, and
  no module above the families imports a family's module except the registry (which imports
  each family's `family.py` declaration);
- every served pipeline answers 200 with one of its own request parameters and 422 with another
  family's, through the Hayhooks wrapper, with the mock models; no non-CF-RAG answer carries
  CF-RAG's warnings, and CF-RAG's N = 0 file (`cf_rag_fast`) is not degraded;
- a fifth family, declared in a test (a component, a YAML under tmp_path, `register_family`), is
  served, asked, checked by the CLI and evaluated with no change above the families.
"""

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.common.parameters import Parameter
from haystack_cfrag.family import Entry, Family, Sweeps
from haystack_cfrag.serving.service import CFRAGService, ServingConfig
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder
from tests.families import foreign_parameter, own_value

PACKAGE = Path(registry.__file__).resolve().parent
FAMILIES = ("baseline", "cfrag", "cer", "causal_rag", "cdf_rag")
"""The family packages (the registry's `FAMILY_MODULES` name each one's declaration)."""


def _imports(path: Path) -> set[str]:
    """Every `haystack_cfrag…` module a file imports, at any depth (function-level imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("haystack_cfrag")}


def _family_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FAMILIES else None


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py")}


def test_the_family_packages_are_those_the_registry_declares():
    assert {m.split(".")[1] for m in registry.FAMILY_MODULES} == set(FAMILIES)
    assert all((PACKAGE / name / "family.py").is_file() for name in FAMILIES)


def test_no_family_imports_another_family():
    crossing = sorted(
        f"{module} imports {target}"
        for module, path in _modules().items() if (own := _family_of(module))
        for target in _imports(path) if (other := _family_of(target)) and other != own
    )
    assert crossing == []


def test_above_the_families_only_the_registry_imports_a_family_and_only_its_declaration():
    # `haystack_cfrag/__init__.py` exports the components lazily (by import path, for users); `cfrag index --graph`
    # and `cfrag bench` reach CausalRAG's extraction and CF-RAG's micro-benchmark through their declarations
    exempt = {"haystack_cfrag"}
    crossing = []
    for module, path in _modules().items():
        if _family_of(module) or module in exempt:
            continue
        for target in _imports(path):
            family = _family_of(target)
            if family is None:
                continue
            if module == "haystack_cfrag.registry" and target == f"haystack_cfrag.{family}.family":
                continue
            crossing.append(f"{module} imports {target}")
    assert crossing == []


def test_the_import_test_sees_a_crossing(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from haystack_cfrag.cfrag.parameters import PARAMETERS\n")
    assert _family_of(next(iter(_imports(bad) - {"haystack_cfrag.cfrag.parameters.PARAMETERS"}))) == "cfrag"


# ---------------------------------------------------------------- every served pipeline, mock models
def _store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return store


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = CFRAGService(ServingConfig(generator="mock"), store=_store(), chat_generator=MockChatGenerator(),
                       text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])
    svc.runtime.stores.graph_cache = tmp_path_factory.mktemp("graph")
    return svc


class Refused(Exception):
    """A request the served route refuses: its HTTP status and detail."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def _served(name, service, monkeypatch):
    """`/name/run` as the Hayhooks wrapper answers it; without Hayhooks (the Haystack 2.x job, no serve extra)
    the same request check and service the wrapper calls."""
    try:
        from fastapi import HTTPException

        from haystack_cfrag.serving import wrapper as wrapper_module
    except ImportError:
        from haystack_cfrag.serving.requests import RequestError, check_run_request

        def answer(**body):
            try:
                question, params = check_run_request(body, registry.REGISTRY[name].request_table)
            except RequestError as exc:
                raise Refused(422, str(exc)) from exc
            return service.answer(name, question, params)

        return answer
    monkeypatch.setattr(wrapper_module, "get_service", lambda: service)
    wrapper = type(f"W_{name}", (wrapper_module.CFRAGPipelineWrapper,), {"pipeline_name": name})()
    wrapper.setup()
    assert wrapper.request_parameters == registry.REGISTRY[name].request_parameters

    def run(**body):
        try:
            return wrapper.run_api(**body)
        except HTTPException as exc:
            raise Refused(exc.status_code, str(exc.detail)) from exc

    return run


@pytest.mark.parametrize("name", registry.served_pipelines())
def test_every_served_pipeline_takes_its_own_parameters_and_refuses_another_familys(name, service,
                                                                                   monkeypatch):
    entry = registry.REGISTRY[name]
    run = _served(name, service, monkeypatch)
    own = {p: own_value(entry.parameters[p]) for p in entry.request_parameters[:1]}
    out = run(question=dk.QUESTION, **own)
    assert out["pipeline"] == name and isinstance(out["answer"], str)
    foreign = foreign_parameter(name)
    with pytest.raises(Refused) as refused:
        run(question=dk.QUESTION, **{foreign: 1})
    assert refused.value.status == 422 and repr(foreign) in refused.value.detail
    if entry.family != "cf_rag":  # CF-RAG's warnings belong to CF-RAG's answers
        assert not any("draft" in w_ or "counterfactual" in w_ for w_ in out["warnings"])


def test_n0_in_the_file_is_an_ablation_not_a_degradation(service):
    fast = service.answer("cf_rag_fast", dk.QUESTION)
    assert fast["answer"] and not fast["degraded"] and fast["warnings"] == []
    asked = service.answer("cf_rag", dk.QUESTION, {"n_counterfactuals": 0})
    assert not any("counterfactual" in w for w in asked["warnings"])


def test_a_cer_answer_carries_no_cf_rag_warning(service):
    out = service.answer("cer", dk.QUESTION, {"theta": 0.6})
    assert out["answer"] and not out["degraded"] and out["trace"]["kept"]


# ---------------------------------------------------------------- a fifth family, nothing above it changed
ECHO_YAML = """\
inputs:
  query:
    - retriever.query
    - answerer.query
outputs:
  answer: answerer.answer
  trace: answerer.trace
components:
  retriever:
    type: haystack.components.retrievers.in_memory.bm25_retriever.InMemoryBM25Retriever
    init_parameters:
      top_k: 3
      document_store:
        type: haystack.document_stores.in_memory.document_store.InMemoryDocumentStore
        init_parameters: {}
  answerer:
    type: tests.unit.architecture.toy_family.TitleAnswerer
    init_parameters:
      prefix: "toy"
connections:
  - sender: retriever.documents
    receiver: answerer.documents
"""


@pytest.fixture
def toy_family(tmp_path):
    path = tmp_path / "toy_rag.yml"
    path.write_text(ECHO_YAML)
    table = {"prefix": Parameter("prefix", "answerer", "prefix", str, choices=("toy", "echo"), per_request=True,
                                 help="what the answer starts with")}
    family = Family(name="toy", parameters=table, request_parameters=("prefix",),
                    pipelines=(Entry("toy_rag", "the first passage's title", path=path),),
                    record=lambda trace: {"toy_read": len(trace.get("read") or [])},
                    sweeps=Sweeps(axes=("prefix",)), components=("tests.unit.architecture.toy_family.",))
    registry.register_family(family)
    yield family
    registry.unregister_family("toy")


def test_a_fifth_family_is_served_asked_and_evaluated_with_nothing_above_it_changed(toy_family, service,
                                                                                     monkeypatch, tmp_path):
    from haystack_cfrag.evaluation.systems import parse_system, sweep_systems

    assert "toy_rag" in registry.served_pipelines() and registry.resolve("toy_rag").family is toy_family
    run = _served("toy_rag", service, monkeypatch)
    out = run(question=dk.QUESTION, prefix="echo")
    assert out["answer"].startswith("echo:") and not out["degraded"]
    with pytest.raises(Refused) as refused:
        run(question=dk.QUESTION, theta=0.5)
    assert refused.value.status == 422 and "'theta'" in refused.value.detail
    assert service.runtime.ask("toy_rag", dk.QUESTION, {"prefix": "toy"}).answer.startswith("toy:")
    assert parse_system("toy_rag[prefix=echo]").params == {"prefix": "echo"}
    assert [s.name for s in sweep_systems("toy:prefix", ["toy", "echo"])] == ["toy_rag[prefix=toy]",
                                                                            "toy_rag[prefix=echo]"]
    from haystack_cfrag.cli.checks import check_run_parameters

    assert check_run_parameters({"prefix": "echo"}, ["toy_rag"]) == {"prefix": "echo"}
    import click

    with pytest.raises(click.BadParameter, match="must be one of 'toy', 'echo'"):
        check_run_parameters({"prefix": "nope"}, ["toy_rag"])
    from haystack_cfrag.evaluation.datasets import load_items
    from haystack_cfrag.evaluation.runner import EvalConfig, run_eval

    hotpot = Path(__file__).resolve().parents[2] / "data" / "hotpotqa_dev_a_30.jsonl"
    items = load_items(hotpot, limit=2)
    config = EvalConfig(data=str(hotpot), limit=2, out=str(tmp_path / "eval"), progress=False,
                        allowed_modules=["tests"], systems=["toy_rag[prefix=echo]"], cache=False)
    records = run_eval(config, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                       document_embedder=HashingDocumentEmbedder())
    assert len(records) == len(items) and all(r["error"] is None and r["answer"].startswith("echo:")
                                               for r in records)
    assert all(r["toy_read"] >= 1 and r["candidates"] == [] for r in records)  # what the family's `record` keeps


def test_the_cli_checks_any_familys_parameter_before_a_model_loads():
    from haystack_cfrag.cli.app import main

    bad = CliRunner().invoke(main, ["ask", "q?", "--pipeline", "cer", "--param", "theta=2"])
    assert bad.exit_code == 2 and "theta" in bad.output and "(0, 1]" in bad.output
    foreign = CliRunner().invoke(main, ["ask", "q?", "--pipeline", "cer", "-N", "2"])
    assert foreign.exit_code == 2 and "'n_counterfactuals' is not a parameter of cer" in foreign.output
    odd = CliRunner().invoke(main, ["ask", "q?", "--pipeline", "causal_rag", "--param", "hops"])
    assert odd.exit_code == 2 and "NAME=VALUE" in odd.output


def test_ask_and_compare_take_any_familys_parameters_and_eval_sweeps_any_familys_axis():
    from haystack_cfrag import models
    from haystack_cfrag.cli.app import _check_inputs
    from haystack_cfrag.cli.evaluate import _sweep_systems

    checked = _check_inputs("q?", ["cer", "cf_rag"], {"param_texts": ("theta=1", "entailment=pmi"),
                                                       "n_counterfactuals": 2},
                            None, models.EMBEDDED_LLM, models.EMBEDDED_EMBEDDER, None)
    assert checked == {"theta": 1.0, "entailment": "pmi", "n_counterfactuals": 2}
    assert _sweep_systems(("cer:theta=0.5,0.7", "lambda=0.2", "causal_rag:hops=2")) == [
        "cer[theta=0.5]", "cer[theta=0.7]", "cf_rag[lambda=0.2]", "causal_rag[hops=2]"]
    import click

    with pytest.raises(click.BadParameter, match="cer:theta"):
        _sweep_systems(("delta=0.1",))  # CER's and CDF-RAG's: the family must be named


def test_index_graph_and_bench_reach_the_families_through_their_declarations(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from haystack_cfrag import registry
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.cli import app, bench, index
    from haystack_cfrag.stores import parse_store_spec
    from tests.fakes import HashingDocumentEmbedder

    seen = {}

    class ToyPreparation:  # a `family.StorePreparation` of a family of your own
        what, extractors, default_extractor = "toy", ("spacy",), "spacy"
        parse_only, scale_out = ("spacy",), ()
        writes = None  # nothing stored beside the store

        def index(self, passages, **kw):
            seen.update(n=len(passages), **kw)
            return {"n": len(passages)}

        def summarize(self, stats):
            return f"toy graph of {stats['n']} passages"

    prep = ToyPreparation()
    embedder = HashingDocumentEmbedder()
    embedder.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: embedder)
    query_embedder = object()  # what embeds the graph's node names: the query's model
    monkeypatch.setattr(factories, "text_embedder", lambda *_a, **_k: query_embedder)
    monkeypatch.setattr(index, "GRAPH", prep)
    monkeypatch.setattr(bench, "benchmarks", lambda: {"toy": lambda counts, seconds, llm: f"toy {counts} {seconds}"})
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "notes.txt").write_text("Rain causes floods in the valley.")
    out = CliRunner().invoke(app.main, ["index", str(tmp_path / "notes.txt"), "--store", str(tmp_path / "s.json"),
                                        "--graph", "--extractor", "spacy"])
    assert out.exit_code == 0, out.output
    assert out.output.strip().splitlines()[-1] == "toy graph of 1 passages"
    assert seen["n"] == 1 and seen["extractor"] == "spacy" and seen["chat_generator"] is None  # parse-only: no LLM
    assert seen["text_embedder"] is query_embedder
    assert seen["store_spec"] == parse_store_spec(f"memory:{tmp_path / 's.json'}")
    out = CliRunner().invoke(app.main, ["bench", "--sizes", "3", "--draft-seconds", "2"])
    assert out.exit_code == 0 and out.output.strip() == "toy:\ntoy (3,) 2.0"
    assert registry.store_preparation().extractors == ("llm", "llm-json", "spacy")
    assert list(registry.benchmarks()) == ["cf_rag"]

