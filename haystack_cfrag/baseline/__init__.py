"""The baselines and cheap controls every method is measured against (no causal machinery).

`standard_rag` (top-k retrieval, one generation; `standard_rag[top_k=6]` reads one more passage),
`hybrid_rag` (Haystack's own hybrid: BM25 + embedding retrievers joined by reciprocal rank fusion),
`order_rag` (standard RAG's passages in another fixed order: the noise floor of any method that
re-orders passages) and `closed_book`. Their pipelines are in `pipelines/`; `components/` holds the
one component they add (`DocumentOrder`).
"""
