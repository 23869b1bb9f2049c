"""Issue 70: the rooms of the package in layers, every import pointing down; the root holds only declarations; no
role read from a class name or a model name.

Read from every module's imports (ast, function-level ones too, as `test_families.py`): a room is a subpackage
or a module at the root; an import of a room of a higher layer is an arrow back up, and rooms that import each
other are a circle. A room that is in no layer fails too: a new room is placed on purpose.
"""

import ast
import re
from pathlib import Path

from haystack_cfrag import registry

from .test_families import _imports

PACKAGE = Path(registry.__file__).resolve().parent
LAYERS = (
    ("common", "models", "data"),  # shared infrastructure, model specs, the demo corpus
    ("adapters",),  # Haystack components for model specs
    ("stores", "support"),  # document stores (a kind per store), the reader's support score
    ("pipelines",),  # the shipped YAML files, read and loaded safely
    ("family", "cascade"),  # what a family declares; the escalation gate
    ("baseline", "cfrag", "cer", "causal_rag", "cdf_rag"),  # the families (none imports another: test_families)
    ("registry",),  # collects the families
    ("runtime",),  # runs any registered pipeline
    ("testing",),  # mocks and fakes for users' tests (the served mock)
    ("evaluation", "serving"),
    ("cli",),
)
ROOT_MODULES = {"__init__.py", "family.py", "registry.py", "models.py"}
"""The package root holds only its declarations: what a family declares, the registry, the model specs."""


def _rooms() -> dict[str, int]:
    return {room: depth for depth, rooms in enumerate(LAYERS) for room in rooms}


def _room(module: str) -> str | None:
    """The room of `haystack_cfrag.X…` (None: the package itself, or a name it exports lazily)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    name = parts[1]
    return name if name != "__init__" and ((PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()) else None


def _arrows() -> set[tuple[str, str, str]]:
    """(room, room it imports, the importing module) for every import between two rooms."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        source = _room(".".join(parts))
        if source is None:  # the package's `__init__`: its lazy exports, read by users
            continue
        for target in _imports(path):
            room = _room(target)
            if room is not None and room != source:
                found.add((source, room, ".".join(parts)))
    return found


def test_the_package_root_holds_no_loose_module():
    assert {p.name for p in PACKAGE.glob("*.py")} == ROOT_MODULES


def test_every_room_is_in_a_layer():
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    rooms |= {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert rooms - set(_rooms()) == set()
    assert set(_rooms()) - rooms <= {"data"}  # data/ holds the demo corpus, no module


def test_no_import_points_back_up():
    depth = _rooms()
    upward = sorted(f"{module} ({source}) imports {target}" for source, target, module in _arrows()
                    if depth[target] > depth[source])
    assert upward == []


def test_no_two_rooms_import_each_other():
    edges = {(source, target) for source, target, _ in _arrows()}
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            room = todo.pop()
            if room == goal:
                return True
            if room not in seen:
                seen.add(room)
                todo.extend(graph.get(room, ()))
        return False

    circles = sorted(f"{a} <-> {b}" for a, b in edges if reaches(b, a))
    assert circles == []


def test_the_layer_check_sees_an_arrow_back_up(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from haystack_cfrag.runtime import Runtime\n")
    assert _rooms()[_room(next(iter(_imports(bad))))] > _rooms()["cascade"]


# ---------------------------------------------------------------- roles declared, not guessed
ROLE_NAME = re.compile(r"(Generator|Embedder|Retriever|Ranker|DocumentStore)$")
"""A class-name fragment a role rule would test (`kind.endswith("ChatGenerator")`)."""


def _role_rules(path: Path) -> list[str]:
    """Where a module tests a class name (`….endswith("…Embedder")`, `__name__ == "…"`) or compares a value
    with the small model's spec: a role read from a name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "endswith", "startswith"):
            texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            texts += [e.value for a in node.args if isinstance(a, ast.Tuple) for e in a.elts
                      if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if any(ROLE_NAME.search(t) for t in texts):
                found.append(f"{path.name}:{node.lineno} {node.func.attr}{tuple(texts)}")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = {s.attr for s in sides if isinstance(s, ast.Attribute)} | {
                s.id for s in sides if isinstance(s, ast.Name)}
            if "__name__" in names and any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                                           and ROLE_NAME.search(s.value) for s in sides):
                found.append(f"{path.name}:{node.lineno} __name__ compared with a class name")
            if "EMBEDDED_SMALL_LLM" in names:
                found.append(f"{path.name}:{node.lineno} a value compared with the small model's spec")
    return found


def test_no_role_is_read_from_a_class_name_or_a_model_name():
    """The auxiliary model is named in a file's metadata, the document embedder handed in, a served file's parts
    swapped by the runtime's socket rule: 0 class-name or model-string role rules in the package."""
    found = [rule for path in sorted(PACKAGE.rglob("*.py")) for rule in _role_rules(path)]
    assert found == []


def test_the_role_rule_check_sees_one(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text('def f(kind, part, cls):\n    if kind.endswith("ChatGenerator"):\n        return 1\n'
                   '    if cls.__name__ == "SentenceTransformersTextEmbedder":\n        return 2\n'
                   '    return part["model"] == EMBEDDED_SMALL_LLM\n')
    assert len(_role_rules(bad)) == 3
