"""Metrics against the official SQuAD/HotpotQA normalisation, bootstrap, and injection selection."""

import json
from pathlib import Path

import numpy as np
import pytest

from haystack_cfrag.evaluation.injection import contains_answer, select_distractors
from haystack_cfrag.evaluation.metrics import exact_match, f1, lenient_containment, paired_bootstrap
from tests.fakes import hashed_bow


@pytest.mark.parametrize(
    ("pred", "gold", "em", "f1_value"),
    [
        ("The Beatles", "Beatles", 1.0, 1.0),  # articles dropped
        ("beatles!", "The Beatles.", 1.0, 1.0),  # punctuation and case
        ("Christian Bale", "Bale", 0.0, 2 / 3),  # P = 1/2, R = 1
        ("yes", "no", 0.0, 0.0),
        ("no", "no", 1.0, 1.0),
        ("yes it is", "yes", 0.0, 0.0),  # official script: yes/no only with an exact yes/no
        ("", "Tulsa", 0.0, 0.0),
    ],
)
def test_em_and_f1_official_cases(pred, gold, em, f1_value):
    assert exact_match(pred, [gold]) == em
    assert f1(pred, [gold]) == pytest.approx(f1_value)


def test_best_gold_and_lenient_containment():
    assert f1("Bale", ["Heath Ledger", "Bale"]) == 1.0
    assert lenient_containment("The lead actor is Christian Bale, not Heath Ledger", ["Christian Bale"]) == 1.0
    assert exact_match("The lead actor is Christian Bale", ["Christian Bale"]) == 0.0
    assert lenient_containment("Balenciaga", ["Bale"]) == 0.0  # whole tokens only


def test_paired_bootstrap_interval_covers_the_difference():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2, 200).astype(float)
    better = np.clip(base + (rng.uniform(size=200) < 0.2), 0, 1)
    out = paired_bootstrap(better, base, n_resamples=2000)
    assert out["low"] <= out["difference"] <= out["high"] and out["low"] > 0 and out["n"] == 200
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap([1.0], [1.0, 0.0])


def test_paired_bootstrap_counts_the_discordant_questions():
    out = paired_bootstrap([1, 1, 0, 0, 1], [0, 1, 1, 0, 0], n_resamples=500)
    assert (out["wins"], out["losses"], out["n"]) == (2, 1, 5)
    assert out["difference"] == pytest.approx(0.2)


def test_injected_distractors_never_contain_the_answer_on_hotpotqa():
    data = Path(__file__).resolve().parents[2] / "data" / "hotpotqa_dev_a_30.jsonl"
    rows = [json.loads(line) for line in data.open()]
    assert len(rows) == 30
    passages, owners = [], []
    for row in rows:
        for sentences in row["context"]["sentences"]:
            passages.append("".join(sentences))
            owners.append(row["id"])
    emb = np.array([hashed_bow(p, 256) for p in passages])
    for row in rows:
        for n in (0, 2, 4, 8, 16):
            picked = select_distractors(hashed_bow(row["question"], 256), [row["answer"]], passages, emb,
                                        owners, row["id"], n)
            assert len(picked) == n and len(set(picked)) == n
            for i in picked:
                assert owners[i] != row["id"]
                if row["answer"].lower() not in ("yes", "no"):
                    assert not contains_answer(passages[i], [row["answer"]])


def test_contains_answer():
    assert contains_answer("Tinted Windows first played in Tulsa, Oklahoma.", ["Tulsa"])
    assert not contains_answer("Tulsans love music.", ["Tulsa"])


def test_micro_benchmark_reports_every_stage():
    from haystack_cfrag.cfrag.bench import format_rows, run_benchmark

    rows = run_benchmark((20, 60), dimension=32, repeats=1)
    assert [r["documents"] for r in rows] == [20, 60]
    assert all(r[k] > 0 for r in rows for k in ("dedup", "stratifier", "arbitration"))
    table = format_rows(rows, draft_seconds=10.0)
    assert "share of one draft (10.0 s)" in table and "arbitration" in table
