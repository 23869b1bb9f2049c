"""CausalRAG's pure math (paper 004): no Haystack imports here.

- `names`       node names, relations and types cleaned and keyed; the node Documents' ids and flag
- `graph`       the Graph of nodes and directed edges citing passages; its size limits
- `expansion`   s-hop expansion keeping each edge's direction, passage ranking; the k / s ranges
- `extraction`  chunking (1,000 characters, 100 overlap), the extractor's reply parsed (bounded, never
                raises on bad text), the passage hash and cache key, the cost per extracted passage
- `sentences`   parsed sentences in a library-neutral form (tokens, phrases) and the patterns' lookups
- `relations`   relations from a parsed sentence's dependency tree
- `cues`        causal cue patterns, and a non-generative extractor's findings put together
"""
