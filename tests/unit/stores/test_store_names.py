"""Issue 62, D9-D11: a store spec's names are checked when it is parsed, before anything is read, embedded or written.

Before: a long pgvector table name and a Qdrant collection name holding '/' or '..' were refused only after the
passages were embedded; `faiss:DIR/` wrote `DIR.faiss` beside the folder; `faiss:.` ended in pathlib's raw
"has an empty name". Each is now one line naming what is wrong, from `parse_store_spec` and from `cfrag index`
(exit 2, no model loaded, nothing written).
"""

import pytest
from click.testing import CliRunner

from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import app, main
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

URL = "postgresql://u:s3cret@db:5432/rag"
MAX_TABLE = 35  # kinds.pgvector.MAX_TABLE: 63 - len("_graph_vectors_keyword_index")
BAD = [
    # D9: a table whose graph's names ('…_graph_vectors_keyword_index') would pass Postgres's 63 characters
    (f"pgvector:{URL}#{'t' * (MAX_TABLE + 1)}", f"table name '{'t' * (MAX_TABLE + 1)}' is 36 characters, at most 35"),
    (f"pgvector:{URL}#{'x' * 60}", "is 60 characters"),
    # D9: Qdrant collections are folders of a local store: no '/', no '..'
    ("qdrant:stores/q#../escape", "collection name '../escape'"),
    ("qdrant:stores/q#a/b", "collection name 'a/b'"),
    ("qdrant:http://localhost:6333#..", "collection name '..'"),
    ("qdrant:stores/q#" + "c" * 101, "at most 100 characters"),
    # D10: a folder, not a store's name: its files would be written beside the folder
    ("faiss:stores/", "'stores/' ends with '/', a folder"),
    ("memory:stores/", "'stores/' ends with '/'"),
    # D11: '.' and '..' name no file
    ("faiss:.", "'.' names a folder, not a store"),
    ("faiss:..", "'..' names a folder"),
    ("faiss:stores/..#HNSW32", "'stores/..' names a folder"),
    ("qdrant:/", "'/' ends with '/'"),
    # an index kind the opening could not check
    ("faiss:stores/s#IVF100,Flat", "FAISS index 'IVF100,Flat' is not one cfrag can check"),
]


@pytest.mark.parametrize("spec, message", BAD)
def test_d9_d10_d11_a_bad_name_is_refused_by_the_parser_in_one_line(spec, message):
    with pytest.raises(ValueError) as info:
        parse_store_spec(spec)
    text = str(info.value)
    assert message in text and "\n" not in text and "s3cret" not in text, text


@pytest.mark.parametrize("spec, parsed", [
    (f"pgvector:{URL}#{'t' * MAX_TABLE}", StoreSpec("pgvector", URL, "t" * MAX_TABLE)),
    ("qdrant:stores/q/#my-docs.v2", StoreSpec("qdrant", "stores/q", "my-docs.v2")),  # a folder's '/' dropped
    ("faiss:stores/demo#HNSW32", StoreSpec("faiss", "stores/demo", "HNSW32")),
    ("faiss:./demo", StoreSpec("faiss", "./demo", "Flat")),
])
def test_good_names_still_parse(spec, parsed):
    assert parse_store_spec(spec) == parsed


def test_the_longest_table_name_is_the_one_whose_graph_names_fit_postgres():
    from haystack_cfrag.stores.kinds import pgvector

    assert pgvector.MAX_TABLE == MAX_TABLE == pgvector.PG_NAME_LIMIT - len("x" + pgvector.LONGEST_SUFFIX) + 1


@pytest.mark.parametrize("spec, message", [BAD[0], BAD[2], BAD[6], BAD[8]])
def test_d9_d10_d11_cfrag_index_refuses_before_any_model_loads_and_writes_nothing(tmp_path, monkeypatch, spec,
                                                                                 message):
    def loading(*_args, **_kwargs):
        raise RuntimeError("a model would load")

    monkeypatch.setattr(app, "_runtime", loading)
    monkeypatch.setattr(factories, "document_embedder", loading)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("Christian Bale plays Batman.", encoding="utf-8")
    result = CliRunner().invoke(main, ["index", "a.txt", "--store", spec])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert message in lines[0] and "s3cret" not in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
