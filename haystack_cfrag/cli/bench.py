"""`cfrag bench`: the methods' non-generative stages timed at several candidate counts (each family's benchmark)."""

from __future__ import annotations

import click

from haystack_cfrag import models
from haystack_cfrag.cli.checks import FloatRange, check_model_spec
from haystack_cfrag.common.parameters import clip, parse_integer
from haystack_cfrag.registry import benchmarks


@click.command()
@click.option("--sizes", default="20,60,200", show_default=True, help="Candidate document counts.")
@click.option("--draft-seconds", type=FloatRange(), default=None,
              help="Time of one draft generation to compare with; default: measure one with --llm.")
@click.option("--llm", default=models.EMBEDDED_LLM, show_default=True)
def bench(sizes: str, draft_seconds: float | None, llm: str) -> None:
    """Time the methods' non-generative stages (CF-RAG's dedup, stratifier, arbitration) at several candidate counts."""
    try:
        counts = tuple(parse_integer(x) for x in sizes.split(","))
    except ValueError as exc:
        raise click.BadParameter(f"'{clip(sizes)}' is not a comma-separated list of integers",
                                 param_hint="--sizes") from exc
    if not counts or min(counts) < 1:
        raise click.BadParameter("every size must be an integer ≥ 1", param_hint="--sizes")
    if draft_seconds is not None and not 0 < draft_seconds < float("inf"):
        raise click.BadParameter("must be a number of seconds > 0", param_hint="--draft-seconds")
    if draft_seconds is None:
        check_model_spec(llm, "--llm")
    for family, run in benchmarks().items():
        click.echo(f"{family}:\n{run(counts, draft_seconds, llm)}")


__all__ = ["bench"]
