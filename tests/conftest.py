import os
import signal

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
# The fakes used by the tests live in `haystack_cfrag.testing.fakes` (re-exported by `tests.fakes`)
# and in the `tests` package; let Haystack 3's deserialisation allowlist accept them in this test
# process only (the package itself never widens it).
os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "tests,haystack_cfrag.testing")


@pytest.fixture
def sigint_as_in_a_terminal():
    """Python's own SIGINT handler, as in a terminal: a job started in the background (nohup, `&`, some CI
    runners) inherits SIGINT ignored, where `haystack_cfrag.common.interrupts.held` rightly does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
