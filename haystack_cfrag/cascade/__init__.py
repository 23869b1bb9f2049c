"""The cascade: standard RAG first, a causal method only where a fitted gate says the method may win.

`EscalationGate` (components/) reads what standard RAG has already computed — its passages, its
answer, the reader's support of that answer as its own reply and its logits' margin — and says whether
to escalate; `math.py` holds the reading and the decision, `features.py` what a model reads of it,
`model.py` the fitted model as plain numbers, `fit.py` its fit on measured outcomes (all pure),
`parameters.py` the gate's tunables, one home for their ranges. The gate knows nothing of the method
behind it: each family's `*_auto` YAML routes on its `escalate` output with Haystack's
`ConditionalRouter` (docs/cascade.md).
"""

from haystack_cfrag.cascade.math import GATE_KEY, GateDecision, decide, gate_line, signals
from haystack_cfrag.cascade.model import GateModel

__all__ = ["GATE_KEY", "GateDecision", "GateModel", "decide", "gate_line", "signals"]
