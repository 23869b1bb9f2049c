"""Where the shipped pipeline files are, by name: the repository's flat `pipelines/` folder (the wheel's copy via
hatchling's `force-include`; an editable install uses the checkout's). Load one with `load_pipeline("cf_rag")`:

    >>> from haystack_cfrag.pipelines import pipeline_path, shipped_pipelines
    >>> "cf_rag" in shipped_pipelines()
    True
    >>> pipeline_path("cf_rag").name
    'cf_rag.yml'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_PACKAGED = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGED.parents[1] / "pipelines"
PIPELINES_DIR = _PACKAGED if any(_PACKAGED.glob("*.yml")) or not _CHECKOUT.is_dir() else _CHECKOUT
"""The folder of the shipped YAML files: the installed package's, else the checkout's `pipelines/`."""


def shipped_pipelines() -> list[str]:
    """Names of the shipped pipeline files."""
    return sorted(p.stem for p in PIPELINES_DIR.glob("*.yml"))


OWN_FILES: dict[str, Path] = {}
"""Pipeline names that are a file of your own (`registry.register_family`'s entries with a `path`) -> the file."""


def pipeline_path(name_or_path: str | Path) -> Path:
    """A shipped or registered pipeline by name, or any existing file path; FileNotFoundError listing the names."""
    path = Path(name_or_path)
    if path.is_file() or (path.is_symlink() or path.exists()) and not path.is_dir():  # a FIFO: the opener says so
        return path
    if isinstance(name_or_path, str) and name_or_path in OWN_FILES:
        return OWN_FILES[name_or_path]
    shipped = PIPELINES_DIR / f"{name_or_path}.yml"
    if isinstance(name_or_path, str) and name_or_path in shipped_pipelines():
        return shipped
    raise FileNotFoundError(f"No pipeline file '{name_or_path}' (shipped: {shipped_pipelines()}).")


MAX_YAML_BYTES = 1 << 20
"""The largest pipeline (or gate) file read at all: 1 MiB, about 100 times the largest shipped pipeline (10.7 kB)."""
MAX_YAML_NODES = 100_000
"""The most nodes a YAML file may hold with its aliases expanded (the largest shipped pipeline: 676)."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that counts a document's nodes, its aliases expanded, before anything is built."""

    def compose_document(self) -> Any:
        node = super().compose_document()
        _expanded(node, {}, set())
        return node


def _expanded(node: yaml.Node, sizes: dict[int, int], holding: set[int]) -> int:
    """The node's size with every alias expanded (each distinct node counted once per place it appears)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in holding:
        raise ValueError("an alias names a node that holds it (a recursive structure)")
    holding.add(key)
    children = node.value if isinstance(node, yaml.SequenceNode) else (
        [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
    total = 1
    for child in children:
        total += _expanded(child, sizes, holding)
        if total > MAX_YAML_NODES:
            raise ValueError(f"its aliases expand to more than {MAX_YAML_NODES:,} nodes")
    holding.discard(key)
    sizes[key] = total
    return total


def read_yaml(path: Path) -> Any:
    """A YAML file's data through the safe opener (at most `MAX_YAML_BYTES`), then `parse_yaml`: the package's
    one YAML parse; ValueError in one line naming the file."""
    from haystack_cfrag.stores.safe_files import open_checked  # noqa: PLC0415

    path = Path(path)
    try:
        with open_checked(path, "meta", folder=Path(path.absolute().anchor)) as fh:  # a link anywhere, to a file
            raw = fh.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file.") from None
    except OSError as exc:
        raise ValueError(f"{path}: not a readable YAML file ({type(exc).__name__}).") from None
    if len(raw) > MAX_YAML_BYTES:
        raise ValueError(f"{path}: not a readable YAML file (it is larger than {MAX_YAML_BYTES >> 20} MiB).")
    try:
        return parse_yaml(raw.decode("utf-8"), path)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a readable YAML file (UnicodeDecodeError).") from None


def parse_yaml(text: str, where: str | Path) -> Any:
    """YAML text's data, safely loaded, aliases expanded to at most `MAX_YAML_NODES`; else a ValueError naming `where`.

    >>> parse_yaml("{a: &x [1, 2], b: *x}", "example.yml")
    {'a': [1, 2], 'b': [1, 2]}
    """
    loader = _BoundedLoader(text)  # a SafeLoader: no Python objects
    try:
        return loader.get_single_data()
    except ValueError as exc:
        raise ValueError(f"{where}: not a readable YAML file ({' '.join(str(exc).split())[:120]}).") from None
    except (yaml.YAMLError, RecursionError, OverflowError) as exc:
        raise ValueError(f"{where}: not a readable YAML file ({type(exc).__name__}).") from None
    finally:
        loader.dispose()


_parsed: dict[tuple[str, int, int], dict[str, Any]] = {}


def read_pipeline(path: Path) -> dict[str, Any]:
    """The one parse of a pipeline file per version (shared: copy before changing): YAML with a `components`
    mapping, moved classes' `type:` rewritten; ValueError in one line naming the file."""
    try:
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = None
    if key is not None and key in _parsed:
        return _parsed[key]
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        raise ValueError(f"{path}: not a Haystack pipeline file (no 'components' mapping).")
    data = renamed_types(data)
    if key is not None:
        _parsed[key] = data
    return data


# Type paths of YAML written before the family layout (0.1, issue #24) -> where the classes live now.
# Haystack 3.4's `default_from_dict` refuses a `type:` that is not the class's real import path, so
# a re-export could not keep such files loading; `read_pipeline` rewrites them (stock
# `Pipeline.loads` refuses them: write the new paths there).
_OLD = ".".join(("haystack_cfrag", "components"))  # the 0.1 layout's package
_CFRAG = ("causal_arbitration_ranker", "counterfactual_query_expander", "counterfactual_rag",
          "embedding_deduplicator", "multi_query_retriever", "parallel_draft_generator",
          "spectral_stratifier")
_ADAPTERS = ("llama_cpp_logprobs", "model_spec_text_embedder")
RENAMED_TYPES = {**{f"{_OLD}.{m}": f"haystack_cfrag.cfrag.components.{m}" for m in _CFRAG},
                 **{f"{_OLD}.{m}": f"haystack_cfrag.adapters.{m}" for m in _ADAPTERS},
                 "haystack_cfrag.stores.faiss_gpu": "haystack_cfrag.stores.kinds.faiss_gpu"}  # 0.3: under its kind
"""Old module path of a shipped class -> its module now (applied to every `type:` a pipeline file names)."""


def renamed_types(data: Any) -> Any:
    """A copy of a pipeline dict with every `type:` of a moved class rewritten to its current path.

    >>> old = "haystack_cfrag." + "components.spectral_stratifier.SpectralStratifier"
    >>> renamed_types({"type": old})["type"]
    'haystack_cfrag.cfrag.components.spectral_stratifier.SpectralStratifier'
    """
    if isinstance(data, dict):
        out = {k: renamed_types(v) for k, v in data.items()}
        kind = out.get("type")
        if isinstance(kind, str):
            module, _, name = kind.rpartition(".")
            if module in RENAMED_TYPES:
                out["type"] = f"{RENAMED_TYPES[module]}.{name}"
        return out
    if isinstance(data, list):
        return [renamed_types(v) for v in data]
    return data


__all__ = ["MAX_YAML_BYTES", "MAX_YAML_NODES", "OWN_FILES", "PIPELINES_DIR", "RENAMED_TYPES", "parse_yaml",
           "pipeline_path", "read_pipeline", "read_yaml", "renamed_types", "shipped_pipelines"]
