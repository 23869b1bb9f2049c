"""CF-RAG (Counterfactual RAG, ICLR 2026): the family's components, math, prompts, wiring, trace and parameters.

- `components/`    the seven components (expander, multi-query retriever, deduplicator, stratifier,
                   drafter, arbitration ranker) and `CounterfactualRAG`, which wires them
- `math/`          pure numpy: counterfactual validity, dedup, spectral strata, φ scores, Ψ, Algorithm 1
- `prompts`        the expander's, drafter's and duel's prompts
- `wiring`         the pipeline graph every CF-RAG YAML file names (tests pin the files to it)
- `trace`          the arbitration trace's schema and its readable form
- `parameters`     the family's tunable parameters: component, init parameter, type, range
- `dataclasses`    `Draft` and the meta keys the components share
"""
