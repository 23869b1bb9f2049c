"""CDF-RAG's pure math (paper 002): no Haystack imports here.

- `checks`      the two checks and the loop in one import, from:
  - `claims`         claims, S_hall, the δ decision
  - `causal_check`   causal statements, S_causal (what "respects" an edge means here), the τ decision
  - `feedback_loop`  the bounded loop (`LoopState`, `next_step`)
- `merge`       the dual-path merge: reciprocal rank fusion or interleaving, dedup, provenance, edges kept
- `refinement`  the refiner's reply parsed (expand / simplify / decompose), its fallbacks and bounds, the rule chooser
"""
