"""Reports beside the controls (issue 46): the best control, the order-noise floor, what each win is."""

from haystack_cfrag.evaluation.controls import against_controls, change_kind, kinds_of_changes
from haystack_cfrag.evaluation.report import markdown
from haystack_cfrag.evaluation.statistics import paired
from haystack_cfrag.evaluation.summary import summarize


def rec(system, qid, em, *, lenient=None, recall=0.5, evidence=("a", "b"), answers=("Bale",), answer=None,
        pipeline=None):
    return {"condition": "pooled", "system": system, "pipeline": pipeline or system.split("[")[0], "qid": qid,
            "em": em, "f1": em, "lenient": em if lenient is None else lenient, "support_recall": recall,
            "evidence": list(evidence), "answers": list(answers), "answer": answer or ("Bale" if em else "Ledger"),
            "seconds": 1.0, "seconds_equivalent": 1.0, "stages": {}, "llm": {"calls": 1}, "cache_hits": 0,
            "error": None, "qtype": "bridge", "params": {}, "inject": 0, "variant": None}


def test_each_kind_is_told_apart():
    base = rec("standard_rag", "q", 0.0)
    assert change_kind(rec("m", "q", 1.0), base) == "same evidence reordered"
    assert change_kind(rec("m", "q", 1.0, recall=1.0), base) == "new evidence"
    assert change_kind(rec("m", "q", 1.0), rec("standard_rag", "q", 0.0, lenient=1.0)) == "answer form"
    assert change_kind(rec("m", "q", 1.0, answers=("no",)), rec("s", "q", 0.0, answers=("no",))) == "yes/no"
    partly = {**rec("standard_rag", "q", 0.0), "f1": 0.67}  # "Army" for "Army, Navy": the same answer, partly said
    assert change_kind(rec("m", "q", 1.0, recall=1.0), partly) == "answer form"
    assert change_kind(partly, rec("m", "q", 1.0, recall=1.0)) == "answer form"  # a loss the same way
    # no gold titles: the passages read decide
    assert change_kind(rec("m", "q", 1.0, recall=None, evidence=("b", "a")), rec("s", "q", 0.0, recall=None)) == \
        "same evidence reordered"
    assert change_kind(rec("m", "q", 1.0, recall=None, evidence=("c",)), rec("s", "q", 0.0, recall=None)) == \
        "new evidence"
    assert change_kind(rec("m", "q", 1.0), rec("s", "q", 1.0)) is None


def test_wins_and_losses_are_counted_by_kind_on_common_questions_only():
    system = [rec("m", "1", 1.0, recall=1.0), rec("m", "2", 0.0), rec("m", "3", 1.0)]
    reference = [rec("s", "1", 0.0), rec("s", "2", 1.0, lenient=1.0), rec("s", "4", 0.0)]
    assert kinds_of_changes(system, reference) == {"won": {"new evidence": 1}, "lost": {"same evidence reordered": 1}}


def test_the_best_control_is_the_strongest_retrieval_control_and_order_is_the_noise_floor():
    qids = [str(i) for i in range(10)]
    systems = {
        "standard_rag": [rec("standard_rag", q, float(i < 4)) for i, q in enumerate(qids)],
        "hybrid_rag": [rec("hybrid_rag", q, float(i < 6)) for i, q in enumerate(qids)],
        "order_rag": [rec("order_rag", q, float(0 < i < 4), answer="X" if i == 0 else None)
                      for i, q in enumerate(qids)],
        "cdf_rag": [rec("cdf_rag", q, float(i < 5)) for i, q in enumerate(qids)],
    }
    roles = {"standard_rag": "retrieval", "hybrid_rag": "retrieval", "order_rag": "order"}
    out = against_controls(systems, roles, "standard_rag", paired)
    assert out["best_control"] == "hybrid_rag"
    assert out["order_noise"]["changed"] == 1 and out["order_noise"]["em"]["losses"] == 1
    cdf = out["systems"]["cdf_rag"]
    assert cdf["vs_best_control"]["em"]["difference"] == -0.1 and cdf["vs_best_control"]["em"]["losses"] == 1
    assert cdf["kinds_vs_baseline"] == {"won": {"same evidence reordered": 1}, "lost": {}}
    assert "vs_best_control" not in out["systems"]["order_rag"]  # a control is not compared with the best control


def test_the_report_says_the_best_control_and_the_order_noise():
    records = [rec(s, str(i), float(i < k)) for s, k in (("standard_rag", 3), ("order_rag", 2), ("cf_rag", 5))
               for i in range(8)]
    text = markdown(summarize(records))
    assert "the best retrieval control here is `standard_rag`" in text
    assert "`order_rag` (the same passages reordered) changed 1 of 8 answers" in text
    assert "| cf_rag | +25.0 [" in text and "won: 2 same evidence reordered; lost: –" in text


def test_the_reply_cache_keeps_no_path_of_the_machine_that_made_it(tmp_path):
    from haystack import component
    from haystack.dataclasses import ChatMessage

    from haystack_cfrag.evaluation.llm_cache import CachingChatGenerator

    @component
    class PathReporter:  # llama-cpp-python's replies name the GGUF's full path in meta["model"]
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages, generation_kwargs=None):
            return {"replies": [ChatMessage.from_assistant("Bale", meta={"model": "/root/.cache/x/q.gguf"})]}

    path = tmp_path / "llm_cache.jsonl"
    live = CachingChatGenerator(generator=PathReporter(), path=str(path)).run([ChatMessage.from_user("q")])
    assert live["replies"][0].meta["model"] == "/root/.cache/x/q.gguf"  # the live reply is the model's own
    assert "/root" not in path.read_text() and '"model": "q.gguf"' in path.read_text()
