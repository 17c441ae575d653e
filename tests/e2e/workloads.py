"""Reading a workload cluster the way kubectl would: a replica's Pods, its claims, their devices.

The scenarios judge placement by what Kubernetes itself did: which node
kube-scheduler bound each Pod to, and which devices its DRA allocator gave
each ResourceClaim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import replica_base
from modelplane.dev.kubeapi import Api, condition

DRA = c.DRA_API_VERSION


@dataclass(frozen=True)
class PodView:
    """One Pod of a replica, as the workload cluster has it."""

    name: str
    ready: bool
    node: str | None
    pool: str | None
    devices: tuple[tuple[str, str], ...]  # (slice pool, device) of every allocated device


def _pool_of(api: Api, node: str | None) -> str | None:
    if not node:
        return None
    obj = api.get("v1", "Node", node)
    return ((obj or {}).get("metadata", {}).get("labels") or {}).get(c.LABEL_POOL)


def _devices(api: Api, pod: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    ns = pod["metadata"]["namespace"]
    out: list[tuple[str, str]] = []
    for ref in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        name = ref.get("resourceClaimName")
        claim = api.get(DRA, "ResourceClaim", name, ns) if name else None
        allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            out.append((str(result.get("pool")), str(result.get("device"))))
    return tuple(out)


def replica_pods(api: Api, namespace: str, replica: str) -> list[PodView]:
    """The Pods of one ModelReplica (by name) in its workload cluster."""
    label = f"{c.LABEL_REPLICA}={replica_base(replica)}"
    out = []
    for pod in api.list("v1", "Pod", namespace, selector=label):
        node = (pod.get("spec") or {}).get("nodeName")
        out.append(
            PodView(
                pod["metadata"]["name"],
                condition(pod, "Ready") == "True",
                node,
                _pool_of(api, node),
                _devices(api, pod),
            )
        )
    return out


def ready_pods(api: Api, namespace: str, selector: str) -> int:
    """How many Pods matching a label selector are Ready."""
    return sum(
        condition(p, "Ready") == "True" for p in api.list("v1", "Pod", namespace, selector=selector)
    )
