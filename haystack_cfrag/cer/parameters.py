"""The tunable parameters of `cer`: the selector's thresholds and its reading of p_entail (ranges from
`cer.math.settings.RANGES`); none is a run-time socket: each value builds the pipeline once.

    >>> PARAMETERS["theta"].describe()
    'a number in (0, 1]'
"""

from __future__ import annotations

from haystack_cfrag.cer.components.evidence_set_selector import ENTAILMENT
from haystack_cfrag.cer.math.settings import OPEN_BELOW, RANGES
from haystack_cfrag.common.parameters import Parameter


def _span(name: str) -> dict[str, float | bool]:
    low, high = RANGES[name]
    return {"low": low, "high": high, "low_open": name in OPEN_BELOW}


PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("theta", "selector", "theta", float, **_span("theta"), help="F̂ a sufficient set reaches"),
        Parameter("epsilon", "selector", "epsilon", float, **_span("epsilon"), help="pruning margin above θ"),
        Parameter("delta", "selector", "delta", float, **_span("delta"), help="gain under which a round counts "
                  "towards the two-round stop"),
        Parameter("mu", "selector", "mu", float, **_span("mu"), help="length cost per 1000 words of a passage"),
        Parameter("entailment", "selector", "entailment", str, choices=ENTAILMENT,
                  help="p_entail from the reader's support, or from its evidence-erased PMI"),
        Parameter("max_rounds", "selector", "max_rounds", int, low=1,
                  help="the search's forward rounds at most; short of θ then, the whole pool by "
                       "that round's scores"),
    )
}

__all__ = ["PARAMETERS"]
