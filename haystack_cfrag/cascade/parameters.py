"""The gate's tunables, one home: every `*_auto` cascade's table adds these to its method's.

    >>> GATE_PARAMETERS["gate_threshold"].describe()
    'a number in [0, 1]'
"""

from __future__ import annotations

from haystack_cfrag.cascade.model import PROBABILITY_RANGE
from haystack_cfrag.common.parameters import Parameter

GATE_NODE = "gate"
"""The gate's node name in every cascade YAML."""

GATE_PARAMETERS = {
    "gate_threshold": Parameter(
        "gate_threshold", GATE_NODE, "threshold", float, low=PROBABILITY_RANGE[0], high=PROBABILITY_RANGE[1],
        per_request=True,
        help="escalate to the method when the fitted gate's P(the method wins here) is at least this "
             "(0 escalates every question, 1 almost none; default: the cascade's operating point)"),
}
"""The cascade's parameters (a request may set `gate_threshold`)."""

GATE_SWEEP_NAMES = {"gate": "gate_threshold"}
"""Short names in eval systems and sweeps (`cf_rag_auto[gate=0.3]`, `--sweep cf_rag:gate=0.1,0.3`)."""
