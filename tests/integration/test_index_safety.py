"""Issue 62 (D14, D15): `cfrag index` into one store from several processes at once loses nothing, and a run
killed (SIGKILL) at any point of `cfrag index --graph` is finished by the next run, which ends in the state
a clean build gives: the same passages and vectors, the same graph tables, one node vector per node.

Before: two runs into one FAISS store at once both exited 0 and the store kept one run's passages (no
lock); a run killed during the graph's node embedding left the tables committed and their node vectors
unsaved, and the rerun said "0 nodes embedded" (4,964 of 7,090 vectors missing for good).

Each `cfrag index` here is a child process (`tests.unit.indexing.child`) with the tests' seeded fakes (hashing
embedders, a word-graph extractor in place of spaCy: no model loads), killed by its own hook at the point
named, so a kill lands at the same place on every run, never by a sleep race.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("faiss")
pytest.importorskip("haystack_integrations.document_stores.faiss")

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("river flood dam storm rain valley bridge road school market harvest drought engine signal "
         "factory worker wages price demand supply budget doctor fever vaccine outbreak teacher exam").split()


def _corpus(folder: Path, name: str, n: int, offset: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        k = offset + i
        words = [WORDS[(k * 3 + j) % len(WORDS)] for j in range(4)]
        text = f"The {words[0]} changed the {words[1]}; then {words[2]} and {words[3]} followed (case {k})."
        lines.append(json.dumps({"id": f"{name}-{i}", "source": name, "content": text}))
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HAYSTACK_TELEMETRY_ENABLED="False", HF_HUB_OFFLINE="1", CFRAG_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]), **extra)
    return env


def child(tmp_path: Path, stop: str, *args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`cfrag index ARGS` in a child, killed at `stop` (or `never`)."""
    return subprocess.run([sys.executable, "-m", "tests.unit.indexing.child", stop, "--", "index", *map(str, args)],
                          cwd=ROOT, env=env or _env(tmp_path), capture_output=True, text=True, timeout=600,
                          check=False)


def faiss_vectors(store) -> dict:
    """Document id -> the vector faiss-haystack's index holds for it (a node store keeps none in its documents)."""
    import faiss

    inner = faiss.downcast_index(store.index.index)
    if inner.ntotal == 0:
        return {}
    rows = dict(zip(faiss.vector_to_array(store.index.id_map).tolist(), inner.reconstruct_n(0, inner.ntotal),
                    strict=True))
    return {doc_id: rows[int_id] for int_id, doc_id in store.id_map.items() if int_id in rows}


def state(spec: str) -> dict:
    """The store and its graph as data: passages (content, meta, vector), graph tables, node vectors by id."""
    from haystack_cfrag.causal_rag.stored_graph import graph_home
    from haystack_cfrag.stores import close_document_store, open_document_store

    store = open_document_store(spec, faiss_device=-1)
    assert store.index.ntotal == store.count_documents(), "a vector no passage owns"
    passages = {d.id: (d.content, json.dumps(d.meta, sort_keys=True), [round(x, 5) for x in d.embedding])
                for d in store.filter_documents()}
    close_document_store(store)
    home = graph_home(spec)
    with sqlite3.connect(home.sqlite) as db:
        tables = {t: sorted(db.execute(f'SELECT * FROM "cfrag_graph_{t}"').fetchall())
                  for t in ("nodes", "edges", "passages")}
        meta = dict(db.execute('SELECT key, value FROM "cfrag_graph_meta"').fetchall())
    nodes = open_document_store(home.nodes, faiss_device=-1)
    assert nodes.index.ntotal == nodes.count_documents(), "a node vector no node owns"
    vectors = {i: [round(float(x), 5) for x in v] for i, v in faiss_vectors(nodes).items()}
    node_docs = {d.id: d.content for d in nodes.filter_documents()}
    close_document_store(nodes)
    return {"passages": passages, "tables": tables, "node_docs": node_docs, "node_vectors": vectors,
            "meta": {k: meta.get(k) for k in ("nodes", "edges", "passages", "state")}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Corpus files; a store holding A with its graph (the state each killed run starts from); the clean build
    of `index A B --graph` after it, and that of an edit of A (a rebuild of the graph) after it."""
    tmp = tmp_path_factory.mktemp("built")
    corpus = tmp / "corpus"
    a, b = _corpus(corpus, "a", 8, 0), _corpus(corpus, "b", 9, 8)
    base = tmp / "base" / "store"
    done = child(tmp, "never", a, "--store", f"faiss:{base}", "--graph")
    assert done.returncode == 0, done.stderr
    clean = tmp / "clean" / "store"
    shutil.copytree(base.parent, clean.parent)
    done = child(tmp, "never", a, b, "--store", f"faiss:{clean}", "--graph")
    assert done.returncode == 0, done.stderr
    edited = corpus / "edited"
    shutil.copytree(corpus, edited, ignore=shutil.ignore_patterns("edited"))
    lines = (edited / "a.jsonl").read_text().splitlines()
    lines[1] = json.dumps({"id": "a-1", "source": "a", "content": "The harvest failed after the drought; prices rose."})
    (edited / "a.jsonl").write_text("\n".join(lines[:6]) + "\n")  # a-1 changed, a-6 and a-7 gone
    base_edit = tmp / "base_edit" / "store"
    done = child(tmp, "never", edited / "a.jsonl", edited / "b.jsonl", "--store", f"faiss:{base_edit}", "--graph")
    assert done.returncode == 0, done.stderr
    clean_edit = tmp / "clean_edit" / "store"
    shutil.copytree(base_edit.parent, clean_edit.parent)
    (edited / "b.jsonl").write_text((edited / "b.jsonl").read_text().replace("case 9)", "case nine)"))
    edit_args = (edited / "a.jsonl", edited / "b.jsonl")
    done = child(tmp, "never", *edit_args, "--store", f"faiss:{clean_edit}", "--graph")
    assert done.returncode == 0, done.stderr
    return {"tmp": tmp, "files": (a, b), "base": base, "clean": state(f"faiss:{clean}"),
            "edit_args": edit_args, "base_edit": base_edit, "clean_edit": state(f"faiss:{clean_edit}")}


POINTS = ["embedding", "passages saved", "graph batch merged@3", "node vectors embedded@2", "node vectors saving",
          "node vectors saved"]


@pytest.mark.parametrize("point", POINTS)
def test_a_run_killed_at_any_point_is_finished_by_the_next_as_a_clean_build(built, tmp_path, point):
    store = tmp_path / "s" / "store"
    shutil.copytree(built["base"].parent, store.parent)
    spec = f"faiss:{store}"
    killed = child(built["tmp"], point, *built["files"], "--store", spec, "--graph")
    assert killed.returncode == -9, (killed.stdout, killed.stderr)  # died where named, by SIGKILL
    rerun = child(built["tmp"], "never", *built["files"], "--store", spec, "--graph")
    assert rerun.returncode == 0, rerun.stderr
    assert state(spec) == built["clean"]
    assert state(spec)["meta"]["state"] == "complete"


@pytest.mark.parametrize("point", ["graph batch merged@2", "node vectors embedded@3", "node vectors saving"])
def test_a_killed_rebuild_after_an_edit_is_finished_without_stale_node_vectors(built, tmp_path, point):
    store = tmp_path / "s" / "store"
    shutil.copytree(built["base_edit"].parent, store.parent)
    spec = f"faiss:{store}"
    killed = child(built["tmp"], point, *built["edit_args"], "--store", spec, "--graph")
    assert killed.returncode == -9, (killed.stdout, killed.stderr)
    rerun = child(built["tmp"], "never", *built["edit_args"], "--store", spec, "--graph")
    assert rerun.returncode == 0, rerun.stderr
    assert state(spec) == built["clean_edit"]


def test_d15_a_kill_during_node_embedding_leaves_no_node_without_its_vector(built, tmp_path):
    store = tmp_path / "s" / "store"
    shutil.copytree(built["base"].parent, store.parent)
    spec = f"faiss:{store}"
    assert child(built["tmp"], "node vectors embedded@4", *built["files"], "--store", spec, "--graph").returncode == -9
    rerun = child(built["tmp"], "never", *built["files"], "--store", spec, "--graph")
    line = [x for x in rerun.stdout.splitlines() if x.startswith("graph: ")][-1]
    assert "an unfinished run completed" in line and " 0 nodes embedded" not in line, line
    after = state(spec)
    assert set(after["node_docs"]) == set(after["node_vectors"]) and len(after["node_docs"]) == len(
        after["tables"]["nodes"]) == int(after["meta"]["nodes"])


@pytest.mark.parametrize("writers", [2, 4])
def test_d14_concurrent_index_runs_into_one_store_keep_every_passage_once(tmp_path, writers):
    corpus = tmp_path / "corpus"
    shared = _corpus(corpus, "shared", 3, 40)
    own = [_corpus(corpus, f"w{i}", 4, 10 * i) for i in range(writers)]
    spec = f"faiss:{tmp_path / 'store'}"
    seed = _corpus(corpus, "seed", 2, 60)
    assert child(tmp_path, "never", seed, "--store", spec).returncode == 0  # a store each run opens, as in D14
    # each child waits after its embedding until all are there (at most 10 s): without a lock, every run has
    # read the store before any saves, and the last save wins; with it, each waits for the one before
    env = _env(tmp_path, CHILD_BARRIER=f"{tmp_path / 'barrier'}:{writers}:10")
    procs = [subprocess.Popen([sys.executable, "-m", "tests.unit.indexing.child", "never", "--", "index", str(shared),
                               str(mine), "--store", spec, "--wait", "300"] + (["--graph"] if i % 2 == 0 else []),
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, mine in enumerate(own)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * writers, outs
    from haystack_cfrag.stores import open_document_store

    store = open_document_store(spec, faiss_device=-1)
    ids = [d.id for d in store.filter_documents()]
    expected = ({f"seed-{i}" for i in range(2)} | {f"shared-{i}" for i in range(3)}
                | {f"w{w}-{i}" for w in range(writers) for i in range(4)})
    assert sorted(ids) == sorted(expected) and store.index.ntotal == len(expected)
    final = child(tmp_path, "never", seed, shared, *own, "--store", spec, "--graph")  # the graph of everything, kept
    assert final.returncode == 0 and f"0 added, 0 replaced, 0 removed, {len(expected)} kept" in final.stdout, final
    graph = state(spec)
    assert {r[0] for r in graph["tables"]["passages"]} == expected and graph["meta"]["state"] == "complete"
    assert set(graph["node_docs"]) == set(graph["node_vectors"]) and len(graph["node_docs"]) == len(
        graph["tables"]["nodes"])


def test_d14_a_pgvector_table_has_one_writer_by_an_advisory_lock(pg_url, tmp_path):
    from haystack_cfrag.stores.lock import StoreBusy, store_lock

    spec = f"pgvector:{pg_url}#docs"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom haystack_cfrag.stores.lock import "
                               "store_lock\nwith store_lock(sys.argv[1]):\n    print('held', flush=True)\n"
                               "    time.sleep(120)\n", spec], cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match=rf"#docs is being written by another cfrag index \(pid {holder.pid}\)"):
            with store_lock(spec, wait=0.5):
                pass
        with store_lock(f"pgvector:{pg_url}#other", wait=0):  # another table: its own lock
            pass
    finally:
        holder.kill()
        holder.wait()
    with store_lock(spec, wait=10):  # the holder's session ended: its lock with it
        pass
