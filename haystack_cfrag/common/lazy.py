"""Lazy package exports (PEP 562), as Haystack's `LazyImporter` gives its component packages.

    >>> __getattr__ = lazy_exports("json", {"JSONDecoder": "json.decoder"})
    >>> __getattr__("JSONDecoder").__name__
    'JSONDecoder'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """`module`'s `__getattr__`: each name of `homes` imported from its home module on first use, then kept."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            value = getattr(importlib.import_module(homes[name]), name)
            setattr(sys.modules[module], name, value)
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


__all__ = ["lazy_exports"]
