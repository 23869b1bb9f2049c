"""CER, "Learning Causally Sufficient Evidence Sets for Verifiable and Trustworthy RAG" (paper 003), zero-shot.

Instead of the top-k passages, the smallest set S of the retrieved ones whose quality F̂(q, S)
reaches θ, found by forward greedy selection and reverse pruning, with each kept passage's
necessity. `cer.math` holds the pure search and quality math; see docs/cer.md.
"""
