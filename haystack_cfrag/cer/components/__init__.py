"""CER's Haystack components.

- `evidence_set_selector`: the `EvidenceSetSelector` component;
- `set_scoring`: `SetScoring`, F̂ of a set of passages read from the support scorer (what the search calls).
"""

from haystack_cfrag.cer.components.evidence_set_selector import EvidenceSetSelector, SupportScorer

__all__ = ["EvidenceSetSelector", "SupportScorer"]
