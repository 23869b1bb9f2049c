"""Loading the YAML pipelines safely, with optional component overrides: every class a file names is checked
against an allowlist before anything is imported (and passed to Haystack 3's `allowed_modules`), alike on 2.x.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline
from haystack.core.serialization import DeserializationCallbacks

from haystack_cfrag.common.errors import one_line
from haystack_cfrag.common.serialization import serialize_component
from haystack_cfrag.models import resolve_embedded_models
from haystack_cfrag.pipelines import pipeline_path, read_pipeline, renamed_types, shipped_pipelines

PACKAGE_MODULES = ("haystack_cfrag",)
TRUSTED_PREFIXES = ("haystack", "haystack_integrations", "haystack_experimental", "haystack_cfrag")


class PipelineRefusedError(ValueError):
    """A pipeline file names a class outside the allowlist."""


def load_pipeline(
    path: str | Path,
    *,
    allowed_modules: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    share_models: bool = True,
) -> Pipeline:
    """Load a pipeline YAML file, allowing only Haystack's, its integrations' and this package's classes.

    :param path: a YAML file, or the name of a shipped pipeline (`"cf_rag"`).
    :param allowed_modules: extra trusted module prefixes (e.g. `["my_company.components"]`).
    :param overrides: replace parts before anything is built: a component name or a dotted path into its init
        parameters (`"drafter.chat_generator"`) -> a component instance or a plain value.
    :param share_models: injected components of identical configuration become one instance (one model load).
    :raises PipelineRefusedError: when the file names a class outside the allowlist.

    ```python
    from haystack_cfrag import load_pipeline
    pipe = load_pipeline("cf_rag", overrides={"drafter.max_workers": 1})
    ```
    """
    return pipeline_from_dict(read_pipeline(pipeline_path(path)), allowed_modules=allowed_modules,
                              overrides=overrides, share_models=share_models)


def pipeline_from_dict(
    data: dict[str, Any],
    *,
    allowed_modules: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    share_models: bool = True,
    callbacks: DeserializationCallbacks | None = None,
) -> Pipeline:
    """`load_pipeline` for an already parsed dict (the input is not changed).

    :param callbacks: Haystack's deserialisation callbacks (`Runtime` hands in its models and store with them).
    """
    if not isinstance(data, dict) or "components" not in data:
        raise ValueError("A pipeline file must be a mapping with a 'components' section.")
    data = with_overrides(renamed_types(data), overrides)
    patterns = list(PACKAGE_MODULES) + list(allowed_modules or [])
    check_classes(data, TRUSTED_PREFIXES + tuple(allowed_modules or ()))
    data = resolve_embedded_models(data)
    if "allowed_modules" in inspect.signature(Pipeline.from_dict).parameters:
        pipe = Pipeline.from_dict(data, callbacks=callbacks, allowed_modules=patterns)
    else:
        pipe = Pipeline.from_dict(data, callbacks=callbacks)  # Haystack 2.x: the check above is the gate
    if share_models:
        share_injected_components(pipe)
    return pipe


def with_overrides(data: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of a pipeline dict with `overrides` applied (as `load_pipeline`'s; the input is not changed).

    >>> data = {"components": {"r": {"init_parameters": {"chat_generator": {"init_parameters": {"model": "a"}}}}}}
    >>> with_overrides(data, {"r.chat_generator.model": "b"})["components"]["r"]["init_parameters"]
    {'chat_generator': {'init_parameters': {'model': 'b'}}}
    >>> data["components"]["r"]["init_parameters"]["chat_generator"]["init_parameters"]["model"]
    'a'
    """
    out = copy.deepcopy(data)
    for key, value in (overrides or {}).items():
        _apply_override(out, key, value)
    return out


def check_pipeline_file(
    name_or_path: str | Path, *, allowed_modules: list[str] | None = None, build: bool | None = None
) -> dict[str, Any]:
    """The one check of a pipeline YAML before any model loads: its shared parsed dict. Each failure is one line
    naming the file: readable YAML with `components`, every class on the allowlist, and with `build` (a user's
    file) Haystack builds it, `inputs`/`outputs` sockets included, without loading a model.

    :raises PipelineRefusedError: a class outside the allowlist.
    :raises ValueError: anything else that would fail later, after the models loaded.
    """
    shipped = isinstance(name_or_path, str) and name_or_path in shipped_pipelines()
    try:
        path = pipeline_path(name_or_path)
    except FileNotFoundError as exc:
        raise ValueError(str(exc)) from exc
    data = read_pipeline(path)  # the one parse: readable YAML, a mapping with `components`
    try:
        check_classes(data, TRUSTED_PREFIXES + tuple(allowed_modules or ()))
    except PipelineRefusedError as exc:
        raise PipelineRefusedError(f"{path}: {exc}") from exc
    if build if build is not None else not shipped:
        _dry_build(path, data, list(PACKAGE_MODULES) + list(allowed_modules or []))
    return data


def _dry_build(path: Path, data: dict[str, Any], patterns: list[str]) -> None:
    """Build the pipeline (no warm-up) and check the sockets of its declared inputs and outputs."""
    try:
        if "allowed_modules" in inspect.signature(Pipeline.from_dict).parameters:
            pipe = Pipeline.from_dict(data, allowed_modules=patterns)
        else:
            pipe = Pipeline.from_dict(data)  # Haystack 2.x: `check_classes` was the gate
    except Exception as exc:  # noqa: BLE001  (DeserializationError, PipelineError, TypeError …)
        raise ValueError(f"{path}: Haystack cannot build this pipeline: {one_line(exc, typed=False)}") from exc
    for section, kind in (("inputs", "input_sockets"), ("outputs", "output_sockets")):
        declared = data.get(section) or {}
        if not isinstance(declared, dict):
            raise ValueError(f"{path}: '{section}' must be a mapping.")
        for name, targets in declared.items():
            for target in targets if isinstance(targets, list) else [targets]:
                component, _, socket = str(target).partition(".")
                node = pipe.graph.nodes[component] if component in pipe.graph.nodes else None
                if node is None or socket not in node.get(kind, {}):
                    raise ValueError(f"{path}: {section}.{name} names '{target}', which is not an "
                                     f"{kind.split('_')[0]} of a component of the pipeline.")


def share_injected_components(pipe: Pipeline, pool: dict[str, Any] | None = None) -> dict[str, Any]:
    """Make injected components with identical `to_dict()` one shared instance, at any depth (a part configured
    as one of the pipeline's nodes is that node); `pool` (configuration -> instance) may span pipelines. Returns it.
    """
    pool = {} if pool is None else pool
    nodes: dict[str, Any] = {}
    for _, comp in pipe.walk():
        key = _shareable_key(comp)
        if key is not None:
            nodes.setdefault(key, comp)
    local: dict[str, Any] = {}
    for _, comp in pipe.walk():
        _share_parts(comp, pool, nodes, local)
    for key, comp in nodes.items():
        pool.setdefault(key, comp)
    return pool


def share_node_models(pipe: Pipeline, owners: dict[str, Any] | None = None) -> int:
    """Every model holder of one configuration (`_model`: llama.cpp) reads with one loaded model, held once per
    process: nodes, injected parts and wrapped generators. The first holder is warmed and lends its model;
    `owners` carries the lenders across pipelines. Returns the holders that borrowed a model."""
    owners = {} if owners is None else owners
    shared = 0
    for comp in model_holders(pipe):
        key = _shareable_key(comp)
        if key is None:
            continue
        owner = owners.setdefault(key, comp)
        if owner is comp or (owner._model is not None and comp._model is owner._model):  # noqa: SLF001  (lent already)
            continue
        owner.warm_up()
        comp._model = owner._model  # noqa: SLF001  (the adapter's loaded model, lent)
        if hasattr(owner, "_inference_lock"):  # llama-cpp-haystack's async runs: one lock for the one model
            comp._inference_lock = owner._inference_lock  # noqa: SLF001
        shared += 1
    return shared


def model_holders(pipe: Pipeline | Any) -> list[Any]:
    """The components reachable from `pipe`'s nodes (or from one component) that hold a loadable model
    (`_model` in their attributes and a `warm_up`), each once, in walk order."""
    found: dict[int, Any] = {}

    def visit(comp: Any, depth: int) -> None:
        if comp is None or id(comp) in found or depth > 5:
            return
        if "_model" in getattr(comp, "__dict__", {}) and callable(getattr(comp, "warm_up", None)):
            found[id(comp)] = comp
        for attr in (*getattr(comp, "_INJECTED", ()), "generator"):
            inner = getattr(comp, attr, None)
            if inner is not None and not isinstance(inner, (str, int, float, bool, dict, list)):
                visit(inner, depth + 1)

    comps = [c for _, c in pipe.walk()] if hasattr(pipe, "walk") else [pipe]
    for comp in comps:
        visit(comp, 0)
    return list(found.values())


def _shareable_key(comp: Any) -> str | None:
    """`component_key` of a component that can be shared (a model, not a store holder); None otherwise."""
    if not hasattr(comp, "to_dict") or _holds_store(comp):
        return None
    try:
        return component_key(comp)
    except Exception:  # noqa: BLE001  (a node that cannot serialise is simply not shared)
        return None


def _share_parts(comp: Any, pool: dict[str, Any], nodes: dict[str, Any], local: dict[str, Any],
                 depth: int = 0) -> bool:
    """Share `comp`'s injected parts; True when one of them is (or holds) one of the pipeline's nodes."""
    holds = False
    for attr in getattr(comp, "_INJECTED", ()):  # each component declares its injected parts
        inner = getattr(comp, attr, None)
        # models are shared; a retriever keeps its own store instance (two equal configurations
        # may still point at different stores: the runtime points each at its store)
        if inner is None or not hasattr(inner, "to_dict") or _holds_store(inner):
            continue
        inner_holds = _share_parts(inner, pool, nodes, local, depth + 1) if depth < 4 else False
        key = component_key(inner)
        if key in nodes:
            shared = nodes[key]
        elif inner_holds:
            shared = local.setdefault(key, inner)
        else:
            shared = pool.setdefault(key, inner)
        holds = holds or key in nodes or inner_holds
        if shared is not inner:
            setattr(comp, attr, shared)
    return holds


def _holds_store(comp: Any) -> bool:
    return any(attr in getattr(comp, "__dict__", {}) for attr in ("document_store", "_document_store"))


def component_key(comp: Any) -> str:
    """A stable text key of a component's configuration."""
    return yaml.safe_dump(comp.to_dict(), sort_keys=True)


CALLABLE_KEYS = ("streaming_callback", "callback", "function", "callable")


def check_classes(data: Any, allowed: tuple[str, ...]) -> None:
    """Raise PipelineRefusedError if the data names, at any depth, a class (a dotted `type`) or a callable
    (`streaming_callback`, a tool's `function`, …) outside `allowed` module prefixes."""
    for type_name in _class_references(data):
        module = type_name.rsplit(".", 1)[0]
        if not any(module == p or module.startswith(p + ".") for p in allowed):
            raise PipelineRefusedError(
                f"Refusing to load '{type_name}': module '{module}' is not on the allowlist "
                f"({', '.join(allowed)}). If you trust it, pass allowed_modules=['{module.split('.')[0]}']."
            )


def _class_references(data: Any) -> list[str]:
    found: list[str] = []
    if isinstance(data, dict):
        if isinstance(data.get("type"), str) and "." in data["type"]:
            found.append(data["type"])
        for key, value in data.items():
            if _is_callable_key(key) and isinstance(value, str) and value:
                found.append(value if "." in value else f"builtins.{value}")
            found.extend(_class_references(value))
    elif isinstance(data, list):
        for value in data:
            found.extend(_class_references(value))
    return found


def _is_callable_key(key: Any) -> bool:
    return isinstance(key, str) and (key in CALLABLE_KEYS or key.endswith("_callback"))


def _apply_override(data: dict[str, Any], key: str, value: Any) -> None:
    name, *path = key.split(".")
    if name not in data["components"]:
        raise KeyError(f"Override '{key}': the pipeline has no component '{name}'.")
    serialised = serialize_component(value) if hasattr(value, "to_dict") or _is_component(value) else value
    if not path:
        data["components"][name] = serialised
        return
    node = data["components"][name]
    for part in path[:-1]:
        node = node.setdefault("init_parameters", {})
        if part not in node or not isinstance(node[part], dict):
            raise KeyError(f"Override '{key}': '{part}' is not a component inside '{name}'.")
        node = node[part]
    node.setdefault("init_parameters", {})[path[-1]] = serialised


def _is_component(value: Any) -> bool:
    return hasattr(value, "__haystack_input__") or hasattr(type(value), "__haystack_is_component__")
