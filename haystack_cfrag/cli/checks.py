"""Checks of `cfrag`'s arguments, made before any model loads: each failure is one line naming the input.

They raise `click.BadParameter` (exit code 2), naming the option and what to do instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models
from haystack_cfrag.parameters import PARAMETERS, ParameterError

# `cfrag ask/compare` option → parameter of haystack_cfrag.parameters
PARAMETER_OPTIONS = {"-N": "n_counterfactuals", "-K": "n_clusters", "-M": "n_subsets", "--lambda": "causal_weight",
                     "--seed": "random_state"}
_URL = re.compile(r"https?://[^\s/#]+(/[^\s#]*)?")


def check_run_parameters(values: dict[str, Any]) -> dict[str, Any]:
    """The parameters that are set, checked against `haystack_cfrag.parameters`."""
    options = {name: option for option, name in PARAMETER_OPTIONS.items()}
    checked = {}
    for name, value in values.items():
        if value is None:
            continue
        try:
            checked[name] = PARAMETERS[name].check(value)
        except ParameterError as exc:
            raise click.BadParameter(f"must be {PARAMETERS[name].describe()}, got {value!r}",
                                     param_hint=options.get(name, name)) from exc
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


def check_store_spec(text: str, *, create: bool, option: str = "--store") -> Any:
    """The parsed store spec; for reading (`create=False`) the store must exist where that can be seen locally."""
    from haystack_cfrag.stores import parse_store_spec  # noqa: PLC0415

    try:
        spec = parse_store_spec(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc
    if spec.kind == "pgvector" and not spec.location and not os.environ.get("PG_CONN_STR"):
        raise click.BadParameter(f"'{text}' names no database and PG_CONN_STR is not set: use "
                                 "pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE]", param_hint=option)
    local = {"memory": Path(spec.location), "faiss": Path(spec.location).with_suffix(".faiss"),
             "qdrant": Path(spec.location)}.get(spec.kind)
    if spec.kind == "qdrant" and (spec.location == ":memory:" or spec.location.startswith(("http://", "https://"))):
        local = None
    if local is None:
        return spec
    if create:
        if spec.kind != "qdrant" and local.is_dir():
            raise click.BadParameter(f"{local} is a folder: name a file", param_hint=option)
    elif not local.exists():
        raise click.BadParameter(f"no store at {local}: create it with `cfrag index FILES --store {text}`",
                                 param_hint=option)
    return spec
