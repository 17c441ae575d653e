"""The local fleet's directory as the `modelplane dev` commands find it: there, and reachable."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from modelplane.dev.netns import Network


def require_fleet(directory: Path) -> None:
    """Refuse a directory that holds no fleet (no state file), saying how to make one."""
    from modelplane.dev.fleet import STATE_FILE

    if not (directory / STATE_FILE).is_file():
        raise click.ClickException(f"no fleet in {directory}: run `modelplane dev up` first")


def fleet_network(directory: Path) -> Network:
    """The fleet's network, refused when the fleet or its namespace is gone."""
    from modelplane.dev.fleet import Fleet

    require_fleet(directory)
    network = Fleet(directory).network
    if not network.exists():
        raise click.ClickException(
            f"the fleet network {network.name} is gone: run `modelplane dev up` again"
        )
    return network
