"""CER's Haystack components."""

from haystack_cfrag.cer.components.evidence_set_selector import EvidenceSetSelector, SupportScorer

__all__ = ["EvidenceSetSelector", "SupportScorer"]
