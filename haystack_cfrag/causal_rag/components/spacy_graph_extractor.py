"""SpacyGraphExtractor: a causal graph without generation (entities, dependencies and causal cue patterns)."""

from __future__ import annotations

import json
import math
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.lazy_imports import LazyImport

from haystack_cfrag import models
from haystack_cfrag.causal_rag.math.cues import extract_sentences
from haystack_cfrag.causal_rag.math.extraction import DEFAULT_MAX_TRIPLES, Extraction, check_max_triples, result
from haystack_cfrag.causal_rag.math.graph import Triple
from haystack_cfrag.causal_rag.math.sentences import Phrase, Sentence, Token
from haystack_cfrag.common.plumbing import InjectedParts
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_bool, check_int

with LazyImport(
    "Run 'pip install haystack-cfrag[graph]' (spaCy and its pinned English model)."
) as spacy_import:
    import spacy

COMPONENT = "SpacyGraphExtractor"
MAX_TEXT_CHARS = 100_000
"""Characters of one text parsed at most (spaCy's own default limit is 1,000,000)."""
VALIDATION_PROMPT = (
    'Passage: {text}\n\nDoes the passage state that "{cause}" causes or leads to "{effect}"? '
    "Answer Yes or No."
)
"""The validation's question; its answer "Yes" is scored once (no generation)."""

logger = logging.getLogger(__name__)


@component
class SpacyGraphExtractor(InjectedParts):
    """
    A graph extractor that generates nothing: spaCy parses each text; entities and noun chunks become nodes,
    the dependency tree gives relations and causal cue patterns mark `CAUSES` edges (`causal_rag.math.cues`).
    The default model is a pinned, hash-checked wheel of spaCy's small English pipeline (any pipeline works).
    With `validator` (a generator the support scorer reads), each causal edge is dropped below
    `min_probability` of "Yes" (counted in the meta's `rejected`).

    ### Usage example
    ```python
    from haystack_cfrag.causal_rag.components.spacy_graph_extractor import SpacyGraphExtractor

    extractor = SpacyGraphExtractor()
    out = extractor.run(texts=["The match was cancelled because of heavy rain."])
    print([(t.head, t.relation, t.tail, t.cue) for t in out["extractions"][0].triples])
    # [('heavy rain', 'CAUSES', 'match', 'because of'), ...]
    ```
    """

    _INJECTED = ("validator",)

    def __init__(
        self,
        *,
        model: str = models.EMBEDDED_SPACY,
        batch_size: int = 64,
        max_triples: int = DEFAULT_MAX_TRIPLES * 4,
        causal_only: bool = False,
        validator: ChatGenerator | None = None,
        min_probability: float = 0.5,
    ) -> None:
        """
        :param model: `embedded:en_core_web_sm` (the pinned wheel), or an installed spaCy pipeline's name
            or folder.
        :param batch_size: texts parsed together (spaCy's `nlp.pipe`), in [1, 4096].
        :param max_triples: relations kept from one text, in [1, 500].
        :param causal_only: keep only the causal edges (and their ends as nodes).
        :param validator: a chat generator that scores each candidate causal edge (None: no validation).
        :param min_probability: the validator's P("Yes") below which a causal edge is dropped, in (0, 1).
        """
        if not isinstance(model, str) or not model.strip():
            raise ValueError(
                f"{COMPONENT}: 'model' must be a spaCy pipeline name or folder, got {model!r:.60}."
            )
        check_int("batch_size", batch_size, 1, 4096)
        check_max_triples(max_triples)
        check_bool("causal_only", causal_only, component=COMPONENT)
        if (
            isinstance(min_probability, bool)
            or not isinstance(min_probability, int | float)
            or not 0 < min_probability < 1
        ):
            raise ValueError(
                f"{COMPONENT}: 'min_probability' must be a number in (0, 1), got {min_probability!r}."
            )
        self.model = model
        self.batch_size = batch_size
        self.max_triples = max_triples
        self.causal_only = causal_only
        self.validator = validator
        self.min_probability = float(min_probability)
        self._nlp: Any = None
        self._backend: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected validator."""
        return default_to_dict(self, model=self.model, batch_size=self.batch_size,
                               max_triples=self.max_triples, causal_only=self.causal_only,
                               validator=serialize_component(self.validator),
                               min_probability=self.min_probability)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpacyGraphExtractor:
        """Deserialise, including the injected validator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    def fingerprint(self) -> str:
        """The model (with its version), the patterns' settings and the validation: part of the cache key."""
        spec = models.SPACY_MODELS.get(self.model)
        version = spec.requirement if spec is not None else ""  # the pinned wheel; a user's model: its name
        validator = None
        if self.validator is not None:
            validator = [
                type(self.validator).__name__,
                getattr(self.validator, "model", None),
                self.min_probability,
            ]
        return json.dumps(
            ["spacy", self.model, version, self.max_triples, self.causal_only, validator, _PATTERNS_VERSION],
            default=str,
        )

    def warm_up(self) -> None:
        """Load the spaCy pipeline (the embedded one's files checked against their pinned hash) and the
        validator."""
        if self._nlp is None:
            spacy_import.check()
            path = models.SPACY_MODELS[self.model].path() if self.model in models.SPACY_MODELS else self.model
            self._nlp = spacy.load(str(path))
            self._nlp.max_length = max(self._nlp.max_length, MAX_TEXT_CHARS + 1)
        if self.validator is not None and self._backend is None:
            from haystack_cfrag.support.backends import backend_for  # noqa: PLC0415

            InjectedParts.warm_up(self)
            self._backend = backend_for(self.validator)
            self._backend.warm_up()

    @component.output_types(extractions=list[Extraction], meta=list[dict[str, Any]])
    def run(self, texts: list[str]) -> dict[str, Any]:
        """
        :param texts: passage texts (or chunks); each is cut to MAX_TEXT_CHARS characters.
        :returns: `extractions` (one per text) and `meta` (one per text: {"rejected": causal edges the
            validator dropped, "sentences": sentences parsed}).
        """
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"{COMPONENT}: 'texts' must be a list of strings.")
        self.warm_up()
        extractions: list[Extraction] = []
        meta: list[dict[str, Any]] = []
        for text, doc in zip(texts,
                             self._nlp.pipe([t[:MAX_TEXT_CHARS] for t in texts], batch_size=self.batch_size),
                             strict=True):
            sentences = [_sentence(sent) for sent in doc.sents]
            found = extract_sentences(sentences, max_triples=self.max_triples)
            triples = list(found.causal if self.causal_only else found.triples)
            rejected = 0
            if self._backend is not None:
                triples, rejected = self._validated(text, triples)
            nodes = found.nodes
            if self.causal_only:
                ends = {n for t in triples for n in (t.head, t.tail)}
                nodes = tuple(n for n in nodes if n[0] in ends)
            extractions.append(Extraction(nodes=nodes, triples=tuple(triples)))
            meta.append({"rejected": rejected, "sentences": len(sentences)})
        return result(extractions, meta)

    @component.output_types(extractions=list[Extraction], meta=list[dict[str, Any]])
    async def run_async(self, texts: list[str]) -> dict[str, Any]:
        """Async twin of `run` (parsing is CPU work: it runs in the caller's thread)."""
        return self.run(texts=texts)

    def _validated(self, text: str, triples: list[Triple]) -> tuple[list[Triple], int]:
        kept, rejected = [], 0
        for t in triples:
            if not t.cue:
                kept.append(t)
                continue
            prompt = VALIDATION_PROMPT.format(text=text[:4000], cause=t.head, effect=t.tail)
            try:
                scored = self._backend.answer_logprobs(prompt, "Yes")
                probability = math.exp(sum(scored.token_logprobs))
            except Exception as exc:  # noqa: BLE001  (a failed scoring keeps the edge, with a warning)
                logger.warning("{component}: validation failed, edge kept: {error}", component=COMPONENT,
                               error=repr(exc)[:200])
                kept.append(t)
                continue
            if probability >= self.min_probability:
                kept.append(t)
            else:
                rejected += 1
        return kept, rejected


_PATTERNS_VERSION = 1
"""Bumped when the pattern logic changes what it extracts (cached extractions then miss)."""


def _sentence(sent: Any) -> Sentence:
    """A spaCy sentence span in the parser-neutral form the patterns read."""
    start = sent.start
    tokens = tuple(Token(t.text, t.lemma_, t.pos_, t.tag_, t.dep_, t.head.i - start) for t in sent)
    phrases = (
        [Phrase(c.start - start, c.end - start) for c in sent.noun_chunks]
        if sent.doc.has_annotation("DEP")
        else []
    )
    phrases += [Phrase(e.start - start, e.end - start, e.label_) for e in sent.ents]
    return Sentence(tokens, tuple(phrases))
