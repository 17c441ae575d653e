"""The fleet as a platform engineer sees it: per cluster and pool, who uses what.

`fleet_view(store)` reads a rendered store (the embedded control plane's
steady state) through the typed readers in `modelplane.api.readers` and
returns plain data: every cluster and pool with its device capacity, the
devices each deployment's replicas hold, what is free, which replicas are
draining, which revision each deployment's replicas run on each cluster (and
its Progressive rollout's decision), and for every deployment with missing
replicas the scheduler's reasons and what-if answers. It also says what the
clusters themselves report as wrong: a pool whose cloud is stocked out (it
offers only the nodes up, and no what-if grows it), hardware drift, and
replicas a cluster could not schedule. The table, JSON/YAML and HTML outputs
all render this one model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import click
from pydantic.alias_generators import to_camel

from modelplane.api import constants as c
from modelplane.api.objects import condition, label_value
from modelplane.api.readers import (
    ObservedInferenceCluster,
    ObservedModelReplica,
    ObservedPool,
    draining_replicas,
    read_devices,
    read_inference_cluster,
    read_model_deployment,
    read_model_replica,
)
from modelplane.cli.explain import explain_deployment
from modelplane.cli.rollout_view import ClusterRevision, cluster_revisions
from modelplane.local.store import ObjectStore
from modelplane.scheduling import words
from modelplane.scheduling.types import ScheduleResult


@dataclass(frozen=True)
class Usage:
    """Devices one replica's role holds in a pool."""

    deployment: str  # NAMESPACE/NAME
    replica: str
    role: str
    devices: int
    ready: bool
    draining: bool


@dataclass(frozen=True)
class Suggestion:
    """A what-if answer that grows this pool."""

    deployment: str
    nodes: int
    replicas: int
    text: str


@dataclass
class PoolView:
    """One pool of a cluster: capacity, usage by deployment, free devices."""

    name: str
    class_name: str
    nodes: int
    devices_per_node: int  # DRA devices of one node
    capacity: int  # devices of the pool
    used: list[Usage] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    unknown: str | None = None  # why the pool cannot be verified, when it cannot
    stock_out: str | None = None  # the cloud has no capacity: the cluster's note
    drift: list[str] = field(default_factory=list)  # what its published devices differ in
    price: float | None = None  # per device-hour, when the pool or its class declares one
    spot: bool = False  # Spot capacity the cloud may reclaim

    @property
    def used_devices(self) -> int:
        """Devices held by replicas."""
        return sum(u.devices for u in self.used)

    @property
    def cost_per_hour(self) -> float | None:
        """What the held devices cost per hour (None: the pool declares no price)."""
        return None if self.price is None else self.price * self.used_devices

    @property
    def free(self) -> int:
        """Devices not held (negative when the pool is oversubscribed)."""
        return self.capacity - self.used_devices


@dataclass
class ClusterView:
    """One InferenceCluster and its pools."""

    name: str
    ready: bool
    taints: list[str]
    pools: list[PoolView]
    drift: str | None = None  # HardwareDrift's message while the cluster reports one
    unschedulable: list[str] = field(default_factory=list)  # replicas it cannot schedule

    @property
    def cost_per_hour(self) -> float | None:
        """What the devices held on its priced pools cost per hour (None: none is priced)."""
        costs = [p.cost_per_hour for p in self.pools if p.cost_per_hour is not None]
        return sum(costs) if costs else None


@dataclass(frozen=True)
class Rejection:
    """Why one cluster cannot take a deployment's missing replicas."""

    cluster: str
    reason: str
    message: str
    what_if: str | None


@dataclass
class DeploymentView:
    """A deployment's placement summary; `rejections` only while replicas are missing."""

    name: str  # NAMESPACE/NAME
    desired: int
    placed: int
    ready: int
    draining: int
    rejections: list[Rejection] = field(default_factory=list)
    what_if: list[str] = field(default_factory=list)
    unschedulable: int = 0  # placed replicas their cluster reports unschedulable
    # What its replicas' devices cost per hour on priced pools (None: none is priced).
    cost_per_hour: float | None = None
    quota: list[str] = field(default_factory=list)  # its namespace's FleetQuota use
    preemption: str | None = None  # the latest preemption it took part in, in words
    # Rollout Progressive: the decision, the spec's revision, and what each cluster runs.
    rollout: str | None = None
    revision: str | None = None
    revisions: list[ClusterRevision] = field(default_factory=list)

    @property
    def missing(self) -> int:
        """Replicas that could not be placed."""
        return max(0, self.desired - self.placed)


@dataclass
class FleetView:
    """Every cluster and pool, and every deployment."""

    clusters: list[ClusterView]
    deployments: list[DeploymentView]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON/YAML (computed totals included)."""
        clusters = []
        for cl in self.clusters:
            d = asdict(cl)
            for pool, raw in zip(cl.pools, d["pools"], strict=True):
                raw["usedDevices"], raw["freeDevices"] = pool.used_devices, pool.free
                raw["costPerHour"] = pool.cost_per_hour
            d["costPerHour"] = cl.cost_per_hour
            clusters.append(d)
        deployments = [{**asdict(dv), "missing": dv.missing} for dv in self.deployments]
        camel: dict[str, Any] = _camel({"clusters": clusters, "deployments": deployments})
        return camel


def _camel(value: Any) -> Any:
    """Wire-style keys (camelCase), like every other object modelplane prints."""
    if isinstance(value, dict):
        return {to_camel(k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _pool_view(pool: ObservedPool) -> PoolView:
    per_node = sum(d.count for d in read_devices(pool.devices) if d.dra)
    unknown = (
        None
        if pool.unknown is None
        else words.unknown_pool(pool.unknown.reason, pool.unknown.message)
    )
    return PoolView(pool.name, pool.class_name, pool.nodes, per_node, per_node * pool.nodes,
                    unknown=unknown, stock_out=pool.note, price=pool.price,
                    spot=pool.spot is not False)  # fmt: skip


def _drift(obj: Mapping[str, Any]) -> str | None:
    """The HardwareDrift condition's message while it is True."""
    cond = condition(obj, c.CONDITION_HARDWARE_DRIFT)
    if cond is None or cond.get("status") != "True":
        return None
    return str(cond.get("message") or "the published devices differ from the class")


def _cluster_view(cl: ObservedInferenceCluster, obj: Mapping[str, Any]) -> ClusterView:
    taints = [f"{t.key}={t.value or ''}:{t.effect}" for t in cl.taints]
    stuck = [
        f"{s.replica}" + (f" on pool {s.pool}" if s.pool else "") + f" since {s.since}: {s.message}"
        for s in sorted(cl.unschedulable.values(), key=lambda s: s.replica)
    ]
    pools = [_pool_view(p) for p in cl.pools]
    drift = _drift(obj)
    # HardwareDrift names each pool first (`pool 'l4' device 'gpu': ...`, one
    # clause per drift, `compose/clusters/drift.py`): each pool shows its own.
    for clause in (drift or "").split("; "):
        pool = next((p for p in pools if clause.startswith(f"pool {p.name!r} ")), None)
        if pool is not None:
            pool.drift.append(clause)
    return ClusterView(cl.name, cl.ready, taints, pools, drift, stuck)


def _deployment_of(r: ObservedModelReplica, names: Mapping[tuple[str, str], str]) -> str:
    return names.get((r.namespace, r.deployment), f"{r.namespace}/{r.deployment}")


def _charge(
    clusters: Mapping[str, ClusterView],
    r: ObservedModelReplica,
    deployment: str,
    draining: frozenset[str],
) -> None:
    cl = clusters.get(r.cluster)
    if cl is None:
        return
    for role in r.roles:
        pool = next((p for p in cl.pools if p.name == role.pool), None)
        if pool is not None:
            held = sum(q.count for q in role.requests) * role.nodes_per_worker * role.workers
            usage = Usage(deployment, r.name, role.role, held, r.ready, r.name in draining)
            pool.used.append(usage)


def _rejections(result: ScheduleResult) -> list[Rejection]:
    found = {w.cluster: w for w in result.what_if}
    changes = {
        cluster: text
        for cluster in {*found, *(s.cluster for s in result.stocked_out)}
        if (
            text := words.cluster_growth(
                found.get(cluster), [s for s in result.stocked_out if s.cluster == cluster]
            )
        )
        is not None
    }
    return [
        Rejection(v.cluster, v.reason or "Rejected", words.cluster_message(v),
                  changes.get(v.cluster))
        for v in words.rejections(result.clusters)
    ]  # fmt: skip


def _suggest(clusters: Mapping[str, ClusterView], deployment: str, result: ScheduleResult) -> None:
    for w in result.what_if:
        cl = clusters[w.cluster]
        for a in w.additions:
            pool = next((p for p in cl.pools if p.name == a.pool), None)
            if pool is not None:
                text = words.what_if_change(w)
                pool.suggestions.append(Suggestion(deployment, a.nodes, w.replicas, text))


def _deployment_view(
    store: ObjectStore, obj: Mapping[str, Any], clusters: Mapping[str, ClusterView]
) -> DeploymentView:
    meta = obj.get("metadata") or {}
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    ref = f"{ns}/{name}"
    status = read_model_deployment(obj).status
    draining = draining_replicas(obj)
    view = DeploymentView(ref, 0, 0, 0, len(draining))
    view.revisions = [r for r in cluster_revisions(obj) if r.revision is not None]
    if status.rollout is not None:
        view.rollout, view.revision = status.rollout.decision, status.rollout.revision
    try:
        result = explain_deployment(store, ns, name)
    except click.ClickException as err:  # an invalid spec: shown, not raised
        view.rejections = [Rejection("", "Invalid", err.message, None)]
        return view
    if result is None:
        return view
    view.desired, view.placed = result.desired, len(result.replicas)
    view.ready = sum(1 for p in status.placements or () if p.ready)
    view.unschedulable = sum(1 for r in result.replicas if r.unschedulable)
    view.quota = [words.quota_text(u) for u in result.quota]
    latest = read_model_deployment(obj).condition(c.CONDITION_PREEMPTION)
    view.preemption = None if latest is None else f"{latest.reason}: {latest.message}"
    if result.missing:
        view.rejections = _rejections(result)
        view.what_if = [words.stocked_out_text(s) for s in result.stocked_out] + [
            words.what_if_text(w) for w in result.what_if
        ]
        _suggest(clusters, ref, result)
    return view


def _costs(views: list[DeploymentView], clusters: Mapping[str, ClusterView]) -> None:
    """Each deployment's cost per hour: its devices on every priced pool times the price."""
    costs: dict[str, float] = {}
    for cl in clusters.values():
        for pool in cl.pools:
            if pool.price is not None:
                for u in pool.used:
                    costs[u.deployment] = costs.get(u.deployment, 0.0) + u.devices * pool.price
    for view in views:
        view.cost_per_hour = costs.get(view.name)


def fleet_view(store: ObjectStore) -> FleetView:
    """The fleet view of a rendered store."""
    read = [(read_inference_cluster(o), o) for o in store.list(
        c.API_VERSION, c.KIND_INFERENCE_CLUSTER, None, None)]  # fmt: skip
    clusters = {
        observed.name: _cluster_view(observed, obj)
        for observed, obj in sorted(
            ((o, raw) for o, raw in read if o is not None), key=lambda x: x[0].name
        )
    }
    deployments = sorted(
        store.list(c.API_VERSION, c.KIND_MODEL_DEPLOYMENT, None, None),
        key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"].get("name", "")),
    )
    names: dict[tuple[str, str], str] = {}
    draining: set[str] = set()
    for obj in deployments:
        meta = obj["metadata"]
        names[(meta.get("namespace", ""), meta.get("name", ""))] = (
            f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        )
        draining |= draining_replicas(obj)
    by_label = {label_value(k): k for k in clusters}
    for raw in store.list(c.API_VERSION, c.KIND_MODEL_REPLICA, None, None):
        r = read_model_replica(raw, by_label)
        if r is not None:
            _charge(clusters, r, _deployment_of(r, names), frozenset(draining))
    views = [_deployment_view(store, obj, clusters) for obj in deployments]
    _costs(views, clusters)
    for cl in clusters.values():
        for pool in cl.pools:
            pool.used.sort(key=lambda u: (u.deployment, u.replica, u.role))
    return FleetView(list(clusters.values()), views)


__all__ = [
    "ClusterRevision",
    "ClusterView",
    "DeploymentView",
    "FleetView",
    "PoolView",
    "Rejection",
    "Suggestion",
    "Usage",
    "fleet_view",
]
