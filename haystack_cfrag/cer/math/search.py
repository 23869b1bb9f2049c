"""CER's minimal sufficient evidence set search (paper 003, Sec. 3.6, Algorithm 1), pure: passages are indices
0..n−1 of a pool and F̂ any callable over tuples of them.

    C ← ∅
    forward: add d* = argmax_{d ∉ C} U(d | q, C),  U = τ̂(d | q, C) − μ·|d|/1000 + κ·σ̂(d | q, C)
             stop once F̂(C) ≥ θ and the gain F̂(C) − F̂(C_prev) < δ for two rounds in a row,
             or |C| = K_max, or the pool is empty
    prune:   traverse C in reverse order of addition; remove d if F̂(C \\ {d}) ≥ θ + ε;
             repeat until nothing can be removed

Zero-shot τ̂ is the measured, memoised gain F̂(C ∪ {d}) − F̂(C); σ̂ is 0. With `bound` (F̂'s free upper bound),
sets whose outcome it decides are not scored and the selection is the same.

Where the paper is silent: sets are called in order of addition; ties go to the lower index; a round with
F̂ < θ or gain ≥ δ resets the two-round count; pruning keeps `min_size`. Two additions (False gives Alg. 1):
`prune_unnecessary` also removes d when F̂(C \\ {d}) ≥ max(θ, F̂(C)), and `best_prefix`, when the forward phase
ends without the two-round stop, goes back to the shortest prefix with the highest F̂ that reached θ."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from haystack_cfrag.cer.math.quality import deletion_effect, fused_effect, necessity, replacement_effect, utility
from haystack_cfrag.cer.math.settings import ALPHA, DEFAULTS, THETA, CerSettings
from haystack_cfrag.common.validation import check_int

Quality = Callable[[tuple[int, ...]], float]
"""F̂(q, S): the quality of the passages `S` (indices into the pool, in the order shown)."""
Gain = Callable[[tuple[int, ...], int], float]
"""τ̂(d | q, C): the predicted gain of adding passage `d` to the set `C`."""
Bound = Callable[[tuple[int, ...]], float]
"""An upper bound on F̂(q, S) that costs no quality call (the search skips what it decides)."""

STOP_DELTA = "delta"
STOP_K_MAX = "k_max"
STOP_POOL = "pool"
STOP_ROUNDS = "rounds"


class MemoisedQuality:
    """A quality callable that calls the wrapped one once per distinct tuple (`calls`: the cost); a non-finite
    value raises ValueError naming the set.

    >>> seen = []
    >>> q = MemoisedQuality(lambda s: seen.append(s) or len(s) / 10)
    >>> q((0, 1)), q((0, 1)), q(())
    (0.2, 0.2, 0.0)
    >>> q.calls, seen
    (2, [(0, 1), ()])
    """

    def __init__(self, quality: Quality) -> None:
        self._quality = quality
        self._memo: dict[tuple[int, ...], float] = {}

    @property
    def calls(self) -> int:
        """Distinct sets evaluated so far (calls of the wrapped function)."""
        return len(self._memo)

    @property
    def evaluated(self) -> Mapping[tuple[int, ...], float]:
        """Every set evaluated so far and its F̂, in call order."""
        return dict(self._memo)

    def __call__(self, indices: tuple[int, ...]) -> float:
        key = tuple(indices)
        if key not in self._memo:
            value = float(self._quality(key))
            if not math.isfinite(value):
                raise ValueError(f"quality of the set {key} is not finite: {value!r}.")
            self._memo[key] = value
        return self._memo[key]


@dataclass(frozen=True)
class Step:
    """One forward round: every candidate's utility, the one chosen, F̂ after adding it and the gain."""

    chosen: int
    utilities: Mapping[int, float]
    quality: float
    gain: float


@dataclass(frozen=True)
class SearchResult:
    """What Algorithm 1 returns: `kept` (most useful first), `forward`, `steps`, `pruned`, `cut` (by
    `best_prefix`), `initial_quality`, `quality`, `reached`, `stop` ("delta", "k_max", "pool", "rounds"),
    `quality_calls` and `unscored` (what `max_rounds` appended unscored)."""

    kept: tuple[int, ...]
    forward: tuple[int, ...]
    steps: tuple[Step, ...]
    pruned: tuple[int, ...]
    initial_quality: float
    quality: float
    reached: bool
    stop: str
    quality_calls: int
    theta: float = field(default=THETA)
    cut: tuple[int, ...] = ()
    unscored: tuple[int, ...] = ()

    @property
    def qualities(self) -> list[float]:
        """F̂ after each forward round."""
        return [s.quality for s in self.steps]


def minimal_sufficient_set(
    n: int,
    quality: Quality,
    *,
    lengths: Sequence[float] | None = None,
    gain: Gain | None = None,
    uncertainty: Gain | None = None,
    settings: CerSettings = DEFAULTS,
    min_size: int = 1,
    prune_unnecessary: bool = True,
    best_prefix: bool = True,
    bound: Bound | None = None,
    max_rounds: int | None = None,
) -> SearchResult:
    """Algorithm 1 over a pool of `n` passages: forward greedy with the δ two-round stop, then reverse pruning.

    :param n: pool size; passages are the indices 0..n−1.
    :param quality: F̂ over a tuple of indices (wrapped in `MemoisedQuality` unless it is one).
    :param lengths: |d| in tokens per passage, for the μ·|d|/1000 cost (None = no length cost).
    :param gain: τ̂(d | C); None = the measured marginal gain.
    :param uncertainty: σ̂(d | C) for the κ bonus; None = 0.
    :param settings: θ, ε, μ, κ, δ and K_max (`CerSettings`; default: the paper's).
    :param min_size: pruning keeps at least this many passages (0 allows the empty set).
    :param prune_unnecessary: also prune d when F̂(C \\ {d}) ≥ max(θ, F̂(C)) (module doc).
    :param best_prefix: without a two-round stop, go back to the best forward prefix that reached θ.
    :param bound: an upper bound on F̂(S) costing no call (None = every candidate scored).
    :param max_rounds: forward rounds at most (None: Algorithm 1's stops); a set short of θ then gets the rest of
        the pool appended unscored, in the last round's utility order, unpruned.

    >>> table = {(): 0.0, (0,): 0.5, (1,): 0.4, (2,): 0.4, (0, 1): 0.6, (0, 2): 0.6, (1, 2): 0.95,
    ...          (0, 1, 2): 0.95}
    >>> result = minimal_sufficient_set(3, lambda s: table[tuple(sorted(s))])
    >>> result.forward, result.kept, result.pruned, result.reached
    ((0, 1, 2), (1, 2), (0,), True)
    >>> cheap = minimal_sufficient_set(3, lambda s: table[tuple(sorted(s))],
    ...                                bound=lambda s: 0.5 if len(s) == 1 else 1.0)  # no single passage > 0.5
    >>> cheap.kept == result.kept, cheap.quality_calls, result.quality_calls
    (True, 6, 8)
    >>> ranked = minimal_sufficient_set(3, lambda s: table[tuple(sorted(s))], max_rounds=1)
    >>> ranked.kept, ranked.unscored, ranked.stop, ranked.quality, ranked.quality_calls
    ((0, 1, 2), (1, 2), 'rounds', 0.5, 4)
    """
    check_int("n", n, 0)
    check_int("min_size", min_size, 0)
    if max_rounds is not None:
        check_int("max_rounds", max_rounds, 1)
    if lengths is not None and len(lengths) != n:
        raise ValueError(f"'lengths' must have one entry per passage ({n}), got {len(lengths)}.")
    q = quality if isinstance(quality, MemoisedQuality) else MemoisedQuality(quality)
    calls_before = q.calls
    scored = q if bound is None else _Checked(q, bound)

    theta = settings.theta
    chosen, steps, stop = _forward(n, scored, lengths, gain, uncertainty, bound, settings, max_rounds)
    if stop == STOP_ROUNDS and steps and steps[-1].quality < theta:
        rest = [d for d in range(n) if d not in chosen]
        last = steps[-1].utilities
        tail = tuple(sorted(rest, key=lambda d: (d not in last, -last.get(d, 0.0), d)))
        return SearchResult(kept=chosen + tail, forward=chosen, steps=tuple(steps), pruned=(),
                            initial_quality=q(()), quality=steps[-1].quality, reached=False, stop=stop,
                            quality_calls=q.calls - calls_before, theta=theta, unscored=tail)
    start = _best_prefix(chosen, steps, theta, min_size) if best_prefix and stop != STOP_DELTA else chosen
    kept, pruned = _prune(start, scored, bound, settings, min_size=min_size, unnecessary=prune_unnecessary)
    final = q(kept)
    return SearchResult(kept=kept, forward=chosen, steps=tuple(steps), pruned=tuple(pruned),
                        initial_quality=q(()), quality=final, reached=final >= theta, stop=stop,
                        quality_calls=q.calls - calls_before, theta=theta, cut=chosen[len(start):])


class _Checked:
    """The memoised quality, refusing a value above its bound (a wrong bound would change the selection)."""

    def __init__(self, q: MemoisedQuality, bound: Bound) -> None:
        self.q, self.bound = q, bound

    def __call__(self, indices: tuple[int, ...]) -> float:
        value = self.q(indices)
        cap = float(self.bound(indices))
        if not value <= cap:
            raise ValueError(f"quality of the set {indices} is {value!r}, above its bound {cap!r}.")
        return value


def _forward(
    n: int,
    q: Quality,
    lengths: Sequence[float] | None,
    gain: Gain | None,
    uncertainty: Gain | None,
    bound: Bound | None,
    settings: CerSettings,
    max_rounds: int | None = None,
) -> tuple[tuple[int, ...], list[Step], str]:
    chosen: tuple[int, ...] = ()
    current = q(chosen)
    steps: list[Step] = []
    quiet_rounds = 0
    while True:
        pool = [d for d in range(n) if d not in chosen]
        if not pool:
            return chosen, steps, STOP_POOL
        if len(chosen) >= settings.k_max:
            return chosen, steps, STOP_K_MAX
        if max_rounds is not None and len(steps) >= max_rounds:
            return chosen, steps, STOP_ROUNDS

        def value(d: int, tau: float, c: tuple[int, ...] = chosen) -> float:
            sigma = uncertainty(c, d) if uncertainty is not None else 0.0
            length = lengths[d] if lengths is not None else 0.0
            return utility(tau, length, mu=settings.mu, kappa=settings.kappa, sigma=sigma)

        if gain is not None or bound is None:
            utilities = {
                d: value(d, gain(chosen, d) if gain is not None else q(chosen + (d,)) - current) for d in pool
            }
            best = max(pool, key=lambda d: (utilities[d], -d))
        else:
            best, utilities = _bounded_round(pool, chosen, current, q, bound, value)
        chosen = chosen + (best,)
        new = q(chosen)
        step_gain = new - current
        current = new
        steps.append(Step(chosen=best, utilities=utilities, quality=new, gain=step_gain))
        quiet_rounds = quiet_rounds + 1 if new >= settings.theta and step_gain < settings.delta else 0
        if quiet_rounds >= 2:
            return chosen, steps, STOP_DELTA


def _bounded_round(
    pool: list[int],
    chosen: tuple[int, ...],
    current: float,
    q: Quality,
    bound: Bound,
    value: Callable[[int, float], float],
) -> tuple[int, dict[int, float]]:
    """argmax over `pool` of (U(d), −d), scoring candidates best bound first, until none unscored can win (U is
    non-decreasing in F̂, so U(d) ≤ U at the bound).

    >>> table = {(0,): 0.9, (1,): 0.5, (2,): 0.95}
    >>> caps = {(0,): 1.0, (1,): 0.6, (2,): 0.95}
    >>> _bounded_round([0, 1, 2], (), 0.0, lambda s: table[s], lambda s: caps[s], lambda d, tau: tau)
    (2, {0: 0.9, 2: 0.95})
    """
    caps = {d: value(d, float(bound(chosen + (d,))) - current) for d in pool}
    utilities: dict[int, float] = {}
    best: int | None = None
    for d in sorted(pool, key=lambda d: (-caps[d], d)):  # (cap, −d) non-increasing from here on
        if best is not None and (caps[d], -d) < (utilities[best], -best):
            break
        utilities[d] = value(d, q(chosen + (d,)) - current)
        if best is None or (utilities[d], -d) > (utilities[best], -best):
            best = d
    assert best is not None  # the pool is not empty
    return best, dict(sorted(utilities.items()))


def _best_prefix(chosen: tuple[int, ...], steps: list[Step], theta: float, min_size: int) -> tuple[int, ...]:
    """The shortest forward prefix of at least `min_size` with the highest F̂, when that F̂ reaches θ; else all.

    >>> steps = [Step(2, {}, 0.94, 0.5), Step(0, {}, 0.87, -0.07), Step(1, {}, 0.59, -0.28)]
    >>> _best_prefix((2, 0, 1), steps, 0.75, 1), _best_prefix((2, 0, 1), steps, 0.75, 2)
    ((2,), (2, 0))
    >>> _best_prefix((2, 0), [Step(2, {}, 0.5, 0.5), Step(0, {}, 0.6, 0.1)], 0.75, 1)
    (2, 0)
    """
    lengths = range(max(min_size, 1), len(steps) + 1)  # steps[k - 1].quality is F̂ of the first k
    if not lengths:
        return chosen
    best = max(lengths, key=lambda k: (steps[k - 1].quality, -k))
    return chosen[:best] if steps[best - 1].quality >= theta else chosen


def _prune(
    chosen: tuple[int, ...],
    q: Quality,
    bound: Bound | None,
    settings: CerSettings,
    *,
    min_size: int,
    unnecessary: bool,
) -> tuple[tuple[int, ...], list[int]]:
    theta, epsilon = settings.theta, settings.epsilon
    kept = chosen
    pruned: list[int] = []
    changed = True
    while changed:
        changed = False
        for d in reversed(kept):
            if len(kept) <= min_size:
                break
            without = tuple(i for i in kept if i != d)
            if bound is not None:
                cap = float(bound(without))
                if cap < theta + epsilon and (not unnecessary or cap < theta):
                    continue  # decided: F̂(without) ≤ cap lies below every removal threshold
            rest = q(without)
            if rest >= theta + epsilon or (unnecessary and rest >= theta and rest >= q(kept)):
                kept = without
                pruned.append(d)
                changed = True
    return kept, pruned


@dataclass(frozen=True)
class Effects:
    """Per kept passage (in the order of `kept`): Δy_del, Δy_rep (None without a replacement), Δy, Nec.
    None throughout: not measured (`unmeasured_effects`)."""

    kept: tuple[int, ...]
    deletion: tuple[float | None, ...]
    replacement: tuple[float | None, ...]
    fused: tuple[float | None, ...]
    necessity: tuple[float | None, ...]


def unmeasured_effects(kept: Sequence[int]) -> Effects:
    """The effects of a set they were not measured for (a `max_rounds` set with unscored passages): None each.

    >>> unmeasured_effects((2, 0)).necessity
    (None, None)
    """
    none = (None,) * len(tuple(kept))
    return Effects(kept=tuple(kept), deletion=none, replacement=none, fused=none, necessity=none)


def set_effects(
    kept: Sequence[int],
    quality: Quality,
    *,
    replacements: Mapping[int, int] | None = None,
    alpha: float = ALPHA,
) -> Effects:
    """Deletion, replacement and fused effects (Eq. 5–7) and Nec(d) (Eq. 4) of each kept passage; `replacements[d]`
    is d's hard negative (none: fused = deletion). Pass the search's `MemoisedQuality` to reuse its calls.

    >>> table = {(1, 2): 0.95, (2,): 0.4, (1,): 0.4, (1, 0): 0.5}
    >>> e = set_effects((1, 2), lambda s: table[s], replacements={2: 0})
    >>> [round(x, 2) for x in e.deletion], e.necessity
    ([0.55, 0.55], (0.5, 0.5))
    >>> e.replacement[0], round(e.replacement[1], 2), round(e.fused[1], 3)
    (None, 0.45, 0.52)
    """
    kept = tuple(kept)
    q = quality if isinstance(quality, MemoisedQuality) else MemoisedQuality(quality)
    full = q(kept)
    deletion, replacement, fused = [], [], []
    for d in kept:
        dele = deletion_effect(full, q(tuple(i for i in kept if i != d)))
        rep = None
        if replacements is not None and d in replacements:
            swapped = tuple(replacements[d] if i == d else i for i in kept)
            rep = replacement_effect(full, q(swapped))
        deletion.append(dele)
        replacement.append(rep)
        fused.append(dele if rep is None else fused_effect(dele, rep, alpha))
    return Effects(kept=kept, deletion=tuple(deletion), replacement=tuple(replacement), fused=tuple(fused),
                   necessity=tuple(necessity(deletion)))


__all__ = ["STOP_DELTA", "STOP_K_MAX", "STOP_POOL", "STOP_ROUNDS", "Bound", "Effects", "Gain",
           "MemoisedQuality", "Quality", "SearchResult", "Step", "minimal_sufficient_set", "set_effects",
           "unmeasured_effects"]
