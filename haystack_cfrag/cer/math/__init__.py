"""CER's pure math (paper 003): no Haystack imports here.

- `settings` `CerSettings`: θ, ε, μ, κ, δ, K_max, α and F̂'s weights, the paper's defaults and their ranges
- `quality`  F̂ (Eq. 3/17), p_cov, calibration, utility (Eq. 19), Nec(d) (Eq. 4), effects (Eq. 5–7)
- `search`   Algorithm 1: forward greedy with the δ two-round stop, reverse pruning with ε; set effects
- `hard_negatives` each kept passage's most similar passage outside the set (the replacement effect's swap)
"""
