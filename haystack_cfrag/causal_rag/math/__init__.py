"""CausalRAG's pure math (paper 004): names, graph, expansion, extraction, and a parser's sentences,
relations and causal cues. No Haystack imports here."""
