"""The baselines and cheap controls every method is measured against: `standard_rag`, `hybrid_rag` (BM25 +
embedding, fused), `order_rag` (another fixed order, with `DocumentOrder`) and `closed_book`."""
