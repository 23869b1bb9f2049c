"""The `cfrag` command, one module per concern.

- `app`: the command group and the question commands (`ask`, `compare`, `index`, `bench`, `models`);
- `checks`: argument checks that run before any model loads (one-line errors);
- `evaluate`: `cfrag eval`;
- `serve`: `cfrag serve` (Hayhooks with the fixed pipeline set, see docs/serving.md).

`python -m haystack_cfrag.cli` is the same as `cfrag`.
"""

from haystack_cfrag.cli.app import main

__all__ = ["main"]
