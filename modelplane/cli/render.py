"""`modelplane render` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.command("render")
def render() -> None:
    """Not implemented yet."""
    raise click.ClickException("not implemented yet")
