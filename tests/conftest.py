import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
# The fakes used by the tests live in `haystack_cfrag.testing.fakes` (re-exported by `tests.fakes`)
# and in the `tests` package; let Haystack 3's deserialisation allowlist accept them in this test
# process only (the package itself never widens it).
os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "tests,haystack_cfrag.testing")
