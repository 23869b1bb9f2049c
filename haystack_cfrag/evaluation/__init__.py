"""Evaluation: `cfrag eval` and its Python API.

- `datasets`   HotpotQA, PopQA (CRAG passages), Correlation-Trap and generic JSONL rows → `EvalItem`
- `corpus`     pooled / per-question stores, adversarial injection (distractor, near-duplicate, conflicting)
- `systems`    closed-book, standard RAG, CF-RAG full/fast, ablations, sweeps, any YAML path
- `runner`     `EvalConfig` + `run_eval`: resumable per-question records, LLM reply cache
- `provenance` `metadata.json`; refuses to resume a folder over another corpus or other models
- `summary`    results.json, the report and plots from an output folder's records (gathers the four below)
- `statistics` mean scores, paired differences against standard RAG, the oracle, injection and sweep tables
- `costs`      latency, LLM calls and tokens, overhead against the baseline, CausalRAG's graph builds
- `report`     the Markdown report
- `plots`      F1 vs N_inject, parameter sensitivity, latency per stage (PNG)
- `metrics`    strict EM/F1 (SQuAD/HotpotQA normalisation), lenient containment, paired bootstrap
- `injection`  distractors that never contain the answer (paper 6.6)"""

from haystack_cfrag.evaluation.runner import EvalConfig, run_eval
from haystack_cfrag.evaluation.summary import summarize, write_outputs

__all__ = ["EvalConfig", "run_eval", "summarize", "write_outputs"]
