"""Condition reasons: one enum per condition type.

A condition answers one question (SPEC §2); its reason says which answer and
why, in CamelCase. Keeping the reasons of one condition type in one enum lets a
composer's early stop (`modelplane.compose.outcome`) refuse a reason that does
not belong to the condition it sets, and lets the CLI and tests enumerate every
answer a condition can give.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from modelplane.api import constants as c


class ValidReason(StrEnum):
    """`Valid`: is the composite's own spec usable?"""

    VALID = "Valid"
    INVALID_SPEC = "InvalidSpec"


class PoolsResolvedReason(StrEnum):
    """`PoolsResolved`: did every pool of an InferenceCluster resolve its class?"""

    RESOLVED = "Resolved"
    CLASS_NOT_FOUND = "ClassNotFound"
    INVALID_CLASS = "InvalidClass"
    WAITING_FOR_RESOURCES = "WaitingForResources"


class CredentialsResolvedReason(StrEnum):
    """`CredentialsResolved`: can the control plane reach the workload cluster?"""

    RESOLVED = "Resolved"
    SECRET_NOT_FOUND = "SecretNotFound"
    SECRET_KEY_MISSING = "SecretKeyMissing"
    UNSUPPORTED_SOURCE = "UnsupportedSource"
    WAITING_FOR_RESOURCES = "WaitingForResources"


class ScheduledReason(StrEnum):
    """`Scheduled`: does every desired replica of a ModelDeployment have a place?"""

    ALL_REPLICAS_SCHEDULED = "AllReplicasScheduled"
    PARTIAL = "Partial"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    INVALID_NODE_SELECTOR = "InvalidNodeSelector"
    NO_CLUSTERS = "NoClusters"
    WAITING_FOR_CACHE = "WaitingForCache"
    INVALID_SPEC = "InvalidSpec"
    SCHEDULER_ERROR = "SchedulerError"
    WAITING_FOR_RESOURCES = "WaitingForResources"
    PLACEMENT_UNVERIFIABLE = "PlacementUnverifiable"


class CacheResolvedReason(StrEnum):
    """`CacheResolved`: do the ModelCaches a deployment names exist?"""

    RESOLVED = "Resolved"
    CACHE_NOT_FOUND = "CacheNotFound"


class ReplicasReadyReason(StrEnum):
    """`ReplicasReady`: do the placed replicas serve?"""

    ALL_REPLICAS_READY = "AllReplicasReady"
    REPLICAS_NOT_READY = "ReplicasNotReady"


class ClusterResolvedReason(StrEnum):
    """`ClusterResolved`: can a ModelReplica reach and stamp for its cluster?"""

    RESOLVED = "Resolved"
    WAITING_FOR_RESOURCES = "WaitingForResources"
    CLUSTER_NOT_FOUND = "ClusterNotFound"
    CLUSTER_NOT_READY = "ClusterNotReady"
    PROVIDER_CONFIG_MISSING = "ProviderConfigMissing"
    INVALID_SCHEDULING_TEMPLATE = "InvalidSchedulingTemplate"


class WorkloadReadyReason(StrEnum):
    """`WorkloadReady`: is a replica's workload Available on its cluster?"""

    AVAILABLE = "Available"
    WORKLOAD_NOT_AVAILABLE = "WorkloadNotAvailable"


class RouteAcceptedReason(StrEnum):
    """`RouteAccepted`: did the cluster's Gateway accept the replica's HTTPRoute?"""

    ACCEPTED = "Accepted"
    ROUTE_NOT_ACCEPTED = "RouteNotAccepted"


class UnknownReason(StrEnum):
    """Why a published entry (an InferenceCluster's pool) is *unknown*, not absent.

    Not a condition type's reason: it travels in `status.gpuPools[].reason` and
    in what the readers of `modelplane.api.readers` return. A replica on an
    unknown pool is kept (it cannot be verified either way) and no new replica
    goes there.
    """

    CLASS_NOT_FOUND = "ClassNotFound"
    INVALID_CLASS = "InvalidClass"
    UNREADABLE = "Unreadable"
    DEVICES_UNPARSABLE = "DevicesUnparsable"


REASONS: Final[dict[str, type[StrEnum]]] = {
    c.CONDITION_VALID: ValidReason,
    c.CONDITION_POOLS_RESOLVED: PoolsResolvedReason,
    c.CONDITION_CREDENTIALS_RESOLVED: CredentialsResolvedReason,
    c.CONDITION_SCHEDULED: ScheduledReason,
    c.CONDITION_CACHE_RESOLVED: CacheResolvedReason,
    c.CONDITION_REPLICAS_READY: ReplicasReadyReason,
    c.CONDITION_CLUSTER_RESOLVED: ClusterResolvedReason,
    c.CONDITION_WORKLOAD_READY: WorkloadReadyReason,
    c.CONDITION_ROUTE_ACCEPTED: RouteAcceptedReason,
}
"""Condition type → the enum of its reasons. A new condition type adds its enum here."""


def reason_belongs(condition_type: str, reason: StrEnum) -> bool:
    """Whether `reason` is one of the answers of `condition_type`."""
    enum = REASONS.get(condition_type)
    return enum is not None and isinstance(reason, enum)
