"""The `cfrag` command, one module per concern (`app`: the group, `ask`, `compare`; `checks`, `index`, `bench`,
`models`, `evaluate`, `gate`, `serve`). `main` is imported on first use with Ctrl-C held: "Interrupted.", exit 130.
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
