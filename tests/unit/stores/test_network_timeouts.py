"""Issue 62, D7 and D19: a network store that accepts the connection and never answers is one line within seconds.

D7: libpq's `connect_timeout` defaults to waiting for ever, so a pgvector host that accepted the connection and
sent nothing hung `cfrag ask` and a YAML graph path (`CausalGraphRetriever(graph="pgvector:…")`). The test server
is a plain socket that accepts and never answers; the opening runs in a bounded child with the connect timeout at
libpq's minimum (2 s). D19: a `--ray-address` where a TCP service that is not Ray listens passed the check, the
store was written, then Ray retried for more than 150 s; now one gRPC question tells it apart, before anything
is written.
"""

import time

import click
import pytest
from click.testing import CliRunner

from .hostile_stores import assert_refused_fast, grpc_server, opened_in_child, silent_server

pytest.importorskip("psycopg")
FAST = {"CFRAG_PG_CONNECT_SECONDS": "2"}


@pytest.mark.parametrize("what", ["store", "graph"])
def test_d7_a_pgvector_host_that_never_answers_is_one_line_within_seconds(what):
    with silent_server() as port:
        spec = f"pgvector:postgresql://cfrag:s3cret@127.0.0.1:{port}/rag#docs"
        result = opened_in_child(spec, what=what, env=FAST)
    error = assert_refused_fast(result, f"127.0.0.1:{port}", "cannot be reached", seconds=8)
    assert "s3cret" not in error


def test_d7_every_postgres_connection_string_gets_a_connect_and_a_statement_timeout(monkeypatch):
    from psycopg.conninfo import conninfo_to_dict

    from haystack_cfrag.stores import parse_store_spec
    from haystack_cfrag.stores.kinds.pgvector import PGVECTOR, conninfo

    spec = parse_store_spec("pgvector:postgresql://u:p@h:5432/db")
    assert PGVECTOR.secret(spec).resolve_value() == conninfo(spec)
    assert "connect_timeout=10" in conninfo(spec) and "statement_timeout=300000" in conninfo(spec)
    monkeypatch.setenv("PG_CONN_STR", "host=h dbname=db")
    assert conninfo_to_dict(PGVECTOR.secret(parse_store_spec("pgvector:")).resolve_value()) == {
        "host": "h", "dbname": "db", "connect_timeout": "10", "options": "-c statement_timeout=300000"}
    assert conninfo_to_dict(conninfo(parse_store_spec("pgvector:postgresql://u:p@h:5432/db?connect_timeout=60"))) == {
        "user": "u", "password": "p", "host": "h", "port": "5432", "dbname": "db", "connect_timeout": "60",
        "options": "-c statement_timeout=300000"}


# ------------------------------------------------------------------ D19: Ray
def _check(address):
    from haystack_cfrag.cli.checks import check_ray_address

    started = time.monotonic()
    try:
        check_ray_address(address)
    except click.BadParameter as exc:
        return exc.format_message(), time.monotonic() - started
    return None, time.monotonic() - started


def test_d19_a_tcp_service_that_is_not_ray_is_refused_within_seconds():
    pytest.importorskip("grpc")
    with silent_server() as port:
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            message, seconds = _check(address)
            assert message and "is not a Ray cluster" in message and "\n" not in message, message
            assert seconds < 10, seconds


def test_d19_a_grpc_service_that_is_not_ray_is_refused_and_one_that_answers_as_ray_passes():
    pytest.importorskip("grpc")
    ray_methods = ("/ray.rpc.NodeInfoGcsService/GetClusterId", "/ray.rpc.RayletDriver/ClusterInfo")
    with grpc_server() as port:
        message, _ = _check(f"127.0.0.1:{port}")
        assert message and "a gRPC service that is not a Ray cluster's GCS" in message, message
    with grpc_server(ray_methods) as port:
        assert _check(f"127.0.0.1:{port}")[0] is None
        assert _check(f"ray://127.0.0.1:{port}")[0] is None


def test_d19_cfrag_index_refuses_a_service_that_is_not_ray_before_the_store_is_written(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.cli import app, main

    def loading(*_args, **_kwargs):
        raise RuntimeError("a model would load")

    monkeypatch.setattr(app, "_runtime", loading)
    monkeypatch.setattr(factories, "document_embedder", loading)
    (tmp_path / "a.txt").write_text("Christian Bale plays Batman.", encoding="utf-8")
    with silent_server() as port:
        result = CliRunner().invoke(main, ["index", str(tmp_path / "a.txt"), "--store", str(tmp_path / "s.json"),
                                           "--graph", "--engine", "ray", "--extractor", "spacy",
                                           "--ray-address", f"127.0.0.1:{port}"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "is not a Ray cluster" in lines[0], result.output
    assert not (tmp_path / "s.json").exists()
