"""CER's quality function, calibration, necessity and counterfactual effects (paper 003, Eq. 3–7, 17–19), pure:
one function per equation (each names its own).

Scale of F̂: the paper's θ = 0.75 is for a calibrated F̂ (Eq. 18, T learned against GPT-4), which raw z cannot
reach (at most w1 + w2 = 0.7). Zero-shot, `quality_score` divides z by w1 + w2, a perfect set's z: F̂ = 1 for a
perfect set (negative when contradiction outweighs support)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from haystack_cfrag.cer.math.settings import ALPHA, DEFAULTS, K_MAX, KAPPA, MU, CerSettings
from haystack_cfrag.common.text import STOPWORDS, content_words, tokens
from haystack_cfrag.common.validation import check_range


# ---------------------------------------------------------------- Eq. 3 / 17, Eq. 18
def length_penalty(size: int, k_max: int = K_MAX) -> float:
    """p_len(S) = |S| / K_max (Eq. 3).

    >>> length_penalty(5, 25)
    0.2
    """
    return size / k_max


def raw_quality(
    p_entail: float, p_cov: float, p_contra: float, size: int, settings: CerSettings = DEFAULTS
) -> float:
    """z = w1·p_entail + w2·p_cov − w3·p_contra − w4·|S|/K_max (Eq. 3 / 17, uncalibrated), w and K_max from `settings`.

    >>> round(raw_quality(1.0, 1.0, 0.0, 1), 3)     # a perfect single passage: 0.4 + 0.3 − 0.1/25
    0.696
    >>> round(raw_quality(0.2, 0.0, 0.5, 5), 3)
    -0.04
    """
    w1, w2, w3, w4 = settings.weights
    return w1 * p_entail + w2 * p_cov - w3 * p_contra - w4 * length_penalty(size, settings.k_max)


def quality_score(
    p_entail: float, p_cov: float, p_contra: float, size: int, settings: CerSettings = DEFAULTS
) -> float:
    """F̂(q, S) on θ's scale: z / (w1 + w2), 1.0 for a perfect set of no length (see the module doc).

    >>> round(quality_score(1.0, 1.0, 0.0, 1), 4)
    0.9943
    >>> quality_score(0.5, 1.0, 0.0, 0) < DEFAULTS.theta <= quality_score(0.75, 1.0, 0.0, 1)
    True
    """
    return raw_quality(p_entail, p_cov, p_contra, size, settings) / (settings.weights[0] + settings.weights[1])


def temperature_calibration(z: float, temperature: float) -> float:
    """F̂_cal = σ(z / T) (Eq. 18), for a user who fits T (the zero-shot default is `quality_score`).

    >>> temperature_calibration(0.0, 0.5)
    0.5
    >>> round(temperature_calibration(0.7, 0.5), 3)
    0.802
    """
    check_range("temperature", temperature, 0.0, math.inf, low_open=True, high_open=True)
    return _sigmoid(z / temperature)


# ---------------------------------------------------------------- p_cov
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*")
_HAS_DIGIT = re.compile(r"\d")


def key_tokens(answer: str) -> list[str]:
    """The answer's key tokens (p_cov's denominator): its capitalised words and words with a digit, else its
    content words; no stop words, SQuAD-normalised, unique, in order.

    >>> key_tokens("The lead actor Christian Bale")
    ['christian', 'bale']
    >>> key_tokens("on 3 March 1990")
    ['3', 'march', '1990']
    >>> key_tokens("a science fiction film")
    ['science', 'fiction', 'film']
    >>> key_tokens("Yes")
    []
    """
    marked = [w for w in re.findall(r"\S+", answer) if _CAPITALISED.match(w) or _HAS_DIGIT.search(w)]
    found = [t for w in marked for t in tokens(w) if t not in STOPWORDS]
    if not found:
        found = [t for w in content_words(answer) for t in tokens(w)]
    return list(dict.fromkeys(found))


def coverage(answer: str, texts: Iterable[str]) -> float:
    """p_cov(q, S): the share of the answer's key tokens found (whole tokens) in S's texts; 1.0 without key tokens.

    >>> coverage("Christian Bale", ["Cast: lead actor Christian Bale stars as Bruce Wayne."])
    1.0
    >>> coverage("Christian Bale", ["Heath Ledger plays the Joker.", "Bale returns as Batman."])
    0.5
    >>> coverage("Christian Bale", [])
    0.0
    >>> coverage("yes", [])
    1.0
    """
    keys = key_tokens(answer)
    if not keys:
        return 1.0
    present = {t for text in texts for t in tokens(text)}
    return sum(1 for k in keys if k in present) / len(keys)


# ---------------------------------------------------------------- reader log-probabilities → [0, 1]
def support_probability(log_prob: float) -> float:
    """p_entail: exp of a length-normalised log P(a | q, E), clipped to [0, 1].

    >>> support_probability(0.0)
    1.0
    >>> round(support_probability(-0.105), 3)
    0.9
    >>> support_probability(float("-inf"))
    0.0
    """
    if math.isnan(log_prob):
        raise ValueError("'log_prob' must be a number, got nan.")
    return math.exp(min(0.0, log_prob))


def pmi_probability(pmi: float, scale: float = 1.0) -> float:
    """σ(PMI / scale): the contrast support(a|q,E) − support(a|q,∅) mapped to (0, 1) (0.5: no change; scale 1.0
    is a guess, not a fit).

    >>> pmi_probability(0.0)
    0.5
    >>> round(pmi_probability(1.8), 2)
    0.86
    """
    check_range("scale", scale, 0.0, math.inf, low_open=True, high_open=True)
    if math.isnan(pmi):
        raise ValueError("'pmi' must be a number, got nan.")
    return _sigmoid(pmi / scale)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


# ---------------------------------------------------------------- Eq. 19
def utility(gain: float, length: float, *, mu: float = MU, kappa: float = KAPPA, sigma: float = 0.0) -> float:
    """U(d | q, C) = τ̂ − μ·|d|/1000 + κ·σ̂ (Eq. 19): `gain` τ̂, `length` |d| in tokens, `sigma` σ̂ (zero-shot 0).

    >>> round(utility(0.3, 200), 4)               # 0.3 − 0.05·0.2
    0.29
    >>> round(utility(0.3, 200, sigma=0.1), 4)     # + 0.2·0.1
    0.31
    """
    return gain - mu * length / 1000.0 + kappa * sigma


# ---------------------------------------------------------------- Eq. 4–7
def deletion_effect(full: float, without: float) -> float:
    """Δy_del(d) = F̂(q, S) − F̂(q, S \\ {d}) (Eq. 5): the quality lost when d is removed.

    >>> round(deletion_effect(0.9, 0.3), 3)
    0.6
    """
    return full - without


def replacement_effect(full: float, replaced: float) -> float:
    """Δy_rep(d) = F̂(q, S) − F̂(q, S ∪ {d'} \\ {d}) (Eq. 6), d' a near-duplicate hard negative of d.

    >>> round(replacement_effect(0.9, 0.1), 3)
    0.8
    """
    return full - replaced


def fused_effect(deletion: float, replacement: float, alpha: float = ALPHA) -> float:
    """Δy(d) = α·Δy_del(d) + (1 − α)·Δy_rep(d) (Eq. 7; α = 0.7).

    >>> round(fused_effect(0.6, 0.8), 3)
    0.66
    """
    check_range("alpha", alpha, 0.0, 1.0)
    return alpha * deletion + (1.0 - alpha) * replacement


def necessity(deletion_effects: Sequence[float]) -> list[float]:
    """Nec(d) = max(0, Δy_del(d)) / Σ_{d' ∈ S} max(0, Δy_del(d')) (Eq. 4), one per kept passage; all 0 when no
    deletion effect is positive (no passage individually necessary).

    >>> necessity([1.5, 0.5, -0.2])
    [0.75, 0.25, 0.0]
    >>> necessity([-0.01, 0.0])
    [0.0, 0.0]
    >>> necessity([])
    []
    """
    clipped = [max(0.0, float(e)) for e in deletion_effects]
    total = sum(clipped)
    if total <= 0.0:
        return [0.0] * len(clipped)
    return [c / total for c in clipped]


__all__ = ["coverage", "deletion_effect", "fused_effect", "key_tokens", "length_penalty", "necessity",
           "pmi_probability", "quality_score", "raw_quality", "replacement_effect", "support_probability",
           "temperature_calibration", "utility"]
