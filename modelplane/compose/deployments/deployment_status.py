"""A ModelDeployment's status, assembled from its schedule once the replicas are composed.

It owns the status model the composer writes: one placement per planned
replica (ready as its composed replica reads), the counts (draining and
unschedulable replicas are not counted), the scale subresource's selector, the
rollout's progress, and, while replicas are missing, the clusters that refused
them with what would change their verdict, bounded in count and length.
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.model_deployment import (
    MAX_UNSCHEDULABLE_ENTRIES,
    MAX_UNSCHEDULABLE_MESSAGE,
    ClusterRejection,
    ModelDeploymentSpec,
    ModelDeploymentStatus,
    Placement,
    RolePlacement,
)
from modelplane.api.objects import label_value
from modelplane.compose.deployments.conditions import cluster_changes
from modelplane.compose.deployments.planner import replica_key
from modelplane.compose.deployments.revisions import Revisions
from modelplane.compose.types import ComposeResult
from modelplane.scheduling import words
from modelplane.scheduling.types import ScheduleResult
from modelplane.scheduling.words import cluster_message, truncate


def replica_selector(deployment: str) -> str:
    """The label selector of a deployment's replicas (its scale subresource's selector)."""
    return f"{c.LABEL_DEPLOYMENT}={label_value(deployment)}"


def write_status(
    result: ComposeResult,
    name: str,
    spec: ModelDeploymentSpec,
    plan: ScheduleResult,
    revisions: Revisions,
) -> None:
    """Write the deployment's status by constructing its model."""
    placements = [
        Placement(
            cluster=planned.cluster,
            index=planned.index,
            replica_name=planned.name,
            pools=[RolePlacement(role=ra.role, pool=ra.pool) for ra in planned.roles],
            ready=result.desired[replica_key(planned.cluster, planned.index)].ready == "True",
            draining=True if planned.draining else None,
            drain_reason=planned.drain_reason,
            unschedulable=True if planned.unschedulable else None,
            unschedulable_since=planned.unschedulable_since or None,
            revision=revisions.listed(planned.name, planned.draining),
        )
        for planned in plan.replicas
    ]
    counted = [p for p in placements if not p.draining and not p.unschedulable]
    status = ModelDeploymentStatus(
        replicas=len(counted),
        ready_replicas=sum(1 for p in counted if p.ready),
        draining_replicas=sum(1 for p in placements if p.draining) or None,
        selector=replica_selector(name),
        placements=placements,
        unschedulable=[],
        unschedulable_omitted=0,
        rollout=revisions.rollout.status if revisions.rollout is not None else None,
    )
    if len(counted) < spec.replicas and not plan.invalid_selectors:
        rejections = words.rejections(plan.clusters)
        changes = cluster_changes(plan)
        status.unschedulable = [
            ClusterRejection(
                cluster=v.cluster,
                reason=v.reason or "Rejected",
                message=truncate(cluster_message(v), MAX_UNSCHEDULABLE_MESSAGE),
                what_if=changes.get(v.cluster),
            )
            for v in rejections[:MAX_UNSCHEDULABLE_ENTRIES]
        ]
        status.unschedulable_omitted = max(0, len(rejections) - MAX_UNSCHEDULABLE_ENTRIES)
    result.status = status.to_dict()
