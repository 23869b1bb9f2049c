"""The gate's tunables, one home: every `*_auto` cascade's table adds these to its method's.

    >>> GATE_PARAMETERS["gate_threshold"].describe()
    'a number in [-20, 0]'
"""

from __future__ import annotations

from haystack_cfrag.cascade.math import THRESHOLD_RANGE
from haystack_cfrag.common.parameters import Parameter

GATE_NODE = "gate"
"""The gate's node name in every cascade YAML."""

GATE_PARAMETERS = {
    "gate_threshold": Parameter(
        "gate_threshold", GATE_NODE, "threshold", float, low=THRESHOLD_RANGE[0], high=THRESHOLD_RANGE[1],
        per_request=True,
        help="escalate to the method when the reader's support of standard RAG's answer is below this "
             "(nats per token; 0 escalates nearly always, -20 almost never)"),
}
"""The cascade's parameters (a request may set `gate_threshold`)."""

GATE_SWEEP_NAMES = {"gate": "gate_threshold"}
"""Short names in eval systems and sweeps (`cf_rag_auto[gate=-0.3]`, `--sweep cf_rag:gate=-0.1,-0.3`)."""
