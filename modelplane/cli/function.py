"""`modelplane function` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.group("function")
def function() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
