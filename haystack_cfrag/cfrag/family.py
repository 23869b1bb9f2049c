"""CF-RAG as the layers above see it: its table, pipelines, trace reading, CLI options, sweeps and ablations.

    >>> FAMILY.request_parameters
    ('n_counterfactuals', 'n_clusters', 'n_subsets', 'causal_weight')
    >>> FAMILY.commands.options["-N"], FAMILY.sweeps.names["lambda"]
    ('n_counterfactuals', 'causal_weight')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haystack_cfrag.cfrag import trace as view
from haystack_cfrag.cfrag.parameters import PARAMETERS, REQUEST_PARAMETERS
from haystack_cfrag.cfrag.wiring import DUEL
from haystack_cfrag.common.errors import squash
from haystack_cfrag.family import Cascade, Commands, Entry, Family, Reading, Sweeps

API = (
    "Answer a question with Counterfactual RAG: robust to related but non-decisive evidence.\n\n"
    "Writes counterfactual questions, retrieves evidence for all of them, drafts one answer per\n"
    "evidence stratum and picks the draft whose evidence is coherent and causally decisive."
)


def read(trace: Any, outputs: Mapping[str, Any], answer: str, values: Mapping[str, Any]) -> Reading:
    """The ranked drafts as alternatives; failed drafts and a run without counterfactuals as warnings.

    N = 0 (asked for, or the pipeline file's own, as in `cf_rag_fast`) is an ablation that makes
    no expander call: it is not reported as degraded.

    >>> read({"drafts": [], "counterfactuals": [], "decision": "no_drafts"}, {}, "Bale", {"n_counterfactuals": 0})
    Reading(warnings=[], alternatives=[], failure=None)
    >>> read({"drafts": [], "counterfactuals": []}, {}, "Bale", {"n_counterfactuals": 2}).warnings
    ['no counterfactual was generated: arbitration ran on the original question only']
    """
    alternatives = []
    for ans in (outputs.get(DUEL) or {}).get("answers") or []:  # the duel gives the final answers
        scores = ans.meta.get("cfrag_scores") or {}
        alternatives.append({
            "answer": ans.data,
            "psi": scores.get("psi"),
            "draft": ans.meta.get("cfrag_draft_index"),
            "decision": ans.meta.get("cfrag_decision"),
            "rationale": ans.meta.get("rationale"),
            "documents": [d.id for d in ans.documents or []],
        })
    if not answer and trace and trace.get("decision") == "all_drafts_failed":
        # CF-RAG degrades call by call; when every call failed there is no answer to degrade to
        reasons = [d.get("error") or d.get("reason") for d in trace.get("degradations") or []]
        reason = next((r for r in reasons if r), "every LLM call failed")
        return Reading(failure=f"every LLM call failed ({squash(str(reason))})")
    warnings = []
    if not answer:
        warnings.append("no answer: every draft failed or no evidence was found")
    if trace:
        failed = view.failed_drafts(trace)
        if failed:
            warnings.append(f"{len(failed)} of {len(trace.get('drafts', []))} drafts failed")
        if values.get("n_counterfactuals") != 0 and not trace.get("counterfactuals"):
            warnings.append("no counterfactual was generated: arbitration ran on the original question only")
    return Reading(warnings=warnings, alternatives=alternatives)


def bench(counts: tuple[int, ...], draft_seconds: float | None, llm: str) -> str:
    """`cfrag bench`: the non-generative stages' times as shares of one draft (`cfrag.bench`)."""
    from haystack_cfrag.cfrag.bench import bench as run  # noqa: PLC0415  (numpy, the components)

    return run(counts, draft_seconds, llm)


FAMILY = Family(
    name="cf_rag",
    parameters=PARAMETERS,
    request_parameters=REQUEST_PARAMETERS,
    pipelines=(
        Entry("cf_rag", "the default CF-RAG: standard RAG's answer as the baseline, counterfactual challengers, "
              "a duel", injection=True, api_description=API, default_system=True),
        Entry("cf_rag_fast", "the same graph with fewer calls (N=0, M=1)", injection=True,
              api_description=API, default_system=True),
        Entry("cf_rag_paper", "the paper's configuration (docs/method.md, 'Two configurations')",
              default_system=True),
        Entry("cf_rag_auto", "the cascade: standard RAG, then CF-RAG only where the escalation gate says the "
              "evidence may conflict (docs/cascade.md)", api_description=API, cascade=Cascade(
                  # the period rule's escalation drafts the period's passages alone (pipelines/cf_rag_auto.yml)
                  routing={"strata_router": "stratifier.qualifier"})),
    ),
    read=read,
    record=view.record,
    commands=Commands(view=view, bench=bench, options={
        "-N": "n_counterfactuals", "-K": "n_clusters", "-M": "n_subsets", "--lambda": "causal_weight",
        "--seed": "random_state"}),
    sweeps=Sweeps(
        names={"lambda": "causal_weight", "N": "n_counterfactuals", "K": "n_clusters", "M": "n_subsets"},
        defaults=("cf_rag_n3", "cf_rag_k1"),
        ablations={  # cf_rag asks N = 0 since 2026-11-29: cf_rag_n0 and cf_rag_lambda0 answer as it does
            "cf_rag_n3": ("cf_rag", {"n_counterfactuals": 3}),
            "cf_rag_lambda0": ("cf_rag", {"causal_weight": 0.0}),
            "cf_rag_n0": ("cf_rag", {"n_counterfactuals": 0}),
            "cf_rag_k1": ("cf_rag", {"n_clusters": 1}),
            "cf_rag_no_override": ("cf_rag", {"override_margin": 1.0, "duel": False}),
        }),
    components=("haystack_cfrag.cfrag.",),
)

__all__ = ["FAMILY"]
