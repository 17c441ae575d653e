"""The inventory agent's loop: list, summarise, apply; again every interval.

Each round lists the cluster's Nodes, its DRA ResourceSlices
(`resource.k8s.io/v1`) and the Pending pods of Modelplane replicas (label
`modelplane.ai/replica`), summarises them with the same pure summarizer
`modelplane render` uses (`api.inventory_summary.summarize`), and writes the
summary to ConfigMap `modelplane-system/modelplane-inventory` with server-side
apply when it changed (its time aside), or as a heartbeat every
HEARTBEAT_ROUNDS rounds: each write wakes the control plane. A failed round
is logged as one JSON line and retried at the next interval: the agent never
crashes on what the API server answers.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from modelplane.agent.engines import Scraper, Window, scrape
from modelplane.api import constants as c
from modelplane.api.inventory import HEARTBEAT_ROUNDS, MIN_INTERVAL, InventorySummary
from modelplane.api.inventory_summary import summarize
from modelplane.kube.client import KubeClient, KubeError, configmap_path

NODES = "/api/v1/nodes"
SLICES = f"/apis/{c.DRA_API_VERSION}/resourceslices"
PODS = "/api/v1/pods"


@dataclass(frozen=True)
class Settings:
    """What to report where, and how often."""

    namespace: str = c.INVENTORY_NAMESPACE
    name: str = c.INVENTORY_CONFIGMAP
    interval_seconds: int = 60
    grace_seconds: int = 300
    # Scrape each Ready replica pod's engine metrics (None: not scraped).
    scraper: Scraper | None = None


Clock = Callable[[], datetime.datetime]
Log = Callable[[str], None]


def utc_now() -> datetime.datetime:
    """The wall clock, in UTC."""
    return datetime.datetime.now(datetime.UTC)


def stamp(moment: datetime.datetime) -> str:
    """An RFC 3339 time in UTC, to the second."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def observe(
    client: KubeClient,
    now: str,
    grace_seconds: int,
    scraper: Scraper | None = None,
    window: Window | None = None,
) -> InventorySummary:
    """List what the cluster has and summarise it; with a scraper, the engines' signals too."""
    nodes = client.list_all(NODES)
    slices = client.list_all(SLICES)
    pods = client.list_all(
        PODS, labelSelector=c.LABEL_REPLICA, fieldSelector="status.phase=Pending"
    )
    summary = summarize(nodes, slices, pods, now, grace_seconds)
    if scraper is None:
        return summary
    running = client.list_all(
        PODS, labelSelector=c.LABEL_REPLICA, fieldSelector="status.phase=Running"
    )
    signals, truncated = scrape(running, scraper, window or Window(), now)
    update = {"replicas": signals, "replicas_truncated": truncated or None}
    return summary.model_copy(update=update)


def configmap(summary: InventorySummary, settings: Settings) -> dict[str, Any]:
    """The ConfigMap the agent applies: only the fields it owns."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": settings.name,
            "namespace": settings.namespace,
            "labels": {c.LABEL_MANAGED_BY: c.MANAGED_BY, c.LABEL_COMPONENT: "inventory"},
        },
        "data": summary.to_data(),
    }


def _write(client: KubeClient, settings: Settings, summary: InventorySummary) -> None:
    client.apply(
        configmap_path(settings.namespace, settings.name),
        configmap(summary, settings),
        c.INVENTORY_FIELD_MANAGER,
    )


def report_once(client: KubeClient, settings: Settings, now: str) -> InventorySummary:
    """One round: observe and apply the summary (raises KubeError when a call fails)."""
    summary = observe(client, now, settings.grace_seconds, settings.scraper)
    _write(client, settings, summary)
    return summary


def _written(summary: InventorySummary, now: str) -> str:
    scraped = {}
    if summary.replicas is not None:
        unreachable = sum(1 for r in summary.replicas if not r.reachable)
        scraped = {"replicas": len(summary.replicas), "unreachable": unreachable}
    return _line(
        "info",
        "inventory written",
        observedAt=now,
        pools=len(summary.pools),
        unschedulable=len(summary.unschedulable),
        **scraped,
    )


def _line(level: str, message: str, **fields: Any) -> str:
    return json.dumps({"level": level, "msg": message, **fields}, sort_keys=True)


def _unchanged(summary: InventorySummary, last: InventorySummary | None) -> bool:
    return last is not None and summary.model_copy(update={"observed_at": ""}) == last


def run(
    client: KubeClient,
    settings: Settings,
    *,
    rounds: int | None = None,
    clock: Clock = utc_now,
    sleep: Callable[[float], None] = time.sleep,
    log: Log = print,
    scraping: Callable[[], Scraper | None] | None = None,
) -> int:
    """Report every interval (`rounds` times, or forever); the number of failed rounds.

    A round whose summary equals the last one written (its time aside) writes
    nothing, unless HEARTBEAT_ROUNDS rounds have passed since that write.
    `scraping`, when given, says at each round how to scrape the engines (None:
    not at all) in place of `settings.scraper`: the local fleet follows its
    clusters' `engineMetrics` setting as it changes.
    """
    failed = done = quiet = 0
    last: InventorySummary | None = None
    window = Window()
    while rounds is None or done < rounds:
        now = stamp(clock())
        try:
            scraper = scraping() if scraping is not None else settings.scraper
            summary = observe(client, now, settings.grace_seconds, scraper, window)
            # Engine signals are written every round: the autoscaler takes a
            # report older than the others' for a stale one (and then never
            # scales down), so a quiet round would cost a decision.
            quiet_ok = scraper is None
            if quiet_ok and _unchanged(summary, last) and quiet < HEARTBEAT_ROUNDS - 1:
                quiet += 1
            else:
                _write(client, settings, summary)
                last, quiet = summary.model_copy(update={"observed_at": ""}), 0
                log(_written(summary, now))
        except (KubeError, ValueError) as err:  # ValueError: a summary that does not validate
            failed += 1
            log(_line("error", "inventory not written; retrying next interval", error=str(err)))
        done += 1
        if rounds is None or done < rounds:
            sleep(max(MIN_INTERVAL, settings.interval_seconds))
    return failed
