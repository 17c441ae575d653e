"""The `modelplane` command: each subcommand lives in its own module.

Subcommand modules are imported only when their command runs: `modelplane
--help` or `modelplane cel eval` should not pay for gRPC, pydantic and the
embedded control plane. The listing in `--help` reads each command's one-line
summary from `COMMANDS` (a test keeps it equal to the command's own).
"""

from __future__ import annotations

import gc
import importlib
import os
from typing import Any

import click

from modelplane import __version__
from modelplane.api.memo import memos_from_environment

COMMANDS: dict[str, tuple[str, str]] = {
    "render": (
        "modelplane.cli.render:render",
        "Reconcile the manifests under PATH... in-process, as Crossplane would, and show the "
        "result.",
    ),
    "explain": (
        "modelplane.cli.explain:explain",
        "Explain where one ModelDeployment's replicas go, and why not elsewhere.",
    ),
    "cel": (
        "modelplane.cli.cel:cel",
        "Evaluate DRA device-selector CEL expressions (Kubernetes 1.34 semantics).",
    ),
    "package": (
        "modelplane.cli.package:package",
        "Generate the Crossplane package (XRDs, Compositions, metadata) from the API types.",
    ),
    "function": (
        "modelplane.cli.function:function",
        "The composition function Crossplane calls.",
    ),
    "rollout": (
        "modelplane.cli.rollout:rollout",
        "Show, pause, resume or undo a ModelDeployment's Progressive rollout.",
    ),
    "fleet": (
        "modelplane.cli.fleet:fleet",
        "Show capacity and usage per cluster and pool of the fleet under PATH...",
    ),
    "hydrate": (
        "modelplane.cli.hydrate:hydrate",
        "Stage a ModelCache artifact into a folder (what the hydration Job runs).",
    ),
    "inventory": (
        "modelplane.cli.inventory:inventory",
        "Report this cluster's nodes, devices and unschedulable replicas to the control plane.",
    ),
    "dev": (
        "modelplane.cli.dev:dev",
        "Run a real local fleet: Kubernetes, Crossplane and Modelplane as processes.",
    ),
    "validate": (
        "modelplane.cli.validate:validate",
        "Validate manifests offline: XRD schemas, CEL rules, selectors and references.",
    ),
}
"""Subcommand name → (`module:attribute` of its click command, its one-line summary)."""


class LazyGroup(click.Group):
    """A click group whose subcommands are imported when first looked up."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        """Create the group; `lazy` maps a name to (`module:attribute`, summary)."""
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every subcommand name, loaded or not."""
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand, importing its module on first use."""
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attribute = self.lazy[cmd_name][0].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the subcommands with their summaries, without importing them."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name) or click.Command(name, help=self.lazy[name][1])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="modelplane")
def cli() -> None:
    """Modelplane: place and serve open-weight models across a fleet of GPU clusters."""


GC_THRESHOLDS = (100_000, 50, 100)
"""The cyclic collector's thresholds for the command (CPython's are 700, 10, 10).

A render builds large trees of dicts and lists that hold no reference cycles
and live to the end; at CPython's defaults the collector walks them again
and again (a fifth of a 200-cluster render's CPU time). Cycles are still
collected, only less often.
"""


def main() -> None:
    """Console-script entry point."""
    gc.set_threshold(*GC_THRESHOLDS)
    memos_from_environment(os.environ)  # MODELPLANE_MEMOS=off: every memo derives afresh
    cli()
