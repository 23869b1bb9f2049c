"""One-line accounts of exceptions, for the CLI and the served error bodies (no tracebacks, no pipelines)."""

from __future__ import annotations

MAX_CHARS = 300


def one_line(exc: BaseException) -> str:
    """`Type: message` on one line, at most 300 characters; a Haystack pipeline error names its component and cause.

    Haystack's `PipelineRuntimeError` spreads its message over several lines (and may carry the
    serialised pipeline); the useful part is the component's name and the error it raised.
    """
    component = getattr(exc, "component_name", None)
    root = exc
    while root.__cause__ is not None and root.__cause__ is not root:
        root = root.__cause__
    text = " ".join(str(root).split()) or type(root).__name__
    line = f"{type(root).__name__}: {text}"
    if component:
        line = f"component '{component}' failed: {line}"
    return line[:MAX_CHARS]
