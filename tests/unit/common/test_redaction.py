"""One redaction for every message, log line and trace entry (issue 62, D8 and D18): no password leaves.

The four forms the probe printed a password for: a malformed URI, a `?password=` parameter, an
empty user name, a raw '@' in the password. Each is checked through `redact`, the one-line
error (`errors.one_line`) and the log filter (the server's loguru patcher: tests/unit/serving), and a trace's
degradations are one bounded, redacted line whatever the component put in them.
"""

import logging

import pytest

from haystack_cfrag.common.errors import MAX_CHARS, one_line
from haystack_cfrag.common.plumbing import degradation
from haystack_cfrag.common.redaction import HIDDEN, RedactingFilter, env_secret, redact

PASSWORD = "s3cr3t-P4ss"
RAW_AT = "s3cr@t-P4ss"

# (form, text holding the password, what must still be shown)
FORMS = [
    ("malformed URI", f"pgvector:postgresql:/me:{PASSWORD}@db.example/rag", "pgvector:"),
    ("?password= parameter", f"pgvector:postgresql://me@db.example/rag?sslmode=require&password={PASSWORD}",
     "postgresql://me@db.example/rag?sslmode=require&password=***"),
    ("empty user", f"pgvector:postgresql://:{PASSWORD}@db.example:5432/rag#docs", "postgresql://:***@db.example:5432/rag#docs"),
    ("raw @ in the password", f"pgvector:postgresql://me:{RAW_AT}@db.example/rag", "postgresql://me:***@db.example/rag"),
]


def leaked(text: str) -> list[str]:
    """The pieces of either password found in `text`."""
    return [piece for piece in (PASSWORD, "s3cr3t", "P4ss", "s3cr@t", "t-P4ss") if piece in text]


@pytest.mark.parametrize(("form", "text", "shown"), FORMS, ids=[f[0] for f in FORMS])
def test_each_form_of_password_is_hidden(form, text, shown):
    out = redact(f"Store spec '{text}': use pgvector:postgresql://USER:PASSWORD@HOST:PORT/DB[#TABLE].")
    assert leaked(out) == [], out
    assert shown in out and "postgresql://USER:PASSWORD@HOST:PORT/DB" in out  # the help text stays readable


@pytest.mark.parametrize(("form", "text", "shown"), FORMS, ids=[f[0] for f in FORMS])
def test_each_form_is_hidden_in_a_one_line_error_however_it_is_wrapped(form, text, shown):
    try:
        try:
            raise RuntimeError(f"connection failed:\n  {text!r}\n  {text}")
        except RuntimeError as inner:
            raise ValueError(f"No table 'docs' in {text}") from inner
    except ValueError as exc:
        for line in (one_line(exc), one_line(exc, typed=False)):
            assert leaked(line) == [] and "\n" not in line and len(line) <= MAX_CHARS, line


@pytest.mark.parametrize("text", [
    f"host=db password='{PASSWORD} x' user=me", f"host=db password={PASSWORD} user=me", f"PGPASSWORD={PASSWORD}",
    f"{{'password': '{PASSWORD}', 'host': 'db'}}", f'{{"password": "{PASSWORD}"}}',
    f"postgresql://me:{PASSWORD} x@db/x",
    f'unexpected spaces found in "{PASSWORD} x", use percent-encoded spaces (%20) instead',
])
def test_keyword_dsns_dicts_and_libpq_messages_are_hidden(text):
    assert leaked(redact(text)) == [] and HIDDEN in redact(text)


@pytest.mark.parametrize("text", ["faiss:stores/demo#HNSW32", "qdrant:http://localhost:6333#docs", "me@example.com",
                                  "openai:http://127.0.0.1:8080/v1#model", "postgresql://me@db:5432/rag#docs"])
def test_text_without_a_password_is_unchanged(text):
    assert redact(text) == text


def test_the_log_filter_redacts_messages_and_tracebacks(caplog):
    logger = logging.getLogger("tests.redaction")
    logger.addFilter(RedactingFilter())
    try:
        with caplog.at_level(logging.WARNING, logger="tests.redaction"):
            logger.warning("opening %s failed", FORMS[2][1])
            try:
                raise OSError(f"no store at {FORMS[3][1]}")
            except OSError:
                logger.exception("failed")
        assert leaked(caplog.text) == [] and "postgresql://:***@db.example" in caplog.text
    finally:
        logger.filters.clear()


def test_a_degradation_is_one_bounded_redacted_line():
    """D18: a failing scorer's whole error (a traceback of thousands of characters) was the gate's reason."""
    error = RuntimeError("llama_decode failed\n" + "Traceback (most recent call last):\n  frame\n" * 200
                         + f"while reading {FORMS[2][1]}")
    entry = degradation("gate", f"support scorer failed: {error!r}", error=repr(error), index=3)
    for text in (entry["reason"], entry["error"]):
        assert "\n" not in text and len(text) <= MAX_CHARS and leaked(text) == [], text
    assert entry["reason"].startswith("support scorer failed: RuntimeError('llama_decode failed")
    assert entry["stage"] == "gate" and entry["index"] == 3


def test_an_env_secret_serialises_by_name_only():
    secret = env_secret(FORMS[2][1], "CFRAG_TEST_SPEC")
    assert leaked(str(secret.to_dict())) == [] and secret.resolve_value() == FORMS[2][1]
