"""`modelplane explain` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.command("explain")
def explain() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
