"""`modelplane render`: reconcile manifests to a fixed point with the embedded control plane."""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    from modelplane.local.output import deletion_comments, dump_yaml, write_json

    if output == "tree":
        from modelplane.local.tree import render_tree

        _console().print(render_tree(result))
    elif output == "json":
        # JSON has no comments: the deletion order goes to stderr.
        for line in deletion_comments(result):
            click.echo(line, err=True)
        # Streamed: the whole text of a large fleet never sits in memory at once.
        write_json(result.store.objects(), sys.stdout.write)
        sys.stdout.flush()
    else:
        for line in deletion_comments(result):
            click.echo(line)
        click.echo(dump_yaml(result.store.objects()), nl=False)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while the render runs and prints, as it was after.

    A render builds about a million containers that live to its end and form
    next to no cycles: at 1,000 clusters the collector's passes walked them some
    thirty times (0.6–0.8 s of CPU) and freed nothing. What cycles there are
    go at a later full pass. `main.GC_THRESHOLDS` spaces the passes of the
    rest of the command.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Into the oldest generation without a pass (`freeze`, then `unfreeze`):
        # otherwise the next young-generation pass would walk them all at once.
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


def _reconcile(
    objects: list[dict[str, Any]],
    deletes: tuple[str, ...],
    max_rounds: int,
    simulate: bool,
    function_package: str | None,
) -> RenderResult:
    """Render to a fixed point; with `deletes`, delete those objects and render again.

    Every call gets the step input `package build --function-package` writes.
    """
    from modelplane.api import constants as c
    from modelplane.api.function_input import function_input
    from modelplane.local import ControlPlane
    from modelplane.local.deletion import resolve

    progress = Progress() if _stderr_is_terminal() else None
    try:
        step_input = function_input(function_package or c.FUNCTION_PACKAGE)
        plane = ControlPlane(objects, simulate=simulate, function_input=step_input)
        result = plane.run(max_rounds, progress)
        if not deletes:
            return result
        try:
            keys = [resolve(plane.store, ref) for ref in deletes]
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="'--delete'") from None
        plane.delete(*keys)
        return plane.run(max_rounds, progress)
    finally:
        if progress is not None:
            progress.done()


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
@click.option(
    "--delete",
    "deletes",
    multiple=True,
    metavar="KIND/[NAMESPACE/]NAME",
    help=(
        "After the fixed point, delete this object (repeatable; KIND may be Kind.group), "
        "render to a fixed point again and show the deletion order in waves."
    ),
)
@click.option(
    "--function-package",
    default=None,
    metavar="REF",
    help="The repository the package was built for (`package build --function-package`; "
    "default: the default package's): hydration Jobs and inventory agents run its image.",
)
def render(
    paths: tuple[str, ...],
    output: str | None,
    output_dir: Path | None,
    max_rounds: int,
    no_simulate: bool,
    deletes: tuple[str, ...],
    function_package: str | None,
) -> None:
    """Reconcile the manifests under PATH... in-process, as Crossplane would, and show the result.

    Every YAML document under the paths is loaded (directories recursively).
    Composite resources are reconciled through the same function `modelplane
    function serve` runs, until a round changes nothing. With --delete, the
    named objects are then deleted the way Kubernetes and Crossplane would
    (garbage collection, held back by Usages) and the render continues to a
    fixed point; a deletion that can never finish is an error naming what
    blocks it. What the simulation did not do as a render fixture asked (a
    `signals` fixture on a cluster whose agent scrapes no engine metrics) is
    a warning on stderr.
    """
    from modelplane.local import LoadError, NotConvergedError, load_paths
    from modelplane.local.output import write_output_dir

    try:
        objects = load_paths(paths)
    except LoadError as err:
        raise click.ClickException(str(err)) from None
    with _collector_paused():
        try:
            result = _reconcile(objects, deletes, max_rounds, not no_simulate, function_package)
        except NotConvergedError as err:
            if output_dir is not None:
                write_output_dir(err.result, output_dir)
            raise click.ClickException(str(err)) from None
        if output_dir is not None:
            write_output_dir(result, output_dir)
        _emit(result, output or ("tree" if sys.stdout.isatty() else "yaml"))
    for warning in result.warnings:
        # On stderr in every format: the objects on stdout stay as they are.
        click.echo(f"Warning: {warning}", err=True)
    if result.stuck:
        raise click.ClickException("the deletion cannot finish:\n  " + "\n  ".join(result.stuck))
