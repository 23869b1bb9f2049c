"""The deploy directory `cfrag serve` hands to Hayhooks: wrapper folders (`WRAPPER_TEMPLATE`) and YAML files
with the served parts swapped in (`deployable_yaml`).

`cfrag serve` writes only into a new or empty folder or one its marker file says it made, replacing only what
the marker lists; any other folder is refused. `owned_folder` and `mark_folder` are that rule for any command
writing into a folder the user names (`cfrag eval --out` too)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.common.files import replace_text
from haystack_cfrag.registry import resolve
from haystack_cfrag.runtime.parts import RuntimeParts
from haystack_cfrag.serving.service import PIPELINES, ServingConfig

WRAPPER_TEMPLATE = '''\
"""Hayhooks wrapper of the shipped pipeline {name}, written by `cfrag serve` (haystack_cfrag.serving.wrapper)."""

from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper


class PipelineWrapper(CFRAGPipelineWrapper):
    pipeline_name = "{name}"
'''
"""A wrapper folder's `pipeline_wrapper.py`: one per served pipeline of the registry, none written by hand."""
MARKER = ".cfrag-serve.json"
EMBEDDER = "haystack_cfrag.adapters.model_spec_text_embedder.ModelSpecTextEmbedder"
"""The served YAML's text embedders: the service's `embedder` spec, resolved when the model loads."""


class FolderOwnershipError(ValueError):
    """A folder a cfrag command must not write into: a file, or a folder it did not make."""


DeployDirError = FolderOwnershipError  # the deploy directory's name for it


def owned_folder(target: Path, command: str, marker: str, *,
                 adopt: Callable[[Path], bool] | None = None) -> dict[str, Any]:
    """The marker `command` left in `target` ({} for a new or empty folder, or one `adopt` recognises); else
    FolderOwnershipError naming the folder and what it holds."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise FolderOwnershipError(f"{target} is not a folder: name a new folder, an empty one, or one {command} made.")
    if not target.exists():
        return {}
    if (target / marker).exists():
        try:
            data = json.loads((target / marker).read_text(encoding="utf-8"))
            valid = isinstance(data, dict) and data.get("written_by", command) == command
        except (OSError, ValueError):
            valid = False
        if not valid:
            raise FolderOwnershipError(f"{target / marker} is not a marker {command} wrote; name another folder.")
        return data
    present = sorted(p.name for p in target.iterdir())
    if present and not (adopt is not None and adopt(target)):
        shown = ", ".join(present[:5]) + (" …" if len(present) > 5 else "")
        raise FolderOwnershipError(f"{target} holds files {command} did not write ({shown}): it never replaces "
                                   "them; name a new or empty folder.")
    return {}


def mark_folder(target: Path, command: str, marker: str, **extra: Any) -> None:
    """Write `command`'s marker into `target` (see `owned_folder`)."""
    target.mkdir(parents=True, exist_ok=True)
    replace_text(target / marker, json.dumps({"written_by": command, **extra}))  # a link there: replaced


def check_deploy_dir(target: Path) -> list[str]:
    """What `cfrag serve` wrote into `target` before (to replace); DeployDirError when it must not write there
    (also for anything the marker does not list: Hayhooks deploys every folder)."""
    data = owned_folder(target, "cfrag serve", MARKER)
    if not target.exists():
        return []
    present = sorted(p.name for p in target.iterdir() if p.name != MARKER)
    try:
        written = [str(name) for name in data.get("written", [])] if data else []
    except TypeError as exc:
        raise DeployDirError(f"{target / MARKER} is not a marker cfrag serve wrote; name another folder.") from exc
    others = [name for name in present if name not in written]
    if others:
        shown = ", ".join(others[:5]) + (" …" if len(others) > 5 else "")
        raise DeployDirError(f"{target} holds files cfrag serve did not write ({shown}): it is never emptied; "
                             "name a new or empty folder.")
    return [name for name in written if name in present]


def deployable_yaml(name_or_path: str | Path, config: ServingConfig) -> str:
    """A pipeline file as Hayhooks runs it in the served process, its parts swapped by the runtime's rule
    (`RuntimeParts.plan`): the service's embedders, store and retrievers (and the mock when serving with it)."""
    store = InMemoryDocumentStore(index=config.store_index, embedding_similarity_function="cosine")
    embedder = {"type": EMBEDDER, "init_parameters": {"model": config.embedder, "progress_bar": False,
                                                      "normalize_embeddings": True}}
    parts = RuntimeParts(generator=config.mock_generator() if config.generator == "mock" else None,
                         text_embedder=embedder, scorer=None, store=store, keyword_store=None,
                         retriever=InMemoryEmbeddingRetriever(document_store=store),
                         keyword=InMemoryBM25Retriever(document_store=store))
    data = parts.plan(resolve(name_or_path).data, swap=True)  # a copy
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def write_deploy_dir(
    target: Path, config: ServingConfig, *, wrappers: list[str], yaml_pipelines: list[str] | None = None
) -> Path:
    """Write the `wrappers`' folders and the `yaml_pipelines` (names or files, as `<stem>_yaml.yml`) into `target`
    (see `check_deploy_dir`), with its marker."""
    for name in wrappers:
        if name not in PIPELINES:
            raise ValueError(f"Unknown pipeline '{name}' (shipped: {', '.join(PIPELINES)}).")
    yaml_names = [yaml_deploy_name(item) for item in yaml_pipelines or []]
    previous = check_deploy_dir(target)
    target.mkdir(parents=True, exist_ok=True)
    for name in previous:  # only what the marker says cfrag serve wrote; links are removed, never followed
        path = target / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    written = [*wrappers, *(f"{name}.yml" for name in yaml_names)]
    mark_folder(target, "cfrag serve", MARKER, written=written)
    for name in wrappers:
        (target / name).mkdir()
        (target / name / "pipeline_wrapper.py").write_text(WRAPPER_TEMPLATE.format(name=name), encoding="utf-8")
    for item, name in zip(yaml_pipelines or [], yaml_names, strict=True):
        replace_text(target / f"{name}.yml", deployable_yaml(item, config))
    return target


YAML_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,63}")


def yaml_deploy_name(name_or_path: str | Path) -> str:
    """The name a YAML pipeline is served under: `<stem>_yaml`. A file must be `.yml`/`.yaml` with a plain stem,
    pass `check_pipeline_file` and declare `inputs` and `outputs`, else a one-line ValueError.

    >>> yaml_deploy_name("cf_rag")
    'cf_rag_yaml'
    """
    from haystack_cfrag.pipelines.loading import check_pipeline_file  # noqa: PLC0415

    if isinstance(name_or_path, str) and name_or_path in PIPELINES:
        return f"{name_or_path}_yaml"
    path = Path(name_or_path)
    if path.suffix not in (".yml", ".yaml") or not path.is_file():
        raise ValueError(f"'{name_or_path}' is neither a served pipeline ({', '.join(PIPELINES)}) "
                         "nor a .yml/.yaml file.")
    if not YAML_NAME.fullmatch(path.stem):
        raise ValueError(f"{path.name}: name the file with letters, digits, '_' or '-' (it becomes the route "
                         f"/{path.stem}_yaml/run).")
    data = check_pipeline_file(path, build=False)  # the allowlist (and readable YAML with components)
    if not isinstance(data.get("inputs"), dict) or not isinstance(data.get("outputs"), dict):
        raise ValueError(f"{path}: Hayhooks serves a YAML pipeline through its top-level 'inputs' and 'outputs' "
                         "mappings; declare them (see pipelines/standard_rag.yml).")
    check_pipeline_file(path, build=True)  # Haystack builds it here, not 19 s later in the started server
    return f"{path.stem}_yaml"


# ---------------------------------------------------------------- the default (temporary) deploy folder
RUN_FOLDER_PREFIX = "cfrag-serve-"
OWNER_FILE = ".cfrag-serve-owner.json"
"""In a temporary deploy folder: the pid (and start time) of the `cfrag serve` that made it."""


def make_run_folder(root: Path | None = None) -> Path:
    """A new private temporary folder for one `cfrag serve`, naming its owner (`remove_stale_run_folders`)."""
    folder = Path(tempfile.mkdtemp(prefix=RUN_FOLDER_PREFIX, dir=root))
    pid = os.getpid()
    replace_text(folder / OWNER_FILE, json.dumps({"pid": pid, "started": _process_start(pid)}))
    return folder


def remove_stale_run_folders(root: Path | None = None) -> list[Path]:
    """Remove the temporary deploy folders of `cfrag serve` processes that are gone: only real `cfrag-serve-*`
    folders of this user whose `OWNER_FILE` names a process no longer running (links never followed)."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    for folder in entries:
        if not folder.name.startswith(RUN_FOLDER_PREFIX) or not _stale(folder):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


def _stale(folder: Path) -> bool:
    try:
        info = folder.lstat()
        owner = folder / OWNER_FILE
        owner_info = owner.lstat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or not stat.S_ISREG(owner_info.st_mode):
        return False
    try:
        data = json.loads(owner.read_text(encoding="utf-8"))
        pid, started = int(data["pid"]), data.get("started")
    except (OSError, ValueError, KeyError, TypeError):
        return False  # not a file this package wrote: left alone
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # another user's process holds that pid now: it may still be ours, keep the folder
    return started is not None and _process_start(pid) not in (None, started)


def _process_start(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (Linux /proc), which tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None
