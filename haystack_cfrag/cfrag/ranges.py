"""The ranges of CF-RAG's numeric tunables, in one place: the components `check` against them and the parameter
table describes them.

>>> check("n_counterfactuals", 3)
>>> check("n_counterfactuals", 11)
Traceback (most recent call last):
...
ValueError: 'n_counterfactuals' must be an integer in [0, 10], got 11.
"""

from __future__ import annotations

from typing import Any

from haystack_cfrag.common.parameters import Range, check_in_range

RANGES: dict[str, Range] = {
    "n_counterfactuals": Range(int, 0, 10),
    "n_clusters": Range(int, 1, 20),
    "n_subsets": Range(int, 1, 20),
    "causal_weight": Range(float, 0.0, 1.0),
    "sampling_ratio": Range(float, 0.0, 1.0, low_open=True),
    "anchors": Range(int, 0, 50),  # passages in every draft's prompt: as many as a baseline reads at most
    "random_state": Range(int, 0, 2**32 - 1),  # k-means seeds numpy's RandomState: 32-bit unsigned
    "top_k": Range(int, 1, 100),  # per query, (N + 1) queries: up to 1,100 passages clustered
    "max_workers": Range(int, 1, 64),  # threads (or tasks) at once, drafts or retrievals
    "override_margin": Range(float, -1.0, 1.0),
    "consensus_min_causal": Range(float, -1.0, 1.0),
    "paraphrase_threshold": Range(float, 0.0, 1.0, low_open=True),
    "similarity_threshold": Range(float, 0.0, 1.0, low_open=True),
}


def check(name: str, value: Any) -> None:
    """Raise a ValueError naming `name` and its range unless `value` is in `RANGES[name]`."""
    check_in_range(RANGES, name, value)


__all__ = ["RANGES", "Range", "check"]
