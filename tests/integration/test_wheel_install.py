"""The package as a user installs it: a wheel built from this checkout, installed into a fresh virtualenv.

The virtualenv lives outside the checkout and gets the wheel with its test extras only (no
model extras), so nothing can come from the source tree: the shipped pipelines must be package
data, found by name. From there it lists and loads every shipped pipeline (models swapped for
fakes defined in the check script, which the allowlist admits by name), runs CF-RAG once on
the mock generator, and runs `cfrag --help`.
"""

import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent('''
    import hashlib
    from haystack import component
    from haystack.dataclasses import Document
    import haystack_cfrag
    from haystack_cfrag import load_pipeline
    from haystack_cfrag.pipelines import PIPELINES_DIR, shipped_pipelines
    from haystack_cfrag.testing.mock_chat_generator import MockChatGenerator

    assert "site-packages" in str(PIPELINES_DIR), PIPELINES_DIR

    @component
    class BagOfWords:
        """A model-free text embedder (hashed bag of words)."""
        @component.output_types(embedding=list[float])
        def run(self, text: str):
            vec = [0.0] * 64
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            return {"embedding": vec}

    @component
    class BagOfWordsDocuments:
        """The same, for documents (CausalRAG's node embedder)."""
        @component.output_types(documents=list[Document])
        def run(self, documents: list[Document]):
            return {"documents": [Document(id=d.id, content=d.content, meta=d.meta,
                                           embedding=BagOfWords().run(text=d.content or "")["embedding"])
                                  for d in documents]}

    def fakes(data, path=""):
        """Override keys for every generator and text or document embedder in a pipeline file."""
        found = {}
        if isinstance(data, dict):
            kind = str(data.get("type", ""))
            if kind.endswith("ChatGenerator"):
                return {path: MockChatGenerator()}
            if kind.endswith("TextEmbedder"):
                return {path: BagOfWords()}
            if kind.endswith("DocumentEmbedder"):
                return {path: BagOfWordsDocuments()}
            for key, value in (data.get("init_parameters") or {}).items():
                found.update(fakes(value, f"{path}.{key}"))
        return found

    import yaml

    def overrides_for(name):
        data = yaml.safe_load((PIPELINES_DIR / f"{name}.yml").read_text())
        found = {}
        for comp_name, comp in data["components"].items():
            found.update(fakes(comp, comp_name))
        return found

    names = shipped_pipelines()
    print("shipped:", ",".join(names))
    for name in names:
        pipe = load_pipeline(name, overrides=overrides_for(name), allowed_modules=["__main__"])
        print("loaded:", name, len(list(pipe.walk())))

    pipe = load_pipeline("cf_rag_fast", overrides=overrides_for("cf_rag_fast"), allowed_modules=["__main__"])
    store = pipe.get_component("retriever").retriever.document_store
    embed = BagOfWords()
    texts = ["Heat is a 1995 film directed by Michael Mann.", "Heat stars Al Pacino and Robert De Niro."]
    store.write_documents([Document(content=t, embedding=embed.run(text=t)["embedding"]) for t in texts])
    result = pipe.run({"expander": {"query": "Who directed Heat?"}, "stratifier": {"query": "Who directed Heat?"},
                       "drafter": {"query": "Who directed Heat?"}, "ranker": {"query": "Who directed Heat?"}})
    print("answer:", repr(result["duel"]["answer"]))
''')


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)  # noqa: S603
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_wheel_installs_and_ships_its_pipelines(tmp_path):
    # built from a copy of what the wheel is made of, so that nothing a build leaves can land in the checkout
    source = tmp_path / "source"
    for folder in ("haystack_cfrag", "pipelines"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        cwd=tmp_path)
    (wheel,) = wheels.glob("haystack_cfrag-*.whl")
    # the top-level pipelines/ folder is the one source: the wheel ships exactly its files
    with zipfile.ZipFile(wheel) as whl:
        shipped = {Path(n).name: whl.read(n) for n in whl.namelist() if n.startswith("haystack_cfrag/pipelines/")
                   and n.endswith(".yml")}
    assert shipped == {p.name: p.read_bytes() for p in (ROOT / "pipelines").glob("*.yml")}
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    import haystack  # the same Haystack line as this test run's (3.4 in `make test`)

    haystack_line = f"haystack-ai=={haystack.__version__}"
    run([str(python), "-m", "pip", "install", "-q", f"{wheel}[test]", haystack_line], cwd=tmp_path)

    out = run([str(python), "-c", CHECK], cwd=tmp_path,
              env={"HAYSTACK_TELEMETRY_ENABLED": "False", "PATH": "/usr/bin:/bin"})
    assert f"shipped: {','.join(sorted(p.stem for p in (ROOT / 'pipelines').glob('*.yml')))}" in out, out
    for name in sorted(p.stem for p in (ROOT / "pipelines").glob("*.yml")):  # every shipped file loads
        assert f"loaded: {name} " in out, out
    assert "answer: " in out and "answer: ''" not in out, out

    help_text = run([str(venv / "bin" / "cfrag"), "--help"], cwd=tmp_path)
    assert "Usage: cfrag" in help_text and "serve" in help_text
