import numpy as np
import pytest

from haystack_cfrag.cfrag.math import stratify as st


def test_affinity_and_laplacian_hand_computed():
    x = np.array([[0.0], [1.0], [3.0]])
    w = st.rbf_affinity(x, sigma=1.0)
    assert w[0, 1] == pytest.approx(np.exp(-0.5))
    assert w[0, 2] == pytest.approx(np.exp(-4.5))
    lap = st.normalized_laplacian(w)
    d = w.sum(axis=1)
    assert lap[0, 1] == pytest.approx(-w[0, 1] / np.sqrt(d[0] * d[1]))
    assert np.allclose(np.diag(lap), 1 - 1 / d)
    # the smallest eigenvalue of the normalised Laplacian is 0 with eigenvector ∝ D^{1/2}·1
    vals = np.linalg.eigvalsh(lap)
    assert vals[0] == pytest.approx(0.0, abs=1e-9)


def test_median_sigma():
    sq = st.pairwise_sq_distances(np.array([[0.0], [1.0], [3.0]]))
    assert st.median_sigma(sq) == pytest.approx(2.0)  # distances 1, 3, 2


def test_spectral_clusters_separate_two_blobs_and_cap_k():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 0.05, (5, 2)), rng.normal(3, 0.05, (5, 2))])
    labels = st.spectral_clusters(x, 2, random_state=0)
    assert set(labels[:5]) == {0} and set(labels[5:]) == {1}
    assert st.spectral_clusters(x[:3], 10).tolist() == [0, 1, 2]  # K capped by n
    assert st.spectral_clusters(x, 1).tolist() == [0] * 10


def test_cluster_weights_sum_to_k():
    w = st.cluster_weights(np.array([0.2, 0.5, 0.9]), np.random.default_rng(1))
    assert w.sum() == pytest.approx(3.0)


def test_subset_sizes_eq7_hand_computed():
    # |C| = (10, 4, 1), ρ = 0.5, w = (1.5, 0.2, 1.3): ⌊7.5⌋ = 7, max(1, ⌊0.4⌋) = 1, min(1, max(1, 0)) = 1
    assert st.subset_sizes(np.array([10, 4, 1]), np.array([1.5, 0.2, 1.3]), 0.5).tolist() == [7, 1, 1]
    assert st.subset_sizes(np.array([2]), np.array([3.0]), 1.0).tolist() == [2]  # capped at |C|


def test_stratified_subsets_are_seeded_and_drawn_from_every_cluster():
    labels = np.array([0, 0, 0, 0, 1, 1, 2])
    rel = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    a = st.stratified_subsets(labels, rel, n_subsets=3, random_state=7)
    b = st.stratified_subsets(labels, rel, n_subsets=3, random_state=7)
    assert a == b
    for subset in a:
        assert {int(labels[i]) for i in subset} == {0, 1, 2}
        assert len(subset) == len(set(subset))


def test_anchors_shared_by_every_subset():
    labels = np.array([0, 0, 0, 1, 1, 1])
    rel = np.array([0.1, 0.2, 0.95, 0.3, 0.9, 0.2])
    subsets = st.stratified_subsets(labels, rel, n_subsets=4, anchors=2, random_state=0)
    assert all({2, 4} <= set(s) for s in subsets)


def test_empty_input_gives_empty_subsets():
    assert st.stratified_subsets(np.array([], dtype=int), np.array([]), n_subsets=2) == [[], []]
