"""Cloud stock-outs: when a node pool cannot get the machines it asked for.

Pure functions over what the providers report. An upjet managed resource
carries the cloud's error in its conditions (Synced/LastAsyncOperation
messages) and, for EKS, the node group's `status.atProvider.status`; a
stock-out is recognised by the clouds' own error codes:

- AWS: `InsufficientInstanceCapacity` (an Auto Scaling launch failure that
  EKS reports as the node group health issue `AsgInstanceLaunchFailures`);
- GCP: `ZONE_RESOURCE_POOL_EXHAUSTED` (also `..._WITH_DETAILS`) and `GCE_STOCKOUT`.

The zone comes from the message when the cloud names it, else the pool's own
zone. The nodes actually up are counted from the workload cluster's observed
Nodes carrying the pool's label, never guessed from the requested size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from modelplane.api import constants as c
from modelplane.api.objects import condition_status
from modelplane.compose.types import Resource

Cloud = Literal["EKS", "GKE"]

STOCKOUT_CODES: dict[Cloud, tuple[str, ...]] = {
    "EKS": ("InsufficientInstanceCapacity",),
    "GKE": ("ZONE_RESOURCE_POOL_EXHAUSTED", "GCE_STOCKOUT"),
}
# "... capacity in the Availability Zone you requested (us-east-1a)"; an EC2 zone
# name anywhere else in the message; a GCE zone ("zones/us-central1-a").
_AWS_ZONE = re.compile(r"\b([a-z]{2}(?:-gov)?-[a-z]+-\d[a-z])\b")
_GCP_ZONE = re.compile(r"\b([a-z]+-[a-z]+\d+-[a-z])\b")
_ZONE = {"EKS": _AWS_ZONE, "GKE": _GCP_ZONE}


@dataclass(frozen=True)
class StockOut:
    """A pool the cloud could not fill: where, which accelerator, and how many nodes are up."""

    pool: str
    zone: str | None
    accelerator: str | None
    nodes_up: int
    requested: int
    message: str

    def describe(self) -> str:
        """One sentence naming pool, zone and accelerator."""
        where = f" in zone {self.zone}" if self.zone else ""
        what = f" {self.accelerator}" if self.accelerator else ""
        return (
            f"pool {self.pool!r}: the cloud has no{what} capacity{where}; "
            f"{self.nodes_up} of {self.requested} node(s) up"
        )


def _messages(managed: Resource) -> list[str]:
    status = managed.get("status")
    status = status if isinstance(status, dict) else {}
    out = []
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and isinstance(cond.get("message"), str):
            out.append(cond["message"])
    at = status.get("atProvider")
    if isinstance(at, dict):
        for key in ("status", "statusMessage", "health"):
            value = at.get(key)
            if value:
                out.append(str(value))
    return out


def stockout_message(cloud: Cloud, managed: Resource | None) -> str | None:
    """The cloud's stock-out message on a node group / node pool, or None."""
    if managed is None:
        return None
    for message in _messages(managed):
        if any(code in message for code in STOCKOUT_CODES[cloud]):
            return message
    return None


def zone_in(cloud: Cloud, message: str) -> str | None:
    """The first zone the cloud's message names, if any."""
    found = _ZONE[cloud].search(message)
    return found.group(1) if found else None


def _manifest(obj: Resource) -> dict[str, Any]:
    """A wrapped manifest as observed (provider-kubernetes Object), or the object itself."""
    status = obj.get("status")
    at = status.get("atProvider") if isinstance(status, dict) else None
    wrapped = at.get("manifest") if isinstance(at, dict) else None
    return wrapped if isinstance(wrapped, dict) else obj


def observed_nodes(objects: Iterable[Resource]) -> list[dict[str, Any]]:
    """The Node manifests among observed objects (wrapped or plain)."""
    nodes = [_manifest(o) for o in objects]
    return [n for n in nodes if n.get("kind") == "Node"]


def nodes_up(pool: str, nodes: Iterable[dict[str, Any]]) -> int:
    """Nodes of `pool` (by the `modelplane.ai/pool` label) that are Ready."""
    count = 0
    for node in nodes:
        node_labels = (node.get("metadata") or {}).get("labels") or {}
        if node_labels.get(c.LABEL_POOL) != pool:
            continue
        if condition_status(node, "Ready") == "True":
            count += 1
    return count


def pool_stockout(
    cloud: Cloud,
    pool: str,
    accelerator: str | None,
    requested: int,
    managed: Resource | None,
    *,
    declared_zone: str | None = None,
    up: int | None = None,
) -> StockOut | None:
    """The pool's stock-out, if its managed resource reports one.

    `up` is the number of the pool's nodes observed Ready on the cluster; unknown
    counts as 0 because a stocked-out pool must not be offered as capacity it
    may not have.
    """
    message = stockout_message(cloud, managed)
    if message is None:
        return None
    zone = zone_in(cloud, message) or declared_zone
    return StockOut(pool, zone, accelerator, min(up or 0, requested), requested, message)
