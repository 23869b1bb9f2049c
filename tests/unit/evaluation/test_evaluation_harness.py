"""The evaluation harness (`cfrag eval`): formats, corpus modes, injection variants, systems,
resumable records, the LLM reply cache and the report — with fake models."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from haystack import component, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cli import main
from haystack_cfrag.common import timing
from haystack_cfrag.evaluation import EvalConfig, datasets, provenance, run_eval, runner, summarize, write_outputs
from haystack_cfrag.evaluation.corpus import Corpus, near_copies, swap_answer
from haystack_cfrag.evaluation.costs import index_cost
from haystack_cfrag.evaluation.datasets import load_items, parse_row
from haystack_cfrag.evaluation.injection import contains_answer
from haystack_cfrag.evaluation.llm_cache import CachingChatGenerator
from haystack_cfrag.evaluation.report import markdown
from haystack_cfrag.evaluation.summary import read_records
from haystack_cfrag.evaluation.systems import parse_system, parse_systems, sweep_systems
from tests.fakes import (
    HashingDocumentEmbedder,
    HashingTextEmbedder,
    KeywordReader,
    ReaderInterruptedWhileLoading,
    hashed_bow,
)

ROOT = Path(__file__).resolve().parents[3]
HOTPOT = ROOT / "tests" / "data" / "hotpotqa_dev_a_30.jsonl"
SHARED = ROOT.parent / "shared" / "data"


def test_hotpotqa_rows_keep_ten_paragraphs_and_gold_titles():
    items = load_items(HOTPOT, limit=3)
    assert len(items) == 3
    for item in items:
        assert len(item.passages) == 10
        assert item.gold_titles and set(item.gold_titles) <= {p.title for p in item.passages}
        assert item.qtype in ("bridge", "comparison")


def test_offset_and_limit_follow_the_file_order():
    all_rows = load_items(HOTPOT, limit=5)
    assert [i.id for i in load_items(HOTPOT, offset=2, limit=2)] == [i.id for i in all_rows[2:4]]


def test_trap_popqa_and_generic_rows_parse():
    trap = parse_row({"id": "t", "question": "Who leads?", "answer": "Bale", "aliases": ["C. Bale"],
                      "failure_mode": "spurious_correlation", "axis": "role", "trap_answer": "Ledger",
                      "gold_docs": [{"title": "G", "content": "Bale leads."}],
                      "spurious_docs": [{"title": "S", "content": "Ledger shines."}]}, "trap", 1)
    assert trap.answers == ["Bale", "C. Bale"] and trap.gold_titles == ["G"] and trap.trap_answer == "Ledger"
    assert [p.title for p in trap.passages] == ["G", "S"]
    popqa = parse_row({"id": 7, "question": "What is X's job?", "answers": ["politician"], "s_wiki_title": "X",
                       "crag_internal_knowledge": "word " * 250, "crag_web_knowledge": "X: a politician ; Y: other"},
                      "popqa", 1)
    assert len(popqa.passages) == 3 + 2 and popqa.gold_titles == ["X"]
    with pytest.raises(ValueError, match="answers"):
        parse_row({"question": "q", "documents": []}, "generic", 3)
    with pytest.raises(ValueError, match="Unknown evaluation row format"):
        datasets.detect_format({"question": "q"})


@pytest.mark.skipif(not (SHARED / "trap_dev.jsonl").exists(), reason="shared data not present")
def test_shared_files_parse_in_every_format():
    assert len(load_items(SHARED / "trap_dev.jsonl")) == 24
    assert load_items(SHARED / "popqa_longtail_crag_knowledge_first700.jsonl", limit=5)[0].passages


def _corpus(n=8):
    items = load_items(HOTPOT, limit=n)
    embed_docs = HashingDocumentEmbedder()
    return items, Corpus(items, lambda docs: embed_docs.run(documents=docs)["documents"],
                         lambda text: hashed_bow(text, 512))


def test_pooled_store_holds_every_passage_once_and_item_store_its_own():
    items, corpus = _corpus()
    pooled = corpus.pooled_store()
    assert pooled.count_documents() == len({p.id for i in items for p in i.passages})
    own = corpus.item_store(items[0])
    assert {d.id for d in own.filter_documents()} == {p.id for p in items[0].passages}


@pytest.mark.parametrize("n", [2, 4, 8])
def test_injected_distractors_come_from_other_questions_and_never_hold_the_answer(n):
    items, corpus = _corpus()
    for item in items:
        injected = corpus.inject(item, n, "distractor")
        assert len(injected) == n
        own = {p.id for p in item.passages}
        real = [a for a in item.answers if a.lower() not in ("yes", "no")]
        for p in injected:
            assert p.id not in own
            assert not contains_answer(p.content, real)
        store = corpus.item_store(item, injected)
        marked = [d for d in store.filter_documents() if d.meta.get("cfrag_eval_injected")]
        assert len(marked) == n


def test_near_duplicates_are_one_word_apart_and_conflicts_swap_the_answer():
    copies = near_copies("one two three four five six", 3)
    assert len(copies) == 3 and all(len(c.split()) == 5 for c in copies) and len(set(copies)) == 3
    assert swap_answer("Tulsa is in Oklahoma; tulsa.", "Tulsa", "Paris") == "Paris is in Oklahoma; Paris."
    assert swap_answer("no mention", "Tulsa", "Paris") is None
    items, corpus = _corpus()
    item = next(i for i in items if i.answers[0].lower() not in ("yes", "no")
                and any(i.answers[0] in p.content for p in i.passages if p.title in i.gold_titles))
    conflicts = corpus.inject(item, 4, "conflicting")  # more than the gold passages: near-copies fill up
    assert len(conflicts) == 4 and len({p.content for p in conflicts}) == 4
    for p in conflicts:
        assert p.title in item.gold_titles and item.answers[0] not in p.content
    # every forged copy names the same wrong answer (a pile that agrees, not four different lies)
    gold_text = " ".join(p.content for p in item.passages if p.title in item.gold_titles)
    wrong = {o.answers[0] for o in items if o.id != item.id and o.answers[0] not in gold_text
             and all(o.answers[0] in p.content for p in conflicts)}
    assert len(wrong) == 1
    assert corpus.inject(item, 4, "conflicting") == conflicts  # stable across calls
    dups = corpus.inject(item, 3, "near_duplicate")
    assert len(dups) == 3 and len({p.title for p in dups}) == 1


def test_system_names_ablations_and_sweeps():
    assert parse_system("cf_rag_n0").params == {"n_counterfactuals": 0}
    assert parse_system("cf_rag_lambda0").pipeline == "cf_rag"
    assert parse_system("cf_rag[lambda=0.2,M=2]").params == {"causal_weight": 0.2, "n_subsets": 2}
    assert [s.name for s in parse_systems("standard_rag, cf_rag[K=2,M=1], my/pipe.yml")] == [
        "standard_rag", "cf_rag[K=2,M=1]", "my/pipe.yml"]
    assert [s.params["n_clusters"] for s in sweep_systems("K", [1, 2, 4])] == [1, 2, 4]
    with pytest.raises(ValueError, match="param=value"):
        parse_system("cf_rag[colour=red]")
    with pytest.raises(ValueError, match="'sweep parameter' must be one of"):
        sweep_systems("top", [1])


@component
class CountingReader(KeywordReader):
    """KeywordReader that counts its real calls."""

    calls = 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict:
        CountingReader.calls += 1
        return KeywordReader.run(self, messages=messages)


def _fakes(items):
    return {"chat_generator": CountingReader(candidates=[i.answers[0] for i in items]),
            "text_embedder": HashingTextEmbedder(), "document_embedder": HashingDocumentEmbedder()}


@pytest.mark.usefixtures("sigint_as_in_a_terminal")
def test_a_ctrl_c_while_the_reader_loads_stops_the_run_once_it_is_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "unraisablehook", lambda _unraisable: None)  # what ctypes reports, unheld
    items = load_items(HOTPOT, limit=2)
    config = EvalConfig(data=str(HOTPOT), limit=2, out=str(tmp_path / "run"), progress=False,
                        allowed_modules=["tests"], systems=["standard_rag"])
    reader = ReaderInterruptedWhileLoading(candidates=["x"])
    with pytest.raises(KeyboardInterrupt):
        run_eval(config, **_fakes(items) | {"chat_generator": reader})
    assert reader.loaded  # the load finished, then the interrupt took effect
    assert read_records(tmp_path / "run") == []  # before any question ran


def test_run_resumes_from_records_and_reuses_cached_replies(tmp_path):
    items = load_items(HOTPOT, limit=3)
    config = EvalConfig(data=str(HOTPOT), limit=3, out=str(tmp_path), progress=False, allowed_modules=["tests"],
                        systems=["closed_book", "standard_rag", "cf_rag", "cf_rag_lambda0", "cf_rag[lambda=1.0]"])
    CountingReader.calls = 0
    records = run_eval(config, **_fakes(items))
    assert len(records) == 3 * 5 and not any(r["error"] for r in records)
    first_calls = CountingReader.calls
    by_system = {(r["system"], r["qid"]): r for r in records}
    for item in items:  # λ variants reuse cf_rag's drafts: every call is a cache hit
        full, lam0 = by_system[("cf_rag", item.id)], by_system[("cf_rag_lambda0", item.id)]
        assert full["cache_hits"] < full["llm"]["calls"]  # (identical subsets may hit within one run)
        assert lam0["cache_hits"] == lam0["llm"]["calls"] > 0
        assert lam0["seconds_equivalent"] >= lam0["seconds"]
        assert sum(lam0["timed_on"].values()) == pytest.approx(lam0["seconds_equivalent"], abs=1e-2)
        assert set(lam0["timed_on"]) == {timing.timed_on()}  # replayed replies made on this machine
    # a second run computes nothing new
    again = run_eval(config, **_fakes(items))
    assert len(again) == len(records) and CountingReader.calls == first_calls
    # one more system: only its records are added
    config.systems.append("cf_rag_fast")
    more = run_eval(config, **_fakes(items))
    assert len(more) == len(records) + 3


def test_a_graph_replayed_from_the_reply_cache_is_not_charged_to_the_first_question(tmp_path, monkeypatch):
    """CausalRAG's graph is index time: extractions replayed from a run folder's reply cache (a folder restored
    on a machine without the extraction cache) are not counted among the first question's cached calls."""
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))  # the extraction cache, away from the user's
    items = load_items(HOTPOT, limit=2)
    config = EvalConfig(data=str(HOTPOT), limit=2, out=str(tmp_path / "run"), progress=False,  # the LLM path's costs
                        allowed_modules=["tests"], systems=["causal_rag"], graph_extractor="llm")
    stats = tmp_path / "run" / "graph_stats.jsonl"
    first = run_eval(config, **_fakes(items))
    assert len(first) == 2 and not any(r["error"] for r in first)
    built_first = len(stats.read_text().splitlines())  # the pooled store's graph
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
    (tmp_path / "run" / "records.jsonl").unlink()
    again = run_eval(config, **_fakes(items))
    graphs = [json.loads(line) for line in stats.read_text().splitlines()]
    fresh, replayed = graphs[:built_first], graphs[built_first:]
    assert fresh and replayed
    assert all(g["replayed"] == 0 and g["llm_calls"] > 0 for g in fresh)
    assert all(g["replayed"] == g["llm_calls"] > 0 and g["replayed_seconds"] >= 0 for g in replayed)
    assert all(set(g["timed_on"]) == {timing.timed_on()} for g in replayed)  # replies made here, replayed here
    write_outputs(tmp_path / "run", with_plots=False)
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"{sum(g['replayed'] for g in replayed)} of them replayed from the run's reply cache" in report
    for record in again:  # each question's own calls, all replayed, and none of the graph's
        assert record["cache_hits"] == record["llm"]["calls"] > 0, record["qid"]


def test_a_run_stopped_during_its_answers_keeps_the_graph_builds_cost(tmp_path, monkeypatch):
    """The graph's cost is recorded when the build ends: the resumed run finds every extraction cached."""
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    items = load_items(HOTPOT, limit=2)
    config = EvalConfig(data=str(HOTPOT), limit=2, out=str(tmp_path / "run"), progress=False,  # the LLM path's costs
                        allowed_modules=["tests"], systems=["causal_rag"], graph_extractor="llm")
    asked = []
    real_run_one = runner._run_one

    def stopped_after_one(*args, **kwargs):
        if asked:
            raise KeyboardInterrupt  # the session ends during the answers
        asked.append(1)
        return real_run_one(*args, **kwargs)

    monkeypatch.setattr(runner, "_run_one", stopped_after_one)
    with pytest.raises(KeyboardInterrupt):
        run_eval(config, **_fakes(items))
    stats = tmp_path / "run" / "graph_stats.jsonl"
    built = [json.loads(line) for line in stats.read_text().splitlines()]
    assert len(built) == 1 and built[0]["extracted"] > 0 and built[0]["llm_calls"] > 0
    monkeypatch.setattr(runner, "_run_one", real_run_one)
    run_eval(config, **_fakes(items))
    resumed = [json.loads(line) for line in stats.read_text().splitlines()][1:]
    assert len(resumed) == 1 and resumed[0]["extracted"] == 0 and resumed[0]["cached"] == built[0]["extracted"]


def test_each_extraction_is_counted_once_after_a_stopped_build_and_a_replay_elsewhere(tmp_path, monkeypatch):
    """A session that ends during the graph build writes no line: the build that resumes it pays for the
    passages already extracted at their cached price. A folder replayed where the extraction cache is not
    adds a build of replays: the passages it prices again are not counted twice."""
    from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder  # noqa: PLC0415

    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    items = load_items(HOTPOT, limit=2)
    config = EvalConfig(data=str(HOTPOT), limit=2, out=str(tmp_path / "run"), progress=False,  # the LLM path's costs
                        allowed_modules=["tests"], systems=["causal_rag"], graph_extractor="llm")
    real_call, made = CausalGraphBuilder._request, []  # what one extraction call asks, built just before it

    def stopping(self, job):
        if len(made) == 3:
            raise KeyboardInterrupt  # the session ends during the build
        made.append(job)
        return real_call(self, job)

    monkeypatch.setattr(CausalGraphBuilder, "_request", stopping)
    with pytest.raises(KeyboardInterrupt):
        run_eval(config, **_fakes(items))
    stats = tmp_path / "run" / "graph_stats.jsonl"
    assert not stats.exists()
    monkeypatch.setattr(CausalGraphBuilder, "_request", real_call)
    run_eval(config, **_fakes(items))
    [build] = [json.loads(line) for line in stats.read_text().splitlines()]
    assert build["cached"] >= 1 and build["extracted"] >= 1
    priced = build["cached"] + build["extracted"]
    index = write_outputs(tmp_path / "run", with_plots=False)["index"]
    assert index["counted"]["passages"] == priced  # the stopped build's passages, from their cached price
    assert sum(c["how"] == "cached" and c["seconds"] is not None for c in build["passage_costs"]) == build["cached"]
    shutil.rmtree(tmp_path / "cache")
    (tmp_path / "run" / "records.jsonl").unlink()
    run_eval(config, **_fakes(items))
    replayed = [json.loads(line) for line in stats.read_text().splitlines()][1]
    assert replayed["replayed"] == replayed["llm_calls"] > 0
    again = write_outputs(tmp_path / "run", with_plots=False)["index"]
    assert again["extracted"] == build["extracted"] + replayed["extracted"]  # the builds, as they ran
    assert again["counted"]["passages"] == priced  # the passages, once each
    assert again["counted"]["seconds"] == pytest.approx(  # plus only the replaying build's time outside its calls
        index["counted"]["seconds"] + replayed["seconds"] - replayed["call_seconds"], abs=2e-3)
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"({priced} distinct passages, each counted once" in report
    assert f"2 graph build(s) over {build['passages']} distinct passages:" in report  # not 2 × the corpus
    # an unparsed chunk is the graph's, once, however many builds read it again
    assert again["parse_failures"] == sum(c["unparsed"] for c in build["passage_costs"])


def test_a_latency_run_makes_every_call_with_a_model_instance_per_system(tmp_path, monkeypatch):
    """--no-cache: no reply is replayed, so every second is real, and no system shares llama.cpp's KV state."""
    items = load_items(HOTPOT, limit=2)
    made = []

    def new_generator(spec, max_tokens, device):  # the runner passes --device to the reader too
        made.append(CountingReader(candidates=[i.answers[0] for i in items]))
        return made[-1]

    monkeypatch.setattr(runner.factories, "chat_generator", new_generator)
    monkeypatch.setattr(provenance.models, "model_sha256", lambda spec: None)  # no model files needed
    base = {"data": str(HOTPOT), "limit": 2, "out": str(tmp_path), "progress": False, "allowed_modules": ["tests"],
            "systems": ["standard_rag", "cf_rag", "cf_rag_lambda0"]}
    fakes = {k: v for k, v in _fakes(items).items() if k != "chat_generator"}
    CountingReader.calls = 0
    records = run_eval(EvalConfig(cache=False, **base), **fakes)
    assert len(records) == 6 and not any(r["error"] for r in records)
    assert len(made) == 3                                      # one model instance per system
    assert all(r["cache_hits"] == 0 and r["seconds_equivalent"] == r["seconds"] for r in records)
    # cf_rag_lambda0 differs from cf_rag only after generation, yet its calls are made again
    assert CountingReader.calls == sum(r["llm"]["calls"] for r in records)
    assert not (tmp_path / "llm_cache.jsonl").exists()
    with pytest.raises(provenance.ResumeMismatchError, match="reply cache: off in the folder, on in this run"):
        run_eval(EvalConfig(**base), **_fakes(items))


def _folder_hashes(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".jsonl", ".json")}


def test_resume_refuses_records_of_another_pool_or_model_and_changes_nothing(tmp_path, monkeypatch):
    items = load_items(HOTPOT, limit=3)
    base = {"data": str(HOTPOT), "out": str(tmp_path), "progress": False, "systems": ["standard_rag"],
            "allowed_modules": ["tests"]}
    assert not any(r["error"] for r in run_eval(EvalConfig(limit=2, **base), **_fakes(items)))
    before = _folder_hashes(tmp_path)
    # 3 rows read: the pooled store would hold 30 passages, not the 20 the 2 records were computed over
    with pytest.raises(provenance.ResumeMismatchError, match=r"rows read .*auto, 0, 2 in the folder, auto, 0, 3"):
        run_eval(EvalConfig(limit=3, **base), **_fakes(items))
    other_model = {**_fakes(items), "chat_generator": KeywordReader(candidates=["Tulsa"])}
    with pytest.raises(provenance.ResumeMismatchError, match="models: .*CountingReader.*KeywordReader"):
        run_eval(EvalConfig(limit=2, **base), **other_model)
    with pytest.raises(provenance.ResumeMismatchError, match="max_tokens: 256 in the folder, 64"):
        run_eval(EvalConfig(limit=2, max_tokens=64, **base), **_fakes(items))
    assert _folder_hashes(tmp_path) == before  # refused before anything is written
    assert provenance.differences({}, {"data": {"sha256": "ab"}, "config": {}}, {"pooled"})[0].startswith("data file")
    monkeypatch.setattr(provenance.models, "model_sha256", lambda spec: None)  # no model files needed to refuse
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--limit", "3", "--systems", "standard_rag",
                                       "--out", str(tmp_path), "--no-plots"])
    assert result.exit_code == 1 and "rows read" in result.output and "--main-limit" in result.output
    assert _folder_hashes(tmp_path) == before
    (tmp_path / "metadata.json").write_text("{not json")
    with pytest.raises(provenance.ResumeMismatchError, match="not readable JSON"):
        run_eval(EvalConfig(limit=2, **base), **_fakes(items))
    (tmp_path / "metadata.json").unlink()  # records whose settings are unknown: refused as well
    with pytest.raises(provenance.ResumeMismatchError, match="missing or not readable JSON"):
        run_eval(EvalConfig(limit=2, **base), **_fakes(items))


def test_main_limit_evaluates_fewer_questions_over_the_same_pool(tmp_path):
    items = load_items(HOTPOT, limit=3)
    base = {"data": str(HOTPOT), "limit": 3, "out": str(tmp_path), "progress": False, "allowed_modules": ["tests"]}
    run_eval(EvalConfig(systems=["standard_rag"], **base), **_fakes(items))
    records = run_eval(EvalConfig(systems=["standard_rag", "cf_rag_k1"], main_limit=2, **base), **_fakes(items))
    assert sorted(r["qid"] for r in records if r["system"] == "cf_rag_k1") == sorted(i.id for i in items[:2])
    assert len([r for r in records if r["system"] == "standard_rag"]) == 3
    invocations = json.loads((tmp_path / "metadata.json").read_text())["invocations"]
    assert [i["config"]["main_limit"] for i in invocations] == [None, 2]
    # per-question records do not depend on the other rows: reading more rows may resume them
    pq = tmp_path / "pq"
    run_eval(EvalConfig(**{**base, "out": str(pq), "limit": 2}, corpus="per-question", systems=["standard_rag"]),
             **_fakes(items))
    more = run_eval(EvalConfig(**{**base, "out": str(pq)}, corpus="per-question", systems=["standard_rag"]),
                    **_fakes(items))
    assert len(more) == 3
    with pytest.raises(ValueError, match="main_limit must be >= 1"):
        EvalConfig(data=str(HOTPOT), main_limit=0)


def test_a_failing_system_is_recorded_not_fatal(tmp_path):
    items = load_items(HOTPOT, limit=2)
    config = EvalConfig(data=str(HOTPOT), limit=2, out=str(tmp_path), progress=False, allowed_modules=["tests"],
                        systems=["standard_rag", str(tmp_path / "missing.yml")])
    records = run_eval(config, **_fakes(items))
    errors = [r for r in records if r["error"]]
    assert len(errors) == 2 and all("missing.yml" in r["error"] and r["em"] == 0.0 for r in errors)


def test_injection_levels_share_level_zero_and_report_every_variant(tmp_path):
    items = load_items(HOTPOT, limit=3)
    config = EvalConfig(data=str(HOTPOT), limit=3, out=str(tmp_path), progress=False, allowed_modules=["tests"],
                        skip_main=True, inject_levels=[0, 2], inject_variants=["distractor", "conflicting"],
                        inject_systems=["standard_rag"])
    records = run_eval(config, **_fakes(items))
    assert sorted({r["condition"] for r in records}) == ["inject:conflicting:2", "inject:distractor:2", "per-question"]
    assert all(r["injected"] == 2 for r in records if r["condition"] == "inject:distractor:2")
    # question by question across the levels: a run stopped early leaves every level the same questions
    assert [r["qid"] for r in records] == [i.id for i in items for _ in range(3)]
    results = write_outputs(tmp_path)
    for variant in ("distractor", "conflicting"):
        assert set(results["injection"][variant]["standard_rag"]) == {0, 2}
    report = (tmp_path / "report.md").read_text()
    assert "Injection `distractor`" in report and (tmp_path / "injection_distractor.png").stat().st_size > 0
    assert json.loads((tmp_path / "results.json").read_text())["metadata"]["models"]["llm"] == "CountingReader"
    # benchmarks/analysis/injection_evidence.py counts the other questions' passages that reached the evidence
    tool = ROOT / "benchmarks" / "analysis" / "injection_evidence.py"
    script = [sys.executable, str(tool), str(HOTPOT), str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*script, "--limit", "3"], capture_output=True, text=True, env=env, check=True)
    rows = {(f[0], int(f[1])): f for f in (line.split() for line in done.stdout.splitlines()[1:])}
    assert set(rows) == {("standard_rag", 0), ("standard_rag", 2)}
    assert rows[("standard_rag", 0)][2:6] == ["3", "5.0", "0.00", "0/3"]  # no injection: nothing foreign
    assert rows[("standard_rag", 2)][2] == "3" and 0 <= float(rows[("standard_rag", 2)][4]) <= 2
    refused = subprocess.run([*script, "--limit", "1"], capture_output=True, text=True, env=env)
    assert refused.returncode != 0 and "not in the first 1 rows" in refused.stderr
    # a run folder as committed under docs/results/: the records only in replay.tar.xz, read without extracting
    committed = tmp_path / "committed"
    committed.mkdir()
    with tarfile.open(committed / "replay.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "records.jsonl", arcname="records.jsonl")
    archived = subprocess.run([*script[:-1], str(committed), "--limit", "3"], capture_output=True, text=True, env=env,
                              check=True)
    assert archived.stdout == done.stdout


def _rec(system, qid, em, seconds=1.0, **extra):
    return {"condition": "pooled", "system": system, "qid": qid, "em": em, "f1": em, "lenient": em,
            "support_recall": 0.5, "seconds": seconds, "seconds_equivalent": seconds, "stages": {"generator": seconds},
            "llm": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2}, "cache_hits": 0, "error": None,
            "qtype": "bridge", "params": {}, "pipeline": system, "inject": 0, "variant": None, **extra}


def test_summary_pairs_questions_and_computes_cost_ratios():
    recs = [_rec("standard_rag", q, e, 2.0) for q, e in [("a", 0.0), ("b", 1.0), ("c", 0.0)]]
    recs += [_rec("cf_rag", q, e, 6.0) for q, e in [("a", 1.0), ("b", 1.0)]]  # c not answered by cf_rag
    s = summarize(recs)["conditions"]["pooled"]["systems"]
    assert s["cf_rag"]["vs_baseline"]["em"]["n"] == 2
    assert s["cf_rag"]["vs_baseline"]["em"]["difference"] == pytest.approx(0.5)
    assert s["cf_rag"]["overhead_vs_baseline"] == pytest.approx(3.0)
    assert s["cf_rag"]["em_efficiency"] == pytest.approx(1.0 / 6.0)
    assert s["standard_rag"]["em_efficiency"] == pytest.approx((1 / 3) / 2.0)


def test_the_report_flags_a_latency_ratio_timed_on_two_machines():
    here, there = {"aaaa1111": 2.0}, {"bbbb2222": 6.0}
    recs = [_rec("standard_rag", q, 1.0, 2.0, timed_on=here) for q in "ab"]
    recs += [_rec("cf_rag", q, 1.0, 6.0, timed_on=here) for q in "ab"]
    recs += [_rec("cf_rag_fast", q, 1.0, 6.0, timed_on=there) for q in "ab"]
    recs += [_rec("causal_rag", q, 1.0, 6.0) for q in "ab"]  # written before records said where: "unknown"
    results = summarize(recs)
    s = results["conditions"]["pooled"]["systems"]
    assert not s["cf_rag"]["overhead_across_machines"]
    assert s["cf_rag_fast"]["overhead_across_machines"] and s["causal_rag"]["overhead_across_machines"]
    assert s["causal_rag"]["timed_on"] == {"unknown": 1.0}
    report = markdown(results)
    assert "| cf_rag | 6.0 / 6.0 / 6.0 | 3.00 |" in report
    assert "| cf_rag_fast | 6.0 / 6.0 / 6.0 | 3.00 † |" in report
    assert "† timed on other machines than `standard_rag` (aaaa1111 100%): `cf_rag_fast` bbbb2222 100%; " \
           "`causal_rag` unknown 100%." in report


def test_replies_and_records_say_which_machine_timed_their_seconds(tmp_path):
    asks = [[ChatMessage.from_user(f"Question: who {n}? Evidence: Ann")] for n in range(3)]
    made = CachingChatGenerator(generator=KeywordReader(candidates=["Ann"]), path=str(tmp_path / "made.jsonl"))
    for ask in asks:
        made.run(messages=ask)
    entries = [json.loads(line) for line in (tmp_path / "made.jsonl").read_text().splitlines()]
    assert {e["timed_on"] for e in entries} == {timing.timed_on()}
    # replayed in a later session: one reply from before the field, one timed elsewhere, one here
    del entries[0]["timed_on"]
    entries[0]["seconds"], entries[1]["seconds"], entries[1]["timed_on"] = 4.0, 3.0, "bbbb2222"
    (tmp_path / "later.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    later = CachingChatGenerator(generator=KeywordReader(candidates=["Ann"]), path=str(tmp_path / "later.jsonl"))
    later.reset_counters()
    for ask in asks:
        later.run(messages=ask)
    assert later.hit_seconds_by_machine == {"unknown": 4.0, "bbbb2222": 3.0,
                                            timing.timed_on(): pytest.approx(entries[2]["seconds"])}
    assert timing.by_machine(2.0, later.hit_seconds_by_machine) == {
        "unknown": 4.0, "bbbb2222": 3.0, timing.timed_on(): pytest.approx(2.0 + entries[2]["seconds"], abs=1e-3)}
    later.reset_counters()
    assert later.hit_seconds_by_machine == {}


def test_report_sums_the_graph_builds_and_costs_each_extraction_once(tmp_path):
    """graph_stats.jsonl: one line per build, a resumed run's load from the cache included (0 calls)."""
    recs = [_rec("causal_rag", "a", 1.0, 80.0)]
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    builds = [{"passages": 10, "extracted": 8, "cached": 2, "llm_calls": 8, "prompt_tokens": 6000,
               "completion_tokens": 2000, "parse_failures": 1, "seconds": 200.0},
              {"passages": 10, "extracted": 0, "cached": 10, "llm_calls": 0, "seconds": 4.0}]
    (tmp_path / "graph_stats.jsonl").write_text("".join(json.dumps(b) + "\n" for b in builds))
    results = write_outputs(tmp_path)  # with the plots: the index section is the report's, not theirs
    assert results["index"]["extracted"] == 8 and results["index"]["cached"] == 12
    assert results["index"]["seconds_per_extracted"] == pytest.approx(25.5)  # (200 + 4) / 8 extractions
    assert results["index"]["tokens_per_extracted"] == pytest.approx(1000.0)
    report = (tmp_path / "report.md").read_text()
    assert "2 graph build(s) over 20 passages: 8 extracted by the LLM (8 LLM calls" in report
    assert "25.5 s and 1000 LLM tokens per extracted passage" in report
    assert "Timed on more than one machine" not in report  # builds from before the field: all "unknown"
    builds[1].update(replayed=8, replayed_seconds=200.0, timed_on={"aaaa1111": 4.0, "bbbb2222": 200.0})
    (tmp_path / "graph_stats.jsonl").write_text("".join(json.dumps(b) + "\n" for b in builds))
    assert write_outputs(tmp_path, with_plots=False)["index"]["timed_on"] == pytest.approx(
        {"aaaa1111": 4 / 404, "bbbb2222": 200 / 404, "unknown": 200 / 404})
    report = (tmp_path / "report.md").read_text()
    assert "Timed on more than one machine: aaaa1111 1%, bbbb2222 50%, unknown 50%." in report
    (tmp_path / "graph_stats.jsonl").unlink()  # no graph: no section, no index
    assert write_outputs(tmp_path, with_plots=False)["index"] is None
    assert "Index time" not in (tmp_path / "report.md").read_text()


def test_an_unparsed_chunk_is_counted_once_however_many_builds_read_it():
    """A resumed run reloads every passage from the extraction cache: the graph's unparsed chunks stay as many."""
    costs = [{"key": "k1", "how": "extracted", "seconds": 9.0, "unparsed": 1},
             {"key": "k2", "how": "extracted", "seconds": 8.0, "unparsed": 0}]
    first = {"passages": 2, "extracted": 2, "parse_failures": 1, "seconds": 17.0, "call_seconds": 17.0,
             "passage_costs": costs}
    reload = {"passages": 2, "cached": 2, "parse_failures": 1, "seconds": 1.0, "call_seconds": 0.0,
              "passage_costs": [{**c, "how": "cached"} for c in costs]}
    index = index_cost([first, reload, reload])
    assert (index["parse_failures"], index["counted"]["distinct_passages"], index["all_priced"]) == (1, 2, True)
    legacy = {"passages": 2, "extracted": 2, "parse_failures": 1, "seconds": 17.0}  # before the prices
    mixed = index_cost([legacy, reload])
    assert (mixed["parse_failures"], mixed["all_priced"]) == (2, False)
    # priced before the prices said how many chunks did not parse: the build's own count
    older = {**first, "passage_costs": [{k: v for k, v in c.items() if k != "unparsed"} for c in costs]}
    assert index_cost([older])["parse_failures"] == 1
    assert index_cost([older, reload])["parse_failures"] == 1  # a later build says it per passage


def test_sweeps_compare_values_over_their_common_questions():
    recs = [_rec("cf_rag", q, e, pipeline="cf_rag") for q, e in [("a", 0.0), ("b", 0.0), ("c", 1.0)]]
    recs += [_rec("cf_rag_n3", q, 1.0, pipeline="cf_rag", params={"n_counterfactuals": 3}) for q in ("a", "b")]
    swept = summarize(recs)["sweeps"]["cf_rag:n_counterfactuals"]
    sweep = swept["values"]
    assert swept["default"] == 0  # cf_rag.yml's own value, read through the registry
    assert sweep["0"]["n"] == sweep["3"]["n"] == 2 and sweep["0"]["em"] == 0.0  # "c" has no N=3 answer
    assert sweep["3"]["em_vs_default"]["difference"] == pytest.approx(1.0) and sweep["0"]["em_vs_default"] is None
    assert "| 3 | 2 | 100.0 |" in markdown(summarize(recs))


def test_injection_tables_compare_levels_over_their_common_questions():
    def rec(system, qid, em, level, variant="distractor"):
        cond = f"inject:{variant}:{level}" if level else "per-question"
        return _rec(system, qid, em, condition=cond, inject=level, variant=variant if level else None)

    recs = [rec(s, q, 1.0, 0) for s in ("standard_rag", "cf_rag") for q in "abc"]  # N=0: three questions
    recs += [rec(s, q, 0.0, 2) for s in ("standard_rag", "cf_rag") for q in "ab"]  # N=2: stopped after two
    recs += [rec("standard_rag", q, 1.0, 2, "conflicting") for q in "abc"]
    injection = summarize(recs)["injection"]
    distractor = injection["distractor"]["cf_rag"]
    assert distractor[0]["n"] == distractor[2]["n"] == 2 and distractor[0]["em"] == 1.0  # "c" left out at N=0
    assert distractor[2]["em_vs_0"]["difference"] == pytest.approx(-1.0) and distractor[0]["em_vs_0"] is None
    conflicting = injection["conflicting"]
    assert set(conflicting) == {"standard_rag"} and conflicting["standard_rag"][2]["n"] == 3
    assert conflicting["standard_rag"][2]["em_vs_0"]["difference"] == 0.0
    report = markdown(summarize(recs))
    assert "Over the 2 questions that every level and system answered." in report
    assert "| cf_rag | – | -100.0 [-100.0, -100.0] (0↑ 2↓) |" in report


def test_trap_error_and_trap_rate_per_failure_mode():
    recs = [_rec("standard_rag", "1", 0.0, failure_mode="spurious", trapped=True),
            _rec("standard_rag", "2", 1.0, failure_mode="spurious", trapped=False),
            _rec("cf_rag", "1", 1.0, failure_mode="spurious", trapped=False),
            _rec("cf_rag", "2", 1.0, failure_mode="spurious", trapped=False)]
    s = summarize(recs)["conditions"]["pooled"]["systems"]
    assert s["standard_rag"]["by_failure_mode"]["spurious"] == pytest.approx(
        {"n": 2, "error_rate": 0.5, "lenient_error_rate": 0.5, "trap_rate": 0.5})
    assert s["cf_rag"]["by_failure_mode"]["spurious"]["trap_rate"] == 0.0
    assert runner.score(load_items(HOTPOT, limit=1)[0], "Tulsa", ["Tinted Windows (band)"])["support_recall"] == 0.5


def test_cache_keys_on_messages_and_kwargs(tmp_path):
    inner = KeywordReader(candidates=["Ann", "Bob"])
    path = tmp_path / "cache.jsonl"
    cached = CachingChatGenerator(generator=inner, path=str(path))
    cached.run(messages=[ChatMessage.from_user("Question: Ann or Bob? Evidence: Ann")])
    cached.run(messages=[ChatMessage.from_user("Question: Ann or Bob? Evidence: Ann")],
               generation_kwargs={"max_tokens": 5})
    assert cached.hits == 0
    reloaded = CachingChatGenerator(generator=inner, path=str(path))  # persisted across runs
    reloaded.run(messages=[ChatMessage.from_user("Question: Ann or Bob? Evidence: Ann")])
    assert reloaded.hits == 1
    assert CachingChatGenerator.from_dict(reloaded.to_dict()).path == str(path)


@component
class _ModelFileReader:
    """A generator configured like the llama.cpp one: a model file's path and a thread count."""

    def __init__(self, model: str, model_kwargs: dict) -> None:
        self.model, self.model_kwargs, self.calls = model, model_kwargs, 0

    def to_dict(self) -> dict:
        return default_to_dict(self, model=self.model, model_kwargs=self.model_kwargs)

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict:
        self.calls += 1
        return {"replies": [ChatMessage.from_assistant(f"read by {self.model}")]}


def test_a_run_folders_cache_replays_on_another_machine_and_reads_older_keys(tmp_path):
    """With the model's fingerprint, the key leaves out the file's path and the thread count."""
    ask = [ChatMessage.from_user("Question: who? Evidence: Ann")]
    here = _ModelFileReader("/home/a/.cache/m.gguf", {"n_threads": 2, "seed": 0, "model_path": "/home/a/.cache/m.gguf"})
    (tmp_path / "a").mkdir()
    CachingChatGenerator(generator=here, path=str(tmp_path / "a" / "c.jsonl"), model_id="sha-1").run(messages=ask)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "c.jsonl").write_bytes((tmp_path / "a" / "c.jsonl").read_bytes())  # the folder, copied
    there = _ModelFileReader("/srv/models/m.gguf", {"n_threads": 16, "seed": 0, "model_path": "/srv/models/m.gguf"})
    replayed = CachingChatGenerator(generator=there, path=str(tmp_path / "b" / "c.jsonl"), model_id="sha-1")
    assert replayed.run(messages=ask)["replies"][0].text == "read by /home/a/.cache/m.gguf" and there.calls == 0
    other_model = CachingChatGenerator(generator=there, path=str(tmp_path / "b" / "c.jsonl"), model_id="sha-2")
    other_model.run(messages=ask)
    assert there.calls == 1  # another model's fingerprint: a miss
    other_seed = _ModelFileReader("/srv/models/m.gguf", {"n_threads": 16, "seed": 7})
    CachingChatGenerator(generator=other_seed, path=str(tmp_path / "b" / "c.jsonl"), model_id="sha-1").run(messages=ask)
    assert other_seed.calls == 1  # a setting that shapes the reply still counts
    # a folder written before fingerprints (the key was the full serialisation) still replays here
    (tmp_path / "old").mkdir()
    CachingChatGenerator(generator=here, path=str(tmp_path / "old" / "c.jsonl")).run(messages=ask)
    same_machine = _ModelFileReader(here.model, dict(here.model_kwargs))
    CachingChatGenerator(generator=same_machine, path=str(tmp_path / "old" / "c.jsonl"),
                         model_id="sha-1").run(messages=ask)
    assert same_machine.calls == 0 and len((tmp_path / "old" / "c.jsonl").read_text().splitlines()) == 1
    # and after the generator gained a setting that shapes no reply (use_mmap, 2026-11-28): a regression the
    # archived replays showed (every pre-fingerprint archive missed the cache)
    unmapped = _ModelFileReader(here.model, {**here.model_kwargs, "use_mmap": False})
    CachingChatGenerator(generator=unmapped, path=str(tmp_path / "old" / "c.jsonl"), model_id="sha-1").run(messages=ask)
    assert unmapped.calls == 0
    with pytest.raises(ValueError, match="'model_id' must be a non-empty string"):
        CachingChatGenerator(generator=here, model_id="")
    assert CachingChatGenerator.from_dict(replayed.to_dict()).model_id == "sha-1"


def test_cli_eval_report_only_and_bad_options(tmp_path):
    (tmp_path / "records.jsonl").write_text("\n".join(json.dumps(_rec("standard_rag", q, 1.0)) for q in "ab") + "\n")
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--out", str(tmp_path), "--report-only", "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "standard_rag" in (tmp_path / "report.md").read_text()
    bad = CliRunner().invoke(main, ["eval", str(HOTPOT), "--out", str(tmp_path), "--sweep", "colour=1"])
    assert bad.exit_code == 2 and "PARAM=V1,V2" in bad.output
    bad = CliRunner().invoke(main, ["eval", str(HOTPOT), "--out", str(tmp_path), "--inject", "2,x"])
    assert bad.exit_code == 2 and "integers" in bad.output


def test_instances_on_one_file_share_entries_and_counters(tmp_path):
    path = str(tmp_path / "shared.jsonl")
    a = CachingChatGenerator(generator=KeywordReader(candidates=["Ann"]), path=path)
    b = CachingChatGenerator.from_dict(a.to_dict())  # what a pipeline built from YAML holds
    a.reset_counters()
    a.run(messages=[ChatMessage.from_user("Question: who? Evidence: Ann")])
    b.run(messages=[ChatMessage.from_user("Question: who? Evidence: Ann")])
    assert a.hits == b.hits == 1


def test_the_reply_cache_hands_the_support_scorer_the_wrapped_models_backend(tmp_path):
    from haystack import Document

    from haystack_cfrag.support import ReaderSupportScorer
    from haystack_cfrag.testing import MockChatGenerator

    cached = CachingChatGenerator(generator=MockChatGenerator(), path=str(tmp_path / "cache.jsonl"))
    scorer = ReaderSupportScorer(chat_generator=cached)
    assert scorer.score("Who leads?", "Christian Bale", []) < scorer.score(
        "Who leads?", "Christian Bale", [Document(content="Christian Bale leads the cast.")])
