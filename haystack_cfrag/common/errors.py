"""One-line accounts of exceptions for the CLI and served error bodies, redacted before they are cut."""

from __future__ import annotations

from haystack_cfrag.common.redaction import redact

MAX_CHARS = 300
OPEN_ERRORS = (FileNotFoundError, ValueError, RuntimeError, OSError)
"""What a store, a graph or a model that cannot open raises: said as it is; any other error is unexpected."""


def one_line(exc: BaseException, *, typed: bool = True) -> str:
    """The message on one line, at most 300 characters, after `Type: ` when `typed`; redacted. A pipeline error:
    the component and its error; a several-line message with a cause: its first line, then the innermost cause.

    >>> try:
    ...     try:
    ...         raise ValueError("'top_k' must be in [1, 10], got 0")
    ...     except ValueError as cause:
    ...         raise RuntimeError("Couldn't deserialize component 'r' with the following data:\\n{...}") from cause
    ... except RuntimeError as error:
    ...     print(one_line(error, typed=False))
    Couldn't deserialize component 'r': ValueError: 'top_k' must be in [1, 10], got 0
    """
    component = getattr(exc, "component_name", None)
    if component:
        return f"component '{component}' failed: {one_line(root_cause(exc))}"[:MAX_CHARS]
    lines = str(exc).strip().splitlines()
    cause = root_cause(exc)
    if len(lines) > 1 and cause is not exc:  # Haystack's DeserializationError: its first line, then the cause
        head = lines[0].split(" with the following data:")[0].rstrip(":. ")
        text = squash(f"{squash(head, 120)}: {one_line(cause)}")
    else:
        text = squash(str(exc)) or type(exc).__name__
    return (f"{type(exc).__name__}: {text}" if typed else text)[:MAX_CHARS]


def error_line(exc: BaseException) -> str:
    """What `cfrag` prints after "Error: " when setting up fails: an `OPEN_ERRORS` message, else typed, with a hint."""
    if isinstance(exc, OPEN_ERRORS):
        return one_line(exc, typed=False)
    return f"{one_line(exc)} (`cfrag --debug …` shows the traceback)"


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of `exc`'s `__cause__` chain.

    >>> try:
    ...     try:
    ...         raise KeyError("top_k")
    ...     except KeyError as inner:
    ...         raise RuntimeError("could not build") from inner
    ... except RuntimeError as outer:
    ...     print(repr(root_cause(outer)))
    KeyError('top_k')
    """
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
    return exc


def squash(text: str, limit: int = MAX_CHARS) -> str:
    """`text` redacted and on one line (white space folded), at most `limit` characters (cut with '…').

    >>> squash("failed:\\n  postgresql://me:pw@db/x\\n")
    'failed: postgresql://me:***@db/x'
    """
    text = " ".join(redact(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
