"""Issue 71, item 4: the kill and concurrency tests of `test_index_safety.py` on pgvector (the tests' own
Postgres, `tests/integration/pg.py`) and on Qdrant's local mode (a folder): a run killed (SIGKILL) at each
named point of `cfrag index --graph` is finished by the next, which ends in the state a clean build gives
(the same passages, meta and vectors, the same graph tables, one node vector per node); two runs into one
store at once keep every passage once.

Each `cfrag index` is a child process with the tests' fakes (`tests.unit.indexing.child`: hashing embedders, a
word-graph extractor, no model), killed by its own hook at the point named. What stays unguarded (two machines
writing one Qdrant server, a FAISS store on NFS) is in docs/reliability.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from tests.integration.test_index_safety import ROOT, _corpus, _env, child

POINTS = ["passages embedded", "passages saved", "graph batch merged@2", "node vectors embedded@2",
          "node vectors saving", "node vectors saved"]
"""Every point of `haystack_cfrag.stores.checkpoints` (its second time, where it comes once a batch)."""


@pytest.fixture(scope="module", params=["pgvector", "qdrant"])
def new_store(request, tmp_path_factory):
    """A function that gives the spec of a new, empty store of the kind each time it is called."""
    if request.param == "pgvector":
        pytest.importorskip("haystack_integrations.document_stores.pgvector")
        server = request.getfixturevalue("pg_server")  # the session's Postgres (a skip: pgvector cannot run)

        def make() -> str:
            name = "k_" + uuid.uuid4().hex[:12]
            server.psql(f"CREATE DATABASE {name};")
            return f"pgvector:{server.get_uri(name)}#docs"
    else:
        pytest.importorskip("haystack_integrations.document_stores.qdrant")

        def make() -> str:
            return f"qdrant:{tmp_path_factory.mktemp('qdrant') / 'store'}#docs"
    return make


def _rounded(vector) -> list[float]:
    return [round(float(x), 5) for x in vector or []]


def state(spec: str) -> dict:
    """The store and its graph as data: passages (content, meta, vector), graph tables, node vectors by id."""
    from haystack_cfrag.causal_rag.stored_graph import graph_home
    from haystack_cfrag.stores import close_document_store, open_document_store

    store = open_document_store(spec)
    try:
        passages = {d.id: (d.content, json.dumps(d.meta, sort_keys=True), _rounded(d.embedding))
                    for d in store.filter_documents()}
    finally:
        close_document_store(store)
    home = graph_home(spec)
    tables = home.tables()
    try:
        cursor = tables.connection.cursor()
        rows = {}
        for name in ("nodes", "edges", "passages"):
            cursor.execute(f"SELECT * FROM {tables.t[name]}")
            rows[name] = sorted((tuple(r) for r in cursor.fetchall()), key=repr)
        meta = tables.meta()
    finally:
        tables.close()
    nodes = open_document_store(home.nodes)
    try:
        node_docs = {d.id: (d.content, _rounded(d.embedding)) for d in nodes.filter_documents()}
    finally:
        close_document_store(nodes)
    assert all(vector for _, vector in node_docs.values()), "a node without its vector"
    return {"passages": passages, "tables": rows, "nodes": node_docs,
            "meta": {k: meta.get(k) for k in ("nodes", "edges", "passages", "state")}}


@pytest.fixture(scope="module")
def built(new_store, tmp_path_factory):
    """Corpus files, and the clean build of `index A B --graph` over a store that held A with its graph."""
    tmp = tmp_path_factory.mktemp("built")
    files = (_corpus(tmp / "corpus", "a", 8, 0), _corpus(tmp / "corpus", "b", 9, 8))
    spec = new_store()
    for args in (files[:1], files):
        done = child(tmp, "never", *args, "--store", spec, "--graph")
        assert done.returncode == 0, done.stderr
    clean = state(spec)
    assert clean["meta"]["state"] == "complete" and len(clean["passages"]) == 17
    return {"tmp": tmp, "files": files, "clean": clean}


@pytest.mark.parametrize("point", POINTS)
def test_a_run_killed_at_each_point_is_finished_by_the_next_as_a_clean_build(built, new_store, point):
    spec = new_store()
    a, b = built["files"]
    assert child(built["tmp"], "never", a, "--store", spec, "--graph").returncode == 0  # the store holds A
    killed = child(built["tmp"], point, a, b, "--store", spec, "--graph")
    assert killed.returncode == -9, (killed.stdout, killed.stderr)  # died where named, by SIGKILL
    rerun = child(built["tmp"], "never", a, b, "--store", spec, "--graph")
    assert rerun.returncode == 0, rerun.stderr
    assert state(spec) == built["clean"]


def test_two_concurrent_index_runs_into_one_store_keep_every_passage_once(new_store, tmp_path):
    corpus = tmp_path / "corpus"
    shared = _corpus(corpus, "shared", 3, 40)
    own = [_corpus(corpus, f"w{i}", 4, 10 * i) for i in range(2)]
    seed = _corpus(corpus, "seed", 2, 60)
    spec = new_store()
    assert child(tmp_path, "never", seed, "--store", spec).returncode == 0
    # each child waits after its embedding until both are there: without a lock, both read the store first
    env = _env(tmp_path, CHILD_BARRIER=f"{tmp_path / 'barrier'}:2:10")
    procs = [subprocess.Popen([sys.executable, "-m", "tests.unit.indexing.child", "never", "--", "index",
                               str(shared), str(mine), "--store", spec, "--wait", "300"]
                              + (["--graph"] if i == 0 else []),
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, mine in enumerate(own)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    expected = ({f"seed-{i}" for i in range(2)} | {f"shared-{i}" for i in range(3)}
                | {f"w{w}-{i}" for w in range(2) for i in range(4)})
    final = child(tmp_path, "never", seed, shared, *own, "--store", spec, "--graph")
    assert final.returncode == 0, final.stderr
    assert f"0 added, 0 replaced, 0 removed, {len(expected)} kept" in final.stdout, final.stdout
    after = state(spec)
    assert sorted(after["passages"]) == sorted(expected)  # every passage once, none lost
    assert {r[0] for r in after["tables"]["passages"]} == expected and after["meta"]["state"] == "complete"
    assert len(after["nodes"]) == len(after["tables"]["nodes"])

