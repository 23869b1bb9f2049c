"""Per-question answers of each method's current shipped default, read from the archived runs, for
designing a cascade gate (standard RAG first, a causal method only on some questions).

    python3 benchmarks/analysis/archived_answers.py            # writes runs/cascade/archived_answers.json

No model, no replay: the records come from `docs/results/<archive>/replay.tar.xz` (run_folder.py).
A sample's questions are the first `n` of its standard-RAG source (the records keep the dataset's
order). For each source it checks that the archive's own report.md prints the EM the records give,
then prints per sample each method's n, EM, its wins (right where standard RAG is wrong) and losses
against standard RAG, and how many normalised answers differ from standard RAG's.

Output: {sample: {"sources": {system: "archive::system — note"},
                  "questions": {qid: {"question", "gold", system: {"answer", "em", "f1"}}}}}
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_folder import read_run_records  # noqa: E402

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"

# sample -> (n, {system: ("archive::system in its records", note)}); standard_rag first.
SAMPLES: dict[str, tuple[int, dict[str, tuple[str, str]]]] = {
    "trap_dev": (24, {
        "standard_rag": ("trap_dev_family::standard_rag",
                         "pooled; same answers in every later trap_dev archive (trap_dev_v3/cer_trap_dev: 'Battle of "
                         "Waterloo' without 'The' on dev-ee-02)"),
        "cf_rag": ("trap_dev_family::cf_rag",
                   "default, 45.8 (= trap_ks); the copies in trap_dev_v3/cer_trap_dev/trap_dev_duel_reading are the "
                   "41.7 run whose counterfactuals missed the cache (dev-ss-01 India)"),
        "cf_rag_fast": ("trap_dev_v3::cf_rag_fast",
                        "same answers in cer_trap_dev, trap_dev_duel_reading, trap_dev_default"),
        "cer": ("cer_trap_dev::cer", "the only 24-question CER run; later cost changes kept the kept sets (cer.md)"),
        "cdf_rag": ("cdf_rag_check_trap_dev::cdf_rag[support_threshold=-0.5]",
                    "shipped: spaCy graph, check under the answer prompt at -0.5; same answers as "
                    "graph_spacy_trap_dev::cdf_rag"),
        "causal_rag": ("causal_rag_one_call_trap_dev::causal_rag",
                       "PROXY: one summary call over the LLM graph; spaCy+one call never ran on all 24 "
                       "(latency_trap_dev_all: first 8 on an 8-question pool); graph_spacy_trap_dev::causal_rag "
                       "(spaCy, two calls, 25.0) differs on 18 of 24"),
    }),
    "dev_a": (30, {
        "standard_rag": ("cer_dev_a::standard_rag",
                         "pooled over the first 100, run on the first 50 (first 30 here); differs from hotpotqa_a_v3's "
                         "on 1 (5a888c9d...), so cf_rag_fast (only in hotpotqa_a_v3, = its cf_rag on these 30) is left "
                         "out"),
        "cf_rag": ("cer_dev_a::cf_rag",
                   "default (= causal_score_reader_dev_a::cf_rag); differs from hotpotqa_a_v3::cf_rag on the same 1"),
        "cer": ("cer_dev_a::cer", "default"),
    }),
    "dev_a_per_question": (30, {
        "standard_rag": ("hotpot_a_graph::standard_rag",
                         "per-question corpora (the graph methods never ran pooled on dev_a); same answers in "
                         "graph_spacy_dev_a, cdf_rag_check_dev_a, graph_spacy_causal_dev_a"),
        "cf_rag": ("hotpot_a_graph::cf_rag",
                   "default, replayed from hotpotqa_a_injection_v3; standard RAG's answer on all 30"),
        "cdf_rag": ("cdf_rag_check_dev_a::cdf_rag[support_threshold=-0.5]",
                    "shipped: spaCy graph, check under the answer prompt at -0.5; same answers as "
                    "graph_spacy_dev_a::cdf_rag"),
        "causal_rag": ("graph_spacy_causal_dev_a::causal_rag", "shipped: spaCy graph, one summary call"),
    }),
    "popqa": (100, {
        "standard_rag": ("popqa_v3::standard_rag", "pooled; same answers in cer_popqa, popqa_graph, graph_spacy_popqa"),
        "cf_rag": ("popqa_v3::cf_rag", "default (= popqa_graph::cf_rag)"),
        "cf_rag_fast": ("popqa_v3::cf_rag_fast", ""),
        "cer": ("cer_popqa::cer", "default"),
        "cdf_rag": ("graph_spacy_popqa::cdf_rag", "shipped: spaCy graph, check under the answer prompt at -0.5"),
        "causal_rag": ("graph_spacy_popqa::causal_rag", "shipped: spaCy graph, one summary call"),
    }),
    "trap_dev_b": (36, {
        "standard_rag": ("trap_dev_b_final::standard_rag", "pooled; same answers in every later trap_dev_b archive"),
        "cf_rag": ("trap_dev_b_final::cf_rag", "default"),
        "cf_rag_fast": ("trap_dev_b_final::cf_rag_fast", ""),
        "cer": ("cer_trap_dev_b::cer", "default"),
        "cdf_rag": ("graph_spacy_trap_dev_b::cdf_rag",
                    "spaCy graph, check still under the support prompt at -1.0 (no cdf_rag_check run here; elsewhere "
                    "the new reading kept every answer)"),
        "causal_rag": ("graph_spacy_causal_trap_dev_b::causal_rag", "shipped: spaCy graph, one summary call"),
    }),
    "dev_c": (100, {
        "standard_rag": ("hotpotqa_c_final::standard_rag", "pooled; same answers in cer_dev_c, hotpot_c_graph"),
        "cf_rag": ("hotpotqa_c_final::cf_rag", "default (= cer_dev_c, hotpot_c_graph copies)"),
        "cf_rag_fast": ("hotpotqa_c_final::cf_rag_fast", ""),
        "cer": ("cer_dev_c::cer", "default"),
        "cdf_rag": ("cdf_rag_check_dev_c::cdf_rag",
                    "shipped: spaCy graph, check under the answer prompt at -0.5; same answers as "
                    "graph_spacy_dev_c::cdf_rag"),
        "causal_rag": ("graph_spacy_causal_dev_c::causal_rag", "shipped: spaCy graph, one summary call"),
    }),
}

_records: dict[str, list[dict]] = {}


def records(archive: str, system: str) -> list[dict]:
    if archive not in _records:
        _records[archive] = read_run_records(RESULTS / archive)
    return [r for r in _records[archive] if r["system"] == system]


def reported_em(archive: str, system: str) -> float | None:
    """The EM that `archive`'s report.md prints for `system` (its first "| system | n | EM |" row)."""
    text = (RESULTS / archive / "report.md").read_text(encoding="utf-8")
    m = re.search(rf"^\| {re.escape(system)} \| \d+ \| ([\d.]+) \|", text, re.M)
    return float(m.group(1)) if m else None


def build(sample: str, n: int, sources: dict[str, tuple[str, str]]) -> dict:
    out = {"sources": {}, "questions": {}}
    for system, (spec, note) in sources.items():
        archive, name = spec.split("::")
        recs = records(archive, name)
        em_all, reported = 100 * sum(r["em"] for r in recs) / len(recs), reported_em(archive, name)
        if reported is None or abs(em_all - reported) > 0.05:
            print(f"!! {sample} {spec}: records give {em_all:.1f} EM on {len(recs)}, report.md {reported}")
        if system == "standard_rag":
            qids = [r["qid"] for r in recs[:n]]
            for r in recs[:n]:
                out["questions"][r["qid"]] = {"question": r["question"], "gold": r["answers"]}
        by_qid = {r["qid"]: r for r in recs}
        missing = [q for q in qids if q not in by_qid]
        if missing:
            raise SystemExit(f"{sample} {spec}: no record for {missing}")
        for q in qids:
            r = by_qid[q]
            out["questions"][q][system] = {"answer": r["answer"], "em": int(r["em"]), "f1": round(r["f1"], 4),
                                           "_norm": r["answer_normalized"]}
        out["sources"][system] = f"{spec} — {note}" if note else spec
    return out


def summarise(sample: str, data: dict) -> None:
    qs = data["questions"]
    print(f"\n## {sample} ({len(qs)} questions)")
    print(f"{'system':14s} {'n':>4s} {'EM':>6s} {'F1':>6s} {'differ':>6s}  wins / losses vs standard_rag")
    for system in data["sources"]:
        rows = [(q, v[system], v["standard_rag"]) for q, v in qs.items()]
        em = 100 * sum(m["em"] for _, m, _ in rows) / len(rows)
        f1 = 100 * sum(m["f1"] for _, m, _ in rows) / len(rows)
        wins = [q for q, m, s in rows if m["em"] and not s["em"]]
        losses = [q for q, m, s in rows if s["em"] and not m["em"]]
        differ = sum(m["_norm"] != s["_norm"] for _, m, s in rows)
        print(f"{system:14s} {len(rows):4d} {em:6.1f} {f1:6.1f} {differ:6d}  "
              f"+{len(wins)} {wins} / -{len(losses)} {losses}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/cascade/archived_answers.json"))
    args = parser.parse_args()
    table = {sample: build(sample, n, sources) for sample, (n, sources) in SAMPLES.items()}
    for sample, data in table.items():
        summarise(sample, data)
        for v in data["questions"].values():  # the normalised answer only served the "differ" count
            for system in data["sources"]:
                v[system].pop("_norm")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
