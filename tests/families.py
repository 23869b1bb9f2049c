"""Request values for the every-pipeline serving tests: a valid value of a pipeline's own parameter, and another
family's parameter it does not have (tests/unit/architecture/test_families.py,
tests/integration/test_serving_families.py).

    >>> from haystack_cfrag.registry import REGISTRY
    >>> own_value(REGISTRY["cer"].parameters["theta"]), foreign_parameter("cer") in REGISTRY["cer"].parameters
    (0.5, False)
"""

from __future__ import annotations

from typing import Any

from haystack_cfrag.common.parameters import Parameter
from haystack_cfrag.registry import REGISTRY


def own_value(param: Parameter) -> Any:
    """A valid value of `param`: its last choice, true, the middle of its range, or just above its low end."""
    if param.kind is str:
        return param.choices[-1]
    if param.kind is bool:
        return True
    if param.low is not None and param.high is not None:
        middle = (param.low + param.high) / 2
        return int(middle) if param.kind is int else middle
    return int(param.low or 1) + 1 if param.kind is int else 0.5


def foreign_parameter(name: str) -> str:
    """A request parameter of another family that pipeline `name` does not have."""
    own = REGISTRY[name]
    return next(p for e in REGISTRY.values() if e.family != own.family
                for p in e.request_parameters if p not in own.parameters)


__all__ = ["foreign_parameter", "own_value"]
