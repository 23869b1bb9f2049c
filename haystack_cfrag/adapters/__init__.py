"""Model adapters: Haystack components built from model specs (`llama_cpp_logprobs`, the `model_spec_*`
embedders, `factories`)."""
