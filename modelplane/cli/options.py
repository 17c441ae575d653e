"""Options several `modelplane` commands share, defined once."""

from __future__ import annotations

import click

DEFAULT_MAX_ROUNDS = 50

max_rounds_option = click.option(
    "--max-rounds",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ROUNDS,
    show_default=True,
    help="Fail when the objects still change after this many reconcile rounds.",
)
