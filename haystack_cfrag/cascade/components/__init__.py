"""The cascade's Haystack component: the escalation gate."""

from haystack_cfrag.cascade.components.escalation_gate import EscalationGate

__all__ = ["EscalationGate"]
