"""Infrastructure every method family shares: no method's math or prompts live here.

- `protocols`      Haystack's component protocols (with Haystack 2.x fallbacks)
- `plumbing`       what components repeat: query cleaning, calls with a time limit, `InjectedParts`, embeddings
- `serialization`  injected components to and from dicts
- `validation`     init-parameter checks with one-line errors
- `tracing`        the `haystack_cfrag.llm_call` span of each LLM call
- `errors`         one-line error messages
- `interrupts`     Ctrl-C held while a model loads (llama.cpp would swallow it), CPython's stale exit flag
- `logits`         pure: the log-softmax, and one token's log-probability, top-1 − top-2 gap and rank
- `text`           pure: SQuAD normalisation, token F1, mention, query cleaning
- `vectors`        pure: cosine, relevance rescaling, embedding checks"""
