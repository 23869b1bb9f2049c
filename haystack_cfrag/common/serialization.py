"""Serialising the components a component or a pipeline holds (generators, retrievers, embedders).

Haystack serialises pipeline nodes; a component that takes other components as init
parameters (our components, `Runtime`, the LLM cache, the deployable YAML) serialises them
the same way, and its `from_dict` reads them back through Haystack's import allowlist."""

from __future__ import annotations

from typing import Any

from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name


def serialize_component(obj: Any) -> dict[str, Any] | None:
    """Serialise an injected component (or None) the way Haystack serialises pipeline nodes."""
    if obj is None:
        return None
    return component_to_dict(obj, type(obj).__name__)


def deserialize_component(data: dict[str, Any] | None) -> Any:
    """Inverse of `serialize_component`; class imports go through Haystack's allowlist."""
    if data is None:
        return None
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"Expected a serialised component with a 'type', got {data!r}.")
    cls = import_class_by_name(data["type"])
    return component_from_dict(cls=cls, data=data, name=cls.__name__)


def deserialize_init_components(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Copy of `data` whose init_parameters[key] for each key are deserialised components."""
    data = {**data, "init_parameters": dict(data.get("init_parameters", {}))}
    for key in keys:
        data["init_parameters"][key] = deserialize_component(data["init_parameters"].get(key))
    return data


__all__ = ["deserialize_component", "deserialize_init_components", "serialize_component"]
