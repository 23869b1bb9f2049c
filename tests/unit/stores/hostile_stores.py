"""Helpers for the tests of issue 62's "opening a store never trusts it": stores and graphs made hostile, opened in
a bounded child process, and network services that accept and never answer (or answer as Ray).

`opened_in_child` runs one opening in a fresh Python under a 3 GB address-space limit and a wall-clock limit, and
reports its one-line error, its seconds and how much its resident memory grew: before the fix these cases hung
(a FIFO, a recursive view) or allocated what a header claimed, so a child is the only safe place to try them.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

ROOT = Path(__file__).resolve().parents[3]
ADDRESS_SPACE = 3_000_000_000
CHILD = r"""
import faulthandler, json, resource, sys, time
def rss():
    with open("/proc/self/status") as fh:
        return int(fh.read().split("VmRSS:")[1].split()[0]) * 1024
what, spec, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
from haystack_cfrag.causal_rag.stored_graph import open_stored_graph
from haystack_cfrag.stores import open_document_store
import faiss  # imported before the clock starts, as by the runtime
# the baseline is the peak so far: an import's transient peak above today's resident size is not the opening's
before, t0 = max(rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024), time.monotonic()
faulthandler.dump_traceback_later(limit, exit=True)  # a hang ends the child (exit 1, no report)
error = None
try:
    if what == "graph":
        open_stored_graph(spec)
    else:
        open_document_store(spec, faiss_device=-1)
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
faulthandler.cancel_dump_traceback_later()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"error": error, "seconds": time.monotonic() - t0, "grew": peak - before}))
"""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def opened_in_child(spec: str, *, what: str = "graph", timeout: float = 30, env: dict | None = None) -> dict:
    """Open `spec` (its stored graph, or with `what="store"` the store) in a bounded child: {"error", "seconds",
    "grew"} (bytes of resident memory the opening added), or {"timed_out": True} when the opening did not end
    within `timeout` seconds (counted from after the child's imports, which a busy machine slows)."""
    environment = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False", "HF_HUB_OFFLINE": "1", **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environment.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, what, spec, str(timeout)], capture_output=True,  # noqa: S603
                              text=True, timeout=timeout + 600, env=environment, preexec_fn=_limit, check=False,
                              cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"timed_out": True}
    lines = done.stdout.strip().splitlines()
    if not lines and "Timeout (" in done.stderr:  # faulthandler's watchdog ended it
        return {"timed_out": True}
    assert lines, done.stderr[-2000:]
    return json.loads(lines[-1])


def assert_refused_fast(result: dict, *parts: str, seconds: float = 5, grew: int = 200 << 20) -> str:
    """The opening ended in one line holding `parts`, within `seconds`, its memory grown by less than `grew`."""
    assert not result.get("timed_out"), "the opening did not end (a hang)"
    error = result["error"]
    assert error is not None, result
    assert result["seconds"] < seconds, result
    assert result["grew"] < grew, f"memory grew by {result['grew'] >> 20} MB: {error}"
    assert "\n" not in error, error
    for part in parts:
        assert part in error, (part, error)
    return error


# ------------------------------------------------------------------ stores with a stored graph
def graph_store(tmp_path: Path, kind: str = "memory") -> str:
    """A store with a finished stored graph beside it (one edge, two nodes), written without any model."""
    from haystack_cfrag.causal_rag.math.graph import Graph
    from haystack_cfrag.causal_rag.stored_graph import graph_home
    from haystack_cfrag.stores import close_document_store, open_document_store, save_document_store

    spec = f"memory:{tmp_path / 's.json'}" if kind == "memory" else f"faiss:{tmp_path / 's'}"
    store = open_document_store(spec, embedding_dim=4, create=True, faiss_device=-1)
    store.write_documents([Document(id="p1", content="Rain causes floods.", embedding=[1.0, 0, 0, 0])])
    save_document_store(store, spec)
    close_document_store(store)
    home = graph_home(spec)
    tables = home.tables(create=True)
    graph = Graph()
    graph.add_edge("Rain", "causes", "Flood", passage_id="p1")
    tables.merge(graph, [("p1", "h1")])
    counts = tables.counts()
    tables.set_meta(nodes=str(counts["nodes"]), edges=str(counts["edges"]), passages=str(counts["passages"]))
    tables.close()
    nodes = open_document_store(home.nodes, embedding_dim=4, create=True, faiss_device=-1)
    nodes.write_documents([Document(id=f"n{i}", content=name, embedding=[float(i), 1.0, 0, 0])
                           for i, name in enumerate(["Rain", "Flood"])], policy=DuplicatePolicy.OVERWRITE)
    save_document_store(nodes, home.nodes)
    return spec


def empty_memory_store(path: Path) -> None:
    from haystack_cfrag.stores import save_memory_store

    save_memory_store(InMemoryDocumentStore(), path)


# ------------------------------------------------------------------ network services
@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A TCP port that accepts every connection and never sends a byte (a host that never answers)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        server.close()


@contextlib.contextmanager
def grpc_server(methods: tuple[str, ...] = ()) -> Iterator[int]:
    """A gRPC server answering each of `methods` ("/package.Service/Method") with an empty message, nothing else
    (an empty `methods`: a gRPC service that is not Ray)."""
    from concurrent import futures

    import grpc

    handlers: dict[str, dict] = {}
    for method in methods:
        service, name = method.strip("/").split("/")
        handlers.setdefault(service, {})[name] = grpc.unary_unary_rpc_method_handler(lambda request, context: b"")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    for service, named in handlers.items():
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, named),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(0)
