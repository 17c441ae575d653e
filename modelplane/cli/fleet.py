"""`modelplane fleet`: capacity and usage per cluster and pool, before a maintenance window.

Renders the manifests with the embedded control plane (as `render` and
`explain` do), reads the steady state through the typed readers and shows,
per cluster and pool: capacity, the devices each deployment holds, free
devices, draining replicas, the revisions each deployment runs per cluster,
what the clusters report as wrong (cloud stock-outs, hardware drift,
unschedulable replicas) and what-if suggestions — as a table, JSON or YAML,
and optionally as one self-contained HTML page (`--html FILE`).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from modelplane.cli.fleet_html import render_html
from modelplane.cli.fleet_view import ClusterView, DeploymentView, FleetView, PoolView, fleet_view
from modelplane.cli.options import max_rounds_option
from modelplane.local import ControlPlane, LoadError, NotConvergedError, load_paths


def _usage(p: PoolView) -> Text:
    by_deployment: dict[str, list[int]] = {}
    for u in p.used:
        held = by_deployment.setdefault(u.deployment, [0, 0])
        held[0] += u.devices
        held[1] += 1 if u.draining else 0
    text = Text()
    for i, (name, (devices, draining)) in enumerate(sorted(by_deployment.items())):
        text.append(("\n" if i else "") + f"{name} {devices}")
        if draining:
            text.append(f" ({draining} draining)", style="yellow")
    return text


def _alerts(cl: ClusterView, p: PoolView, first: bool) -> Text:
    """What the cluster reports as wrong: the pool's stock-out; on its first row the
    cluster's drift and unschedulable replicas."""
    text = Text()
    lines: list[tuple[str, str]] = []
    if p.stock_out:
        lines.append((p.stock_out, "red"))
    lines += [(f"drift: {d}", "yellow") for d in p.drift]
    if first and cl.drift and not any(q.drift for q in cl.pools):
        lines.append((f"drift: {cl.drift}", "yellow"))
    if first:
        lines += [(f"unschedulable: {s}", "red") for s in cl.unschedulable]
    for i, (line, style) in enumerate(lines):
        text.append(("\n" if i else "") + line, style=style)
    return text


def _pool_row(cl: ClusterView, p: PoolView, first: bool) -> list[Text | str]:
    cluster = Text(cl.name if first else "", style="" if cl.ready else "red")
    if first and not cl.ready:
        cluster.append(" (NotReady)")
    free = Text(str(p.free), style="red" if p.free < 0 else ("yellow" if p.free == 0 else "green"))
    hints = "\n".join(f"{s.deployment}: {s.text}" for s in p.suggestions)
    return [
        cluster,
        p.name,
        p.class_name,
        f"{p.nodes} × {p.devices_per_node}",
        str(p.capacity),
        _usage(p),
        free,
        _alerts(cl, p, first),
        Text(p.unknown or hints, style="yellow" if p.unknown else "green"),
    ]


def fleet_table(view: FleetView) -> Table:
    """One row per cluster × pool."""
    table = Table(title="Fleet: devices per cluster and pool", title_justify="left")
    for col in ("Cluster", "Pool", "Class", "Nodes × devices", "Capacity", "Used by", "Free"):
        table.add_column(col)
    table.add_column("Reported", overflow="fold")
    table.add_column("What if", overflow="fold")
    for cl in view.clusters:
        if not cl.pools:
            table.add_row(
                cl.name, "—", "", "", "0", "", "0", _alerts(cl, PoolView("", "", 0, 0, 0), True), ""
            )
        for i, p in enumerate(cl.pools):
            table.add_row(*_pool_row(cl, p, i == 0))
    return table


_DECISION_STYLE = {"Progressing": "yellow", "Paused": "yellow", "RolledBack": "red"}


def _rollout(d: DeploymentView) -> Text:
    """The rollout's decision and revision, then each cluster's revisions (replicas, ready)."""
    text = Text()
    if d.rollout is not None:
        text.append(d.rollout, style=_DECISION_STYLE.get(d.rollout, "green"))
        text.append(f" {d.revision}")
    for r in d.revisions:
        text.append(("\n" if text else "") + f"{r.cluster}: {r.revision} ×{r.replicas}")
        if r.ready < r.replicas:
            text.append(f" ({r.ready} ready)", style="yellow")
    return text


def deployments_table(view: FleetView) -> Table:
    """One row per deployment; its rollout and revisions per cluster; the unplaced ones with
    their best what-if answer."""
    table = Table(title="Deployments", title_justify="left")
    for col in ("Deployment", "Placed", "Ready", "Draining", "Unschedulable",
                "Rollout: revisions per cluster", "Unplaced: what if"):  # fmt: skip
        table.add_column(col, overflow="fold")
    for d in view.deployments:
        hint = "\n".join(d.what_if)
        if d.missing and not hint:
            hint = "no pool growth on an eligible cluster places it (see modelplane explain)"
        if d.quota:
            hint = "\n".join([*d.quota, hint]).strip()
        if d.preemption:
            hint = f"{hint}\nlatest preemption: {d.preemption}".strip()
        stuck = Text(str(d.unschedulable), style="red" if d.unschedulable else "")
        row: list[Text | str] = [
            d.name,
            f"{d.placed}/{d.desired}",
            str(d.ready),
            str(d.draining),
            stuck,
        ]
        table.add_row(*row, _rollout(d), hint)
    return table


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def cost_table(view: FleetView) -> Table:
    """Cost per hour of the devices held: per cluster (and its priced pools), per deployment.

    Only pools that declare `pricePerDeviceHour` (theirs or their class's) count;
    "—" marks what nothing prices.
    """
    table = Table(title="Cost per hour (devices held × pricePerDeviceHour)", title_justify="left")
    for col in ("Cluster or deployment", "Pool", "Price / device-hour", "Devices", "Cost / hour"):
        table.add_column(col)
    for cl in view.clusters:
        table.add_row(Text(cl.name, style="bold"), "", "", "", _money(cl.cost_per_hour))
        for p in cl.pools:
            kind = " (Spot)" if p.spot else ""
            table.add_row("", p.name + kind, _money(p.price), str(p.used_devices),
                          _money(p.cost_per_hour))  # fmt: skip
    for d in view.deployments:
        table.add_row(Text(d.name, style="bold"), "", "", "", _money(d.cost_per_hour))
    return table


@click.command("fleet")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the fleet view as one self-contained HTML page to FILE.",
)
@click.option(
    "--cost",
    "show_cost",
    is_flag=True,
    help="Also show what each deployment and each cluster costs per hour (priced pools).",
)
@max_rounds_option
def fleet(
    paths: tuple[str, ...], output: str, html_file: Path | None, show_cost: bool, max_rounds: int
) -> None:
    """Show capacity and usage per cluster and pool of the fleet under PATH...

    Per pool: nodes, device capacity, the devices each deployment's replicas
    hold (draining ones marked), free devices, and the smallest pool growth
    that would place each deployment's missing replicas. With --cost, what each
    cluster and each deployment costs per hour on priced pools.
    """
    try:
        store = ControlPlane(load_paths(paths)).run(max_rounds).store
    except (LoadError, NotConvergedError) as err:
        raise click.ClickException(str(err)) from None
    view = fleet_view(store)
    if html_file is not None:
        html_file.write_text(render_html(view), encoding="utf-8")
    if output == "json":
        click.echo(json.dumps(view.to_dict(), indent=2, sort_keys=True, ensure_ascii=False))
    elif output == "yaml":
        click.echo(yaml.safe_dump(view.to_dict(), sort_keys=True, allow_unicode=True), nl=False)
    else:
        console = Console(soft_wrap=False)
        console.print(fleet_table(view))
        console.print(deployments_table(view))
        if show_cost:
            console.print(cost_table(view))
