"""The cascade: standard RAG first, a causal method only where a fitted gate says the method may win.

`EscalationGate` reads what standard RAG computed and says whether to escalate (pure parts: `math`, `features`,
`model`, `fit`; tunables: `parameters`); each `*_auto` YAML routes on `escalate` with a `ConditionalRouter`.
"""

from haystack_cfrag.cascade.math import GATE_KEY, GateDecision, decide, gate_line, signals
from haystack_cfrag.cascade.model import GateModel

__all__ = ["GATE_KEY", "GateDecision", "GateModel", "decide", "gate_line", "signals"]
