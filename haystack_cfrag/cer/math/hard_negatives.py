"""The hard negative of each kept passage for CER's replacement effect (paper 003, Eq. 6), pure."""

from __future__ import annotations

import numpy as np

from haystack_cfrag.common.text import bag_of_words_matrix


def hard_negatives(texts: list[str], kept: tuple[int, ...]) -> dict[int, int]:
    """For each kept index, the most similar (lexical cosine) of the pool's `texts` outside the set, if any.

    >>> hard_negatives(["rain causes floods", "floods follow heavy rain", "the cat sleeps"], (0,))
    {0: 1}
    >>> hard_negatives(["a b", "c d"], (0, 1))
    {}
    """
    outside = [i for i in range(len(texts)) if i not in kept]
    if not outside:
        return {}
    vectors = bag_of_words_matrix(texts)
    sims = vectors @ vectors.T
    return {d: outside[int(np.argmax(sims[d, outside]))] for d in kept}


__all__ = ["hard_negatives"]
