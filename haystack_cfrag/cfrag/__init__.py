"""CF-RAG (Counterfactual RAG, ICLR 2026): the family's `components/` (and `CounterfactualRAG`, which wires them),
pure `math/`, `prompts`, `wiring`, `trace`, `parameters` and `dataclasses`."""
