"""CDF-RAG's two answer checks and the bounded feedback loop (paper 002, §2.4–2.5), pure, in one import:
`claims` (S_hall), `causal_check` (S_causal) and `feedback_loop` (`LoopState`, `next_step`)."""

from haystack_cfrag.cdf_rag.math.causal_check import (
    NEUTRAL,
    RESPECTED,
    TAU,
    VIOLATED,
    CausalCheck,
    CausalStatement,
    as_edge,
    causal_consistency,
    causal_statements,
    edge_verdict,
    names,
    question_statements,
    should_regenerate,
)
from haystack_cfrag.cdf_rag.math.claims import (
    DELTA,
    MAX_CLAIMS,
    REWRITE_MODES,
    SHORT_ANSWER_WORDS,
    SUPPORT_RANGE,
    SUPPORT_THRESHOLD,
    hallucination_score,
    should_rewrite,
    split_claims,
    supported_claims,
)
from haystack_cfrag.cdf_rag.math.feedback_loop import (
    ACCEPT,
    MAX_REGENERATIONS,
    MAX_REWRITES,
    REGENERATE,
    REWRITE,
    STOP,
    LoopState,
    next_step,
)

__all__ = ["ACCEPT", "DELTA", "MAX_CLAIMS", "MAX_REGENERATIONS", "MAX_REWRITES", "NEUTRAL", "REGENERATE",
           "RESPECTED", "REWRITE", "REWRITE_MODES", "SHORT_ANSWER_WORDS", "STOP", "SUPPORT_RANGE",
           "SUPPORT_THRESHOLD", "TAU", "VIOLATED", "CausalCheck", "CausalStatement", "LoopState", "as_edge",
           "causal_consistency", "causal_statements", "edge_verdict", "hallucination_score", "names",
           "next_step", "question_statements", "should_regenerate", "should_rewrite", "split_claims",
           "supported_claims"]
