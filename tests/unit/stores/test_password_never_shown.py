"""Issue 71, item 3 and E5: a store spec's password never reaches a string.

The password is taken out of the spec when it is parsed and held as a Haystack `Secret`
(`stores.specs.StoreSpec.password`), so what is made from the spec cannot hold it. The property: for any
password (spaces, quotes, '@', '#', unicode; 1-500 characters), written raw, percent-encoded or as a
``password=`` parameter, every error message, log record, repr and serialisation of the store-opening
paths is the same as for another password (and so holds none of it): parsing, the CLI's check, opening
(a closed local port: connection refused), locking, the stored graph, `CausalGraphRetriever`'s `to_dict`
and the pgvector store's. No Postgres is needed. E5 (a password with a space after 100 characters printed
whole) is among the examples.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from haystack_cfrag.stores import open_document_store, parse_store_spec

pytest.importorskip("psycopg")
E5 = "p" * 101 + " and then the rest"
PASSWORDS = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=500) | st.text(
    st.sampled_from(" '\"@#:/?&=%\\é日🙂"), min_size=1, max_size=40)
VARIABLE = re.compile(r"CFRAG_[A-Z_]+_[0-9A-F]{10}")
_warm: list[object] = []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = _closed_port()  # nothing listens: every connection is refused at once


def _forms(password: str) -> list[str]:
    encoded = quote(password, safe="")
    return [f"pgvector:postgresql://me:{password}@127.0.0.1:{PORT}/rag#docs",
            f"pgvector:postgresql://me:{encoded}@127.0.0.1:{PORT}/rag#docs",
            f"pgvector:postgresql://me@127.0.0.1:{PORT}/rag?sslmode=disable&password={encoded}#docs"]


def _said(call) -> str:
    """What `call` returns or raises, as text (the error's type and message, and its cause's)."""
    try:
        return repr(call())
    except Exception as exc:  # noqa: BLE001  (any error is what a user sees)
        cause = exc.__cause__ or exc.__context__
        return f"{type(exc).__name__}: {exc}" + (f" <- {type(cause).__name__}: {cause}" if cause else "")


def _everything(text: str) -> list[str]:
    """Every string the opening paths make from the spec `text`."""
    import click

    from haystack_cfrag.causal_rag import CausalGraphRetriever
    from haystack_cfrag.causal_rag.stored_graph import graph_home, open_stored_graph
    from haystack_cfrag.cli.checks import check_store_spec
    from haystack_cfrag.stores.lock import store_lock

    def check(create):
        try:
            return str(check_store_spec(text, create=create))
        except click.BadParameter as exc:
            return exc.format_message()

    def locked():
        with store_lock(text, wait=0):
            return "locked"

    def retriever():
        made = CausalGraphRetriever(graph=text)
        data = made.to_dict()
        return json.dumps(data) + repr(CausalGraphRetriever.from_dict(data).to_dict())

    said = [_said(lambda: parse_store_spec(text)), _said(lambda: str(parse_store_spec(text))), check(False),
            check(True), _said(lambda: open_document_store(text)), _said(locked), _said(lambda: graph_home(text)),
            _said(lambda: open_stored_graph(text)), _said(retriever)]
    try:
        spec = parse_store_spec(text)
    except ValueError:
        return said
    try:
        from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
    except ImportError:
        return said
    store = PgvectorDocumentStore(connection_string=spec.store_kind.secret(spec), table_name=spec.name,
                                  embedding_dimension=4)  # made, never connected
    return [*said, json.dumps(store.to_dict())]


def _seen(password: str, caplog) -> list[str]:
    if not _warm:  # the first opening imports modules, which log: not what the password changes
        _warm.append(_everything(_forms("warm-up")[0]))
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        said = [line for text in _forms(password) for line in _everything(text)]
    logged = [f"{r.name}: {r.getMessage()} {r.exc_text or ''}" for r in caplog.records]
    return [VARIABLE.sub("CFRAG_VARIABLE", line) for line in said + logged]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(password=PASSWORDS)
@example(password=E5)
@example(password="s3cr@t-P4ss")
@example(password="a#b")
@example(password="x" * 500)
@example(password="Postgres")
def test_no_password_reaches_a_message_a_log_record_or_a_serialisation(password, caplog, monkeypatch):
    monkeypatch.delenv("PG_CONN_STR", raising=False)
    seen = _seen(password, caplog)
    # a URL refuses a raw '@', '/' or white space in a password (libpq would misread it): the same message for any
    refused = bool(re.search(r"[@/\s]", password))
    reference = _seen("R3F@X" if refused else "R3FERENCE", caplog)
    assert seen == reference  # nothing said depends on the password …
    if password not in "\n".join(reference):  # … so none of it is said (unless it is a word said anyway: "Postgres")
        assert not [line for line in seen if password in line]


def test_e5_a_password_with_a_space_after_100_characters_is_never_printed(caplog):
    seen = _seen(E5, caplog)
    assert not [line for line in seen if "p" * 30 in line or "and then the rest" in line]
    assert any("cannot be reached" in line and "Connection refused" in line for line in seen), seen


# moved from tests/unit/common/test_redaction.py with the check they test (was `check_postgres_url`, now the parse)
RAW_AT, PASSWORD = "s3cr@t-P4ss", "s3cr3t-P4ss"


def leaked(text: str) -> list[str]:
    return [piece for piece in (PASSWORD, "s3cr3t", "P4ss", "s3cr@t", "t-P4ss") if piece in text]


@pytest.mark.parametrize("url", [f"postgresql://me:{RAW_AT}@db/x", "postgresql://me:s3cr/t-P4ss@db/x",
                                 f"postgresql://me:{PASSWORD}@[::1", "postgresql://me:s3cr3t P4ss@db/x"])
def test_a_url_libpq_would_misread_or_refuse_is_refused_redacted(url):
    with pytest.raises(ValueError) as caught:
        parse_store_spec(f"pgvector:{url}")
    assert leaked(str(caught.value)) == [] and "\n" not in str(caught.value)


def test_a_well_formed_url_passes_the_check():
    assert parse_store_spec(f"pgvector:postgresql://me:{PASSWORD}@db:5432/x").password.resolve_value() == PASSWORD
    assert parse_store_spec("pgvector:postgresql://me:s3cr%40t@db/x").password.resolve_value() == "s3cr@t"


def test_an_empty_password_is_no_password():  # pgserver's URLs: postgresql://postgres:@/DB?host=SOCKET
    spec = parse_store_spec("pgvector:postgresql://postgres:@/t_1?host=/tmp/s#docs")
    assert spec.password is None and str(spec) == "pgvector:postgresql://postgres@/t_1?host=/tmp/s#docs"
