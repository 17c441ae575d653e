"""`modelplane render`: reconcile manifests to a fixed point with the embedded control plane."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from modelplane.cli.options import max_rounds_option

if TYPE_CHECKING:
    from rich.console import Console

    from modelplane.local import RenderResult
    from modelplane.local.engine import RoundReport

# Piped tree output (CI logs, `make demo | less`) gets a comfortable width
# rather than rich's 80-column fallback; COLUMNS still wins when set.
PIPED_WIDTH = 140

PROGRESS_AFTER_SECONDS = 1.0
"""A render that takes longer than this shows its progress (on a terminal only)."""


def _console() -> Console:
    from rich.console import Console

    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(soft_wrap=False, width=PIPED_WIDTH if piped else None)


def _stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


class Progress:
    """One status line on stderr, rewritten after each round once a render takes a while."""

    def __init__(self, after: float | None = None) -> None:
        """Start the clock; nothing is shown before `after` seconds (PROGRESS_AFTER_SECONDS)."""
        self.started = time.monotonic()
        self.after = PROGRESS_AFTER_SECONDS if after is None else after
        self.shown = False

    def __call__(self, report: RoundReport) -> None:
        """Show what the round did and what is still changing."""
        elapsed = time.monotonic() - self.started
        if elapsed < self.after:
            return
        changing = ", ".join(str(k) for k in report.changed[:3])
        more = f" and {len(report.changed) - 3} more" if len(report.changed) > 3 else ""
        line = (
            f"round {report.round} ({elapsed:.0f}s): {report.reconciled} composites reconciled, "
            f"{report.skipped} unchanged; "
            + (f"still changing: {changing}{more}" if report.changed else "fixed point")
        )
        width = max(20, _terminal_columns() - 1)
        # Carriage return and erase-line: one line, rewritten (click.echo would
        # strip the escape when it thinks stderr is no terminal).
        sys.stderr.write("\r\x1b[K" + line[:width])
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        """Clear the status line, if one was shown."""
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _terminal_columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return 80


def _emit(result: RenderResult, output: str) -> None:
    from modelplane.local.output import dump_json, dump_yaml

    if output == "tree":
        from modelplane.local.tree import render_tree

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
    from modelplane.local import ControlPlane, LoadError, NotConvergedError, load_paths
    from modelplane.local.output import write_output_dir

    try:
        objects = load_paths(paths)
    except LoadError as err:
        raise click.ClickException(str(err)) from None
    progress = Progress() if _stderr_is_terminal() else None
    try:
        result = ControlPlane(objects, simulate=not no_simulate).run(max_rounds, progress)
    except NotConvergedError as err:
        if output_dir is not None:
            write_output_dir(err.result, output_dir)
        raise click.ClickException(str(err)) from None
    finally:
        if progress is not None:
            progress.done()
    if output_dir is not None:
        write_output_dir(result, output_dir)
    _emit(result, output or ("tree" if sys.stdout.isatty() else "yaml"))
