"""Builders of InferenceClusters, ModelDeployments and ModelReplicas for scheduler tests."""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import label_value, replica_base
from modelplane.scheduling import ScheduleResult, replica_name

Obj = dict[str, Any]

# Selectors in the Kubernetes DRA CEL environment.
H100 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"'
L4 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
A100 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100"'
ANY_GPU = 'device.driver == "gpu.nvidia.com"'
BIG_MEMORY = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
IB = 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'
NIC = 'device.driver == "rdma.example.com"'
ENGINE = {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]}}


def device(
    name: str,
    count: int = 1,
    *,
    claim: str = "DRA",
    driver: str = "gpu.nvidia.com",
    klass: str | None = None,
    memory: str | None = None,
    **attributes: Any,
) -> Obj:
    """One InferenceClass device in wire form."""
    d: Obj = {"name": name, "claim": claim, "driver": driver, "count": count}
    if claim == "DRA":
        d["deviceClassName"] = klass or driver
    attrs = {}
    for k, v in attributes.items():
        kind = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "string"
        attrs[k] = {kind: v}
    if attrs:
        d["attributes"] = attrs
    if memory:
        d["capacity"] = {"memory": {"value": memory}}
    return d


H100_8X = [
    device("gpu", 8, productName="NVIDIA H100", memory="80Gi"),
    device("fabric", claim="Synthetic", driver="fabric.modelplane.ai", type="InfiniBand"),
]
L4_1X = [device("gpu", 1, productName="NVIDIA L4", memory="24Gi")]
L4_8X = [device("gpu", 8, productName="NVIDIA L4", memory="24Gi")]
A100_4X = [
    device("gpu", 4, productName="NVIDIA A100", memory="40Gi"),
    device("nic", 2, driver="rdma.example.com"),
]
# Two single-count L4s; only the first is "fast" (for backtracking across requests).
DUAL_1X = [
    device("gpu-a", 1, productName="NVIDIA L4", fast=True),
    device("gpu-b", 1, productName="NVIDIA L4", fast=False),
]
FAST = 'device.attributes["gpu.nvidia.com"].fast == true'
CLASSES = {
    "h100-8x": H100_8X,
    "l4-1x": L4_1X,
    "l4-8x": L4_8X,
    "a100-4x": A100_4X,
    "dual-1x": DUAL_1X,
}


def cluster(
    name: str,
    pools: dict[str, tuple[str, int]],
    *,
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    ready: bool = True,
    packing: str | None = None,
) -> Obj:
    """An InferenceCluster with published pools `{pool: (className, nodes)}`."""
    spec: Obj = {"taints": taints or []}
    if packing is not None:
        spec["scheduling"] = {"packing": packing}
    return {
        "apiVersion": c.API_VERSION,
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "gpuPools": [
                {"name": p, "className": k, "nodes": n, "devices": CLASSES[k]}
                for p, (k, n) in pools.items()
            ],
        },
    }


def request(name: str, *selectors: str, count: int = 1) -> Obj:
    """One nodeSelector device request."""
    return {"name": name, "count": count, "selectors": [{"cel": s} for s in selectors]}


def workers(count: int = 1, pipeline: int = 1, data: int = 1) -> Obj:
    """A workers block."""
    return {
        "count": count,
        "topology": {"tensor": 1, "pipeline": pipeline, "data": data, "dataLocal": 1},
        "template": ENGINE,
    }


def deployment(
    replicas: int,
    requests: list[Obj] | None = None,
    *,
    name: str = "llm",
    namespace: str = "team-a",
    work: Obj | None = None,
    prefill: tuple[list[Obj], Obj] | None = None,
    decode: tuple[list[Obj], Obj] | None = None,
    selector: Obj | None = None,
    tolerations: list[Obj] | None = None,
    rollout: Obj | None = None,
) -> Obj:
    """A ModelDeployment, unified unless prefill/decode are given."""
    spec: Obj = {"replicas": replicas}
    if prefill and decode:
        spec["prefill"] = {"nodeSelector": {"devices": prefill[0]}, "workers": prefill[1]}
        spec["decode"] = {"nodeSelector": {"devices": decode[0]}, "workers": decode[1]}
    else:
        spec["nodeSelector"] = {"devices": requests or []}
        spec["workers"] = work or workers()
    if selector is not None:
        spec["clusterSelector"] = selector
    if tolerations is not None:
        spec["tolerations"] = tolerations
    if rollout is not None:
        spec["rollout"] = rollout
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def resolved(name: str, count: int = 1, klass: str = "gpu.nvidia.com", cel: str = ANY_GPU) -> Obj:
    """A resolved device request as a ModelReplica carries it."""
    return {"name": name, "deviceClassName": klass, "count": count, "selectors": [{"cel": cel}]}


def replica(
    dep: str,
    cluster_name: str,
    index: int,
    pool: str,
    requests: list[Obj],
    *,
    namespace: str = "team-a",
    ready: bool = False,
    created: str = "2026-01-01T00:00:00Z",
    work: Obj | None = None,
    name: str | None = None,
) -> Obj:
    """An observed unified ModelReplica."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelReplica",
        "metadata": {
            "name": name or replica_name(namespace, dep, cluster_name, index),
            "namespace": namespace,
            "creationTimestamp": created,
            "labels": {
                c.LABEL_DEPLOYMENT: label_value(dep),
                c.LABEL_CLUSTER: label_value(cluster_name),
                c.LABEL_REPLICA_INDEX: str(index),
            },
        },
        "spec": {
            "deploymentName": dep,
            "clusterName": cluster_name,
            "index": index,
            "nodePoolName": pool,
            "deviceRequests": requests,
            "workers": work or workers(),
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


IMMEDIATE = {"strategy": "Immediate"}


def placements(result: ScheduleResult) -> list[tuple[Any, ...]]:
    """(cluster, index, pool per role...) of every planned replica, in result order."""
    return [(p.cluster, p.index, *(r.pool for r in p.roles)) for p in result.replicas]


def verdicts(result: ScheduleResult) -> dict[str, str | None]:
    """Cluster name → verdict reason."""
    return {v.cluster: v.reason for v in result.clusters}


def materialize(
    dep: Obj,
    result: ScheduleResult,
    existing: list[Obj],
    clock: int,
) -> list[Obj]:
    """The ModelReplica objects a composer would produce from `result`.

    Retained replicas keep their observed object (creation time, readiness);
    new ones get creation time `clock` (a sortable timestamp) and are not Ready.
    """
    by_name = {r["metadata"]["name"]: r for r in existing}
    spec = dep["spec"]
    out = []
    for p in result.replicas:
        if p.retained and p.name in by_name:
            obj = by_name[p.name]
            out.append(obj)
            continue
        roles = {
            r.role: {
                "nodePoolName": r.pool,
                "deviceRequests": [d.to_dict() for d in r.device_requests],
            }
            for r in p.roles
        }
        body: Obj = {
            "deploymentName": dep["metadata"]["name"],
            "clusterName": p.cluster,
            "index": p.index,
        }
        if c.ROLE_UNIFIED in roles:
            body.update(roles[c.ROLE_UNIFIED], workers=spec["workers"])
        else:
            for role in (c.ROLE_PREFILL, c.ROLE_DECODE):
                body[role] = {**roles[role], "workers": spec[role]["workers"]}
        out.append(
            {
                "apiVersion": c.API_VERSION,
                "kind": "ModelReplica",
                "metadata": {
                    "name": p.name,
                    "namespace": dep["metadata"]["namespace"],
                    "creationTimestamp": f"2026-01-01T00:00:00.{clock:06d}Z",
                    "labels": {
                        c.LABEL_DEPLOYMENT: label_value(dep["metadata"]["name"]),
                        c.LABEL_CLUSTER: label_value(p.cluster),
                        c.LABEL_REPLICA_INDEX: str(p.index),
                    },
                },
                "spec": body,
                "status": {"conditions": [{"type": "Ready", "status": "False"}]},
            }
        )
    return out


SINCE = "2026-11-23T10:00:00Z"
STUCK_MESSAGE = "0/2 nodes are available: 2 cannot allocate all claims"


def report_unschedulable(
    cluster_obj: Obj,
    replica_obj: Obj,
    pool: str | None = None,
    *,
    since: str = SINCE,
    message: str = STUCK_MESSAGE,
) -> Obj:
    """`cluster_obj` with its inventory agent reporting `replica_obj` unschedulable.

    The agent names the replica by its pods' `modelplane.ai/replica` label, which
    is the ModelReplica name as the workload's base name, not the name itself.
    """
    entry: Obj = {
        "replica": replica_base(replica_obj["metadata"]["name"]),
        "since": since,
        "message": message,
    }
    if pool is not None:
        entry["pool"] = pool
    status = cluster_obj["status"]
    reported = [*status.get("unschedulableReplicas", []), entry]
    return {**cluster_obj, "status": {**status, "unschedulableReplicas": reported}}
