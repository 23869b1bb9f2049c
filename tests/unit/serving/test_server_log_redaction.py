"""The server's log shows no password (issue 62, D8: `cfrag serve` logged a malformed URI's password three times)."""

from tests.unit.common.test_redaction import FORMS, leaked


def test_the_servers_log_patcher_redacts_messages_values_and_exceptions():
    from collections import namedtuple

    from haystack_cfrag.serving.app import shorten_log_record

    record_exception = namedtuple("RecordException", "type value traceback")  # loguru's shape
    record = {"message": f"store {FORMS[1][1]}", "extra": {"spec": FORMS[3][1]},
              "exception": record_exception(ValueError, ValueError(f"no table in {FORMS[2][1]}"), None)}
    shorten_log_record(record)
    shown = [record["message"], repr(record["extra"]["spec"]), str(record["exception"].value)]
    assert all(leaked(text) == [] for text in shown), shown
    assert "ValueError: no table in pgvector:postgresql://:***@" in shown[2]
