"""`modelplane inventory`: the inventory agent the ServingStack runs on each workload cluster.

In a pod it needs no flags: the API server, token and CA come from the
ServiceAccount. The flags override them for tests and local runs (`--server
http://127.0.0.1:8001` through `kubectl proxy`, for instance).
"""

from __future__ import annotations

import click

from modelplane.agent.engines import DEFAULT_MAX_BYTES, DEFAULT_PORT, DEFAULT_TIMEOUT, Scraper
from modelplane.agent.inventory import Settings, run
from modelplane.api import constants as c
from modelplane.api.inventory import parse_duration
from modelplane.kube.client import KubeClient, KubeError


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> int:
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


def _client(server: str | None, token_file: str | None, ca_file: str | None) -> KubeClient:
    if server is None:
        client = KubeClient.in_cluster()
        token_file = token_file or client.token_file
        ca_file = ca_file or client.ca_file
        server = client.server
    return KubeClient(server, token_file, ca_file)


@click.command("inventory")
@click.option("--server", default=None, help="API server URL; in-cluster when absent.")
@click.option("--token-file", default=None, help="Bearer token file (default: ServiceAccount).")
@click.option("--ca-file", default=None, help="CA bundle file (default: ServiceAccount).")
@click.option("--namespace", default=c.INVENTORY_NAMESPACE, show_default=True)
@click.option("--name", default=c.INVENTORY_CONFIGMAP, show_default=True, help="The ConfigMap.")
@click.option("--interval", default="60s", show_default=True, callback=_duration)
@click.option(
    "--grace",
    default=c.DEFAULT_UNSCHEDULABLE_AFTER,
    show_default=True,
    callback=_duration,
    help="How long a replica pod stays Unschedulable before it is reported.",
)
@click.option(
    "--engine-metrics/--no-engine-metrics",
    default=False,
    show_default=True,
    help="Scrape each Ready replica pod's engine metrics (vLLM) and report them for autoscaling.",
)
@click.option(
    "--metrics-port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True
)
@click.option(
    "--scrape-timeout",
    type=click.FloatRange(0.1, 30),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds to wait for one pod's metrics.",
)
@click.option(
    "--scrape-max-bytes",
    type=click.IntRange(1024),
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    help="A metrics page longer than this makes its replica unreachable.",
)
@click.option("--once", is_flag=True, help="Report once and exit (1 if that failed).")
def inventory(
    server: str | None,
    token_file: str | None,
    ca_file: str | None,
    namespace: str,
    name: str,
    interval: int,
    grace: int,
    engine_metrics: bool,
    metrics_port: int,
    scrape_timeout: float,
    scrape_max_bytes: int,
    once: bool,
) -> None:
    """Report this cluster's nodes, devices and unschedulable replicas to the control plane."""
    try:
        client = _client(server, token_file, ca_file)
    except KubeError as err:
        raise click.ClickException(str(err)) from None
    scraper = (
        Scraper(port=metrics_port, timeout=scrape_timeout, max_bytes=scrape_max_bytes)
        if engine_metrics
        else None
    )
    settings = Settings(namespace, name, interval, grace, scraper)
    failed = run(client, settings, rounds=1 if once else None, log=click.echo)
    if once and failed:
        raise SystemExit(1)
