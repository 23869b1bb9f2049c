"""One-line accounts of exceptions, for the CLI and the served error bodies (no tracebacks, no pipelines)."""

from __future__ import annotations

MAX_CHARS = 300


def one_line(exc: BaseException, *, typed: bool = True) -> str:
    """The message on one line, at most 300 characters, after `Type: ` when `typed`.

    Haystack's `PipelineRuntimeError` spreads its message over several lines (and may carry the
    serialised pipeline): for it, the component's name and the error that component raised.
    """
    component = getattr(exc, "component_name", None)
    if component:
        root = exc
        while root.__cause__ is not None and root.__cause__ is not root:
            root = root.__cause__
        return f"component '{component}' failed: {one_line(root)}"[:MAX_CHARS]
    text = squash(str(exc)) or type(exc).__name__
    return (f"{type(exc).__name__}: {text}" if typed else text)[:MAX_CHARS]


def squash(text: str) -> str:
    """`text` on one line (white space folded), at most 300 characters."""
    return " ".join(text.split())[:MAX_CHARS]
