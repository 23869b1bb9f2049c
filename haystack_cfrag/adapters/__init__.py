"""Model adapters: Haystack components built from model specs (`haystack_cfrag.models`).

- `llama_cpp_logprobs`        LlamaCppChatGenerator that keeps token log-probabilities and resolves specs
- `model_spec_text_embedder`  SentenceTransformersTextEmbedder that resolves specs
- `factories`                 chat generator, embedders and cross-encoder for a spec
"""
