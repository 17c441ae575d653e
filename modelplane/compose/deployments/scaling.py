"""Autoscaling in the ModelDeployment composer: how many, which ones leave, and when.

- **How many**: `autoscaling.decide` over the signals the replicas' clusters
  report (`status.replicaSignals`, read by `ObservedInferenceCluster.signal`),
  starting from the last decided count (`status.autoscaling.desiredReplicas`,
  else `spec.replicas`).
- **Where new ones go**: the scheduler, as for any count (caches, capacity,
  taints, packing all apply): it is asked for the decided count.
- **Which ones leave**: the scheduler is asked to keep every counted replica
  and every one still leaving (`scheduler_ask`), and `choose_removals` picks
  the replicas whose removal hurts least: not Ready first, then those already
  leaving, then the least loaded (requests waiting plus running; a replica
  whose load is unknown is never taken for an idle one), never the last Ready
  replica.
- **When they go**: a leaving replica that is Ready, or that a ModelService
  still routes to (`routed`), is *drained* first: it stays composed exactly
  as observed, its ModelEndpoint says `draining: true`, so every ModelService
  gives it weight 0; it is deleted once every ModelService of the namespace
  lists it at weight 0 (or not at all). A replica that is not Ready and that
  no service routes to serves nothing and leaves at once.
- **One owner of the count**: `status.autoscaling.specReplicas` records
  `spec.replicas` when autoscaling took over; a later change means an HPA,
  KEDA or `kubectl scale` writes the scale subresource, which is refused with
  `Autoscaling=False ExternalScaler` (the autoscaler keeps deciding).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from modelplane.api import constants as c
from modelplane.api.autoscaling import (
    MAX_DRAIN_MESSAGES,
    MAX_DRAINS,
    AutoscalingStatus,
    Drain,
    read_autoscaling_status,
)
from modelplane.api.inventory_summary import epoch_seconds
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.model_service import read_service_status
from modelplane.api.readers import ObservedInferenceCluster, not_scraping
from modelplane.api.reasons import AutoscalingReason
from modelplane.compose.deployments.autoscaling import Decision, decide
from modelplane.compose.types import Resource
from modelplane.scheduling.types import EvictReason, PlannedReplica

REMOVAL_REASON: EvictReason = "ScaleDown"
"""The `drainReason` of a replica the autoscaler removes."""


@dataclass(frozen=True)
class Scaling:
    """The autoscaler's answer for one reconcile."""

    decision: Decision
    ask: int  # replicas the scheduler is asked to keep or place
    spec_replicas: int  # spec.replicas as recorded when autoscaling took over
    external: str | None  # why the count looks externally written, when it does
    leaving: frozenset[str]  # replicas already leaving (status.autoscaling.draining)
    # When each replica still leaving started to (status.autoscaling.drains), by name.
    since: Mapping[str, str] = field(default_factory=dict)


def _observed_replicas(observed: Mapping[str, Resource]) -> list[tuple[str, str, str]]:
    """(name, cluster, namespace) of each ModelReplica the deployment composes today."""
    out = []
    for obj in observed.values():
        meta, spec = obj.get("metadata"), obj.get("spec")
        if obj.get("kind") != c.KIND_MODEL_REPLICA or not isinstance(meta, dict):
            continue
        name, namespace = meta.get("name"), meta.get("namespace")
        cluster = spec.get("clusterName") if isinstance(spec, dict) else None
        if isinstance(name, str) and isinstance(cluster, str):
            out.append((name, cluster, namespace if isinstance(namespace, str) else ""))
    return sorted(out)


def plan_scaling(
    spec: ModelDeploymentSpec,
    status: Mapping[str, object],
    observed: Mapping[str, Resource],
    clusters: Mapping[str, ObservedInferenceCluster],
) -> Scaling | None:
    """What the autoscaler decides this reconcile; None without `spec.autoscaling`."""
    auto = spec.autoscaling
    if auto is None:
        return None
    last = read_autoscaling_status(status)
    leaving = frozenset(last.draining or ()) if last is not None else frozenset()
    present = _observed_replicas(observed)
    counted = [(n, cl, ns) for n, cl, ns in present if n not in leaving]
    signals = {n: (clusters[cl].signal(n, ns) if cl in clusters else None) for n, cl, ns in counted}
    current = last.desired_replicas if last is not None else spec.replicas
    history = last.recommendations or [] if last is not None else []
    unscraped = not_scraping(clusters, (cl for _, cl, _ in counted))
    decision = decide(auto, [n for n, _, _ in counted], signals, current, history, unscraped)
    recorded = last.spec_replicas if last is not None and last.spec_replicas is not None else None
    recorded = spec.replicas if recorded is None else recorded
    external = None
    if spec.replicas != recorded:
        external = (
            f"spec.replicas was changed from {recorded} to {spec.replicas} while "
            "spec.autoscaling is set: an HPA, a KEDA ScaledObject or kubectl scale writes the "
            "scale subresource, and the replica count has one owner: the autoscaler ignores "
            f"it; remove the external scaler and set spec.replicas back to {recorded}, or remove "
            "spec.autoscaling"
        )
    still_leaving = sum(1 for n, _, _ in present if n in leaving)
    last_counted = _last_counted(status, max(auto.max_replicas, len(present)))
    ask = scheduler_ask(decision.desired, still_leaving, last_counted)
    since = {d.replica: d.since for d in (last.drains or ())} if last is not None else {}
    return Scaling(decision, ask, recorded, external, leaving, since)


def scheduler_ask(desired: int, leaving: int, counted: int) -> int:
    """How many replicas the scheduler is asked to keep or place: every one counted at
    the last call (`counted`) or the decided count, whichever is more, plus those still
    leaving.

    The scheduler knows nothing of the autoscaler's leaving replicas and counts them
    like the others; asked for fewer than exist, it drops the excess itself (the
    highest index), and a replica dropped there goes at once, undrained, while
    services still route to it. Only `choose_removals` may take replicas away.
    """
    return max(desired, counted) + leaving


def _last_counted(status: Mapping[str, object], bound: int) -> int:
    """`status.replicas`, never above `bound`.

    The status is only what this composer wrote last, but anyone who can write
    the status subresource can write it too: a count above both maxReplicas and
    the replicas that exist is no count to keep (a billion would have the
    scheduler place a billion replicas, for minutes).
    """
    value = status.get("replicas")
    counted = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return max(0, min(counted, bound))


def _removal_key(
    p: PlannedReplica, leaving: frozenset[str], load: float | None
) -> tuple[int, int, int, float, str, int]:
    """Sort key: not Ready, already leaving, known load, least load; then the mirror of fill."""
    return (
        1 if p.ready else 0,
        0 if p.name in leaving else 1,
        0 if load is not None else 1,
        load if load is not None else 0.0,
        # Ties: the cluster last by name, its highest index (scale-down's mirror of fill).
        "".join(chr(0x10FFFF - ord(ch)) for ch in p.cluster),
        -p.index,
    )


def choose_removals(
    planned: Sequence[PlannedReplica],
    desired: int,
    leaving: frozenset[str],
    clusters: Mapping[str, ObservedInferenceCluster],
    namespace: str,
) -> tuple[list[PlannedReplica], list[PlannedReplica]]:
    """(kept, removed): the counted replicas above `desired` whose removal hurts least.

    The replicas are the deployment's, in `namespace` (whose pods' signals count).

    Draining (make-before-break) and unschedulable replicas are the
    scheduler's and are always kept. The last Ready replica is never removed.
    """
    counted = [p for p in planned if not p.draining and not p.unschedulable]
    excess = len(counted) - desired
    if excess <= 0:
        return list(planned), []

    def load(p: PlannedReplica) -> float | None:
        cl = clusters.get(p.cluster)
        s = cl.signal(p.name, namespace) if cl is not None else None
        return s.load if s is not None else None

    ready_left = sum(1 for p in counted if p.ready)
    removed: list[PlannedReplica] = []
    for p in sorted(counted, key=lambda p: _removal_key(p, leaving, load(p))):
        if len(removed) == excess:
            break
        if p.ready and ready_left <= 1:
            continue  # never the last Ready replica
        removed.append(p)
        ready_left -= 1 if p.ready else 0
    gone = {id(p) for p in removed}
    return [p for p in planned if id(p) not in gone], removed


def drained(endpoint: Resource | None, services: Sequence[Resource] | None, name: str) -> bool:
    """Whether a leaving replica's traffic is gone: its endpoint is at weight 0 everywhere.

    Without an endpoint, when no ModelService lists it with a weight above 0
    (one that still does has not seen the endpoint go); else when the services
    were read, the observed endpoint says `draining: true` and every
    ModelService reads and lists it at weight 0 or not at all.
    """
    if endpoint is None:
        return _weighted(services or (), name) is not True
    spec = endpoint.get("spec")
    if services is None or not isinstance(spec, dict) or spec.get("draining") is not True:
        return False  # services not read may still route to it
    return _weighted(services, name) is False


def routed(endpoint: Resource | None, services: Sequence[Resource] | None, name: str) -> bool:
    """Whether a ModelService may still send replica `name` requests, whatever its own
    Ready condition says: a service lists it with a weight above 0, or it has an
    endpoint and the services were not read or one does not read."""
    if services is None:
        return endpoint is not None
    weighted = _weighted(services, name)
    return weighted is True or (weighted is None and endpoint is not None)


def _weighted(services: Sequence[Resource], name: str) -> bool | None:
    """Whether a service's status lists `name` with a weight above 0; None when none
    does but a status does not read (it may)."""
    unread = False
    for service in services:
        status = read_service_status(service)
        if status is None:
            unread = True
        elif any(e.name == name and e.weight > 0 for e in status.endpoints or ()):
            return True
    return None if unread else False


def status_of(
    scaling: Scaling, draining: Sequence[str], drains: Sequence[Drain] = ()
) -> AutoscalingStatus:
    """`status.autoscaling` from the decision, the replicas still leaving and their drains.

    Every drain's start is kept (its timeout counts from it); only the oldest
    carry their message, which bounds the status's size.
    """
    d = scaling.decision
    kept = sorted(drains, key=lambda x: (epoch_seconds(x.since) or 0, x.replica))[:MAX_DRAINS]
    kept = kept[:MAX_DRAIN_MESSAGES] + [
        x.model_copy(update={"message": None}) for x in kept[MAX_DRAIN_MESSAGES:]
    ]
    return AutoscalingStatus(
        desired_replicas=d.desired,
        current_replicas=d.current,
        proposal=d.proposal,
        reason=str(AutoscalingReason.EXTERNAL_SCALER if scaling.external else d.reason),
        message=(scaling.external or d.message)[:1024],
        signals_at=d.signals_at,
        reporting=d.reporting,
        missing=list(d.missing) or None,
        targets=list(d.targets) or None,
        recommendations=list(d.recommendations) or None,
        spec_replicas=scaling.spec_replicas,
        draining=list(draining)[:16] or None,
        drains=kept or None,
    )
