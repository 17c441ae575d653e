"""`modelplane cel` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.group("cel")
def cel() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
