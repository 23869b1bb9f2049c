"""CDF-RAG's pure math (paper 002): no Haystack imports here.

- `checks`      claims, S_hall, S_causal (what "respects" an edge means here), τ/δ decisions, the bounded loop
- `merge`       the dual-path merge: reciprocal rank fusion or interleaving, dedup, provenance, edges kept
- `refinement`  the refiner's reply parsed (expand / simplify / decompose), its fallbacks and bounds, the rule chooser
"""
