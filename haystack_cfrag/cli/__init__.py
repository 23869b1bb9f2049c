"""The `cfrag` command, one module per concern.

- `app`: the command group and the question commands (`ask`, `compare`);
- `checks`: argument checks that run before any model loads (one-line errors);
- `index`: `cfrag index`;
- `bench`: `cfrag bench`;
- `models`: `cfrag models requirements` and `cfrag models check`;
- `evaluate`: `cfrag eval`;
- `serve`: `cfrag serve` (Hayhooks with the fixed pipeline set, see docs/serving.md).

`python -m haystack_cfrag.cli` is the same as `cfrag`. `main` is imported on first use with
Ctrl-C held back until the imports are done (`haystack_cfrag.common.interrupts.held`): Ctrl-C
then is "Interrupted." and exit 130, as it is later in a command (`app._Main.invoke`), never a
traceback.
"""

import sys
from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name != "main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from haystack_cfrag.common.interrupts import held  # noqa: PLC0415  (signal and contextlib only)

    try:
        with held():
            from haystack_cfrag.cli.app import main  # noqa: PLC0415
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        raise SystemExit(130) from None
    globals()["main"] = main
    return main
