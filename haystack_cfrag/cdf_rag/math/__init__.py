"""CDF-RAG's pure math (paper 002): the checks (`claims`, `causal_check`, `feedback_loop`, all through `checks`),
the dual-path `merge` and the `refinement` reply parsing and rule. No Haystack imports here."""
