"""`modelplane package` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.group("package")
def package() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
