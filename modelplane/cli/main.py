"""The `modelplane` command: each subcommand lives in its own module."""

from __future__ import annotations

import click

from modelplane import __version__
from modelplane.cli import cel, explain, fleet, function, hydrate, package, render, validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="modelplane")
def cli() -> None:
    """Modelplane: place and serve open-weight models across a fleet of GPU clusters."""


cli.add_command(render.render)
cli.add_command(explain.explain)
cli.add_command(fleet.fleet)
cli.add_command(cel.cel)
cli.add_command(package.package)
cli.add_command(function.function)
cli.add_command(hydrate.hydrate)
cli.add_command(validate.validate)


def main() -> None:
    """Console-script entry point."""
    cli()
