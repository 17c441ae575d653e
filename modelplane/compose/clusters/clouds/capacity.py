"""Cloud stock-outs: when a node pool cannot get the machines it asked for.

Pure functions over what the providers report. An upjet managed resource
carries the cloud's error in its conditions (Synced/LastAsyncOperation
messages) and, for some kinds, in `status.atProvider` (an EKS node group's
`status`); a stock-out is recognised by the cloud's own error codes, which each
cloud declares (`Cloud.stockout_codes`, api/clouds/).

The zone comes from the message when the cloud names it (`Cloud.zone_pattern`),
else the pool's own zone. The nodes actually up are the pool's `readyNodes` in the workload
cluster's inventory summary (Nodes carrying the pool's label, counted by the
cluster's inventory agent), never guessed from the requested size.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api.clouds import Cloud
from modelplane.api.inventory import InventorySummary
from modelplane.api.objects import conditions
from modelplane.compose.types import Resource


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
    # Only well-formed conditions: a malformed list says nothing about stock.
    out = [cond["message"] for cond in conditions(managed) if isinstance(cond.get("message"), str)]
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
        if any(code in message for code in cloud.stockout_codes):
            return message
    return None


def zone_in(cloud: Cloud, message: str) -> str | None:
    """The first zone the cloud's message names, if any."""
    found = cloud.zone_pattern.search(message) if cloud.zone_pattern else None
    return found.group(1) if found else None


def nodes_up(pool: str, inventory: InventorySummary | None) -> int | None:
    """Nodes of `pool` the cluster's inventory agent saw Ready; None without an inventory."""
    if inventory is None:
        return None
    found = inventory.pool(pool)
    return found.ready_nodes if found is not None else 0


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
