"""CDF-RAG, "Causal Dynamic Feedback for Adaptive Retrieval-Augmented Generation" (paper 002), zero-shot.

Refine the question (expand, simplify or decompose), retrieve on two paths, generate, then
check the answer against the retrieved causal edges (S_causal, a stricter regeneration below
τ) and against the evidence claim by claim (S_hall, a rewrite above δ), in a bounded loop.
`cdf_rag.math` holds the pure checks and reply parsing; see docs/cdf_rag.md.
"""
