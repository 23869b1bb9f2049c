"""Vector helpers shared by every stage: normalisation, cosine, relevance rescaling, checks."""

from __future__ import annotations

import numpy as np


def as_matrix(vectors: list[list[float]] | np.ndarray) -> np.ndarray:
    """Stack vectors into a float 2-D array (shape (0, 0) for an empty input)."""
    arr = np.asarray(vectors, dtype=float)
    if arr.size == 0:
        return np.zeros((0, 0))
    if arr.ndim == 1:
        arr = arr[None, :]
    return arr


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation; zero rows stay zero."""
    matrix = np.asarray(matrix, dtype=float)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities between the rows of a (n×d) and b (m×d): an n×m matrix in [-1, 1]."""
    a, b = as_matrix(a), as_matrix(b)
    if a.size == 0 or b.size == 0:
        return np.zeros((a.shape[0], b.shape[0]))
    return np.clip(l2_normalize(a) @ l2_normalize(b).T, -1.0, 1.0)


def cosine_to_relevance(cos: np.ndarray) -> np.ndarray:
    """Rescale cosine similarity from [-1, 1] to a relevance in [0, 1]: (cos + 1) / 2."""
    return (np.asarray(cos, dtype=float) + 1.0) / 2.0


def valid_embedding_mask(vectors: list[list[float] | None], dimension: int | None = None) -> np.ndarray:
    """True for each vector that is present, finite, non-zero and of the expected dimension.

    When `dimension` is None the most common length among present vectors is expected."""
    lengths = [len(v) if v is not None else -1 for v in vectors]
    if dimension is None:
        present = [n for n in lengths if n > 0]
        dimension = max(set(present), key=present.count) if present else 0
    mask = np.zeros(len(vectors), dtype=bool)
    for i, v in enumerate(vectors):
        if v is None or lengths[i] != dimension or dimension == 0:
            continue
        arr = np.asarray(v, dtype=float)
        mask[i] = bool(np.all(np.isfinite(arr)) and np.any(arr != 0.0))
    return mask
