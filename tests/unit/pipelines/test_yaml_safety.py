"""YAML safety: load_pipeline refuses classes and callables outside the allowlist before importing anything."""

from pathlib import Path

import pytest
import yaml

from haystack_cfrag import load_pipeline
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.pipelines.loading import PipelineRefusedError

ROOT = Path(__file__).resolve().parents[3]
CF_RAG = pipeline_path("cf_rag")


def write(tmp_path, data):
    path = tmp_path / "crafted.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def marker_command(marker):
    return f"touch {marker}"


def crafted(node_path, node):
    """The shipped cf_rag.yml with `node` put at `node_path` (component name, then init-parameter keys)."""
    data = yaml.safe_load(CF_RAG.read_text())
    target = data["components"]
    *parents, last = node_path
    for key in parents:
        target = target[key]
        target = target.setdefault("init_parameters", {}) if "type" in target else target
    target[last] = node
    return data


def attacks(marker):
    cmd = marker_command(marker)
    return {
        "top-level os.system": (("drafter",), {"type": "os.system", "init_parameters": {"command": cmd}}),
        "top-level subprocess.Popen": (
            ("drafter",),
            {"type": "subprocess.Popen", "init_parameters": {"args": ["touch", str(marker)]}},
        ),
        "top-level builtins.eval": (
            ("ranker",),
            {"type": "builtins.eval", "init_parameters": {"source": f"open({str(marker)!r}, 'w')"}},
        ),
        "nested os.system in an allowed component": (
            ("drafter", "chat_generator"),
            {"type": "os.system", "init_parameters": {"command": cmd}},
        ),
        "nested without init_parameters": (("drafter", "chat_generator"), {"type": "os.system"}),
        "deeply nested document store": (
            ("retriever", "retriever", "document_store"),
            {"type": "subprocess.Popen", "init_parameters": {"args": ["touch", str(marker)]}},
        ),
        "callable string in a callback": (
            ("drafter", "chat_generator", "streaming_callback"),
            "os.system",
        ),
        "haystack-looking prefix": (
            ("drafter", "chat_generator"),
            {"type": "haystackevil.Gen", "init_parameters": {}},
        ),
    }


@pytest.mark.parametrize(
    "name",
    list(attacks(Path("x"))),
)
def test_crafted_classes_are_refused_and_nothing_runs(tmp_path, name):
    marker = tmp_path / "pwned"
    node_path, node = attacks(marker)[name]
    path = write(tmp_path, crafted(node_path, node))
    with pytest.raises(PipelineRefusedError, match="allowlist"):
        load_pipeline(path)
    assert not marker.exists()


def test_python_yaml_tags_are_not_constructed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "tagged.yml"
    path.write_text(f'components:\n  x: !!python/object/apply:os.system ["touch {marker}"]\nconnections: []\n')
    with pytest.raises(ValueError, match="not a readable YAML file"):  # one line naming the file
        load_pipeline(path)
    assert not marker.exists()


def test_the_package_never_loads_unsafely():
    package = ROOT / "haystack_cfrag"
    offenders = []
    for source in package.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        for needle in ("unsafe=True", "yaml.load(", "yaml.unsafe_load", "UnsafeLoader", "yaml.Loader", "pickle.load"):
            if needle in text:
                offenders.append(f"{source.relative_to(ROOT)}: {needle}")
    assert offenders == []
    # the check above can fail: it finds the needle where there is one
    assert "unsafe=True" in 'Pipeline.loads(text, unsafe=True)'


def test_allowed_callables_and_plain_type_tags_pass_the_check():
    from haystack_cfrag.pipelines.loading import TRUSTED_PREFIXES, check_classes

    check_classes(
        {
            "streaming_callback": "haystack.components.generators.utils.print_streaming_chunk",
            "api_key": {"type": "env_var", "env_vars": ["OPENAI_API_KEY"], "strict": False},
            "device": {"type": "single", "device": "cpu"},
            "embedding_similarity_function": "cosine",
        },
        TRUSTED_PREFIXES,
    )
    with pytest.raises(PipelineRefusedError, match="builtins"):
        check_classes({"streaming_callback": "print"}, TRUSTED_PREFIXES)


def repeated_keys(text):
    """(line, key) of every mapping key given twice in a YAML text (PyYAML silently keeps the last)."""
    found, seen = [], set()

    def walk(node):
        if id(node) in seen:  # an alias: the anchored node, walked once
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value]
            found.extend((k.start_mark.line + 1, k.value) for i, (k, _) in enumerate(node.value)
                         if k.value in keys[:i])
            for k, v in node.value:
                walk(k)
                walk(v)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item)

    walk(yaml.compose(text, Loader=yaml.SafeLoader))
    return sorted(found)


def test_repeated_keys_finds_a_key_given_twice_at_any_depth():
    assert repeated_keys("components:\n  a: {type: X}\n  b: &n {k: 1, k: 2}\n  a: *n\n") == [(3, "k"), (4, "a")]
    assert repeated_keys("components:\n  a: 1\n  b: 2\n") == []


@pytest.mark.parametrize("path", sorted((ROOT / "pipelines").glob("*.yml")), ids=lambda p: p.name)
def test_no_shipped_pipeline_names_a_component_twice(path):
    """A key given twice is a node silently replaced: causal_rag_auto.yml once declared `summarizer` twice."""
    assert repeated_keys(path.read_text()) == []
