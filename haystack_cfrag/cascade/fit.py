"""Fitting a gate on measured outcomes: a calibrated logistic model of "the method wins here" (scikit-learn).

Each example is a question's gate reading and what the method did to standard RAG's answer ("won", "lost",
"same"). The model is L2-regularised on standardised features, classes balanced, cross-validated by sample, or with
`folds` K, in K folds of each sample, whole pages together (`page_of`: questions of one page share their passages, so
a page is never both fitted and held out). Its operating point on the held-out predictions: the least escalation
keeping every win within `max_rate`, else the most wins net of losses within it, else 1.0 (never: the cascade answers
as standard RAG).

    >>> ex = [Example("a", str(i), "Who?", {"answer": "X", "support": s, "holding": h, "top_holds": t,
    ...                                      "passages": 5}, o)
    ...       for i, (s, h, t, o) in enumerate([(-0.1, 3, False, "won"), (-0.05, 1, True, "same"),
    ...                                         (-0.02, 2, True, "same"), (-0.2, 2, False, "won")])]
    >>> ex += [Example("b", e.qid, e.question, e.signals, e.outcome) for e in ex]
    >>> result = fit_gate(ex, feature_names=("support", "pile"), max_rate=1.0)  # half the questions are wins here
    >>> result.model.features, [round(float(row["kept"]), 2) for row in result.by_sample]
    (('support', 'pile'), [1.0, 1.0])
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from haystack_cfrag.cascade.features import FEATURES, features
from haystack_cfrag.cascade.model import MIN_SCALE, NEVER, GateModel, reaches

OUTCOMES = ("won", "lost", "same")
DEFAULT_FEATURES = tuple(f for f in FEATURES if not f.startswith("q_"))
"""What a fit reads unless told otherwise: the reader's reading, the passages and the answer's form (the
question's form overfits few wins: docs/cascade.md)."""
DEFAULT_MAX_RATE = 0.3
"""The escalation budget of the operating point (held out): a third of the questions at most."""
DEFAULT_C = 3.0
"""Inverse L2 strength, chosen by cross-validation on the tuning samples (docs/cascade.md)."""
ONE_SAMPLE_FOLDS = 5
"""The folds of a fit on one sample (held out by sample, it would learn nothing)."""


@dataclass(frozen=True)
class Example:
    """One labelled question: its sample, id, text, the gate's reading and the method's outcome."""

    sample: str
    qid: str
    question: str
    signals: dict[str, Any]
    outcome: str


@dataclass
class FitResult:
    """The fitted model, the held-out probabilities it was chosen on, and the tables a person reads."""

    model: GateModel
    held_out: list[float]
    examples: list[Example]
    by_sample: list[dict[str, Any]] = field(default_factory=list)
    held_out_by: str = "sample"
    """How the held-out probabilities were read: "sample", or "K folds of each sample, whole pages together"."""

    def curve(self) -> list[dict[str, Any]]:
        """`curve` over the held-out probabilities."""
        return curve(self.examples, self.held_out)


def matrix(examples: Sequence[Example], names: Sequence[str]) -> np.ndarray:
    """The feature matrix (NaN where a value could not be read)."""
    rows = []
    for ex in examples:
        values = features(ex.signals, ex.question)
        rows.append([np.nan if values[n] is None else values[n] for n in names])
    return np.asarray(rows, dtype=float).reshape(len(examples), len(names))


def _fit(x: np.ndarray, y: np.ndarray, names: Sequence[str], c: float, fitted_on: str) -> GateModel:
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415  (scikit-learn: only when fitting)

    unread = np.isnan(x).all(axis=0)  # a feature no example has (a backend without logit rows): mean 0
    means = np.where(unread, 0.0, np.nanmean(np.where(unread, 0.0, x), axis=0))
    filled = np.where(np.isnan(x), means, x)
    scales = filled.std(axis=0)
    scales = np.where(scales >= MIN_SCALE, scales, 1.0)  # a feature that hardly varies: unscaled
    z = (filled - means) / scales
    if len(set(y.tolist())) < 2:  # nothing to tell apart: the base rate, no weights
        rate = float(np.clip(y.mean() if len(y) else 0.0, 1e-4, 1 - 1e-4))
        weights, intercept = np.zeros(len(names)), float(np.log(rate / (1 - rate)))
    else:
        clf = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(z, y)
        weights, intercept = clf.coef_[0], float(clf.intercept_[0])
    return GateModel.from_dict({
        "features": list(names), "means": [round(float(v), 6) for v in means],
        "scales": [round(float(v), 6) for v in scales], "weights": [round(float(v), 6) for v in weights],
        "intercept": round(intercept, 6), "threshold": 0.5, "fitted_on": fitted_on[:500]})


def page_of(qid: str) -> str:
    """The page a question was asked of: its id's part before '#' (TimeQA's "timeqa-Hemma#P40-q2"), else the id.

    >>> page_of("timeqa-Hemma#P40-q2"), page_of("tune-ss-11")
    ('timeqa-Hemma', 'tune-ss-11')
    """
    return qid.split("#", 1)[0]


def fold_count(examples: Sequence[Example], folds: int | None = None) -> int:
    """How many folds of each sample are held out: `folds` (0: each sample whole), or by default 0 with two samples
    or more and `ONE_SAMPLE_FOLDS` with one (held out whole, a single sample would teach the fit nothing)."""
    if folds is None:
        return 0 if len({e.sample for e in examples}) > 1 else ONE_SAMPLE_FOLDS
    if folds < 0 or folds == 1:
        raise ValueError(f"gate fit: 'folds' must be 0 (by sample) or at least 2, got {folds}.")
    return folds


def held_out_folds(examples: Sequence[Example], folds: int) -> list[tuple[str, int]]:
    """Each example's held-out fold: its sample (`folds` 0), else its sample and one of `folds` folds, whole pages
    together, chosen by a stable hash of the page (`page_of`), not by the order of the questions.

    >>> ex = [Example("tq", q, "Who?", {}, "same") for q in ("tq-A#1", "tq-A#2", "tq-B#1")]
    >>> held_out_folds(ex, 0)
    [('tq', 0), ('tq', 0), ('tq', 0)]
    >>> a1, a2, _ = held_out_folds(ex, 2)
    >>> a1 == a2      # one page: one fold
    True
    """
    return [(e.sample, zlib.crc32(page_of(e.qid).encode("utf-8")) % folds if folds else 0) for e in examples]


def fit_gate(examples: Iterable[Example], *, feature_names: Sequence[str] = DEFAULT_FEATURES,
             c: float = DEFAULT_C, fitted_on: str | None = None, max_rate: float = DEFAULT_MAX_RATE,
             folds: int | None = None) -> FitResult:
    """Fit on every example, cross-validate by sample or in `folds` page-grouped folds (`held_out_folds`), set the
    operating point (module doc)."""
    if not 0.0 < max_rate <= 1.0:
        raise ValueError(f"gate fit: 'max_rate' must be in (0, 1], got {max_rate}.")
    examples = [e for e in examples if e.outcome in OUTCOMES]
    if not examples:
        raise ValueError("gate fit: no labelled examples (each needs the gate's reading and both systems' answers).")
    bad = [n for n in feature_names if n not in FEATURES]
    if bad:
        raise ValueError(f"gate fit: unknown feature(s) {bad} (known: {', '.join(FEATURES)}).")
    names = list(feature_names)
    x = matrix(examples, names)
    y = np.array([e.outcome == "won" for e in examples], dtype=int)
    samples = sorted({e.sample for e in examples})
    k = fold_count(examples, folds)
    fold_of = held_out_folds(examples, k)
    held = np.zeros(len(examples))
    for fold in sorted(set(fold_of)):
        test = np.array([f == fold for f in fold_of])
        train_model = _fit(x[~test], y[~test], names, c, "") if (~test).any() else None
        for i in np.flatnonzero(test):
            row = dict(zip(names, _row(x[i]), strict=True))
            held[i] = train_model.probability(row) if train_model else float(y.mean())
    threshold = operating_point(held, [e.outcome for e in examples], max_rate)
    label = fitted_on if fitted_on is not None else ", ".join(
        f"{s} {sum(e.sample == s for e in examples)}" for s in samples)
    final = _fit(x, y, names, c, label)
    model = GateModel.from_dict({**final.to_dict(), "threshold": threshold})
    result = FitResult(model=model, held_out=held.tolist(), examples=examples,
                       held_out_by=f"{k} folds of each sample, whole pages together" if k else "sample")
    result.by_sample = [_sample_row(s, examples, held, threshold) for s in samples]
    return result


def operating_point(held: Sequence[float], outcomes: Sequence[str], max_rate: float = 1.0) -> float:
    """The operating point over held-out probabilities (module doc), rounded down to 4 decimals.

    >>> operating_point([0.9, 0.2, 0.6, 0.1], ["won", "same", "won", "same"], max_rate=0.5)
    0.6
    >>> operating_point([0.9, 0.2, 0.15, 0.1], ["won", "same", "won", "same"], max_rate=0.5)   # 1 win kept, 0 lost
    0.9
    >>> operating_point([0.9, 0.2, 0.15, 0.1], ["lost", "same", "won", "same"], max_rate=0.5)  # nothing gains
    1.0
    """
    held = np.asarray(held, dtype=float)
    won = np.array([o == "won" for o in outcomes])
    lost = np.array([o == "lost" for o in outcomes])
    n = max(1, len(held))
    if won.any() and (held >= held[won].min()).sum() / n <= max_rate:
        return float(np.floor(held[won].min() * 1e4) / 1e4)
    best, best_net = NEVER, 0
    for t in sorted(set(held.tolist()), reverse=True):  # from the least escalation up
        chosen = held >= t
        if chosen.sum() / n > max_rate:
            break
        net = int((chosen & won).sum()) - int((chosen & lost).sum())
        if net > best_net:
            best, best_net = t, net
    return float(np.floor(best * 1e4) / 1e4) if best < NEVER else NEVER


def _row(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else float(v) for v in values]


def _sample_row(sample: str, examples: Sequence[Example], held: np.ndarray, threshold: float) -> dict[str, Any]:
    idx = [i for i, e in enumerate(examples) if e.sample == sample]
    esc = [i for i in idx if reaches(held[i], threshold)]
    wins = [i for i in idx if examples[i].outcome == "won"]
    losses = [i for i in idx if examples[i].outcome == "lost"]
    return {"sample": sample, "questions": len(idx), "escalated": len(esc), "rate": len(esc) / len(idx),
            "wins": len(wins), "wins_kept": sum(reaches(held[i], threshold) for i in wins),
            "losses": len(losses), "losses_avoided": sum(not reaches(held[i], threshold) for i in losses),
            "kept": (sum(reaches(held[i], threshold) for i in wins) / len(wins)) if wins else 1.0}


def gate_row(examples: Sequence[Example], gate: str, escalated: set[int]) -> dict[str, Any]:
    """One gate's row of a curve: what it escalates of `examples` (their indices), the wins it keeps and the losses
    it avoids.

    >>> ex = [Example("s", str(i), "Q", {}, o) for i, o in enumerate(["won", "lost", "same"])]
    >>> r = gate_row(ex, "mine", {0, 2})
    >>> r["escalated"], r["wins_kept"], r["losses_avoided"]
    (2, 1, 1)
    """
    n = len(examples)
    wins = [i for i, e in enumerate(examples) if e.outcome == "won"]
    losses = [i for i, e in enumerate(examples) if e.outcome == "lost"]
    return {"gate": gate, "escalated": len(escalated), "rate": len(escalated) / n if n else 0.0,
            "wins_kept": sum(i in escalated for i in wins), "wins": len(wins),
            "losses_avoided": sum(i not in escalated for i in losses), "losses": len(losses)}


def curve(examples: Sequence[Example], probabilities: Sequence[float]) -> list[dict[str, Any]]:
    """Escalation, wins kept and losses avoided at every distinct operating point, between the perfect gate and
    the always-on method.

    >>> ex = [Example("s", str(i), "Q", {}, o) for i, o in enumerate(["won", "same", "lost", "same"])]
    >>> [(r["gate"], r["escalated"], r["wins_kept"], r["losses_avoided"])  # doctest: +NORMALIZE_WHITESPACE
    ...  for r in curve(ex, [0.9, 0.5, 0.2, 0.1])]
    [('perfect', 1, 1, 1), ('fitted ≥ 0.9000', 1, 1, 1), ('fitted ≥ 0.5000', 2, 1, 1), ('fitted ≥ 0.2000', 3, 1, 0),
     ('fitted ≥ 0.1000', 4, 1, 0), ('always on', 4, 1, 0)]
    """
    wins = {i for i, e in enumerate(examples) if e.outcome == "won"}
    rows = [gate_row(examples, "perfect", wins)]
    for t in sorted(set(probabilities), reverse=True):
        rows.append(gate_row(examples, f"fitted ≥ {t:.4f}", {i for i, p in enumerate(probabilities) if p >= t}))
    rows.append(gate_row(examples, "always on", set(range(len(examples)))))
    return rows
