"""CF-RAG's `str.format` prompt templates (paper App. E/F, G and J); a component's `prompt_template` may replace
one over the same placeholders (`*_FIELDS`)."""

from __future__ import annotations

from haystack_cfrag.common.prompting import (  # noqa: F401  (shared: re-exported for the family)
    NO_EVIDENCE_TEXT,
    SHORT_DRAFT_PROMPT,
    STANDARD_RAG_TEMPLATE,
    check_template,
    render_evidence,
    render_plain_evidence,
)

COUNTERFACTUAL_PROMPT = """You write counterfactual questions for retrieval (CF-RAG).
A counterfactual question stays on the topic of the original question but asks for
something whose answer is DIFFERENT. Transformation types:
- role: another role or relation of the same thing (the villain instead of the hero)
- temporal: another time (the previous book, an earlier year)
- entity: a related entity instead of the main one (a sequel, a sibling company)
- categorical: another category of answer (the director instead of an actor)
- scope: a wider or narrower scope (the whole series instead of one book)

Example. Original question: Who wrote the novel Emma?
{{"original_answer_hint": "Jane Austen",
  "counterfactuals": [
    {{"question": "Who is the heroine of the novel Emma?", "type": "role", "answer_hint": "Emma Woodhouse"}},
    {{"question": "Who published the novel Emma in 1815?", "type": "categorical", "answer_hint": "John Murray"}},
    {{"question": "Who wrote the novel Jane Eyre?", "type": "entity", "answer_hint": "Charlotte Bronte"}}]}}

Original question: {query}

Give {n_candidates} counterfactual questions in the same JSON form. Each answer_hint is your
best guess of the short answer: a name, a date or a few words, not a sentence.
Reply with the JSON only."""

COUNTERFACTUAL_LINES_PROMPT = """Write {n_candidates} questions on the same topic as the original question, each asking
for something with a DIFFERENT answer: another role, another time, a related entity, another
category of answer or another scope.

Original question: Who wrote the novel Emma?
Who is the heroine of the novel Emma?
Who published the novel Emma?
Who wrote the novel Jane Eyre?

Original question: {query}
"""

DRAFT_PROMPT = """Answer the question using only the evidence below. Some evidence may be related
to the topic without answering the question: prefer the passages that answer exactly what is
asked.

Evidence:
{evidence}

Question: {query}

Reply in this format:
Answer: <the short answer only>
Rationale: <one or two sentences on why>
Key evidence: <the numbers of the passages you used, e.g. [1], [3]>
Conflicts: <any evidence that disagrees, or "none">"""



SYNTHESIS_PROMPT = """Several drafts answered the same question from different evidence and
disagree. Each draft comes with a score: higher means its evidence supports this question
more than related questions (causal discrimination) and it is coherent with its evidence.

Question: {query}

Drafts (best score first):
{drafts}

Give the single best final answer. Prefer the draft whose evidence answers exactly this
question. Reply in this format:
Answer: <the short answer only>
Rationale: <one sentence>"""

def render_drafts(drafts: list[tuple[str, str, float]]) -> str:
    """Drafts as (answer, rationale, Ψ) lines for the synthesis prompt."""
    return "\n".join(
        f"{i}. Answer: {answer} | score {score:.3f} | rationale: {rationale}"
        for i, (answer, rationale, score) in enumerate(drafts, start=1)
    )


# ---------------------------------------------------------------- overridable templates
COUNTERFACTUAL_FIELDS = ("query", "n_candidates")
"""Placeholders of the expander's prompt (both styles): the question and how many candidates to ask for."""

DRAFT_FIELDS = ("query", "evidence")
"""Placeholders of a draft prompt and of the ranker's duel prompt: the question and the numbered passages."""

SYNTHESIS_FIELDS = ("query", "drafts")
"""Placeholders of the ranker's synthesis prompt: the question and the scored drafts (`render_drafts`)."""


