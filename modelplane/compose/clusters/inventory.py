"""A workload cluster's inventory as the control plane observes it.

The inventory agent on each workload cluster writes its summary
(`modelplane.api.inventory_summary.summarize`) into one ConfigMap; an
InferenceCluster composes an Observe-only Object of that ConfigMap
(`inventory_observation`), and the cluster composers read the summary it
carries through `read_observed_inventory` / `observed_inventory`, which never
raise: a missing or malformed summary is a reason naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modelplane.api import constants as c
from modelplane.api.frozen import memoized
from modelplane.api.inventory import DATA_FIELD, InventorySummary, read_inventory
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.objects import object_metadata
from modelplane.compose.readiness import POLICY_CEL, ReadinessRule, register, wrapped
from modelplane.compose.types import Resource

INVENTORY_KEY = "inventory"
"""The composition resource name of a cluster's observed inventory ConfigMap."""


def inventory_object_name(cluster: str) -> str:
    """The control-plane Object (system namespace) that observes the cluster's inventory."""
    return resource_name(cluster, "inventory")


def _read(observed: Resource | None) -> bool:
    return wrapped(observed) is not None


PROBE = register(
    ReadinessRule("ReachabilityProbe", {"policy": POLICY_CEL, "celQuery": "false"}, _read)
)
"""The inventory Object's readiness: never met on the workload cluster, so the Object
doubles as the cluster's reachability probe. provider-kubernetes observes an Object
that is not Ready every 30 s, whatever its --poll (10 minutes by default), so a
stopped API server shows in the Object's `Synced` within about 30 s. The composer
reads the Object as ready once the ConfigMap was observed."""


def inventory_observation(cluster: str, provider_config: str) -> Resource:
    """A watched, Observe-only Object of the agent's ConfigMap: read, never written.

    Its readiness is `PROBE`, so it is also the cluster's reachability probe.
    """
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": c.INVENTORY_CONFIGMAP, "namespace": c.INVENTORY_NAMESPACE},
    }
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": object_metadata(
            inventory_object_name(cluster), c.SYSTEM_NAMESPACE, labels(cluster, "inventory")
        ),
        "spec": {
            "managementPolicies": ["Observe"],
            "forProvider": {"manifest": manifest},
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
            # The agent rewrites the summary every interval; polled instead, the
            # control plane would read it every provider --poll (10 minutes by
            # default), past the bound InventoryFresh allows, so the cluster's
            # signals would read stale most of the time.
            "watch": True,
            "readiness": PROBE.wire(),
        },
    }


OBSERVED_FIELD = f"ConfigMap {c.INVENTORY_NAMESPACE}/{c.INVENTORY_CONFIGMAP}"


@dataclass(frozen=True)
class InventoryReading:
    """What an observed inventory Object says: a summary, or why not (naming the field).

    `missing` tells "nothing written yet" (no ConfigMap, no data key) from a
    summary that is there but does not parse.
    """

    summary: InventorySummary | None
    problem: str = ""
    missing: bool = False


def read_observed_inventory(observed: Resource | None) -> InventoryReading:
    """Read the summary an observed inventory Object carries; never raises."""
    live = wrapped(observed)
    if live is None:
        return InventoryReading(None, f"{OBSERVED_FIELD} is not observed yet", missing=True)
    data = live.get("data")
    if not isinstance(data, Mapping) or c.INVENTORY_DATA_KEY not in data:
        return InventoryReading(None, f"{OBSERVED_FIELD} {DATA_FIELD}: missing", missing=True)
    # Read once per decoded ConfigMap data (remembered on it): every call sees it.
    summary, problem = memoized(data, "read_inventory", read_inventory)
    if summary is None:
        return InventoryReading(None, f"{OBSERVED_FIELD} {problem}")
    return InventoryReading(summary)


def observed_inventory(observed: Resource | None) -> tuple[InventorySummary | None, str]:
    """The summary an observed inventory Object carries, or None and why (naming the field)."""
    reading = read_observed_inventory(observed)
    return reading.summary, reading.problem
