"""Does CausalRAG / CDF-RAG answer the same from the graph `cfrag index --graph` stored as from one built in memory?

    python benchmarks/analysis/stored_graph_check.py ../shared/data/trap_dev.jsonl OUT_DIR

The eval's pooled store of the file's questions (`evaluation.corpus.Corpus`, the embedded embedder) is
saved as a memory store; its spaCy graph is written beside it (`extract_passages(..., store_spec=…)`,
what `cfrag index --graph` runs). Then each pipeline answers every question twice, from a runtime
that opens the stored graph and from one that builds it in memory, with a generator that records
every prompt (the mock's replies, deterministic in the prompt). Same graph retrieval and the same
prompts, call for call, mean the same answers from any greedy reader. Writes OUT_DIR/summary.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


PROMPTS: list[str] = []
"""Every prompt any RecordingGenerator instance was sent (the runtime builds its own instances from to_dict)."""


@component
class RecordingGenerator:
    """MockChatGenerator's replies, every prompt recorded in order in PROMPTS."""

    def __init__(self) -> None:
        from haystack_cfrag.testing import MockChatGenerator

        self.inner = MockChatGenerator()

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.RecordingGenerator", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordingGenerator:
        return cls()

    def support_backend(self) -> Any:
        """The mock's support backend (CDF-RAG's checks read the reader's support)."""
        from haystack_cfrag.support.backends import backend_for

        return backend_for(self.inner)

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        PROMPTS.append("\n".join(m.text or "" for m in messages))
        return self.inner.run(messages=messages, generation_kwargs=generation_kwargs)


def main() -> None:
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    from haystack_cfrag import models
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.causal_rag.extraction_run import extract_passages
    from haystack_cfrag.evaluation.corpus import Corpus
    from haystack_cfrag.evaluation.datasets import load_items
    from haystack_cfrag.runtime import Runtime
    from haystack_cfrag.stores import open_document_store, save_document_store

    items = load_items(data)
    text, docs = factories.text_embedder(), factories.document_embedder()
    text.warm_up()
    docs.warm_up()
    corpus = Corpus(items, lambda d: docs.run(documents=d)["documents"], lambda q: text.run(text=q)["embedding"])
    spec = f"memory:{out / 'store.json'}"
    store = corpus.pooled_store()
    save_document_store(store, spec)
    start = time.perf_counter()
    indexed = extract_passages([d for d in store.filter_documents() if d.content], extractor="spacy",
                               cache_dir=models.graph_cache_dir(), store_spec=spec, text_embedder=text)
    index_seconds = time.perf_counter() - start
    summary: dict[str, Any] = {"data": data.name, "questions": len(items), "passages": store.count_documents(),
                               "graph": {k: indexed.get(k) for k in ("nodes", "edges", "causal_edges")},
                               "index_graph_seconds": round(index_seconds, 1), "pipelines": {}}
    for pipeline in ("causal_rag", "cdf_rag"):
        runs = {}
        for label, stored in (("stored", spec), ("memory", None)):
            generator = RecordingGenerator()
            rt = Runtime(store=open_document_store(spec), chat_generator=generator, text_embedder=text,
                         store_spec=stored, allowed_modules=[__name__])
            answers, traces, prompts = [], [], []
            for item in items:
                PROMPTS.clear()
                a = rt.ask(pipeline, item.question, timed=False)
                answers.append(a.answer)
                traces.append(json.dumps(_graph_trace(a.outputs), sort_keys=True, default=str))
                prompts.append(list(PROMPTS))
            runs[label] = {"answers": answers, "traces": traces, "prompts": prompts,
                           "graph_stats": [dict(s) for s in rt.graph_stats]}
        s, m = runs["stored"], runs["memory"]
        differ = [items[i].id for i in range(len(items))
                  if any(s[key][i] != m[key][i] for key in ("answers", "traces", "prompts"))]
        summary["pipelines"][pipeline] = {
            "same_answers": sum(a == b for a, b in zip(s["answers"], m["answers"], strict=True)),
            "same_graph_retrieval": sum(a == b for a, b in zip(s["traces"], m["traces"], strict=True)),
            "same_prompts": sum(a == b for a, b in zip(s["prompts"], m["prompts"], strict=True)),
            "llm_calls": sum(len(p) for p in s["prompts"]), "differ": differ,
            "questions_with_graph_trace": sum(t != "[]" for t in s["traces"]),
            "graph_passages_retrieved": sum(len(x.get("passage_ids", [])) for t in s["traces"] for x in json.loads(t)),
            "stored_opened": any(x.get("stored") for x in s["graph_stats"]),
            "memory_built": any("nodes" in x for x in m["graph_stats"])}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


def _graph_trace(outputs: dict[str, Any]) -> Any:
    """The graph retriever's trace wherever the pipeline outputs it (seeds, hops, edges, passage ids)."""
    found = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if "seeds" in x and "passage_ids" in x:
                found.append({k: x[k] for k in ("seeds", "passage_ids", "edges_per_hop", "hops_reached", "edges")
                              if k in x})
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(outputs)
    return found


if __name__ == "__main__":
    main()
