"""The deterministic fakes of the tests live in the package (`haystack_cfrag.testing.fakes`), so that
shipped doctests run from an installed wheel too; this module keeps the tests' imports short."""

from haystack_cfrag.testing.fakes import *  # noqa: F403  (every public name)


class OutsideReader(KeywordReader):  # noqa: F405
    """A KeywordReader whose class lives here, in `tests`, outside the package's allowlist."""
