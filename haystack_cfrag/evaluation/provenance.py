"""What a run's records depend on: written to `metadata.json`; `record_run` refuses to resume a folder whose
records another data file, models, scorer or `max_tokens` made (or other rows, where a store is built from all).

Usage:
    >>> config = {"format": "auto", "offset": 0, "limit": 100, "max_tokens": 256, "scorer": None}
    >>> old = {"data": {"sha256": "ab"}, "models": {"llm": "m"}, "config": config}
    >>> new = {**old, "config": {**old["config"], "limit": 50}}
    >>> differences(old, new, {"per-question"})
    []
    >>> differences(old, new, {"pooled"})
    ['rows read (format, offset, limit): auto, 0, 100 in the folder, auto, 0, 50 in this run']
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haystack_cfrag import models


class ResumeMismatchError(ValueError):
    """The output folder holds records that this run's configuration would not reproduce."""


def row_dependent(condition: str) -> bool:
    """Whether a condition's store depends on every row read (pooled corpus, injection sources)."""
    return condition == "pooled" or condition.startswith("inject:")


def metadata(config: Any, injected: list[Any] | None = None) -> dict[str, Any]:
    """Versions, model identities and seeds of a run (`injected`: model instances used instead of specs)."""
    import haystack  # noqa: PLC0415

    from haystack_cfrag import __version__  # noqa: PLC0415

    data_sha = hashlib.sha256(Path(config.data).read_bytes()).hexdigest()
    return {
        "haystack_cfrag": __version__,
        "haystack_ai": haystack.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "data": {"path": portable_path(config.data), "sha256": data_sha},
        "models": {"llm": config.llm, "llm_sha256": models.model_sha256(config.llm),
                   "embedder": config.embedder, "embedder_sha256": models.model_sha256(config.embedder),
                   "scorer": config.scorer}
        if not injected else {"llm": type(injected[0]).__name__, "llm_sha256": None,
                              "embedder": type(injected[1]).__name__, "embedder_sha256": None, "scorer": config.scorer},
        "seeds": {"llm": 0, "stratifier": "random_state from the pipeline file (0)", "bootstrap": 0},
        "decoding": "greedy (temperature 0)",
        "config": {**asdict(config), "data": portable_path(config.data), "out": portable_path(config.out)},
    }


def portable_path(path: Any) -> Any:
    """A path relative to the working directory (no machine's absolute path in metadata); others unchanged.

    >>> import os
    >>> portable_path(os.path.join(os.getcwd(), "runs", "x"))
    'runs/x'
    """
    if path is None or not os.path.isabs(str(path)):
        return path
    return os.path.relpath(str(path))


def _on(flag: Any) -> str:
    return "on" if flag else "off"


def _show(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values)


def differences(old: dict[str, Any], new: dict[str, Any], conditions: set[str]) -> list[str]:
    """What differs between the folder's metadata (`old`) and this run's (`new`) that its records depend on."""
    out = []
    old_data, new_data = old.get("data") or {}, new.get("data") or {}
    if old_data.get("sha256") != new_data.get("sha256"):
        out.append(f"data file sha256: {str(old_data.get('sha256'))[:12]}… in the folder, "
                   f"{str(new_data.get('sha256'))[:12]}… in this run")
    if old.get("models") != new.get("models"):
        out.append(f"models: {old.get('models')} in the folder, {new.get('models')} in this run")
    old_config, new_config = old.get("config") or {}, new.get("config") or {}
    for name in ("max_tokens", "scorer"):
        if old_config.get(name) != new_config.get(name):
            out.append(f"{name}: {old_config.get(name)} in the folder, {new_config.get(name)} in this run")
    if old_config.get("cache", True) != new_config.get("cache", True):  # folders from before the option: cached
        out.append(f"reply cache: {_on(old_config.get('cache', True))} in the folder, "
                   f"{_on(new_config.get('cache', True))} in this run (a latency run's seconds are all real)")
    if old_config.get("graph_extractor", "llm") != new_config.get("graph_extractor", "llm"):  # older folders: llm
        out.append(f"graph extractor: {old_config.get('graph_extractor', 'llm')} in the folder, "
                   f"{new_config.get('graph_extractor', 'llm')} in this run")
    rows = ("format", "offset", "limit")
    old_rows, new_rows = [old_config.get(k) for k in rows], [new_config.get(k) for k in rows]
    if old_rows != new_rows and any(row_dependent(c) for c in conditions):
        out.append(f"rows read ({_show(list(rows))}): {_show(old_rows)} in the folder, {_show(new_rows)} in this run")
    return out


def read_metadata(out: Path) -> dict[str, Any] | None:
    """A run folder's `metadata.json` through the safe opener; None when missing or not a JSON object.

    :raises ValueError: one line naming the file: a FIFO, a device, a link out of the folder, too large.
    """
    from haystack_cfrag.stores.safe_files import read_text  # noqa: PLC0415  (the stores package is large)

    try:
        text = read_text(Path(out) / "metadata.json", "run")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested or numbered beyond what Python reads
        return None
    return data if isinstance(data, dict) else None


def record_run(out: Path, new: dict[str, Any], conditions: set[str]) -> None:
    """Check that `out`'s records match this run (`ResumeMismatchError` before writing anything), then write
    this run's metadata, earlier invocations kept."""
    path = out / "metadata.json"
    old = read_metadata(out)
    if conditions and old is None:
        raise ResumeMismatchError(f"{path} is missing or not readable JSON, so what {out}'s records were computed "
                                  "with is unknown. Use a fresh --out, or restore the file.")
    found = differences(old, new, conditions) if conditions else []
    if found:
        raise ResumeMismatchError(
            f"{out} holds records computed with other settings; adding to them would mix the two:\n- "
            + "\n- ".join(found)
            + "\nUse a fresh --out, or keep --limit/--offset and evaluate fewer questions with --main-limit or "
            "--inject-limit.")
    old = old or {}
    earlier = old.get("invocations") or ([{"config": old["config"]}] if "config" in old else [])
    started = datetime.now(UTC).isoformat(timespec="seconds")
    meta = {**new, "invocations": [*earlier, {"started": started, "config": new["config"]}]}
    path.write_text(json.dumps(meta, indent=2, default=str), encoding="utf-8")
