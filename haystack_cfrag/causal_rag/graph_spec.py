"""`CausalGraphRetriever(graph=…)`: the spec of a store whose graph `cfrag index --graph` stored beside it, or a
Haystack `Secret` naming one. A spec that holds a password is moved into an environment variable of this process
(`redaction.env_secret`) as it is given: `to_dict`, `dumps()` and every error name the variable, never the password.

>>> keep_graph_spec("faiss:stores/demo", "R"), keep_graph_spec(None, "R")
('faiss:stores/demo', None)
>>> keep_graph_spec("pgvector:postgresql://me:pw@db/x", "R").to_dict()["env_vars"][0].startswith(GRAPH_ENV_PREFIX)
True
"""

from __future__ import annotations

from typing import Any

from haystack.utils import Secret

from haystack_cfrag.common.redaction import env_secret

GRAPH_ENV_PREFIX = "CFRAG_GRAPH_SPEC"
"""A `graph` spec holding a password is kept in an environment variable of this prefix (`env_secret`)."""


def keep_graph_spec(graph: Any, component: str) -> str | Secret | None:
    """`graph` as `component` keeps it: a spec checked (one line, without its password, when it does not parse),
    one that holds a password as its Secret, a Secret or None as given."""
    if isinstance(graph, str):
        held = check_graph_spec(graph, component).password is not None
        return env_secret(graph, GRAPH_ENV_PREFIX) if held else graph
    if graph is not None and not isinstance(graph, Secret):
        raise ValueError(f"{component}: 'graph' must be a store spec string or a Secret, got {type(graph).__name__}.")
    return graph


def scrub_graph_spec(data: dict[str, Any], component: str) -> None:
    """In a serialised component, a spec that holds a password (or does not parse) replaced by its Secret in `data`
    itself, before anything can fail: Haystack's DeserializationError quotes `data`."""
    params = data.get("init_parameters")
    if isinstance(params, dict) and isinstance(params.get("graph"), str) and _may_hold_password(params["graph"]):
        spec, params["graph"] = params["graph"], env_secret(params["graph"], GRAPH_ENV_PREFIX).to_dict()
        check_graph_spec(spec, component)  # refused as the constructor refuses it, the data already without it


def resolve_graph_spec(graph: str | Secret, component: str) -> Any:
    """The `StoreSpec` that `graph` names (a Secret read now); ValueError in one line when unset or bad."""
    spec = graph.resolve_value() if isinstance(graph, Secret) else graph
    if not isinstance(spec, str) or not spec.strip():
        names = ", ".join(getattr(graph, "_env_vars", None) or ()) or "a token"
        raise ValueError(f"{component}: 'graph' reads its spec from {names}, which is not set.")
    return check_graph_spec(spec, component)


def check_graph_spec(spec: str, component: str) -> Any:
    """The parsed spec (its password a `Secret`); ValueError, in one line without it, when it does not parse."""
    from haystack_cfrag.stores.specs import parse_store_spec  # noqa: PLC0415

    try:
        return parse_store_spec(spec)
    except ValueError as exc:
        raise ValueError(f"{component}: 'graph': {exc}") from None


def _may_hold_password(spec: str) -> bool:
    """Whether `spec` holds a password, or does not parse (its text may then hold one: never kept in the data)."""
    try:
        return check_graph_spec(spec, "").password is not None
    except ValueError:
        return True


__all__ = ["GRAPH_ENV_PREFIX", "check_graph_spec", "keep_graph_spec", "resolve_graph_spec", "scrub_graph_spec"]
