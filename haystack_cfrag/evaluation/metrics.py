"""Answer metrics: strict EM and F1 (SQuAD/HotpotQA), the paper's lenient containment, paired bootstrap."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from haystack_cfrag.common.text import normalize_answer, token_f1


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """Strict EM: 1.0 if the normalised prediction equals any normalised gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD token F1 against the best gold answer (yes/no/noanswer score only when both sides say it)."""
    pred = normalize_answer(prediction)
    best = 0.0
    for gold in golds:
        ref = normalize_answer(gold)
        if (pred in ("yes", "no", "noanswer") or ref in ("yes", "no", "noanswer")) and pred != ref:
            continue
        best = max(best, token_f1(prediction, gold))
    return best


def lenient_containment(prediction: str, golds: Sequence[str]) -> float:
    """Paper-style lenient "EM" (not exact): 1.0 if a normalised gold answer occurs inside the prediction."""
    pred = f" {normalize_answer(prediction)} "
    return float(any(normalize_answer(g) and f" {normalize_answer(g)} " in pred for g in golds))


def trap_hit(prediction: str, golds: Sequence[str], trap_answer: str | None) -> bool | None:
    """Whether the prediction names the spurious (trap) candidate instead of a gold answer; None without one.

    >>> trap_hit("Heath Ledger", ["Christian Bale"], "Heath Ledger"), trap_hit("Bale", ["Bale"], None)
    (True, None)
    """
    if not trap_answer:
        return None
    return bool(lenient_containment(prediction, [trap_answer])) and not exact_match(prediction, golds)


def auc(pos: list[float], neg: list[float]) -> float:
    """P(score of a positive > score of a negative), ties one half (NaN when a side is empty).

    >>> auc([0.9, 0.8], [0.1, 0.8])
    0.875
    """
    if not pos or not neg:
        return float("nan")
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n) + 0.5 * (p == n)).mean())


def paired_bootstrap(
    system: Sequence[float], baseline: Sequence[float], *, n_resamples: int = 10_000, seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, float]:
    """Mean difference system − baseline over the same questions, a percentile bootstrap interval, wins, losses."""
    a, b = np.asarray(system, dtype=float), np.asarray(baseline, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("paired_bootstrap needs two non-empty score lists over the same questions.")
    diff = a - b
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(n_resamples, diff.size))
    means = diff[idx].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    return {
        "difference": float(diff.mean()),
        "low": float(np.quantile(means, tail)),
        "high": float(np.quantile(means, 1.0 - tail)),
        "n": int(diff.size),
        "wins": int((diff > 0).sum()),
        "losses": int((diff < 0).sum()),
    }
