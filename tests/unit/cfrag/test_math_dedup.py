import numpy as np

from haystack_cfrag.cfrag.math.dedup import greedy_dedup, quality_score


def test_greedy_dedup_keeps_first_of_each_near_duplicate_group():
    emb = np.array([[1.0, 0.0], [0.999, 0.04], [0.0, 1.0], [0.02, 1.0], [0.7, 0.7]])
    # cos(0,1) ≈ 0.9992 > 0.95: 1 dropped; cos(2,3) ≈ 0.9998: 3 dropped; 4 is distinct (≈ 0.71)
    assert greedy_dedup(emb, 0.95) == [0, 2, 4]


def test_greedy_dedup_is_not_the_literal_eq4_that_drops_both():
    emb = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert greedy_dedup(emb, 0.95) == [0]


def test_greedy_dedup_compares_only_with_kept_rows():
    # b is a duplicate of a (dropped); c is close to b but not to a: c must survive
    a, b, c = [1.0, 0.0], [0.96, 0.28], [0.85, 0.53]
    emb = np.array([a, b, c])
    assert np.dot(b, c) / (np.linalg.norm(b) * np.linalg.norm(c)) > 0.95
    assert greedy_dedup(emb, 0.95) == [0, 2]


def test_greedy_dedup_empty():
    assert greedy_dedup(np.zeros((0, 3))) == []


def test_quality_score():
    assert quality_score(None) == 0.0
    assert quality_score("too short") == 0.0
    assert quality_score("Christian Bale plays Bruce Wayne in the film.") == 1.0
    assert quality_score("1 2 3 4 5 6 7 8 word") == 1 / 9
    assert quality_score("Click here to subscribe to our newsletter today") == 0.5
