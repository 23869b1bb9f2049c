"""Spectral evidence stratification and stratified sampling (paper 4.2.1, Eq. 6–7).

affinity → normalised Laplacian → K smallest eigenvectors, row-normalised → k-means
(Ng–Jordan–Weiss), then M subsets with n_jm = max(1, ⌊|C_m|·ρ·w_jm⌋),
w_jm = K·softmax_m((log U_jm + μ_m)/τ)."""

from __future__ import annotations

import numpy as np

from haystack_cfrag.common.vectors import l2_normalize


def pairwise_sq_distances(x: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between rows, clipped at 0 against round-off."""
    x = np.asarray(x, dtype=float)
    sq = np.sum(x * x, axis=1)
    return np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)


def median_sigma(sq_distances: np.ndarray) -> float:
    """σ = median of the off-diagonal pairwise distances (1.0 when they are all zero)."""
    n = sq_distances.shape[0]
    if n < 2:
        return 1.0
    d = np.sqrt(sq_distances[np.triu_indices(n, k=1)])
    sigma = float(np.median(d))
    return sigma if sigma > 0 else 1.0


def rbf_affinity(x: np.ndarray, sigma: float | None = None) -> np.ndarray:
    """W_ij = exp(−‖x_i − x_j‖² / 2σ²), σ = median pairwise distance unless given."""
    sq = pairwise_sq_distances(x)
    s = median_sigma(sq) if sigma is None else float(sigma)
    return np.exp(-sq / (2.0 * s * s))


def normalized_laplacian(w: np.ndarray) -> np.ndarray:
    """L = I − D^{-1/2} W D^{-1/2} (isolated nodes get D^{-1/2} = 0)."""
    deg = w.sum(axis=1)
    inv_sqrt = np.divide(1.0, np.sqrt(deg), out=np.zeros_like(deg), where=deg > 0)
    return np.eye(w.shape[0]) - inv_sqrt[:, None] * w * inv_sqrt[None, :]


def spectral_embedding(laplacian: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k eigenvectors of the smallest eigenvalues, each row L2-normalised."""
    _, vecs = np.linalg.eigh(laplacian)
    return l2_normalize(vecs[:, :k])


def spectral_clusters(
    x: np.ndarray, k: int, *, sigma: float | None = None, random_state: int | None = None
) -> np.ndarray:
    """Cluster labels 0..k'−1 for the rows of x (k capped by the number of rows)."""
    n = x.shape[0]
    k = max(1, min(int(k), n))
    if n == 0:
        return np.zeros(0, dtype=int)
    if k == 1:
        return np.zeros(n, dtype=int)
    if k == n:
        return np.arange(n)
    from sklearn.cluster import KMeans  # noqa: PLC0415  (scikit-learn is a core dependency; import is slow)

    emb = spectral_embedding(normalized_laplacian(rbf_affinity(x, sigma)), k)
    labels = KMeans(n_clusters=k, n_init=10, random_state=random_state).fit_predict(emb)
    return relabel_by_first_occurrence(labels)


def relabel_by_first_occurrence(labels: np.ndarray) -> np.ndarray:
    """Renumber labels 0, 1, … in order of first appearance (stable across k-means label swaps)."""
    mapping: dict[int, int] = {}
    return np.array([mapping.setdefault(int(lab), len(mapping)) for lab in labels], dtype=int)


def cluster_weights(
    mean_relevance: np.ndarray, rng: np.random.Generator, temperature: float = 1.0
) -> np.ndarray:
    """w_m = K · softmax_m((log U_m + μ_m)/τ) for one subset (Eq. 6); sums to K."""
    mu = np.asarray(mean_relevance, dtype=float)
    k = mu.shape[0]
    u = rng.uniform(np.finfo(float).tiny, 1.0, size=k)
    logits = (np.log(u) + mu) / temperature
    logits -= logits.max()
    p = np.exp(logits)
    return k * p / p.sum()


def subset_sizes(cluster_sizes: np.ndarray, weights: np.ndarray, sampling_ratio: float) -> np.ndarray:
    """n_m = max(1, ⌊|C_m|·ρ·w_m⌋), capped at |C_m| (Eq. 7)."""
    sizes = np.asarray(cluster_sizes, dtype=int)
    n = np.floor(sizes * sampling_ratio * np.asarray(weights, dtype=float)).astype(int)
    return np.minimum(np.maximum(n, 1), sizes)


def stratified_subsets(
    labels: np.ndarray,
    relevance: np.ndarray,
    *,
    n_subsets: int,
    sampling_ratio: float = 0.5,
    temperature: float = 1.0,
    anchors: int = 0,
    random_state: int | None = None,
) -> list[list[int]]:
    """M subsets of row indices, by descending relevance: per cluster, n_m rows sampled without replacement
    ∝ relevance (non-finite: 0 or 1), plus the `anchors` most relevant rows (0: the paper's)."""
    labels = np.asarray(labels, dtype=int)
    rel = np.nan_to_num(np.asarray(relevance, dtype=float), nan=0.0, posinf=1.0, neginf=0.0)
    if labels.size == 0:
        return [[] for _ in range(n_subsets)]
    rng = np.random.default_rng(random_state)
    clusters = [np.flatnonzero(labels == m) for m in range(int(labels.max()) + 1)]
    clusters = [c for c in clusters if c.size]
    mu = np.array([rel[c].mean() for c in clusters])
    top = np.argsort(-rel, kind="stable")[: max(0, anchors)]
    subsets: list[list[int]] = []
    for _ in range(n_subsets):
        w = cluster_weights(mu, rng, temperature)
        sizes = subset_sizes(np.array([c.size for c in clusters]), w, sampling_ratio)
        chosen: set[int] = {int(i) for i in top}
        for members, size in zip(clusters, sizes, strict=True):
            p = np.clip(rel[members], 0.0, None) + 1e-9
            pick = rng.choice(members, size=int(size), replace=False, p=p / p.sum())
            chosen.update(int(i) for i in pick)
        subsets.append(sorted(chosen, key=lambda i: (-rel[i], i)))
    return subsets


def cluster_subsets(labels: np.ndarray, key: np.ndarray, n_subsets: int) -> list[list[int]]:
    """Whole clusters as subsets: the `n_subsets` with the highest mean `key` (non-finite lowest), best first,
    rows by descending `key`.

    >>> cluster_subsets(np.array([0, 1, 0, 1]), np.array([0.9, 0.1, 0.5, 0.3]), 2)
    [[0, 2], [3, 1]]
    """
    labels = np.asarray(labels, dtype=int)
    if labels.size == 0:
        return []
    k = np.nan_to_num(np.asarray(key, dtype=float), nan=-np.inf)
    clusters = [np.flatnonzero(labels == m) for m in np.unique(labels)]
    ranked = sorted(clusters, key=lambda c: (-np.mean(np.clip(k[c], -1e9, 1e9)), int(c.min())))
    return [sorted((int(i) for i in c), key=lambda i: (-k[i], i)) for c in ranked[: max(0, n_subsets)]]


def order_by(subsets: list[list[int]], key: np.ndarray) -> list[list[int]]:
    """Each subset's rows by descending `key` (decisive-first when `key` is the causal margin).

    >>> order_by([[0, 1, 2]], np.array([0.1, 0.3, 0.2]))
    [[1, 2, 0]]
    """
    k = np.nan_to_num(np.asarray(key, dtype=float), nan=-np.inf)
    return [sorted(s, key=lambda i: (-k[i], i)) for s in subsets]
