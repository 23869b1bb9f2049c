"""Issue 70, item 1: a store kind is one declared object (`haystack_cfrag.stores.kinds`).

No module outside `stores/kinds/` names a store class or branches on a kind's name (a scan of the package's
source), and a fifth kind, declared here as one object, opens, writes, saves, locks, retrieves and deletes
through the same calls as the four shipped ones, with no other file touched. Issue 71, E6: a FIFO (or any file
that is not a regular one) at a store's lock file is one line naming the file and the store.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

import haystack_cfrag
from haystack_cfrag.stores import (
    KINDS,
    close_document_store,
    embedding_retriever,
    keyword_store,
    kind_of,
    open_document_store,
    parse_store_spec,
    register,
    save_document_store,
)
from haystack_cfrag.stores.kinds.memory import MemoryKind
from haystack_cfrag.stores.lock import lock_path, store_lock
from haystack_cfrag.stores.removal import delete_documents
from haystack_cfrag.stores.safe_files import read_json

PACKAGE = Path(haystack_cfrag.__file__).resolve().parent
KINDS_FOLDER = PACKAGE / "stores" / "kinds"
STORE_CLASSES = ("InMemoryDocumentStore", "FAISSDocumentStore", "PgvectorDocumentStore", "QdrantDocumentStore")
KIND_NAMES = ("memory", "faiss", "pgvector", "qdrant")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            found.add(id(body[0].value))
    return found


def _names(node: ast.AST) -> list[str]:
    """The class names an isinstance's second argument names (a name, an attribute, a tuple of them)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [getattr(item, "id", None) or getattr(item, "attr", "") for item in items]


def _kind_constants(node: ast.AST) -> bool:
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return any(isinstance(item, ast.Constant) and item.value in KIND_NAMES for item in items)


def _type_name(node: ast.AST) -> bool:
    """`type(x).__name__`."""
    return (isinstance(node, ast.Attribute) and node.attr == "__name__" and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "type")


def offences(source: str) -> list[str]:
    """Where `source` names a store class or branches on a store's class or kind name (line: what)."""
    tree = ast.parse(source)
    docstrings, found = _docstrings(tree), []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [f"{line}: the string {name!r}" for name in STORE_CLASSES if name in node.value]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass") \
                and len(node.args) == 2:
            found += [f"{line}: isinstance against {name}" for name in _names(node.args[1]) if name in STORE_CLASSES]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_type_name(side) for side in sides):
                found.append(f"{line}: type(...).__name__ compared")
            if any(isinstance(side, ast.Attribute) and side.attr == "kind" for side in sides) \
                    and any(_kind_constants(side) for side in sides):
                found.append(f"{line}: a kind's name compared")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("endswith", "startswith") and _type_name(node.func.value):
            found.append(f"{line}: type(...).__name__.{node.func.attr}")
    return found


def test_the_scan_finds_each_form_it_forbids():
    source = '''
"""A docstring may name InMemoryDocumentStore."""
if type(store).__name__ == "PgvectorDocumentStore": pass
if type(store).__name__.endswith("FAISSDocumentStore"): pass
if isinstance(store, (InMemoryDocumentStore, dict)): pass
if spec.kind == "memory" or spec.kind in ("faiss", "qdrant"): pass
'''
    assert sorted(offences(source)) == [
        "3: the string 'PgvectorDocumentStore'", "3: type(...).__name__ compared", "4: the string 'FAISSDocumentStore'",
        "4: type(...).__name__.endswith", "5: isinstance against InMemoryDocumentStore", "6: a kind's name compared",
        "6: a kind's name compared"]


def test_no_module_outside_stores_kinds_names_a_store_class_or_branches_on_a_kind():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if KINDS_FOLDER in path.parents:
            continue
        if hits := offences(path.read_text(encoding="utf-8")):
            found[str(path.relative_to(PACKAGE))] = hits
    assert found == {}, found


class VariantInMemoryDocumentStore(InMemoryDocumentStore):
    """A fifth store: Haystack's in-memory store under another class (as a plugin's store would be)."""


class VariantKind(MemoryKind):
    """A fifth kind, ``variant:PATH.json``, declared as one object: its own class, its own spec."""

    name = "variant"
    usage = "variant:PATH.json"

    def text(self, spec):
        return f"variant:{spec.location}"

    def open(self, spec, *, embedding_dim=None, create=False, device=None):
        path = Path(spec.location)
        store = VariantInMemoryDocumentStore(embedding_similarity_function="cosine")
        if path.exists():
            store.write_documents([Document.from_dict(d) for d in read_json(path)["documents"]])
        elif not create:
            raise FileNotFoundError(f"no store at {path}")
        return store  # saved as the memory kind saves (`MemoryKind.save`: atomically)

    def owns(self, store):
        return isinstance(store, VariantInMemoryDocumentStore)


@pytest.fixture
def variant():
    kind = register(VariantKind())
    yield kind
    KINDS.pop(kind.name)


def test_a_fifth_kind_declared_as_one_object_works_through_the_same_calls(variant, tmp_path):
    spec = parse_store_spec(f"variant:{tmp_path / 'v.json'}")
    assert spec.store_kind is variant and str(spec) == f"variant:{tmp_path / 'v.json'}"
    with pytest.raises(FileNotFoundError):
        open_document_store(spec)
    with store_lock(spec, wait=0):
        assert lock_path(spec) == tmp_path / ".v.json.cfrag-lock" and lock_path(spec).exists()
        store = open_document_store(spec, create=True)
        store.write_documents([Document(id="rain", content="Rain causes floods.", embedding=[1.0, 0.0]),
                               Document(id="sun", content="Sun dries roads.", embedding=[0.0, 1.0])])
        save_document_store(store, spec)
    assert not lock_path(spec).exists()
    again = open_document_store(spec)
    assert type(again) is VariantInMemoryDocumentStore and kind_of(again) is variant and again.count_documents() == 2
    found = embedding_retriever(again, top_k=1).run(query_embedding=[0.9, 0.1])["documents"]
    assert [d.id for d in found] == ["rain"]
    assert keyword_store(again) is again  # BM25 in memory reads it as it is
    assert delete_documents(again, ["sun", "missing"]) == 1 and again.count_documents() == 1
    close_document_store(again)
    assert kind_of(InMemoryDocumentStore()).name == "memory"  # the shipped kind keeps its own stores


@pytest.mark.parametrize("spec_of", [lambda p: f"faiss:{p / 'store'}", lambda p: str(p / "store.json"),
                                     lambda p: f"qdrant:{p / 'q'}"])
def test_e6_a_fifo_at_the_lock_file_is_one_line_naming_the_file_and_the_store(tmp_path, spec_of):
    spec = parse_store_spec(spec_of(tmp_path))
    os.mkfifo(lock_path(spec))
    with pytest.raises(ValueError) as caught, store_lock(spec, wait=0):
        pass
    message = str(caught.value)
    assert "\n" not in message and str(lock_path(spec)) in message and str(spec) in message, message
    assert "a FIFO (named pipe)" in message and "nothing written" in message
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())  # nothing else was written


def test_a_link_at_the_lock_file_is_refused_and_its_target_left_alone(tmp_path):
    spec = parse_store_spec(f"faiss:{tmp_path / 'store'}")
    target = tmp_path / "precious.txt"
    target.write_text("mine", encoding="utf-8")
    lock_path(spec).symlink_to(target)
    with pytest.raises(ValueError, match=r"cfrag-lock is a link, not a lock file"), store_lock(spec, wait=0):
        pass
    assert target.read_text(encoding="utf-8") == "mine"


def test_a_pipeline_file_naming_the_faiss_gpu_classes_where_they_were_still_loads():
    from haystack_cfrag.pipelines import renamed_types

    old = {"type": "haystack_cfrag.stores.faiss_gpu.GpuFAISSEmbeddingRetriever",
           "init_parameters": {"document_store": {"type": "haystack_cfrag.stores.faiss_gpu.GpuFAISSDocumentStore"}}}
    new = renamed_types(old)
    assert new["type"] == "haystack_cfrag.stores.kinds.faiss_gpu.GpuFAISSEmbeddingRetriever"
    store_type = new["init_parameters"]["document_store"]["type"]
    assert store_type == "haystack_cfrag.stores.kinds.faiss_gpu.GpuFAISSDocumentStore"
