"""One arbitration's inputs, flattened: the drafts, their evidence E_j and the matrices over its union.

`CausalArbitrationRanker` builds an `ArbitrationCase` per run (drafts from either socket, E_j by its
`evidence` mode), fills s(q, e) and the embeddings, and hands it on in its `ruling` (haystack_cfrag.cfrag.ruling);
nothing downstream changes it.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from haystack import Document
from haystack.dataclasses import ExtractedAnswer, GeneratedAnswer

from haystack_cfrag.cfrag.dataclasses import BASELINE_SOURCES, SOURCE_KEY, Draft
from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.math.algorithm import MENTION_THRESHOLD
from haystack_cfrag.common.plumbing import degradation
from haystack_cfrag.common.qualifiers import answer_dating, question_qualifier
from haystack_cfrag.common.text import bag_of_words_matrix, mention_matrix
from haystack_cfrag.common.vectors import as_matrix, cosine_matrix, cosine_to_relevance, valid_embedding_mask


class ArbitrationCase:
    """The inputs of one arbitration, flattened into matrices over the union of the evidence."""

    def __init__(
        self,
        query: str,
        drafts: list[Draft],
        failed: list[Draft],
        queries: list[str],
        details: list[dict[str, Any]] | None = None,
        cited: bool = True,
    ) -> None:
        self.query = query
        self.details = details or []
        self.reader_causal: list[dict[str, Any]] | None = None  # causal_score="reader": per draft, in order
        self.drafts = drafts
        self.failed = failed
        self.queries = queries
        docs: dict[str, Document] = {}
        for d in drafts:
            for doc in d.documents:
                docs.setdefault(doc.id, doc)
        self.docs = list(docs.values())
        position = {doc_id: i for i, doc_id in enumerate(docs)}
        self.evidence = []
        self.evidence_kind = []
        for d in drafts:
            chosen = cited_documents(d) if cited else []
            self.evidence.append([position[doc.id] for doc in (chosen or d.documents)])
            self.evidence_kind.append("cited" if chosen else "subset")
        self.degradations: list[dict[str, Any]] = []
        self.relevance: np.ndarray | None = None
        self.answer_emb = np.zeros((len(drafts), 1))
        self.doc_emb = np.zeros((len(self.docs), 1))
        self.scorer_kind = "cross-encoder"

    @classmethod
    def build(
        cls,
        query: str,
        drafts: list[Draft],
        counterfactuals: list[dict[str, Any]] | None,
        queries: list[str] | None,
        cited: bool = True,
    ) -> ArbitrationCase:
        if counterfactuals:
            cf = [str(c["text"]) if isinstance(c, dict) else str(c) for c in counterfactuals]
        else:
            cf = list(queries[1:]) if queries else []
        usable = [d for d in drafts if not d.failed]
        details = [dict(c) for c in counterfactuals or [] if isinstance(c, dict)]
        return cls(query, usable, [d for d in drafts if d.failed], [query] + cf, details, cited)

    def baseline(self) -> int | None:
        """Position of the first usable baseline draft (the drafter's baseline, or an `answers` input), if any."""
        return next((j for j, d in enumerate(self.drafts) if d.meta.get(SOURCE_KEY) in BASELINE_SOURCES), None)

    @property
    def answers(self) -> list[str]:
        return [d.answer for d in self.drafts]

    @cached_property
    def mentions(self) -> np.ndarray:
        """Mention(a_j, e_i) of each draft's answer in each document."""
        return mention_matrix(self.answers, [d.content or "" for d in self.docs])

    def dating(self) -> np.ndarray | None:
        """How well each document dates each draft's answer to the question's qualifier, a row per draft
        (`qualifiers.answer_dating`: for a period alone, how well it dates it, and wholly where the answer's own
        clause begins it); None when the question states none."""
        qualifier = question_qualifier(self.query)
        if qualifier is None:
            return None
        texts = [d.content or "" for d in self.docs]
        return np.array([[answer_dating(qualifier, a, t) for t in texts] for a in self.answers],
                        dtype=float).reshape(len(self.answers), len(texts))

    def use_mentions(self) -> None:
        """E_j := the documents that mention draft j's answer (its own subset when none does)."""
        mentions = self.mentions
        for j in range(len(self.drafts)):
            picked = arb.mention_evidence(mentions[j], self.evidence[j], MENTION_THRESHOLD)
            self.evidence_kind[j] = "mentions" if np.max(mentions[j], initial=0.0) >= MENTION_THRESHOLD else "subset"
            self.evidence[j] = picked

    @property
    def empty(self) -> bool:
        return not self.drafts

    def texts_to_embed(self) -> list[str]:
        """Queries, answers, then the content of documents without a usable embedding."""
        return self.queries + [d.answer for d in self.drafts] + [self.docs[i].content or "" for i in self._unembedded()]

    def _unembedded(self) -> list[int]:
        mask = valid_embedding_mask([d.embedding for d in self.docs])
        return [i for i, ok in enumerate(mask) if not ok]

    def embed(self, vectors: np.ndarray | None) -> None:
        """Fill the answer/document embeddings and, without a scorer, the relevance matrix."""
        nq, na = len(self.queries), len(self.drafts)
        if vectors is None:
            texts = self.queries + [d.answer for d in self.drafts] + [d.content or "" for d in self.docs]
            bow = bag_of_words_matrix(texts)
            q_emb, self.answer_emb, self.doc_emb = bow[:nq], bow[nq : nq + na], bow[nq + na :]
            kind = "lexical"
        else:
            q_emb, self.answer_emb = vectors[:nq], vectors[nq : nq + na]
            missing = self._unembedded()
            dim = vectors.shape[1]
            rows = [
                np.asarray(d.embedding, dtype=float) if i not in missing else None for i, d in enumerate(self.docs)
            ]
            for k, i in enumerate(missing):
                rows[i] = vectors[nq + na + k]
            self.doc_emb = as_matrix([r if r is not None and r.shape[0] == dim else np.zeros(dim) for r in rows])
            kind = "embedding"
        if self.relevance is None:
            self.relevance = cosine_to_relevance(cosine_matrix(q_emb, self.doc_emb)).reshape(nq, len(self.docs))
            self.scorer_kind = kind

    def scores_to_matrix(self, ranked: list[list[Document]]) -> np.ndarray:
        """Relevance matrix from a ranker's outputs, one list per query (scores squashed into [0, 1])."""
        mat = np.zeros((len(self.queries), len(self.docs)))
        position = {doc.id: i for i, doc in enumerate(self.docs)}
        for qi, docs in enumerate(ranked):
            for doc in docs:
                if doc.id in position and doc.score is not None:
                    mat[qi, position[doc.id]] = doc.score
        if mat.size and (mat.min() < 0 or mat.max() > 1):
            mat = 1.0 / (1.0 + np.exp(-mat))
        return mat


def cited_documents(draft: Draft) -> list[Document]:
    """The passages a draft names as key evidence (1-based numbers into what it was shown)."""
    picked = []
    for n in dict.fromkeys(draft.key_evidence):
        if 1 <= n <= len(draft.documents):
            picked.append(draft.documents[n - 1])
    return picked


def as_drafts(
    drafts: list[Draft] | None, answers: list[GeneratedAnswer | ExtractedAnswer] | None
) -> list[Draft]:
    """Drafts from either socket; answers become drafts with their documents as evidence."""
    out = list(drafts or [])
    for i, ans in enumerate(answers or [], start=len(out)):
        if isinstance(ans, ExtractedAnswer):
            documents = [ans.document] if ans.document is not None else []
        else:
            documents = list(ans.documents or [])
        out.append(
            Draft(
                index=i,
                answer=(ans.data or "").strip(),
                rationale=str(ans.meta.get("rationale", "")),
                documents=documents,
                meta={**{k: v for k, v in ans.meta.items() if k != "rationale"}, SOURCE_KEY: "answers"},
            )
        )
    return out


def draft_degradations(usable: list[Draft], failed: list[Draft]) -> list[dict[str, Any]]:
    """Trace entries for failed drafts and for replies that had no "Answer:" label."""
    out = [degradation("drafts", draft.error or "empty answer", index=draft.index) for draft in failed]
    out += [
        degradation("drafts", "reply without an 'Answer:' label; its first line was taken", index=draft.index)
        for draft in usable
        if draft.parsed_by == "first_line"
    ]
    return out


__all__ = ["ArbitrationCase", "as_drafts", "cited_documents", "draft_degradations"]
