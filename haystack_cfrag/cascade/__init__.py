"""The cascade: standard RAG first, a causal method only where a gate says the evidence conflicts.

`EscalationGate` (components/) reads what standard RAG has already computed — its passages, its
answer, and the reader's support of that answer as its own reply — and says whether to escalate;
`math.py` holds the signals and the rule (pure); `parameters.py` the gate's tunables, one home for
their ranges. The gate knows nothing of the method behind it: each family's `*_auto` YAML routes
on its `escalate` output with Haystack's `ConditionalRouter` (docs/cascade.md).
"""

from haystack_cfrag.cascade.math import GATE_KEY, GateDecision, decide, gate_line, signals

__all__ = ["GATE_KEY", "GateDecision", "decide", "gate_line", "signals"]
