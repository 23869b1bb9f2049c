"""CER's pure math (paper 003): no Haystack imports here.

- `quality`  F̂ (Eq. 3/17), p_cov, calibration, utility (Eq. 19), Nec(d) (Eq. 4), effects (Eq. 5–7), parameter ranges
- `search`   Algorithm 1: forward greedy with the δ two-round stop, reverse pruning with ε; set effects
"""
