"""The replicas that leave, as the ModelDeployment composer emits them.

Two kinds leave through the routes: those the autoscaler removes, and, under
make-before-break, those whose replacements serve. This module owns that side
of one plan: an event for each replica that starts draining or is deleted
(saying whether its requests in flight were done or its drain timeout passed),
and each leaving replica kept exactly as observed, its ModelEndpoint at weight
0 (`draining`), and listed in the status as draining for its reason with its
drain's start and state (`drainingSince`, `drainMessage`); for the autoscaler's,
also its own status (`status.autoscaling.drains`).
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import constants as c
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
from modelplane.scheduling.types import PlannedReplica


def removal_events(result: ComposeResult, plan: DeploymentPlan) -> None:
    """One event per replica that starts draining or is deleted."""
    for removal in plan.removals:
        if removal.draining:
            if not removal.started:
                result.normal(*_draining_event(plan, removal.replica))
        elif removal.observed:
            _removed_event(result, removal)


def _draining_event(plan: DeploymentPlan, p: PlannedReplica) -> tuple[str, str]:
    """The reason and words of a replica that starts leaving the routes."""
    then = "then it waits up to {}s for its requests in flight before it is deleted"
    routes = "its endpoint goes to weight 0 in every ModelService"
    if p.drain_reason != REMOVAL_REASON:
        timeout = plan.spec.rollout.drain_timeout
        return (
            c.REASON_REPLICA_LEAVING,
            f"replica {p.name} on {p.cluster} leaves, its replacement serving: {routes}, "
            + then.format(timeout),
        )
    auto = plan.spec.autoscaling
    assert plan.scaling is not None
    timeout = auto.drain_timeout_seconds if auto is not None else 0
    desired = plan.scaling.decision.desired
    return (
        "ScaleDownDraining",
        f"replica {p.name} on {p.cluster} leaves ({desired} replicas wanted): {routes}, "
        + then.format(timeout),
    )


def _removed_event(result: ComposeResult, removal: Removal) -> None:
    """The event of a replica deleted: drained, or its drain timeout passed (a warning)."""
    p, drain = removal.replica, removal.drain
    reason = "ScaleDownRemoved" if removal.scaled_down else c.REASON_REPLICA_REMOVED
    if drain is None:
        if removal.scaled_down:
            result.normal(reason, f"replica {p.name} on {p.cluster} deleted (not Ready)")
        return  # a replaced replica that was not Ready: `replaced` said so
    message = f"replica {p.name} on {p.cluster} deleted (weight 0 in every ModelService; "
    message += f"{drain.message})"
    if drain.timed_out:  # requests still in flight (or not known) may fail
        result.warn(reason, message)
    else:
        result.normal(reason, message)


def drains_of(plan: DeploymentPlan) -> list[Drain]:
    """`status.autoscaling.drains`: each replica the autoscaler removes still leaving,
    since when, what it waits for."""
    return [
        Drain(
            replica=r.replica.name, since=r.drain.since, message=r.drain.message[:MAX_DRAIN_MESSAGE]
        )
        for r in plan.removals
        if r.scaled_down and r.draining and r.drain is not None and r.drain.since is not None
    ]


def compose_leaving(
    inp: ComposeInput,
    result: ComposeResult,
    plan: DeploymentPlan,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> None:
    """Leaving replicas: composed as observed, endpoint at weight 0, listed as draining."""
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    status = ModelDeploymentStatus.model_validate(result.status)
    placements = list(status.placements or [])
    labels = user_labels(plan.revisions.spec, ComposeResult())
    drains = {r.replica.name: r.drain for r in plan.removals if r.draining}
    for p, observed in plan.leaving:
        key = replica_key(p.cluster, p.index)
        result.desired[key] = DesiredResource(desired_copy(observed), "True")
        replica = read_model_replica(inp.observed[key])
        view = replica_view(p.name, p.cluster, replica, clusters)
        endpoint = endpoint_for(view, name, namespace, labels)
        if endpoint is not None:
            endpoint["spec"]["draining"] = True
            endpoint["metadata"]["labels"][c.LABEL_REVISION] = plan.revisions.running(p.name)
            ekey = endpoint_key(key)
            ready = ekey in inp.observed and endpoint_ready(inp.observed[ekey])
            result.desired[ekey] = DesiredResource(endpoint, "True" if ready else "False")
        drain = drains.get(p.name)
        placements.append(
            Placement(
                cluster=p.cluster,
                index=p.index,
                replica_name=p.name,
                pools=[RolePlacement(role=ra.role, pool=ra.pool) for ra in p.roles],
                ready=True,
                draining=True,
                drain_reason=p.drain_reason,
                draining_since=drain.since if drain is not None else None,
                drain_message=drain.message[:MAX_DRAIN_MESSAGE] if drain is not None else None,
                revision=plan.revisions.running(p.name),
            )
        )
    status.placements = placements
    status.draining_replicas = (status.draining_replicas or 0) + len(plan.leaving) or None
    if plan.scaling is not None:
        kept = [p.name for p, _ in plan.leaving if p.drain_reason == REMOVAL_REASON]
        status.autoscaling = status_of(plan.scaling, kept, drains_of(plan))
    result.status = status.to_dict()
