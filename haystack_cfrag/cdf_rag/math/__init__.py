"""CDF-RAG's pure math (paper 002): the checks (`claims`: S_hall, `causal_check`: S_causal, `feedback_loop`), the
dual-path `merge` and the `refinement` reply parsing and rule. No Haystack imports here."""
