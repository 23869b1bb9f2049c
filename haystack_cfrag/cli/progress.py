"""A one-line status on stderr while a pipeline runs (`Runtime.ask`'s `progress`): the stage and the seconds,
rewritten in place on a terminal; nothing on any other stream.

    >>> import io
    >>> status = StatusLine(io.StringIO())       # not a terminal: silent
    >>> status("drafter: draft 1"); status.done()
    >>> status.stream.getvalue()
    ''
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class StatusLine:
    """Rewrites one terminal line: `[label] stage (12 s)`; `done()` clears it."""

    def __init__(self, stream: TextIO | None = None, *, label: str = "", force: bool = False) -> None:
        """:param force: write even when the stream is not a terminal (tests)."""
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()

    def __call__(self, message: str) -> None:
        """Show `message` as the current stage."""
        if not self.enabled:
            return
        prefix = f"[{self.label}] " if self.label else ""
        self.stream.write(f"\r\033[K{prefix}{message} ({time.perf_counter() - self.start:.0f} s)")
        self.stream.flush()

    def done(self) -> None:
        """Clear the line (the next output starts on a clean line)."""
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
