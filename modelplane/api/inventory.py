"""The inventory summary: what a workload cluster's inventory agent reports.

The agent (`modelplane inventory`, installed by the ServingStack) lists the
cluster's Nodes, the DRA ResourceSlices they publish and the replica pods the
cluster's scheduler could not place, and writes one bounded summary as JSON
under key `inventory.json` of ConfigMap `modelplane-system/modelplane-inventory`.
The InferenceCluster observes that ConfigMap (an Observe-only provider-kubernetes
Object) and reads it with `read_inventory`. This module is the contract between
the two; both sides validate against it.

Bounds: at most `MAX_POOLS` pools, `MAX_SHAPES` distinct device shapes per
pool and `MAX_UNSCHEDULABLE` replicas; whatever is cut is marked `truncated`,
so a reader knows the summary is partial rather than complete.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError

from modelplane.api import constants as c
from modelplane.api.autoscaling import MAX_REPLICA_SIGNALS, ReplicaSignals
from modelplane.api.common import KubeModel, format_validation_error
from modelplane.api.inference_class import DeviceAttribute, DeviceCapacity
from modelplane.api.inference_cluster import UnschedulableReplica

INVENTORY_VERSION = 1
MAX_POOLS = 64
MAX_SHAPES = 16
MAX_ZONES = 16
MAX_DRIVER_COUNTS = 16
MAX_UNSCHEDULABLE = 100
MAX_ATTRIBUTES = 32
# An unchanged summary is rewritten only every this many rounds (its observedAt
# says the agent is alive). Every write wakes provider-kubernetes, Crossplane and
# the function for the cluster; at the default minute, a fleet of 1,000 clusters
# rewriting unchanged summaries would cost the control plane 17 writes and as
# many function calls a second for no new fact.
HEARTBEAT_ROUNDS = 10
MIN_INTERVAL = 5  # seconds: a mistyped interval must not hammer the API server
# Rounds of slack past the longest expected gap between two writes: one round
# that fails (an API call refused) and one that ends at its scrape deadline.
STALE_SLACK_ROUNDS = 2

_DURATION_PART = re.compile(r"([0-9]+)(h|m|s)")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    """Seconds in a duration like `5m`, `1h30m` or `90s`; ValueError when it is not one."""
    if not re.fullmatch(c.DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration of hours, minutes and seconds (e.g. 5m)")
    return sum(int(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


def stale_after(interval_seconds: int, every_round: bool) -> int:
    """Seconds after which an agent's last report is stale: no live agent is that quiet.

    An agent that scrapes engines writes every round; one that does not rewrites
    an unchanged summary every HEARTBEAT_ROUNDS rounds. STALE_SLACK_ROUNDS more
    rounds allow for a failed round and a slow one.
    """
    rounds = 1 if every_round else HEARTBEAT_ROUNDS
    return (rounds + STALE_SLACK_ROUNDS) * max(MIN_INTERVAL, interval_seconds)


class ZoneCount(KubeModel):
    """How many of a pool's nodes are in one zone."""

    zone: str = Field(max_length=253, description="topology.kubernetes.io/zone of the nodes.")
    nodes: int = Field(ge=0, description="Nodes of the pool in this zone.")


class DriverCount(KubeModel):
    """How many of a pool's nodes publish exactly `devices` devices of one driver."""

    driver: str = Field(max_length=253, description="The DRA driver.")
    devices: int = Field(ge=0, description="Devices of this driver on each of these nodes.")
    nodes: int = Field(ge=0, description="Nodes publishing that many.")


class DeviceShape(KubeModel):
    """One distinct kind of device the pool's nodes publish (identity attributes left out)."""

    driver: str = Field(max_length=253, description="The DRA driver that publishes it.")
    attributes: dict[str, DeviceAttribute] = Field(
        default_factory=dict,
        max_length=MAX_ATTRIBUTES,
        description="Attributes as the ResourceSlice publishes them (no per-device ids).",
    )
    capacity: dict[str, DeviceCapacity] = Field(
        default_factory=dict, max_length=MAX_ATTRIBUTES, description="Capacities."
    )
    devices_per_node: int = Field(ge=0, description="Devices of this shape on each node.")
    nodes: int = Field(ge=0, description="Nodes publishing this shape that many times.")


class PoolInventory(KubeModel):
    """One pool's nodes (label `modelplane.ai/pool`) and the devices they publish."""

    name: str = Field(max_length=63, description="The pool (node label value).")
    nodes: int = Field(ge=0, description="Nodes carrying the pool's label.")
    ready_nodes: int = Field(ge=0, description="Of those, nodes whose Ready condition is True.")
    zones: list[ZoneCount] = Field(default_factory=list, max_length=MAX_ZONES)
    driver_counts: list[DriverCount] = Field(
        default_factory=list,
        max_length=MAX_DRIVER_COUNTS,
        description="Per driver, how many nodes publish how many devices.",
    )
    shapes: list[DeviceShape] = Field(default_factory=list, max_length=MAX_SHAPES)
    shapes_truncated: bool = Field(default=False, description="More shapes than were kept.")


class InventorySummary(KubeModel):
    """What the inventory agent last saw on its cluster."""

    version: int = Field(default=INVENTORY_VERSION, ge=1, description="Summary format version.")
    observed_at: str = Field(max_length=64, description="RFC 3339 time of the listing.")
    pools: list[PoolInventory] = Field(default_factory=list, max_length=MAX_POOLS)
    pools_truncated: bool = Field(default=False, description="More pools than were kept.")
    unschedulable: list[UnschedulableReplica] = Field(
        default_factory=list, max_length=MAX_UNSCHEDULABLE
    )
    unschedulable_truncated: bool = Field(
        default=False, description="More unschedulable replicas than were kept."
    )
    # Absent (not empty) when the agent does not scrape engines: summaries of
    # agents without it stay byte-identical.
    replicas: list[ReplicaSignals] | None = Field(
        default=None,
        max_length=MAX_REPLICA_SIGNALS,
        description="Per replica, its engine's signals (absent when engines are not scraped).",
    )
    replicas_truncated: bool | None = Field(
        default=None, description="More replicas were scraped than were kept."
    )

    def pool(self, name: str) -> PoolInventory | None:
        """The named pool's inventory, if the agent saw nodes of it."""
        return next((p for p in self.pools if p.name == name), None)

    def to_data(self) -> dict[str, str]:
        """The ConfigMap `data` the agent writes (one canonical JSON document)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return {c.INVENTORY_DATA_KEY: text}


DATA_FIELD = f"data[{c.INVENTORY_DATA_KEY}]"


def read_inventory(data: Any) -> tuple[InventorySummary | None, str | None]:
    """Parse a ConfigMap's `data`; (summary, None) or (None, why, naming the field)."""
    if not isinstance(data, Mapping) or c.INVENTORY_DATA_KEY not in data:
        return None, f"{DATA_FIELD}: missing"
    raw = data[c.INVENTORY_DATA_KEY]
    try:
        body = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as err:
        return None, f"{DATA_FIELD}: not JSON: {err}"
    if not isinstance(body, dict):
        return None, f"{DATA_FIELD}: not a JSON object"
    try:
        summary = InventorySummary.model_validate(body)
    except ValidationError as err:
        return None, format_validation_error(err, DATA_FIELD)
    if summary.version != INVENTORY_VERSION:
        return None, f"{DATA_FIELD}.version: {summary.version} is not supported"
    return summary, None
