"""`cfrag index` in a child process with the tests' fakes, killed (SIGKILL) at a named point of its write.

    python -m tests.unit.indexing.child STOP -- index FILES --store SPEC [--graph] …

STOP is `never`, or a point of `haystack_cfrag.stores.checkpoints` (or `embedding`: inside the passage
embedder), optionally `@N` for its N-th time (`graph batch merged@2`). The child embeds with
`HashingDocumentEmbedder`/`HashingTextEmbedder` (32 dimensions) and extracts the graph with
`WordGraphExtractor` in place of spaCy (no model loads), two passages per graph batch
(`CHILD_GRAPH_BATCH`): a kill lands between batches, deterministically, never by a sleep.
`CHILD_BARRIER` (FOLDER:N:SECONDS) holds each child after its passage embedding until N children are
there (or SECONDS passed), so that concurrent runs overlap.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from typing import Any

from haystack_cfrag.causal_rag.math.extraction import Extraction
from haystack_cfrag.causal_rag.math.graph import Triple
from haystack_cfrag.testing.fakes import HashingDocumentEmbedder, HashingTextEmbedder

DIM = 32


class WordGraphExtractor:
    """A deterministic graph extractor: a passage's words of 4+ letters are nodes, consecutive ones linked, the
    first link causal ("leads to"), so that passages sharing words share nodes."""

    def run(self, texts: list[str]) -> dict[str, Any]:
        extractions = []
        for text in texts:
            words = list(dict.fromkeys(re.findall(r"[A-Za-z]{4,}", text)))
            triples = tuple(Triple(a, "leads to" if i == 0 else "relates to", b, cue="leads to" if i == 0 else "")
                            for i, (a, b) in enumerate(zip(words, words[1:], strict=False)))
            extractions.append(Extraction(nodes=tuple((w, "word") for w in words), triples=triples))
        return {"extractions": extractions, "meta": [{} for _ in texts]}

    def fingerprint(self) -> str:
        return "word-graph-1"


def _barrier(spec: str) -> None:
    """`FOLDER:N:SECONDS`: wait (at most SECONDS) until N children have embedded their passages, so that runs into
    one store overlap whatever their start-up times: without a lock, each has read the store before any saves."""
    if not spec:
        return
    folder, n, seconds = spec.rsplit(":", 2)
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, str(os.getpid())), "w").close()  # noqa: SIM115
    deadline = time.monotonic() + float(seconds)
    while len(os.listdir(folder)) < int(n) and time.monotonic() < deadline:
        time.sleep(0.05)


def _stopper(stop: str) -> Any:
    name, _, nth = stop.partition("@")
    wanted = int(nth or 1)
    seen = {"n": 0}

    def reached(point: str) -> None:
        if point == name:
            seen["n"] += 1
            if seen["n"] == wanted:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

    return reached


def main(argv: list[str]) -> None:
    stop, sep, args = argv[0], argv[1], argv[2:]
    assert sep == "--", argv
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.causal_rag import extraction_run

    reached = _stopper(stop) if stop != "never" else (lambda _point: None)
    try:
        from haystack_cfrag.causal_rag import graph_write
        from haystack_cfrag.stores import checkpoints
    except ImportError:  # a version before the named points (6dca1af): it runs, and is never stopped
        pass
    else:
        checkpoints.reached = reached
        graph_write.PASSAGE_BATCH = int(os.environ.get("CHILD_GRAPH_BATCH", "2"))

    class Embedder(HashingDocumentEmbedder):
        def warm_up(self) -> None:
            pass

        def run(self, documents):  # noqa: ANN001, ANN201
            out = super().run(documents=documents)
            _barrier(os.environ.get("CHILD_BARRIER", ""))
            reached("embedding")
            return out

    factories.document_embedder = lambda *_a, **_k: Embedder(dimension=DIM)
    factories.text_embedder = lambda *_a, **_k: HashingTextEmbedder(dimension=DIM)
    extraction_run.make_extractor = lambda *_a, **_k: WordGraphExtractor()
    from haystack_cfrag.cli import main as cli

    cli.main(args=args, prog_name="cfrag")


if __name__ == "__main__":
    main(sys.argv[1:])
