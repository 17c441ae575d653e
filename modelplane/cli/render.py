"""`modelplane render`: reconcile manifests to a fixed point with the embedded control plane."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console

from modelplane.cli.options import max_rounds_option
from modelplane.local import ControlPlane, LoadError, NotConvergedError, RenderResult, load_paths
from modelplane.local.output import dump_json, dump_yaml, write_output_dir
from modelplane.local.tree import render_tree

# Piped tree output (CI logs, `make demo | less`) gets a comfortable width
# rather than rich's 80-column fallback; COLUMNS still wins when set.
PIPED_WIDTH = 140


def _console() -> Console:
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(soft_wrap=False, width=PIPED_WIDTH if piped else None)


def _emit(result: RenderResult, output: str) -> None:
    if output == "tree":
        _console().print(render_tree(result))
    elif output == "json":
        click.echo(dump_json(result.store.objects()), nl=False)
    else:
        click.echo(dump_yaml(result.store.objects()), nl=False)


@click.command("render")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "-o",
    "--output",
    type=click.Choice(["tree", "yaml", "json"]),
    default=None,
    help="Output format [default: tree on a terminal, yaml otherwise].",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write every object, and every manifest per workload cluster, under DIR.",
)
@max_rounds_option
@click.option(
    "--no-simulate",
    is_flag=True,
    help="Do not simulate providers and workload clusters (see what waits on what).",
)
def render(
    paths: tuple[str, ...],
    output: str | None,
    output_dir: Path | None,
    max_rounds: int,
    no_simulate: bool,
) -> None:
    """Reconcile the manifests under PATH... in-process, as Crossplane would, and show the result.

    Every YAML document under the paths is loaded (directories recursively).
    Composite resources are reconciled through the same function `modelplane
    function serve` runs, until a round changes nothing.
    """
    try:
        objects = load_paths(paths)
    except LoadError as err:
        raise click.ClickException(str(err)) from None
    try:
        result = ControlPlane(objects, simulate=not no_simulate).run(max_rounds)
    except NotConvergedError as err:
        if output_dir is not None:
            write_output_dir(err.result, output_dir)
        raise click.ClickException(str(err)) from None
    if output_dir is not None:
        write_output_dir(result, output_dir)
    _emit(result, output or ("tree" if sys.stdout.isatty() else "yaml"))
