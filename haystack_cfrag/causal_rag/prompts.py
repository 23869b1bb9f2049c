"""CausalRAG's prompts: extraction (`EXTRACTION_PROMPT`, the official code's LLMGraphTransformer prompt-based
mode in one message), the official causal-paths report and summary (`CAUSAL_PATHS_PROMPT`, `CAUSAL_SUMMARY_PROMPT`,
App. A), both in one call (`ONE_CALL_SUMMARY_PROMPT`, ours) and the reader's Jinja answer templates.

The `str.format` templates may be replaced by a component's `prompt_template(s)` over the same placeholders
(the `*_FIELDS`), checked at init."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from haystack_cfrag.common.prompting import (
    DOCUMENTS_BLOCK,
    SHORT_ANSWER_BLOCK,
    STANDARD_RAG_TEMPLATE,
    check_prompt_templates,
    check_template,
)

EXTRACTION_PROMPT = """# Knowledge Graph Instructions
## 1. Overview
You are a top-tier algorithm designed for extracting information in structured formats to build a knowledge graph.
Try to capture as much information from the text as possible without sacrificing accuracy. Do not add any information that is not explicitly mentioned in the text.
- **Nodes** represent entities and concepts.
- The aim is to achieve simplicity and clarity in the knowledge graph, making it accessible for a vast audience.
## 2. Labeling Nodes
- **Consistency**: Ensure you use basic or elementary types for node labels. For example, when you identify an entity representing a person, always label it as **"Person"**. Avoid using more specific terms like "Mathematician" or "Scientist".
- **Node IDs**: Never utilize integers as node IDs. Node IDs should be names or human-readable identifiers found in the text.
- **Relationships** represent connections between entities or concepts. Ensure consistency and generality in relationship types when constructing knowledge graphs. Instead of using specific and momentary types such as "BECAME_PROFESSOR", use more general and timeless relationship types like "PROFESSOR". Make sure to use general and timeless relationship types!
## 3. Coreference Resolution
- **Maintain Entity Consistency**: When extracting entities, it's vital to ensure consistency. If an entity, such as "John Doe", is mentioned multiple times in the text but is referred to by different names or pronouns (e.g., "Joe", "he"), always use the most complete identifier for that entity throughout the knowledge graph. In this example, use "John Doe" as the entity ID.
## 4. Output
You must generate the output in a JSON format containing a list with JSON objects. Each object should have the keys: "head", "head_type", "relation", "tail", and "tail_type". The "head" key must contain the text of the extracted entity; the "tail" key the text of the entity that is the tail of the relation; "head_type" and "tail_type" their types; "relation" the type of relation between the "head" and the "tail".
IMPORTANT NOTES:
- Don't add any explanation and text.

Below are examples of text and their extracted entities and relationships.
Text: Adam is a software engineer in Microsoft since 2009, and last year he got an award as the Best Talent
[{{"head": "Adam", "head_type": "Person", "relation": "WORKS_FOR", "tail": "Microsoft", "tail_type": "Company"}}, {{"head": "Adam", "head_type": "Person", "relation": "HAS_AWARD", "tail": "Best Talent", "tail_type": "Award"}}]
Text: Microsoft is a tech company that provide several products such as Microsoft Word
[{{"head": "Microsoft Word", "head_type": "Product", "relation": "PRODUCED_BY", "tail": "Microsoft", "tail_type": "Company"}}]

For the following text, extract entities and relations as in the provided example.
Text: {text}"""
"""Node and relation extraction for one chunk (LangChain's LLMGraphTransformer, prompt-based mode)."""

EXTRACTION_FIELDS = ("text",)

CAUSAL_PATHS_PROMPT = """---Role---
You are a smart assistant that helps a human analyst to perform **causal discovery** and **impact assessment**. Your task is to analyze a **Network Data** and generate a professional report summarizing the causal effect and key insights.

--- Goal ---
Write a **structured, professional causality analysis report** that:
- **Identifies** key entities and their roles in the causality
- **Explains** the observed causal relationships and their potential impact
- **Assesses** the strength and credibility of causal claims based on available data

---Network Data---
{graph_data}

--- Report Format ---
**1. Introduction**
Briefly introduce the context and purpose of this causal analysis.
**2. Key Entities and Their Roles**
Provide an overview of the most important entities in the causal network and their relevance.
**3. Major Causal Pathways**
Describe the primary causal chains observed, emphasizing key cause-and-effect relationships.
**4. Confidence and Evidence Strength**
Assess the reliability of the causal claims, mentioning supporting data where available.
**5. Implications and Recommendations**
Discuss the potential impact of these causal relationships and suggest possible actions.

Write a **structured, analytical, and professional** report."""
"""The causal-discovery report over the retrieved subgraph (official `CAUSAL_DISCOVERY_PROMPT`)."""

CAUSAL_PATHS_FIELDS = ("graph_data",)

CAUSAL_SUMMARY_PROMPT = """---Role---
You are a helpful assistant responding to questions about data in the tables provided. You are also specializing in **causal reasoning and impact assessment**. Your task is to generate a structured response based on an extracted causal summary.

---Goal---
Generate a response of the target length and format that responds to the user's question, summarize all the Causal Summary from multiple analysts who focused on different parts of the dataset.
If you don't know the answer or if the provided reports do not contain sufficient information to provide an answer, just say so. Do not make anything up.
The final response should remove all irrelevant information from the analysts' reports and merge the cleaned information into a comprehensive answer that provides explanations of all the key points and implications appropriate for the response length and format.
The response shall preserve the original meaning and use of modal verbs such as "shall", "may" or "will".
The response should also preserve all the data references previously included in the analysts' reports, but do not mention the roles of multiple analysts in the analysis process.

---Causal Summary---
{causal_summary}

---Target Response Length and Format---
{response_type}

---User Query---
{query}
Add sections and commentary to the response as appropriate for the length and format. Style the response in markdown."""
"""The causal summary (official `CAUSAL_SUMMARY_PROMPT`); its reply is the official code's answer."""

CAUSAL_SUMMARY_FIELDS = ("causal_summary", "response_type", "query")

DEFAULT_RESPONSE_TYPE = "Multiple Paragraphs"
"""The official code's target length and format of the summary."""

ONE_CALL_SUMMARY_PROMPT = """---Role---
You help answer a question from a causal graph extracted from documents.

---Network Data---
{graph_data}

---User Query---
{query}

---Goal---
Using the Network Data only, write:
Causal paths: the cause -> effect paths that bear on the query, at most three, one a line, with entity names exactly as written.
Summary: one sentence on what these paths say about the query, or "No path bears on the query." if none does."""
"""The causal paths and the summary in one call (`summary_calls=1`, the default; not the official code's)."""

ONE_CALL_SUMMARY_FIELDS = ("graph_data", "query")

SUMMARIZER_PROMPTS = {"paths": CAUSAL_PATHS_PROMPT, "summary": CAUSAL_SUMMARY_PROMPT,
                      "one_call": ONE_CALL_SUMMARY_PROMPT}
"""The summarizer's prompts by key (`CausalSummarizer(prompt_templates=…)` overrides any of them)."""
SUMMARIZER_FIELDS = {"paths": CAUSAL_PATHS_FIELDS, "summary": CAUSAL_SUMMARY_FIELDS,
                     "one_call": ONE_CALL_SUMMARY_FIELDS}

CAUSAL_RAG_ANSWER_TEMPLATE = STANDARD_RAG_TEMPLATE.replace(DOCUMENTS_BLOCK, DOCUMENTS_BLOCK + """{% if summary %}
Notes (a causal summary of the documents, for context only):
{{ summary }}
{% endif %}""")
"""The reader's prompt (Jinja: `summary`, `documents`, `query`): standard RAG's with the summary after the
passages as notes (no summary: standard RAG's, byte for byte)."""

SUMMARY_FIRST_ANSWER_TEMPLATE = """Answer the question using the causal summary and the documents below.

Causal summary:
{{ summary }}

""" + DOCUMENTS_BLOCK + "\n" + SHORT_ANSWER_BLOCK
"""The reader's prompt with the summary before the passages (the archived runs' `summary_calls=2`)."""

NO_RELATIONS_TEXT = "- (no relationships retrieved)"


def render_network_data(nodes: Sequence[tuple[str, str]], edges: Sequence[Mapping[str, Any]],
                        max_chars: int | None = None,
                        passages: Sequence[str] = ()) -> str:
    """The subgraph as the official code's "Network Data": (node, type) entities, then cause → effect lines, then
    the optional numbered `passages`; cut to `max_chars`.

    >>> print(render_network_data([("Rain", "Weather"), ("Flood", "")],
    ...                           [{"source": "Rain", "target": "Flood", "relation": "CAUSES"}]))
    **Entities:**
    - Rain (type: Weather)
    - Flood (type: entity)
    <BLANKLINE>
    **Causal Relationships:**
    - Rain (a Weather) --[CAUSES]--> Flood (a entity)
    """
    types = {}
    for node_id, node_type in nodes:
        types.setdefault(node_id, node_type or "entity")
    lines = ["**Entities:**"]
    lines += [f"- {node_id} (type: {node_type})" for node_id, node_type in types.items()]
    lines += ["", "**Causal Relationships:**"]
    seen: set[str] = set()
    for edge in edges:
        src, tgt = str(edge.get("source", "")), str(edge.get("target", ""))
        desc = (f"{src} (a {types.get(src, 'entity')}) --[{edge.get('relation', '')}]--> "
                f"{tgt} (a {types.get(tgt, 'entity')})")
        if desc not in seen:
            seen.add(desc)
            lines.append(f"- {desc}")
    if not seen:
        lines.append(NO_RELATIONS_TEXT)
    if passages:
        lines += ["", "**Source Passages:**"]
        lines += [f"[{i}] {p}" for i, p in enumerate(passages, start=1)]
    text = "\n".join(lines)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n- …"
    return text


__all__ = ["CAUSAL_PATHS_FIELDS", "CAUSAL_PATHS_PROMPT", "CAUSAL_RAG_ANSWER_TEMPLATE",
           "CAUSAL_SUMMARY_FIELDS", "CAUSAL_SUMMARY_PROMPT", "DEFAULT_RESPONSE_TYPE", "EXTRACTION_FIELDS",
           "EXTRACTION_PROMPT", "ONE_CALL_SUMMARY_FIELDS", "ONE_CALL_SUMMARY_PROMPT", "SUMMARIZER_FIELDS",
           "SUMMARIZER_PROMPTS", "SUMMARY_FIRST_ANSWER_TEMPLATE", "check_prompt_templates", "check_template",
           "render_network_data"]
