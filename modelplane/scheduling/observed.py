"""Reading observed objects (raw dicts) into what the scheduler needs.

Observed state is written by other controllers and may be partial: every read
here is defensive, and an object the scheduler cannot understand is skipped
rather than crashing a reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from modelplane.api import constants as c
from modelplane.api.objects import is_condition_true, label_value

ObservedRequests = tuple[tuple[str, int, tuple[str, ...]], ...]


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any, default: int) -> int:
    """An integer field of observed state (protobuf Structs carry numbers as floats)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return default


@dataclass(frozen=True)
class ObservedRole:
    """One role of an observed replica: its pool, resolved requests and workers."""

    pool: str
    requests: ObservedRequests  # (deviceClassName, count, selectors)
    raw_requests: tuple[Mapping[str, Any], ...]
    nodes_per_worker: int
    workers: int


@dataclass(frozen=True)
class ObservedReplica:
    """A ModelReplica as observed in the fleet."""

    namespace: str
    name: str
    deployment: str
    cluster: str
    index: int
    ready: bool
    created: str
    roles: tuple[tuple[str, ObservedRole], ...]
    deployment_is_label: bool = False  # `deployment` is a label value, not the name

    def belongs_to(self, namespace: str, deployment: str) -> bool:
        """Whether this replica is one of deployment `namespace/deployment`."""
        if self.namespace != namespace:
            return False
        if self.deployment_is_label:
            return self.deployment == label_value(deployment)
        return self.deployment == deployment

    @property
    def order(self) -> tuple[int, int, str, str, str]:
        """Contention order: Ready first, then oldest, then (namespace, name)."""
        return (
            0 if self.ready else 1,
            0 if self.created else 1,
            self.created,
            self.namespace,
            self.name,
        )


def _role(spec: Mapping[str, Any], pool_key: str) -> ObservedRole | None:
    pool = spec.get(pool_key)
    if not isinstance(pool, str) or not pool:
        return None
    raw = tuple(r for r in _list(spec.get("deviceRequests")) if isinstance(r, Mapping))
    reqs = tuple(
        (
            str(r.get("deviceClassName") or ""),
            max(1, as_int(r.get("count"), 1)),
            tuple(
                str(s.get("cel"))
                for s in _list(r.get("selectors"))
                if isinstance(s, Mapping) and s.get("cel")
            ),
        )
        for r in raw
    )
    workers = _map(spec.get("workers"))
    topo = _map(workers.get("topology"))
    local = max(1, as_int(topo.get("dataLocal"), 1))
    npw = max(
        1, (max(1, as_int(topo.get("pipeline"), 1)) * max(1, as_int(topo.get("data"), 1))) // local
    )
    return ObservedRole(pool, reqs, raw, npw, max(1, as_int(workers.get("count"), 1)))


def read_replica(
    obj: Mapping[str, Any], clusters_by_label: Mapping[str, str] | None = None
) -> ObservedReplica | None:
    """Parse one ModelReplica object; None when it names no cluster or deployment.

    The spec names the deployment and cluster in full; the labels carry them
    as label values (shortened when long), so a replica known only by its
    labels keeps the deployment's label value (`deployment_is_label`) and has
    its cluster looked up in `clusters_by_label` (label value → cluster name).
    """
    meta = _map(obj.get("metadata"))
    labels = _map(meta.get("labels"))
    spec = _map(obj.get("spec"))
    cluster = spec.get("clusterName")
    if not isinstance(cluster, str) or not cluster:
        label = labels.get(c.LABEL_CLUSTER)
        cluster = (clusters_by_label or {}).get(label, label) if isinstance(label, str) else None
    deployment = spec.get("deploymentName")
    deployment_is_label = not isinstance(deployment, str) or not deployment
    if deployment_is_label:
        deployment = labels.get(c.LABEL_DEPLOYMENT)
    if not isinstance(cluster, str) or not isinstance(deployment, str):
        return None
    index = as_int(spec.get("index"), as_int(labels.get(c.LABEL_REPLICA_INDEX), -1))
    roles: list[tuple[str, ObservedRole]] = []
    if "prefill" in spec or "decode" in spec:
        for name in (c.ROLE_PREFILL, c.ROLE_DECODE):
            role = _role(_map(spec.get(name)), "nodePoolName")
            if role is not None:
                roles.append((name, role))
    else:
        role = _role(spec, "nodePoolName")
        if role is not None:
            roles.append((c.ROLE_UNIFIED, role))
    created = meta.get("creationTimestamp")
    return ObservedReplica(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        deployment=deployment,
        cluster=cluster,
        index=index,
        deployment_is_label=deployment_is_label,
        ready=is_condition_true(obj, c.CONDITION_READY),
        created=created if isinstance(created, str) else "",
        roles=tuple(roles),
    )


class ObservedPool(NamedTuple):
    """A published pool: name, class, node capacity and devices (raw wire form)."""

    name: str
    class_name: str
    nodes: int
    devices: Any


@dataclass(frozen=True)
class ObservedCluster:
    """An InferenceCluster as the scheduler sees it."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    ready: bool
    pools: tuple[ObservedPool, ...]  # sorted by name
    published: bool  # whether status.gpuPools lists any pool


def read_cluster(obj: Mapping[str, Any]) -> ObservedCluster | None:
    """Parse one InferenceCluster object; None when it has no name."""
    meta = _map(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    labels = {str(k): str(v) for k, v in _map(meta.get("labels")).items()}
    spec = _map(obj.get("spec"))
    taints = tuple(t for t in _list(spec.get("taints")) if isinstance(t, Mapping))
    pools: dict[str, ObservedPool] = {}
    for p in _list(_map(obj.get("status")).get("gpuPools")):
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
            continue
        if p["name"] not in pools:
            pools[p["name"]] = ObservedPool(
                p["name"],
                str(p.get("className") or ""),
                max(0, as_int(p.get("nodes"), 0)),
                p.get("devices"),
            )
    return ObservedCluster(
        name=name,
        labels=labels,
        taints=taints,
        ready=is_condition_true(obj, c.CONDITION_READY),
        pools=tuple(pools[k] for k in sorted(pools)),
        published=bool(pools),
    )
