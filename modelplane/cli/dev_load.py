"""`modelplane dev load`: a bounded load on a ModelService of the local fleet, and its numbers."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from modelplane.api import constants as c
from modelplane.cli.dev_fleet import fleet_network, require_fleet
from modelplane.dev import load
from modelplane.kube.client import KubeError


def service_address(directory: Path, name: str, namespace: str) -> str:
    """A ModelService's `status.address`, read from the fleet's control plane."""
    from modelplane.dev.fleet import CONTROL_PLANE, State

    require_fleet(directory)
    try:
        svc = (
            State.load(directory)
            .api(CONTROL_PLANE)
            .get(c.API_VERSION, "ModelService", name, namespace)
        )
    except (KubeError, OSError) as err:
        raise click.ClickException(f"cannot read ModelService {namespace}/{name}: {err}") from err
    address = ((svc or {}).get("status") or {}).get("address")
    if not address:
        raise click.ClickException(f"ModelService {namespace}/{name} has no address yet")
    return str(address)


def _watch(tally: load.Tally, total: int, done: threading.Event) -> None:
    """Show sent, finished and failed requests on stderr until `done`."""
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("load", total=total)
        while not done.wait(0.25):
            sent, outcomes = tally.snapshot()
            ok = sum(1 for o in outcomes if o.status is not None and 200 <= o.status < 300)
            text = f"sent {sent}, answered {len(outcomes)}, ok {ok}, failed {len(outcomes) - ok}"
            progress.update(task, completed=len(outcomes), description=text)


def print_summary(result: dict[str, Any], url: str, model: str) -> None:
    """The run's numbers for a person."""
    lat = result["latencySeconds"]

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v * 1000:.1f} ms"

    click.echo(f"target     {url}  model {model}")
    click.echo(
        f"requests   {result['sent']} sent, {result['finished']} finished, "
        f"{result['succeeded']} succeeded in {result['elapsedSeconds']:.1f} s "
        f"({result['ratePerSecond']}/s)"
    )
    statuses = ", ".join(f"{s}: {n}" for s, n in result["statuses"].items()) or "none"
    click.echo(f"statuses   {statuses}")
    errors = ", ".join(f"{e}: {n}" for e, n in result["errors"].items()) or "none"
    click.echo(f"conn errs  {errors}")
    click.echo(f"latency    p50 {ms(lat['p50'])}  p90 {ms(lat['p90'])}  p99 {ms(lat['p99'])}")


def run_load(
    url: str, opener: load.Opener, plan: load.Plan, model: str | None
) -> tuple[dict[str, Any], str]:
    """Send the plan to `url` with progress on stderr; (summary, model)."""
    target = load.Target(url, opener)
    chosen = model or load.first_model(target)
    tally, done = load.Tally(), threading.Event()
    watcher = threading.Thread(target=_watch, args=(tally, plan.total, done), daemon=True)
    watcher.start()
    try:
        result = load.run(plan, target, chosen, tally)
    finally:
        done.set()
        watcher.join(timeout=2)
    return result, chosen


def main(
    directory: Path, service: str, namespace: str, plan: load.Plan, model: str | None, as_json: bool
) -> None:
    """`modelplane dev load`: read the address, send from inside the fleet's network, report."""
    url = service_address(directory, service, namespace)
    try:
        result, chosen = run_load(url, fleet_network(directory).http, plan, model)
    except load.LoadError as err:
        raise click.ClickException(str(err)) from err
    if as_json:
        click.echo(json.dumps({"target": url, "model": chosen, **result}, indent=2))
    else:
        print_summary(result, url, chosen)
