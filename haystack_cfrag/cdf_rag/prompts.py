"""CDF-RAG's `str.format` prompts: the refinement actions (App. A.4), the reader's choice of action, the
stricter-grounding regeneration (§2.4) and the knowledge rewrite (§2.5); replaceable by key over the `*_FIELDS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from haystack_cfrag.common.prompting import (  # noqa: F401  (re-exported)
    check_prompt_templates,
    check_template,
    render_evidence,
)

CHOOSE_PROMPT = """Choose how to rewrite a question before searching documents for its answer.
- expand: the question is vague or underspecified; add the missing entities, context or scope.
- simplify: the question is long, compound or indirect; restate it as one short direct question.
- decompose: the question needs several facts (it compares two things, or asks about something
  reached through another thing); split it into simpler sub-questions.

Question: {query}
Reply with one word: expand, simplify or decompose.
Action:"""

PAPER_EXPAND_PROMPT = """Your task is to expand a vague or underspecified question into a more detailed version that
makes its intent clear and specific: mention the key entities, mechanisms or domain it is about.
Use a single line. Keep the core topic and the original intent.

Original Question: Why is stress a public health concern?
Expanded Query: Why is chronic stress considered a public health concern in relation to socioeconomic status, mental health, and long-term disease risk?

Original Question: {query}
Expanded Query:"""
"""The paper's expansion prompt (App. A.4) as a completion (small readers repeat its example)."""

EXPAND_PROMPT = """Rewrite the question at the end into a more detailed, specific version of the same question: name
the key entities and the domain it is about. Keep its intent, so that it has the same answer. Reply
with the rewritten question only, on one line.

For example, "Why is stress a public health concern?" can be rewritten as "Why is chronic stress
considered a public health concern in relation to socioeconomic status, mental health, and long-term
disease risk?"

Question: {query}
Rewritten question:"""
"""The default expansion: the paper's instruction with its example inside it (not one to continue)."""

SIMPLIFY_PROMPT = """Your task is to simplify a complex or ambiguous question into a clearer, more direct version
that preserves the original intent. Reply with one concise, self-contained question on one line;
do not write several sub-questions.

Original Question: Why does diabetes cause kidney damage in elderly patients, and what factors contribute to this progression over time?
Simplified Query: How does diabetes cause kidney damage in elderly patients?

Original Question: {query}
Simplified Query:"""

DECOMPOSE_PROMPT = """Your task is to decompose a complex, multihop question into 2-4 simpler sub-questions that can
each be answered on their own and together answer the original question, in logical order.
Write one sub-question per line, without numbers or explanations.

Multihop Question: Were the author of Emma and the author of Jane Eyre born in the same country?
Decomposed Queries:
Who wrote the novel Emma?
Who wrote the novel Jane Eyre?
In which countries were these two authors born?

Multihop Question: {query}
Decomposed Queries:"""

REFINE_FIELDS = ("query",)
"""The placeholders of the choice prompt and of each action's prompt."""

REGENERATE_PROMPT = """Answer the question using ONLY the evidence below. Do not use anything you know that the
evidence does not say. The causal relations listed were found in the evidence: your answer must
not reverse or deny any of them. If the evidence does not give the answer, say "unknown".

Evidence:
{evidence}

Causal relations (cause -> effect):
{causal_edges}

Question: {query}

Reply in this format:
Answer: <the short answer only>"""
"""Fallback generation under stricter grounding (paper §2.4), used when S_causal < τ."""

REGENERATE_FIELDS = ("query", "evidence", "causal_edges")

REWRITE_PROMPT = """The answer below was checked against the evidence, statement by statement, and some of its
statements are not supported by it. Rewrite the answer so that every statement is supported by
the evidence: keep what the evidence supports, correct or remove the rest. Use only the evidence.

Evidence:
{evidence}

Question: {query}
Answer to rewrite: {answer}
Unsupported statements:
{unsupported}

Reply in this format:
Answer: <the rewritten short answer only>"""
"""Knowledge rewriting (paper §2.5), used when S_hall > δ."""

REWRITE_FIELDS = ("query", "evidence", "answer", "unsupported")

REANSWER_PROMPT = """Answer the question using the documents below.

Documents:
{evidence}

Question: {query}

An earlier answer, "{answer}", was checked against these documents, and these of its statements are
not supported by them:
{unsupported}
Answer the question again from the documents. Give the earlier answer again only if a document
states it as the answer to this question.

Reply in this format:
Answer: <the short answer only>"""
"""The rewrite as a fresh answer, told which was flagged (`rewrite_mode="reanswer"`; REWRITE_PROMPT's fields)."""

REWRITE_PROMPTS = {"correct": REWRITE_PROMPT, "reanswer": REANSWER_PROMPT}
"""The hallucination checker's rewrite prompt by `rewrite_mode`."""

REFINEMENT_PROMPTS = {"choose": CHOOSE_PROMPT, "expand": EXPAND_PROMPT, "simplify": SIMPLIFY_PROMPT,
                      "decompose": DECOMPOSE_PROMPT}
"""The query refiner's prompts by key (`QueryRefiner(prompt_templates=…)` overrides any of them)."""
REFINEMENT_FIELDS = {key: REFINE_FIELDS for key in REFINEMENT_PROMPTS}
"""The placeholders each refinement prompt must use (all of them: the question)."""

NO_EDGES_TEXT = "(no causal relations were retrieved)"


def render_edges(edges: Sequence[tuple[str, str]]) -> str:
    """One "- cause -> effect" line per edge.

    >>> print(render_edges([("heavy rain", "flood")]))
    - heavy rain -> flood
    >>> render_edges([])
    '(no causal relations were retrieved)'
    """
    if not edges:
        return NO_EDGES_TEXT
    return "\n".join(f"- {cause} -> {effect}" for cause, effect in edges)


def render_claims(claims: Sequence[str]) -> str:
    """One "- claim" line per claim ("(none)" when there is none)."""
    return "\n".join(f"- {c}" for c in claims) if claims else "(none)"


__all__ = ["CHOOSE_PROMPT", "DECOMPOSE_PROMPT", "EXPAND_PROMPT", "NO_EDGES_TEXT", "PAPER_EXPAND_PROMPT",
           "REFINEMENT_PROMPTS", "REFINE_FIELDS", "REFINEMENT_FIELDS", "REGENERATE_FIELDS",
           "REGENERATE_PROMPT", "REANSWER_PROMPT", "REWRITE_FIELDS", "REWRITE_PROMPT", "REWRITE_PROMPTS",
           "SIMPLIFY_PROMPT", "check_prompt_templates", "render_claims", "render_edges"]
