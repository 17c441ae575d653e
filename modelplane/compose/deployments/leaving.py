"""The replicas the autoscaler removes, as the ModelDeployment composer emits them.

It owns the scale-down side of one plan: an event for each replica that starts
draining or is deleted (saying whether its requests in flight were done or its
drain timeout passed), and each leaving replica kept exactly as observed, its
ModelEndpoint at weight 0 (`draining`), and listed in the status as draining
for the removal reason, with the autoscaler's own status and each drain's
start and state (`status.autoscaling.drains`).
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api.autoscaling import MAX_DRAIN_MESSAGE, Drain
from modelplane.api.model_deployment import ModelDeploymentStatus, Placement, RolePlacement
from modelplane.api.readers import ObservedInferenceCluster, read_model_replica
from modelplane.compose.common import meta
from modelplane.compose.deployments.endpoints import (
    endpoint_for,
    endpoint_key,
    endpoint_ready,
    replica_view,
)
from modelplane.compose.deployments.planner import DeploymentPlan, Removal, replica_key
from modelplane.compose.deployments.replica_manifests import desired_copy, user_labels
from modelplane.compose.deployments.scaling import REMOVAL_REASON, status_of
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource


def removal_events(result: ComposeResult, plan: DeploymentPlan) -> None:
    """One event per replica the autoscaler starts draining or deletes."""
    assert plan.scaling is not None
    auto = plan.spec.autoscaling
    timeout = auto.drain_timeout_seconds if auto is not None else 0
    desired = plan.scaling.decision.desired
    for removal in plan.removals:
        p = removal.replica
        if removal.draining:
            if p.name not in plan.scaling.leaving:
                result.normal(
                    "ScaleDownDraining",
                    f"replica {p.name} on {p.cluster} leaves ({desired} replicas wanted): "
                    "its endpoint goes to weight 0 in every ModelService, then it waits up to "
                    f"{timeout}s for its requests in flight before it is deleted",
                )
        elif removal.observed:
            _removed_event(result, removal)


def _removed_event(result: ComposeResult, removal: Removal) -> None:
    """The event of a replica deleted: drained, or its drain timeout passed (a warning)."""
    p, drain = removal.replica, removal.drain
    if drain is None:
        result.normal("ScaleDownRemoved", f"replica {p.name} on {p.cluster} deleted (not Ready)")
        return
    message = f"replica {p.name} on {p.cluster} deleted (weight 0 in every ModelService; "
    message += f"{drain.message})"
    if drain.timed_out:  # requests still in flight (or not known) may fail
        result.warn("ScaleDownRemoved", message)
    else:
        result.normal("ScaleDownRemoved", message)


def drains_of(plan: DeploymentPlan) -> list[Drain]:
    """`status.autoscaling.drains`: each replica still leaving, since when, what it waits for."""
    return [
        Drain(
            replica=r.replica.name, since=r.drain.since, message=r.drain.message[:MAX_DRAIN_MESSAGE]
        )
        for r in plan.removals
        if r.draining and r.drain is not None and r.drain.since is not None
    ]


def compose_leaving(
    inp: ComposeInput,
    result: ComposeResult,
    plan: DeploymentPlan,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> None:
    """Leaving replicas: composed as observed, endpoint at weight 0, listed as draining."""
    assert plan.scaling is not None
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    status = ModelDeploymentStatus.model_validate(result.status)
    placements = list(status.placements or [])
    labels = user_labels(plan.revisions.spec, ComposeResult())
    for p, observed in plan.leaving:
        key = replica_key(p.cluster, p.index)
        result.desired[key] = DesiredResource(desired_copy(observed), "True")
        view = replica_view(p.name, p.cluster, read_model_replica(inp.observed[key]), clusters)
        endpoint = endpoint_for(view, name, namespace, labels)
        if endpoint is not None:
            endpoint["spec"]["draining"] = True
            ekey = endpoint_key(key)
            ready = ekey in inp.observed and endpoint_ready(inp.observed[ekey])
            result.desired[ekey] = DesiredResource(endpoint, "True" if ready else "False")
        placements.append(
            Placement(
                cluster=p.cluster,
                index=p.index,
                replica_name=p.name,
                pools=[RolePlacement(role=ra.role, pool=ra.pool) for ra in p.roles],
                ready=True,
                draining=True,
                drain_reason=REMOVAL_REASON,
            )
        )
    kept = [p.name for p, _ in plan.leaving]
    status.placements = placements
    status.draining_replicas = (status.draining_replicas or 0) + len(kept) or None
    status.autoscaling = status_of(plan.scaling, kept, drains_of(plan))
    result.status = status.to_dict()
