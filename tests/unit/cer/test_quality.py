"""CER's quality math (Eq. 3–7, 17–19): F̂, p_cov, calibration, Nec(d), effects; its settings and their ranges."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_cfrag.cer.math import quality as cq
from haystack_cfrag.cer.math import settings as cer_settings
from haystack_cfrag.cer.math.settings import DEFAULTS, CerSettings

unit = st.floats(0.0, 1.0, allow_nan=False)


def test_paper_defaults():
    assert DEFAULTS == CerSettings(theta=0.75, epsilon=0.05, mu=0.05, kappa=0.2, delta=0.02, k_max=25, alpha=0.7,
                                   weights=(0.4, 0.3, 0.2, 0.1))
    assert (DEFAULTS.theta, DEFAULTS.k_max, DEFAULTS.weights) == (cer_settings.THETA, cer_settings.K_MAX,
                                                                 cer_settings.WEIGHTS)


def test_raw_quality_is_eq_17():
    z = cq.raw_quality(0.8, 0.5, 0.25, 5, CerSettings(weights=(0.4, 0.3, 0.2, 0.1), k_max=25))
    assert z == pytest.approx(0.4 * 0.8 + 0.3 * 0.5 - 0.2 * 0.25 - 0.1 * 5 / 25)


def test_raw_quality_cannot_reach_theta_which_is_why_f_is_normalised():
    best = cq.raw_quality(1.0, 1.0, 0.0, 1)
    assert best < DEFAULTS.theta  # the paper's θ is on a calibrated scale
    assert cq.quality_score(1.0, 1.0, 0.0, 1) > DEFAULTS.theta
    assert cq.quality_score(1.0, 1.0, 0.0, 0) == pytest.approx(1.0)


def test_quality_score_orders_like_the_paper_says():
    base = cq.quality_score(0.8, 1.0, 0.0, 2)
    assert cq.quality_score(0.9, 1.0, 0.0, 2) > base  # more entailment is better
    assert cq.quality_score(0.8, 0.5, 0.0, 2) < base  # less coverage is worse
    assert cq.quality_score(0.8, 1.0, 0.3, 2) < base  # contradiction is worse
    assert cq.quality_score(0.8, 1.0, 0.0, 6) < base  # more passages cost


@settings(max_examples=200, deadline=None)
@given(unit, unit, unit, st.integers(0, 25))
def test_quality_score_is_bounded(p_e, p_c, p_x, size):
    f = cq.quality_score(p_e, p_c, p_x, size)
    low = -(0.2 + 0.1) / 0.7
    assert low - 1e-9 <= f <= 1.0 + 1e-9


def test_temperature_calibration_is_a_sigmoid():
    assert cq.temperature_calibration(0.0, 0.3) == 0.5
    assert cq.temperature_calibration(0.7, 0.3) == pytest.approx(1 / (1 + math.exp(-0.7 / 0.3)))
    with pytest.raises(ValueError, match="'temperature'"):
        cq.temperature_calibration(0.5, 0.0)


@pytest.mark.parametrize(
    "answer, keys",
    [
        ("Christian Bale", ["christian", "bale"]),
        ("the lead actor Christian Bale", ["christian", "bale"]),
        ("In 1994, $1,000", ["1994", "1000"]),  # digits count, punctuation folds
        ("a science fiction film", ["science", "fiction", "film"]),
        ("No", []),
        ("", []),
        ("Bale Bale", ["bale"]),  # unique
    ],
)
def test_key_tokens(answer, keys):
    assert cq.key_tokens(answer) == keys


def test_coverage_counts_key_tokens_found_in_the_set():
    cast = "Cast of The Dark Knight: lead actor Christian Bale stars as Bruce Wayne."
    review = "Heath Ledger's Joker dominates the film."
    assert cq.coverage("Christian Bale", [cast]) == 1.0
    assert cq.coverage("Christian Bale", [review]) == 0.0
    assert cq.coverage("Christian Bale", [review, "Bale returns."]) == 0.5
    assert cq.coverage("1,000 soldiers", ["about 1000 soldiers"]) == 1.0
    assert cq.coverage("Bale", ["Balet"]) == 0.0  # whole tokens only
    assert cq.coverage("yes", []) == 1.0  # nothing to cover


def test_support_probability_maps_log_probs_to_unit_interval():
    assert cq.support_probability(0.0) == 1.0
    assert cq.support_probability(0.01) == 1.0  # rounding above 0 clipped
    assert cq.support_probability(math.log(0.25)) == pytest.approx(0.25)
    assert cq.support_probability(-math.inf) == 0.0
    with pytest.raises(ValueError, match="'log_prob'"):
        cq.support_probability(math.nan)


def test_pmi_probability_is_monotone_and_centred():
    assert cq.pmi_probability(0.0) == 0.5
    assert cq.pmi_probability(-1.0) < 0.5 < cq.pmi_probability(1.0)
    assert cq.pmi_probability(1.0, scale=2.0) < cq.pmi_probability(1.0, scale=1.0)
    assert cq.pmi_probability(-1000.0) == pytest.approx(0.0) and cq.pmi_probability(1000.0) == pytest.approx(
        1.0
    )
    with pytest.raises(ValueError, match="'scale'"):
        cq.pmi_probability(1.0, scale=-1.0)


def test_utility_is_eq_19():
    assert cq.utility(0.3, 400, mu=0.05, kappa=0.2, sigma=0.1) == pytest.approx(0.3 - 0.05 * 0.4 + 0.2 * 0.1)
    assert cq.utility(0.3, 400, mu=0.05, kappa=0.2) == pytest.approx(0.28)  # σ̂ = 0: κ unused


def test_effects_are_eq_5_to_7():
    assert cq.deletion_effect(0.9, 0.2) == pytest.approx(0.7)
    assert cq.replacement_effect(0.9, 0.95) == pytest.approx(-0.05)
    assert cq.fused_effect(0.7, -0.05, alpha=0.7) == pytest.approx(0.7 * 0.7 + 0.3 * -0.05)
    assert cq.fused_effect(0.7, -0.05, alpha=1.0) == pytest.approx(0.7)  # deletion only
    with pytest.raises(ValueError, match="'alpha'"):
        cq.fused_effect(0.1, 0.1, alpha=1.5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0, allow_nan=False), max_size=12))
def test_necessity_sums_to_one_or_is_all_zero(effects):
    nec = cq.necessity(effects)
    assert len(nec) == len(effects)
    assert all(0.0 <= x <= 1.0 for x in nec)
    if any(e > 0 for e in effects):
        assert sum(nec) == pytest.approx(1.0)
        total = sum(e for e in effects if e > 0)
        for e, x in zip(effects, nec, strict=True):
            assert x == (0.0 if e <= 0 else pytest.approx(e / total))  # Eq. 4's max(0, ·)
    else:
        assert nec == [0.0] * len(effects)


def test_necessity_is_proportional_to_positive_effects():
    assert cq.necessity([0.3, 0.1, 0.0]) == pytest.approx([0.75, 0.25, 0.0])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"theta": 0.0}, "theta"),
        ({"theta": 1.01}, "theta"),
        ({"epsilon": -0.01}, "epsilon"),
        ({"epsilon": 0.6}, "epsilon"),
        ({"mu": 2.0}, "mu"),
        ({"kappa": -0.1}, "kappa"),
        ({"delta": 0.7}, "delta"),
        ({"alpha": 1.2}, "alpha"),
        ({"k_max": 0}, "k_max"),
        ({"k_max": 2.5}, "k_max"),
        ({"theta": float("nan")}, "theta"),
        ({"theta": True}, "theta"),
        ({"weights": (0.4, 0.3, 0.2)}, "weights"),
        ({"weights": (0.4, 0.3, -0.2, 0.1)}, "w3"),
        ({"weights": (0.0, 0.0, 0.2, 0.1)}, "weights"),
    ],
)
def test_parameter_validation_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}'"):
        CerSettings(**kwargs)


def test_parameter_validation_accepts_range_ends():
    low = CerSettings(theta=1.0, epsilon=0.0, mu=0.0, kappa=0.0, delta=0.0, alpha=0.0, k_max=1)
    high = CerSettings(epsilon=0.5, mu=1.0, kappa=1.0, delta=0.5, alpha=1.0, weights=[1, 0, 0, 0])
    assert (low.theta, low.k_max, high.epsilon) == (1.0, 1, 0.5)
    assert high.weights == (1.0, 0.0, 0.0, 0.0) and isinstance(high.weights[0], float)  # a tuple of floats


def test_settings_are_frozen_and_give_back_their_init_parameters():
    s = CerSettings(theta=0.6, k_max=5)
    with pytest.raises(AttributeError):
        s.theta = 0.9  # type: ignore[misc]
    assert list(s.init_parameters()) == ["theta", "epsilon", "mu", "kappa", "delta", "k_max", "alpha", "weights"]
    assert CerSettings(**s.init_parameters()) == s
