"""Stores for an evaluation: passages embedded once, then a `pooled` store (every question's passages) or one
`per-question` store, with `n` adversarial passages injected on demand (paper 6.6): `distractor` (the most
similar other passages without the answer), `near_duplicate` (near-copies of the top distractor), `conflicting`
(forged gold passages naming another question's answer)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.common.text import normalize_answer
from haystack_cfrag.common.validation import check_choice
from haystack_cfrag.evaluation.datasets import EvalItem, Passage
from haystack_cfrag.evaluation.injection import select_distractors

CORPUS_MODES = ("pooled", "per-question")
INJECTION_VARIANTS = ("distractor", "near_duplicate", "conflicting")


def near_copies(text: str, n: int, keep: str = "") -> list[str]:
    """`n` near-duplicates of `text`, each with a different single word removed (never a word of `keep`).

    >>> near_copies("Paris is the capital of France", 2, keep="Paris")
    ['Paris is the capital France', 'Paris the capital of France']
    """
    words = text.split()
    kept = {w.lower() for w in keep.split()}
    positions = [j for j, w in enumerate(words) if not any(k in w.lower() for k in kept)]
    if len(words) < 2 or not positions:
        return [text] * n
    return [" ".join(words[:j] + words[j + 1 :]) for j in (positions[(i * 7 + 3) % len(positions)] for i in range(n))]


def swap_answer(text: str, answer: str, replacement: str) -> str | None:
    """`text` with every occurrence of `answer` (case-insensitive, whole words) replaced; None if absent."""
    pattern = re.compile(rf"(?<!\w){re.escape(answer)}(?!\w)", re.IGNORECASE)
    swapped, count = pattern.subn(replacement, text)
    return swapped if count else None


class Corpus:
    """The passages of the sampled `items`, embedded once (`embed_documents`: documents → embedded documents)."""

    def __init__(
        self,
        items: Sequence[EvalItem],
        embed_documents: Callable[[list[Document]], list[Document]],
        embed_query: Callable[[str], list[float]],
    ) -> None:
        self.items = list(items)
        self.passages: dict[str, Passage] = {}
        self.owners: dict[str, str] = {}
        for item in self.items:
            for p in item.passages:
                self.passages.setdefault(p.id, p)
                self.owners.setdefault(p.id, item.id)
        self._embed_documents = embed_documents
        self.embeddings: dict[str, list[float]] = self._embed(list(self.passages.values()))
        self.question_embeddings = {item.id: embed_query(item.question) for item in self.items}
        self._ids = list(self.passages)
        self._matrix = np.asarray([self.embeddings[i] for i in self._ids])

    def _embed(self, passages: list[Passage]) -> dict[str, list[float]]:
        docs = [Document(id=p.id, content=p.content, meta={"title": p.title}) for p in passages]
        return {d.id: d.embedding for d in self._embed_documents(docs)} if docs else {}

    def documents(self, passages: Sequence[Passage], injected: Sequence[Passage] = ()) -> list[Document]:
        """Haystack documents with their embeddings; injected ones are marked in meta."""
        missing = [p for p in injected if p.id not in self.embeddings]
        self.embeddings.update(self._embed(missing))
        docs, seen = [], set()
        for p, is_injected in [(p, False) for p in passages] + [(p, True) for p in injected]:
            if p.id in seen:
                continue
            seen.add(p.id)
            meta = {"title": p.title} | ({"cfrag_eval_injected": True} if is_injected else {})
            docs.append(Document(id=p.id, content=p.content, meta=meta, embedding=self.embeddings[p.id]))
        return docs

    def pooled_store(self) -> InMemoryDocumentStore:
        """One store with every passage of every question."""
        return _store(self.documents(list(self.passages.values())))

    def item_store(self, item: EvalItem, injected: Sequence[Passage] = ()) -> InMemoryDocumentStore:
        """A store with the question's own passages and the injected ones."""
        return _store(self.documents(item.passages, injected))

    def inject(self, item: EvalItem, n: int, variant: str = "distractor") -> list[Passage]:
        """The passages to add to `item`'s own for an injection level (see the module doc)."""
        check_choice("variant", variant, INJECTION_VARIANTS)
        if n <= 0:
            return []
        if variant == "conflicting":
            return self._conflicting(item, n)
        picked = select_distractors(
            self.question_embeddings[item.id], item.answers, [self.passages[i].content for i in self._ids],
            self._matrix, [self.owners[i] for i in self._ids], item.id, n if variant == "distractor" else 1,
        )
        found = [self.passages[self._ids[i]] for i in picked]
        if variant == "distractor" or not found:
            return found
        return [Passage(found[0].title, text) for text in near_copies(found[0].content, n)]

    def _conflicting(self, item: EvalItem, n: int) -> list[Passage]:
        """`n` forged gold passages naming the same wrong answer (another question's, by a stable hash), padded
        with near-copies: the Correlation Trap's pile."""
        answer = item.answers[0]
        if normalize_answer(answer) in ("yes", "no", ""):
            return []
        others = [o.answers[0] for o in self.items
                  if o.id != item.id and normalize_answer(o.answers[0]) not in ("yes", "no", normalize_answer(answer))]
        gold = [p for p in item.passages if p.title in item.gold_titles] or list(item.passages)
        start = hash_index(item.id)
        for k in range(len(others)):
            wrong = others[(start + k) % len(others)]
            forged = [Passage(p.title, text) for p in gold
                      if (text := swap_answer(p.content, answer, wrong)) is not None]
            if forged:
                return _spread(forged, n, keep=wrong)
        return []


def _spread(passages: list[Passage], n: int, keep: str) -> list[Passage]:
    """`n` passages: `passages` first, then near-copies of them in turn, none dropping a word of `keep`."""
    copies = [near_copies(p.content, n, keep) for p in passages]
    extra = [Passage(passages[i % len(passages)].title, copies[i % len(passages)][i // len(passages)])
             for i in range(max(0, n - len(passages)))]
    return passages[:n] + extra


def hash_index(text: str) -> int:
    """A small stable integer from a string (Python's hash() changes between runs)."""
    return sum(ord(c) * (i + 1) for i, c in enumerate(text)) % 9973


def _store(docs: list[Document]) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(docs)
    return store
