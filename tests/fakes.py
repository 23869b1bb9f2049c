"""The deterministic fakes of the tests live in the package (`haystack_cfrag.testing.fakes`), so that
shipped doctests run from an installed wheel too; this module keeps the tests' imports short."""

import ctypes
import signal
from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage

from haystack_cfrag.testing.fakes import *  # noqa: F403  (every public name)


class OutsideReader(KeywordReader):  # noqa: F405
    """A KeywordReader whose class lives here, in `tests`, outside the package's allowlist."""


class ReaderInterruptedWhileLoading(KeywordReader):  # noqa: F405
    """A KeywordReader whose load meets a Ctrl-C as llama.cpp's does: in a C callback, where ctypes swallows
    it (the interrupt is reported to `sys.unraisablehook`, not raised). Counts its calls."""

    def __init__(self, candidates: list[str]) -> None:
        super().__init__(candidates=candidates)
        self.loaded = False
        self.calls = 0

    def warm_up(self) -> None:
        ctypes.CFUNCTYPE(None)(lambda: signal.raise_signal(signal.SIGINT))()
        self.loaded = True

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict:
        self.calls += 1
        return KeywordReader.run(self, messages=messages)  # noqa: F405
