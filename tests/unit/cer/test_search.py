"""CER's Algorithm 1 over deterministic quality functions: greedy, the δ stop, pruning, effects, cost."""

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_cfrag.cer.math import quality as cq
from haystack_cfrag.cer.math import search as cs
from haystack_cfrag.cer.math.search import MemoisedQuality, minimal_sufficient_set, set_effects
from haystack_cfrag.cer.math.settings import DEFAULTS, CerSettings
from tests import dark_knight as dk


class Recorder:
    """A quality function over a table of sets (order-free), recording every call."""

    def __init__(self, table, default=0.0):
        self.table = {frozenset(k): v for k, v in table.items()}
        self.default = default
        self.calls = []

    def __call__(self, indices):
        self.calls.append(tuple(indices))
        return self.table.get(frozenset(indices), self.default)


# A hand-built pool whose minimal sufficient set is {1, 2}: 0 is the best single passage,
# but only 1 and 2 together reach θ, and 0 adds nothing once they are in.
HAND = {
    (): 0.0,
    (0,): 0.5,
    (1,): 0.4,
    (2,): 0.4,
    (0, 1): 0.6,
    (0, 2): 0.6,
    (1, 2): 0.95,
    (0, 1, 2): 0.95,
}


class TestGreedyAndPruning:
    def test_hand_built_case_finds_the_minimal_set(self):
        q = Recorder(HAND)
        r = minimal_sufficient_set(3, q)
        assert r.forward == (0, 1, 2)  # greedy: best single first, tie 1/2 to the lower index
        assert [s.chosen for s in r.steps] == [0, 1, 2]
        assert r.qualities == pytest.approx([0.5, 0.6, 0.95])
        assert [s.gain for s in r.steps] == pytest.approx([0.5, 0.1, 0.35])
        assert r.steps[0].utilities == pytest.approx({0: 0.5, 1: 0.4, 2: 0.4})
        assert r.steps[1].utilities == pytest.approx({1: 0.1, 2: 0.1})
        assert r.steps[2].utilities == pytest.approx({2: 0.35})
        assert r.stop == cs.STOP_POOL
        assert r.kept == (1, 2) and r.pruned == (0,)  # reverse pruning drops the greedy's first pick
        assert r.quality == pytest.approx(0.95) and r.reached
        assert r.initial_quality == 0.0

    def test_greedy_order_is_kept_in_the_result(self):
        table = {(): 0.0, (0,): 0.3, (1,): 0.9, (2,): 0.1, (0, 1): 0.92, (1, 2): 0.91, (0, 1, 2): 0.93}
        r = minimal_sufficient_set(3, Recorder(table), settings=CerSettings(theta=0.5))
        assert r.forward[0] == 1 and r.kept == (1,)

    def test_length_cost_breaks_a_tie_towards_the_shorter_passage(self):
        table = {(0,): 0.9, (1,): 0.9}
        r = minimal_sufficient_set(2, Recorder(table), lengths=[800, 200], settings=CerSettings(mu=0.05))
        assert r.steps[0].chosen == 1
        assert r.steps[0].utilities == pytest.approx({0: 0.9 - 0.04, 1: 0.9 - 0.01})
        r0 = minimal_sufficient_set(2, Recorder(table), lengths=[800, 200], settings=CerSettings(mu=0.0))
        assert r0.steps[0].chosen == 0  # no cost: the tie goes to the lower index

    def test_uncertainty_bonus_uses_kappa(self):
        table = {(0,): 0.9, (1,): 0.85}
        def sigma(c, d):
            return 0.5 if d == 1 else 0.0

        r = minimal_sufficient_set(2, Recorder(table), uncertainty=sigma, settings=CerSettings(kappa=0.2))
        assert r.steps[0].chosen == 1  # 0.85 + 0.2·0.5 > 0.9
        r0 = minimal_sufficient_set(2, Recorder(table), uncertainty=sigma, settings=CerSettings(kappa=0.0))
        assert r0.steps[0].chosen == 0

    def test_a_given_gain_drives_the_choice_and_saves_quality_calls(self):
        q = Recorder(HAND)
        tau = {0: 0.1, 1: 0.3, 2: 0.2}
        r = minimal_sufficient_set(3, q, gain=lambda c, d: tau[d])
        assert r.forward[:2] == (1, 2)  # τ̂'s order, not F̂'s
        assert r.steps[0].utilities == pytest.approx(tau)
        assert r.kept == (1, 2)
        # no candidate sets: ∅, the two prefixes, then what pruning asks
        assert q.calls[:3] == [(), (1,), (1, 2)]
        assert r.quality_calls == len(q.calls) < 8

    def test_a_repeated_passage_is_pruned(self):
        texts = [
            "Cast: lead actor Christian Bale stars as Bruce Wayne.",
            "Cast: lead actor Christian Bale stars as Bruce Wayne.",  # a repeat of 0
            "Gotham City is a fictional city.",
        ]

        def quality(s):
            chosen = [texts[i] for i in s]
            p_entail = 0.95 if any("Bale" in t for t in chosen) else 0.1
            return cq.quality_score(p_entail, cq.coverage("Christian Bale", chosen), 0.0, len(s))

        r = minimal_sufficient_set(3, quality)
        assert r.forward[0] == 0 and set(r.forward) == {0, 1, 2}
        assert r.kept == (0,) and 1 in r.pruned

    def test_a_repeat_near_the_threshold_is_pruned_only_with_prune_unnecessary(self):
        # F̂ of the answer passage sits in [θ, θ + ε): Alg. 1 as written keeps what the stop rounds added
        table = {(0,): 0.77, (0, 1): 0.765, (0, 2): 0.765, (0, 1, 2): 0.76, (1,): 0.77, (1, 2): 0.765}
        paper = minimal_sufficient_set(3, Recorder(table), prune_unnecessary=False)
        assert paper.stop == cs.STOP_DELTA and paper.kept == (0, 1, 2) and paper.pruned == ()
        ours = minimal_sufficient_set(3, Recorder(table))
        assert ours.kept == (0,) and ours.pruned == (2, 1)
        assert ours.quality >= DEFAULTS.theta

    def test_pruning_repeats_until_nothing_can_be_removed(self):
        # removing 0 (last in the reverse pass) makes 3 removable, which that pass has already passed
        table = {
            (0,): 0.3,
            (0, 1): 0.5,
            (0, 1, 2): 0.6,
            (0, 1, 2, 3): 0.9,
            (0, 1, 3): 0.6,
            (0, 2, 3): 0.6,
            (1, 2, 3): 0.85,
            (1, 2): 0.85,
            (1, 3): 0.5,
            (2, 3): 0.5,
            (1,): 0.3,
            (2,): 0.3,
        }
        for unnecessary in (False, True):
            r = minimal_sufficient_set(
                4, Recorder(table), gain=lambda c, d: -d, prune_unnecessary=unnecessary
            )
            assert r.forward == (0, 1, 2, 3) and r.stop == cs.STOP_POOL
            assert r.kept == (1, 2) and r.pruned == (0, 3)

    def test_pruning_keeps_min_size(self):
        table = {(): 0.99, (0,): 0.99, (1,): 0.99, (0, 1): 0.99}
        assert len(minimal_sufficient_set(2, Recorder(table)).kept) == 1
        assert minimal_sufficient_set(2, Recorder(table), min_size=0).kept == ()


class TestStopRule:
    def test_two_rounds_below_delta_after_theta_stop_the_forward_phase(self):
        def quality(s):  # passage 0 suffices; each other adds 0.001
            return (0.9 if 0 in s else 0.1) + 0.001 * len([i for i in s if i != 0])

        r = minimal_sufficient_set(6, quality)
        assert r.forward == (0, 1, 2) and r.stop == cs.STOP_DELTA
        assert [s.gain < 0.02 for s in r.steps] == [False, True, True]
        assert r.kept == (0,) and r.pruned == (2, 1)

    def test_a_round_with_a_large_gain_resets_the_count(self):
        table = {
            (0,): 0.8,
            (0, 1): 0.801,
            (0, 1, 2): 0.9,
            (0, 1, 2, 3): 0.901,
            (0, 1, 2, 3, 4): 0.902,
        }
        r = minimal_sufficient_set(
            6, lambda s: table.get(s, 0.0), gain=lambda c, d: -d, prune_unnecessary=False
        )
        assert r.forward == (0, 1, 2, 3, 4) and r.stop == cs.STOP_DELTA

    def test_rounds_below_theta_do_not_count(self):
        # tiny gains but F̂ stays under θ: the search goes on to the end of the pool
        r = minimal_sufficient_set(5, lambda s: 0.1 + 0.001 * len(s))
        assert r.stop == cs.STOP_POOL and len(r.forward) == 5
        assert not r.reached and r.kept == r.forward and r.pruned == ()

    def test_k_max_stops_the_forward_phase(self):
        r = minimal_sufficient_set(10, lambda s: 0.05 * len(s), settings=CerSettings(k_max=3))
        assert r.forward == (0, 1, 2) and r.stop == cs.STOP_K_MAX and not r.reached

    def test_large_gains_after_theta_continue_to_the_pool_end(self):
        r = minimal_sufficient_set(4, lambda s: 0.62 + 0.1 * len(s), prune_unnecessary=False)
        assert r.stop == cs.STOP_POOL and r.forward == (0, 1, 2, 3)
        assert r.kept == (0, 1) and r.pruned == (3, 2)  # 0.82 ≥ θ + ε with two; 0.72 < θ with one
        assert r.quality >= DEFAULTS.theta + DEFAULTS.epsilon

    def test_empty_pool(self):
        r = minimal_sufficient_set(0, lambda s: 0.3)
        assert r.kept == r.forward == () and r.steps == () and r.stop == cs.STOP_POOL
        assert r.quality_calls == 1 and not r.reached


class TestDarkKnight:
    """The Correlation Trap: four Joker reviews, one cast entry; the reader's support of
    "Christian Bale" rises only with the cast passage, and the reviews push towards Ledger."""

    ANSWER = "Christian Bale"

    def setup_method(self):
        self.docs = dk.documents()
        self.ids = [d.id for d in self.docs]
        self.cast = self.ids.index("cast")
        self.reviews = {i for i, d in enumerate(self.docs) if d.id.startswith("review")}

    def quality(self, s):
        texts = [self.docs[i].content for i in s]
        n_reviews = len(self.reviews & set(s))
        if self.cast in s:
            p_entail, p_contra = 0.92, 0.05 * n_reviews
        else:  # correlated: the reviews make an actor answer a little likelier, and contradict Bale
            p_entail, p_contra = 0.15 + 0.05 * n_reviews, 0.3 if n_reviews else 0.0
        return cq.quality_score(p_entail, cq.coverage(self.ANSWER, texts), p_contra, len(s))

    def test_the_cast_passage_alone_is_kept(self):
        r = minimal_sufficient_set(len(self.docs), self.quality)
        assert r.forward[0] == self.cast and r.stop == cs.STOP_DELTA
        assert r.kept == (self.cast,) and r.reached
        assert not self.reviews & set(r.kept)

    def test_reviews_a_relevance_ranker_prefers_are_pruned(self):
        # τ̂ from a ranker caught in the trap: reviews first, the cast list after them
        relevance = {i: 0.3 for i in self.reviews} | {self.cast: 0.2}
        r = minimal_sufficient_set(len(self.docs), self.quality, gain=lambda c, d: relevance.get(d, 0.0))
        assert set(r.forward[:4]) == self.reviews and r.forward[4] == self.cast
        assert r.kept == (self.cast,)
        assert self.reviews <= set(r.pruned)

    def test_effects_name_the_cast_passage_necessary(self):
        q = MemoisedQuality(self.quality)
        r = minimal_sufficient_set(len(self.docs), q, gain=lambda c, d: 0.3 if d in self.reviews else 0.1)
        review = max(self.reviews)  # never evaluated alone by the search
        before = q.calls
        e = set_effects(r.kept, q, replacements={self.cast: review})
        assert e.necessity == (1.0,)
        assert e.deletion[0] > 0.5 and e.replacement[0] > e.deletion[0]  # a review in its place contradicts
        assert q.calls - before == 1  # only the replaced set is new


class TestCostAndMemo:
    def test_each_set_is_scored_once_and_counted(self):
        q = Recorder(HAND)
        r = minimal_sufficient_set(3, q)
        assert len(q.calls) == len(set(q.calls)) == r.quality_calls == 8
        # ∅, three singles, two pairs, the triple, and {1, 2} during pruning
        assert set(q.calls[:7]) == {(), (0,), (1,), (2,), (0, 1), (0, 2), (0, 1, 2)}
        assert q.calls[7] == (1, 2)

    def test_a_shared_memo_serves_the_effects_without_new_calls(self):
        q = MemoisedQuality(Recorder(HAND))
        r = minimal_sufficient_set(3, q)
        calls = q.calls
        e = set_effects(r.kept, q)
        assert q.calls == calls
        assert e.deletion == pytest.approx((0.55, 0.55)) and e.necessity == pytest.approx((0.5, 0.5))
        assert e.fused == e.deletion and e.replacement == (None, None)

    def test_a_second_search_on_a_shared_memo_reports_only_its_own_calls(self):
        q = MemoisedQuality(Recorder(HAND))
        minimal_sufficient_set(3, q)
        again = minimal_sufficient_set(3, q)
        assert again.quality_calls == 0 and again.kept == (1, 2)

    def test_non_finite_quality_is_refused(self):
        with pytest.raises(ValueError, match=r"quality of the set \(\) is not finite"):
            minimal_sufficient_set(2, lambda s: float("nan"))

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="'lengths'"):
            minimal_sufficient_set(2, lambda s: 0.5, lengths=[1])
        with pytest.raises(ValueError, match="'theta'"):
            minimal_sufficient_set(2, lambda s: 0.5, settings=CerSettings(theta=0.0))
        with pytest.raises(ValueError, match="'n'"):
            minimal_sufficient_set(-1, lambda s: 0.5)
        with pytest.raises(ValueError, match="'min_size'"):
            minimal_sufficient_set(2, lambda s: 0.5, min_size=-1)


# ---------------------------------------------------------------- properties over random set functions
def random_quality(seed):
    """A deterministic, arbitrary (non-monotone) set function with values in [0, 1]."""

    def quality(s):
        return random.Random(hash((seed, tuple(sorted(s))))).random()

    return quality


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 9),
    st.integers(0, 2**32),
    st.integers(1, 10),
    st.floats(0.3, 0.95),
    st.floats(0.0, 0.2),
    st.floats(0.0, 0.2),
    st.booleans(),
    st.integers(0, 2),
    st.booleans(),
)
def test_search_invariants(n, seed, k_max, theta, epsilon, delta, unnecessary, min_size, best_prefix):
    f = random_quality(seed)
    calls = []

    def quality(s):
        calls.append(s)
        return f(s)

    r = minimal_sufficient_set(
        n,
        quality,
        settings=CerSettings(theta=theta, epsilon=epsilon, delta=delta, k_max=k_max),
        min_size=min_size,
        prune_unnecessary=unnecessary,
        best_prefix=best_prefix,
    )
    # shapes
    assert len(r.forward) <= k_max and len(r.kept) <= k_max
    assert len(set(r.forward)) == len(r.forward) and all(0 <= i < n for i in r.forward)
    assert set(r.kept) | set(r.pruned) | set(r.cut) == set(r.forward) and not set(r.kept) & set(r.pruned)
    assert r.forward[len(r.forward) - len(r.cut):] == r.cut and not set(r.cut) & (set(r.kept) | set(r.pruned))
    if r.cut:  # only without the two-round stop, back to the best prefix, which had reached θ
        assert best_prefix and r.stop != cs.STOP_DELTA
        start = r.forward[: len(r.forward) - len(r.cut)]
        assert len(start) >= min_size and f(start) >= theta
        assert f(start) == max(s.quality for s in r.steps[max(min_size, 1) - 1:])
    assert [i for i in r.forward if i in r.kept] == list(r.kept)  # order of addition kept
    assert [s.chosen for s in r.steps] == list(r.forward)
    # each step picks the best utility
    for s in r.steps:
        assert s.utilities[s.chosen] == max(s.utilities.values())
    # the stop reason
    if r.stop == cs.STOP_DELTA:
        assert all(s.quality >= theta and s.gain < delta for s in r.steps[-2:]) and len(r.steps) >= 2
    elif r.stop == cs.STOP_K_MAX:
        assert len(r.forward) == k_max
    else:
        assert len(r.forward) == n
    # quality of the result
    assert r.quality == f(r.kept) and r.reached == (r.quality >= theta)
    if f(r.forward) >= theta or r.pruned or r.cut:
        assert r.reached  # neither pruning nor the cut loses θ
    if r.pruned and not unnecessary and not r.cut:
        assert r.quality >= theta + epsilon  # Alg. 1: the last removal left F̂ ≥ θ + ε
    # irreducible: no kept passage can still be removed
    if len(r.kept) > min_size:
        full = f(r.kept)
        for d in r.kept:
            rest = f(tuple(i for i in r.kept if i != d))
            assert rest < theta + epsilon
            if unnecessary:
                assert not (rest >= theta and rest >= full)
    else:
        assert len(r.kept) == min(min_size, len(r.forward)) or not (r.pruned or r.cut)
    # cost: every distinct set once
    assert len(calls) == len(set(calls)) == r.quality_calls


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 0.5), min_size=1, max_size=8), st.floats(0.5, 0.9))
def test_additive_quality_keeps_a_sufficient_set_of_at_most_the_greedy_size(weights, theta):
    def quality(s):
        return min(1.0, sum(weights[i] for i in s)) - 0.001 * len(s)

    r = minimal_sufficient_set(len(weights), quality, settings=CerSettings(theta=theta))
    if r.reached:
        assert quality(r.kept) >= theta
        # a sufficient set from the greedy order: every kept passage carries weight
        assert all(weights[i] > 0 for i in r.kept) or len(r.kept) == 1


def test_the_math_imports_no_haystack():
    import ast
    import importlib

    maths = ("haystack_cfrag.cer.math.settings", "haystack_cfrag.cer.math.quality", "haystack_cfrag.cer.math.search")
    pure = {"haystack_cfrag.common.text", "haystack_cfrag.common.validation", *maths}
    for name in maths:
        tree = ast.parse(Path(importlib.import_module(name).__file__).read_text(encoding="utf-8"))
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in modules if m == "haystack" or m.startswith("haystack.")}, name
        assert {m for m in modules if m.startswith("haystack_cfrag")} <= pure, name


def test_best_prefix_goes_back_to_the_set_that_had_reached_theta():
    # the demo's Mauna Kea case in miniature: one passage suffices, every later one lowers F̂
    # (Alg. 1's pruning cannot recover it: no pair reaches θ + ε)
    table = {(): 0.4, (0,): 0.6, (1,): 0.94, (2,): 0.5, (1, 0): 0.78, (1, 2): 0.7, (0, 2): 0.3, (1, 0, 2): 0.59}
    f = lambda s: table[tuple(s)] if tuple(s) in table else table[tuple(sorted(s))]  # noqa: E731
    literal = minimal_sufficient_set(3, f, settings=CerSettings(theta=0.75), best_prefix=False, prune_unnecessary=False)
    assert literal.kept == (1, 0, 2) and not literal.reached and literal.stop == cs.STOP_POOL
    fixed = minimal_sufficient_set(3, f, settings=CerSettings(theta=0.75), prune_unnecessary=False)
    assert fixed.kept == (1,) and fixed.cut == (0, 2) and fixed.reached and fixed.quality == 0.94


# ---------------------------------------------------------------- decided checks are not scored
def _seeded_instance(seed, n, grid):
    """F̂ over ordered tuples from a seeded generator (values on a grid: ties happen), and an upper
    bound that is sometimes tight, sometimes loose, sometimes the trivial 1."""
    rng = random.Random(seed)
    values, slacks = {}, {}

    def quality(s):
        if s not in values:
            values[s] = rng.randrange(grid + 1) / grid
        return values[s]

    def bound(s):
        if s not in slacks:
            slacks[s] = rng.choice([0.0, 0.0, rng.randrange(grid + 1) / grid, 1.0])
        return min(1.0, quality(s) + slacks[s]) if slacks[s] < 1.0 else 1.0

    return quality, bound


class Counting:
    """Counts the calls of a quality function (the scorer's cost)."""

    def __init__(self, quality):
        self.quality, self.calls = quality, []

    def __call__(self, s):
        self.calls.append(tuple(s))
        return self.quality(tuple(s))


def _selection(r):
    return (r.kept, r.forward, r.pruned, r.cut, r.stop, r.quality, r.reached, r.initial_quality,
            [(s.chosen, s.quality, s.gain) for s in r.steps])


@settings(max_examples=400, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n=st.integers(1, 7),
    grid=st.sampled_from([4, 10, 1000]),
    theta=st.sampled_from([0.5, 0.75, 0.9, 1.0]),
    epsilon=st.sampled_from([0.0, 0.05, 0.2]),
    delta=st.sampled_from([0.0, 0.02, 0.3]),
    mu=st.sampled_from([0.0, 0.05, 1.0]),
    k_max=st.integers(1, 8),
    min_size=st.integers(0, 3),
    unnecessary=st.booleans(),
    best_prefix=st.booleans(),
    lengths=st.booleans(),
)
def test_a_bound_changes_no_selection_and_never_adds_a_scoring(
    seed, n, grid, theta, epsilon, delta, mu, k_max, min_size, unnecessary, best_prefix, lengths
):
    quality, bound = _seeded_instance(seed, n, grid)
    sizes = [random.Random(seed + i).randrange(0, 400) for i in range(n)] if lengths else None
    kwargs = dict(settings=CerSettings(theta=theta, epsilon=epsilon, delta=delta, mu=mu, k_max=k_max),
                  min_size=min_size, prune_unnecessary=unnecessary, best_prefix=best_prefix, lengths=sizes)
    old, new = Counting(quality), Counting(quality)
    before = minimal_sufficient_set(n, old, **kwargs)
    after = minimal_sufficient_set(n, new, bound=bound, **kwargs)
    assert _selection(after) == _selection(before)
    assert set(new.calls) <= set(old.calls) and after.quality_calls == len(new.calls) <= len(old.calls)
    for step_old, step_new in zip(before.steps, after.steps, strict=True):
        assert step_new.utilities.items() <= step_old.utilities.items()  # the scored ones, same values
        assert step_new.chosen in step_new.utilities


def test_the_trivial_bound_scores_what_the_search_without_one_scores():
    raw, _ = _seeded_instance(7, 5, 10)
    quality = lambda s: 0.95 * raw(s)  # noqa: E731  (below the bound 1: it decides nothing)
    old, new = Counting(quality), Counting(quality)
    minimal_sufficient_set(5, old)
    minimal_sufficient_set(5, new, bound=lambda s: 1.0)
    assert sorted(new.calls) == sorted(old.calls)


def test_a_coverage_bound_skips_the_passages_without_the_answer():
    # passage 2 alone holds the answer: the others' F̂ is capped below what it scores, and no set
    # without it can reach θ, so neither round 1's other candidates nor those prunings are scored
    holds = {2}
    quality = lambda s: (0.9 if holds & set(s) else 0.3) - 0.01 * len(s)  # noqa: E731
    bound = lambda s: (1.0 if holds & set(s) else 0.55) - 0.01 * len(s)  # noqa: E731
    old, new = Counting(quality), Counting(quality)
    before = minimal_sufficient_set(5, old)
    after = minimal_sufficient_set(5, new, bound=bound)
    assert after.kept == before.kept == (2,) and _selection(after) == _selection(before)
    assert set(after.steps[0].utilities) == {2} and len(before.steps[0].utilities) == 5
    assert len(new.calls) < len(old.calls) - 3


def test_a_value_above_its_bound_is_refused():
    with pytest.raises(ValueError, match=r"above its bound"):
        minimal_sufficient_set(2, lambda s: 0.9, bound=lambda s: 0.5)
