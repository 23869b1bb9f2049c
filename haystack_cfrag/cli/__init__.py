"""The `cfrag` command, one module per concern.

- `app`: the command group and the question commands (`ask`, `compare`, `index`, `bench`, `models`);
- `checks`: argument checks that run before any model loads (one-line errors);
- `evaluate`: `cfrag eval`;
- `serve`: `cfrag serve` (Hayhooks with the fixed pipeline set, see docs/serving.md).

`python -m haystack_cfrag.cli` is the same as `cfrag`. `main` is imported on first use with
Ctrl-C held back until the imports are done (an interrupt in the middle of an import can leave
a half-made module behind): Ctrl-C then is "Interrupted." and exit 130, as it is later in a
command (`app._Main.invoke`), never a traceback.
"""

import signal
import sys
from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name != "main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    interrupted: list[int] = []
    previous = None
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where SIGINT is ignored or handled
            previous = signal.signal(signal.SIGINT, lambda signum, _frame: interrupted.append(signum))
    except ValueError:  # not the main thread: signals are not ours to handle
        previous = None
    try:
        from haystack_cfrag.cli.app import main  # noqa: PLC0415
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        sys.stderr.write("Interrupted.\n")
        raise SystemExit(130)
    globals()["main"] = main
    return main
