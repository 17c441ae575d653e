"""`modelplane dev inventory`: the inventory agent as the local fleet runs it.

A workload cluster's agent normally runs in a Pod there, with `--engine-metrics`
when its InferenceCluster says `spec.servingStack.inventory.engineMetrics:
true`. The local fleet runs it as a process of the machine, which cannot reach
Pod addresses: they live in the fleet's network namespace. This command runs the
same agent (`agent.inventory.run`) and, at each round, reads the control plane's
InferenceCluster of its cluster (the one whose kubeconfig Secret is
`<cluster>-kubeconfig`) to decide whether to scrape the engines; when it does,
it opens each connection inside the fleet's namespace, so the engine processes'
real `/metrics` are what it reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from modelplane.agent.engines import Scraper, fetch
from modelplane.agent.inventory import Settings, run
from modelplane.api import constants as c
from modelplane.api.readers import read_engine_metrics
from modelplane.dev import netns
from modelplane.kube.client import KubeClient, KubeError

INFERENCE_CLUSTERS = f"/apis/{c.API_VERSION}/inferenceclusters"


def cluster_scrapes(clusters: list[dict[str, Any]], secret: str) -> bool:
    """Whether the InferenceCluster whose kubeconfig Secret is `secret` asks its agent to
    scrape engine metrics (`engineMetrics: true`); False when none names it."""
    for ic in clusters:
        spec = ic.get("spec") or {}
        ref = (spec.get("existing") or {}).get("kubeconfigSecretRef") or {}
        if isinstance(ref, dict) and ref.get("name") == secret:
            return read_engine_metrics(spec) is True
    return False


def fleet_scraper(network: netns.Network) -> Scraper:
    """A scraper whose connections are made inside the fleet's network namespace."""

    def get(url: str, timeout: float, limit: int) -> str:
        return fetch(url, timeout, limit, opener=network.http)

    return Scraper(get=get)


def scraping(
    control_plane: KubeClient, cluster: str, scraper: Scraper, log: Callable[[str], None]
) -> Callable[[], Scraper | None]:
    """Each round's decision: the scraper when the cluster's InferenceCluster asks for it.

    A control plane that does not answer keeps the last decision: a round
    without signals would read as a replica gone quiet.
    """
    last: list[Scraper | None] = [None]

    def decide() -> Scraper | None:
        try:
            wanted = cluster_scrapes(
                control_plane.list_all(INFERENCE_CLUSTERS), f"{cluster}-kubeconfig"
            )
        except KubeError as err:
            log(f"control plane: {err}; engine scraping as before")
            return last[0]
        last[0] = scraper if wanted else None
        return last[0]

    return decide


def run_inventory(
    server: str,
    control_plane: str,
    credentials: tuple[str, str],
    cluster: str,
    namespace: str,
    timing: tuple[int, int],
) -> None:
    """Run a workload cluster's agent for the local fleet (`modelplane dev inventory`).

    credentials: (token file, CA file); timing: (interval, grace) in seconds.
    """
    token_file, ca_file = credentials
    network = netns.Network(namespace.removeprefix("mpf-"))
    settings = Settings(interval_seconds=timing[0], grace_seconds=timing[1])
    decide = scraping(
        KubeClient(control_plane, token_file, ca_file), cluster, fleet_scraper(network), click.echo
    )
    run(KubeClient(server, token_file, ca_file), settings, log=click.echo, scraping=decide)
