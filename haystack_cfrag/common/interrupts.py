"""Ctrl-C in `cfrag` and the evaluation runner: "Interrupted." and exit 130, not lost in a model load.

`held()` records SIGINT while modules import or models load (llama.cpp's load callback would swallow it) and
raises KeyboardInterrupt after the block; `warm_up(...)` loads components so. `clear_stale_interrupt_flag()`
clears CPython's flag that would turn exit 130 into death by SIGINT under `python -m`.

>>> with held():
...     pass  # a Ctrl-C here raises KeyboardInterrupt at the end of the block
"""

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

__all__ = ["caused_by_interrupt", "clear_stale_interrupt_flag", "held", "warm_up"]


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Record SIGINT during the block and raise KeyboardInterrupt after it; a no-op outside the main
    thread or where SIGINT is ignored or handled by someone else."""
    interrupted: list[int] = []
    previous = None
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous = signal.signal(signal.SIGINT, lambda signum, _frame: interrupted.append(signum))
    except ValueError:  # not the main thread: signals are not ours to handle
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise KeyboardInterrupt


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a Ctrl-C is behind `exc`: a pybind11 extension (scipy's, matplotlib's) imported while SIGINT arrives
    raises ImportError("initialization failed") from the KeyboardInterrupt.

    >>> try:
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt as stop:
    ...         raise ImportError("initialization failed") from stop
    ... except ImportError as exc:
    ...     caused_by_interrupt(exc), caused_by_interrupt(ValueError("x"))
    (True, False)
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def warm_up(*components: Any) -> None:
    """Warm each component that has `warm_up` with Ctrl-C held: llama.cpp's load would swallow it,
    so it takes effect once the models are loaded."""
    with held():
        for component in components:
            if hasattr(component, "warm_up"):
                component.warm_up()


def clear_stale_interrupt_flag() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" flag: every evaluation of a string resets it (it is
    set again only by an interrupt escaping that evaluation, and "pass" raises none)."""
    exec("pass")  # noqa: S102  (a constant string: the reset is the point)
