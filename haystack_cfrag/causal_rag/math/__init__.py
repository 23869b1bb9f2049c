"""CausalRAG's pure math (paper 004): no Haystack imports here.

- `graph`       node names and keys, the Graph of nodes and directed edges citing passages, s-hop
                expansion keeping each edge's direction, passage ranking; the k / s ranges and size limits
- `extraction`  chunking (1,000 characters, 100 overlap), the extractor's reply parsed (bounded, never
                raises on bad text), the passage hash and cache key, the cost per extracted passage
"""
