"""CER's Haystack components: `EvidenceSetSelector` (and `SetScoring`, the F̂ its search calls)."""

from haystack_cfrag.cer.components.evidence_set_selector import EvidenceSetSelector, SupportScorer

__all__ = ["EvidenceSetSelector", "SupportScorer"]
