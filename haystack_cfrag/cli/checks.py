"""Checks of `cfrag`'s arguments, made before any model loads: each failure is one line naming the input.

They raise `click.BadParameter` (exit code 2), naming the option and what to do instead.
"""

from __future__ import annotations

import importlib.util
import re
import socket
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models
from haystack_cfrag.common.parameters import INTEGER, NUMBER, ParameterError, clip, parse_value
from haystack_cfrag.registry import cli_options, resolve

# `cfrag ask/compare` short option → (parameter, its Parameter): the families' `cli_options` (CF-RAG's -N -K -M …)
PARAMETER_OPTIONS = {option: name for option, (name, _) in cli_options().items()}
_URL = re.compile(r"https?://[^\s/#]+(/[^\s#]*)?")
_RAY_ADDRESS = re.compile(
    r"(?:ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[\w-]{1,63}(?:\.[\w-]{1,63})*):(?P<port>[0-9]{1,5})", re.ASCII)
"""HOST:PORT (a name of DNS labels, an IPv4 address or [IPv6]), with ray:// for Ray Client."""
RAY_CONNECT_SECONDS = 2.0
"""How long `check_ray_address` waits for a Ray cluster's port to answer."""


class IntRange(click.IntRange):
    """`click.IntRange` that reads ASCII decimal digits only (`int` also reads '٣' and '1_0')."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not INTEGER.fullmatch(value.strip()):
            self.fail(f"'{clip(value)}' is not an integer (ASCII digits, an optional sign)", param, ctx)
        return super().convert(value, param, ctx)


class FloatRange(click.FloatRange):
    """`click.FloatRange` that reads ASCII decimal numbers only (`float` also reads '٣' and '1_0')."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not NUMBER.fullmatch(value.strip()):
            self.fail(f"'{clip(value)}' is not a number (ASCII decimal)", param, ctx)
        return super().convert(value, param, ctx)


class ParameterText(click.ParamType):
    """A family parameter's short option (-N, --seed …), read as `--param` reads its value (`parse_value`);
    `check_run_parameters` then checks it against the parameter's table, naming the option."""

    def __init__(self, kind: type) -> None:
        self.name = {int: "integer", float: "float", bool: "boolean"}.get(kind, "text")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return parse_value(value.strip()) if isinstance(value, str) else value


def parse_param_options(texts: tuple[str, ...]) -> dict[str, Any]:
    """`--param NAME=VALUE` (repeatable) as {name: value} (`common.parameters.parse_value`).

    >>> parse_param_options(("theta=0.6", "duel=false", "entailment=pmi"))
    {'theta': 0.6, 'duel': False, 'entailment': 'pmi'}
    """
    values: dict[str, Any] = {}
    for text in texts:
        name, sep, raw = text.partition("=")
        if not sep or not name.strip() or not raw.strip():
            raise click.BadParameter(f"'{clip(text)}' is not NAME=VALUE", param_hint="--param")
        values[name.strip()] = parse_value(raw.strip())
    return values


def check_run_parameters(values: dict[str, Any], pipelines: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The parameters that are set, checked against the table of each pipeline that has them (one line naming the
    option and its range; a parameter none of them has is refused, naming what they have)."""
    options = {name: option for option, name in PARAMETER_OPTIONS.items()}
    tables = [resolve(p).parameters for p in pipelines]
    checked = {}
    for name, value in values.items():
        if value is None:
            continue
        hint = options.get(name, f"--param {clip(name)}")
        having = [t[name] for t in tables if name in t]
        if not having:
            known = sorted({n for t in tables for n in t})
            raise click.BadParameter(f"'{clip(name)}' is not a parameter of {', '.join(pipelines)} "
                                     f"(its parameters: {', '.join(known) or 'none'})", param_hint=hint)
        for param in having:
            try:
                checked[name] = param.check(value)
            except ParameterError as exc:
                text = repr(value)
                shown = text if len(text) <= 40 else f"{clip(text, 20)} ({len(text)} characters)"
                raise click.BadParameter(f"must be {param.describe()}, got {shown}", param_hint=hint) from exc
    return checked


def check_model_spec(spec: str, option: str) -> None:
    """A model spec `haystack_cfrag.models` can load: a known embedded name, openai:URL, hf:ID, or an existing file
    (`--llm`: a .gguf path; embedders and scorers may also name a hub id)."""
    how = "use embedded:…, a .gguf path, openai:http://HOST:PORT/v1[#MODEL] or hf:ID"
    if not spec.strip():
        raise click.BadParameter(f"is empty: {how}", param_hint=option)
    if spec.startswith("embedded:"):
        known = [models.EMBEDDED_EMBEDDER, *models.GGUF_MODELS]
        if spec not in known:
            raise click.BadParameter(f"unknown embedded model '{spec}' (known: {', '.join(known)})",
                                     param_hint=option)
    elif spec.startswith("openai:"):
        url = spec[len("openai:"):].partition("#")[0]
        if not _URL.fullmatch(url):
            raise click.BadParameter(f"'{spec}' names no server URL: use openai:http://HOST:PORT/v1[#MODEL]",
                                     param_hint=option)
    elif spec.startswith("hf:"):
        if not spec[3:].strip():
            raise click.BadParameter("hf: names no model: use hf:ORG/NAME or hf:FOLDER", param_hint=option)
    elif (option == "--llm" or spec.endswith(".gguf")) and not Path(spec).is_file():
        raise click.BadParameter(f"no such model file: {spec} ({how})", param_hint=option)


def check_graph_engine(graph: bool, engine: str, extractor: str | None, ray_address: str | None,
                       scale_out: tuple[str, ...]) -> None:
    """`cfrag index`'s --engine and --ray-address, before anything is read or written: only with --graph
    (and --engine ray), an extractor Ray runs, Ray installed, a cluster address that answers."""
    if engine == "ray" and not graph:
        raise click.BadParameter("ray applies only with --graph (it is where the graph is extracted)",
                                 param_hint="--engine")
    if ray_address is not None and engine != "ray":
        raise click.BadParameter("applies only with --graph --engine ray", param_hint="--ray-address")
    if engine != "ray":
        return
    if extractor not in scale_out:
        raise click.BadParameter(f"runs a graph extractor: choose --extractor {' or '.join(scale_out)}",
                                 param_hint="--engine")
    if importlib.util.find_spec("ray") is None:
        raise click.BadParameter("ray needs Ray: pip install 'haystack-cfrag[ray]'", param_hint="--engine")
    if ray_address is not None:
        check_ray_address(ray_address)


def check_ray_address(text: str, timeout: float = RAY_CONNECT_SECONDS) -> None:
    """A Ray cluster's address: auto, local, or HOST:PORT (ray://HOST:PORT for Ray Client) where something
    listens, tried with one TCP connection of at most `timeout` seconds (Ray itself retries for minutes)."""
    hint = "--ray-address"
    if text in ("auto", "local"):
        return
    how = ("use HOST:PORT (e.g. 127.0.0.1:6379), ray://HOST:PORT, auto or local, "
           "or leave it out for a local Ray")
    if not text.strip():
        raise click.BadParameter(f"is empty: {how}", param_hint=hint)
    match = _RAY_ADDRESS.fullmatch(text)
    if not match or len(match["host"]) > 253:
        raise click.BadParameter(f"'{clip(text)}' is not a Ray address: {how}", param_hint=hint)
    host, port = match["host"].strip("[]"), int(match["port"])
    if not 1 <= port <= 65535:
        raise click.BadParameter(f"'{clip(text)}': the port must be in 1-65535, got {port}", param_hint=hint)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except (OSError, UnicodeError) as exc:  # refused, timed out, no such host
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise click.BadParameter(f"nothing answers at {clip(text)} ({reason}): start the cluster "
                                 "(ray start --head) or leave --ray-address out for a local Ray",
                                 param_hint=hint) from exc
    from haystack_cfrag.stores.timeouts import ray_refusal  # noqa: PLC0415  (one bounded gRPC question)

    why = ray_refusal(text)  # a port that accepts is not yet Ray: ray.init would retry it for minutes
    if why:
        raise click.BadParameter(f"{clip(text)} answers but is not a Ray cluster ({why}): name the cluster's "
                                 "address (ray start --head prints it)", param_hint=hint)


def check_store_spec(text: str, *, create: bool, option: str = "--store") -> Any:
    """The parsed store spec, checked by its kind without loading or connecting anything (`StoreKind.check`): to read
    (`create=False`) the store must exist; an existing local file must be a store of its kind, `create` or not."""
    from haystack_cfrag.stores import parse_store_spec  # noqa: PLC0415

    try:
        spec = parse_store_spec(text)
        spec.store_kind.check(spec, create=create)
    except (FileNotFoundError, ValueError) as exc:  # messages made from the parsed spec: no password
        raise click.BadParameter(str(exc), param_hint=option) from None
    return spec
