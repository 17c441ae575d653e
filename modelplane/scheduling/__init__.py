"""The fleet scheduler: placements of a deployment's replicas across clusters and pools."""

from modelplane.scheduling.names import replica_name
from modelplane.scheduling.scheduler import schedule
from modelplane.scheduling.types import (
    ClusterVerdict,
    DeviceVerdict,
    PlannedReplica,
    PoolVerdict,
    RequestVerdict,
    RoleAssignment,
    ScheduleResult,
    SelectorVerdict,
    StuckPlacement,
    Withdrawal,
)

__all__ = [
    "ClusterVerdict",
    "DeviceVerdict",
    "PlannedReplica",
    "PoolVerdict",
    "RequestVerdict",
    "RoleAssignment",
    "ScheduleResult",
    "SelectorVerdict",
    "StuckPlacement",
    "Withdrawal",
    "replica_name",
    "schedule",
]
