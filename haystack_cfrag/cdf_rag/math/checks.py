"""CDF-RAG's two answer checks and the bounded feedback loop (paper 002, §2.4–2.5), pure: one import for all three.

- Claims: an answer split into sentences and clauses (`split_claims`); a short answer (an
  entity, a date, a few words) is one claim.
- S_hall = 1 − |K ∩ Y| / |Y| (Eq. in §2.5): Y the claims, K ∩ Y the claims whose support
  (the reader's length-normalised log P(claim | q, K)) reaches `support_threshold`.
- S_causal = share of the retrieved causal edges C → E that the answer respects (§2.4), over
  the edges the answer takes a position on (see `edge_verdict`: what "respects" means here).
- Decisions: regenerate when S_causal < τ, rewrite when S_hall > δ (both strict, as in the
  paper); an undefined score (None: no claims, no edge the answer speaks to) decides nothing.
- `LoopState` and `next_step`: a state machine that bounds the corrective rounds.

The paper gives no value for τ or δ; the defaults are ours (docs/cdf_rag.md). Each part lives in
its own module: `claims` (claims, S_hall), `causal_check` (S_causal), `feedback_loop` (the loop).
"""

from haystack_cfrag.cdf_rag.math.causal_check import (
    NEUTRAL, RESPECTED, TAU, VIOLATED, CausalCheck, CausalStatement, as_edge, causal_consistency,
    causal_statements, edge_verdict, names, question_statements, should_regenerate,
)
from haystack_cfrag.cdf_rag.math.claims import (
    DELTA, MAX_CLAIMS, REWRITE_MODES, SHORT_ANSWER_WORDS, SUPPORT_RANGE, SUPPORT_THRESHOLD,
    hallucination_score, should_rewrite, split_claims, supported_claims,
)
from haystack_cfrag.cdf_rag.math.feedback_loop import (
    ACCEPT, MAX_REGENERATIONS, MAX_REWRITES, REGENERATE, REWRITE, STOP, LoopState, next_step,
)

__all__ = [
    "ACCEPT",
    "DELTA",
    "MAX_CLAIMS",
    "MAX_REGENERATIONS",
    "MAX_REWRITES",
    "NEUTRAL",
    "REGENERATE",
    "RESPECTED",
    "REWRITE",
    "REWRITE_MODES",
    "SHORT_ANSWER_WORDS",
    "STOP",
    "SUPPORT_RANGE",
    "SUPPORT_THRESHOLD",
    "TAU",
    "VIOLATED",
    "CausalCheck",
    "CausalStatement",
    "LoopState",
    "as_edge",
    "causal_consistency",
    "causal_statements",
    "edge_verdict",
    "hallucination_score",
    "names",
    "next_step",
    "question_statements",
    "should_regenerate",
    "should_rewrite",
    "split_claims",
    "supported_claims",
]
