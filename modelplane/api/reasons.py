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
    # A pod template its InferenceCluster's Pod Security level forbids (ModelReplica).
    FORBIDDEN_BY_POD_SECURITY = "ForbiddenByPodSecurity"
    # A ModelReplica no ModelDeployment of its namespace placed (ModelReplica).
    NOT_PLACED_BY_DEPLOYMENT = "NotPlacedByDeployment"


class PoolsResolvedReason(StrEnum):
    """`PoolsResolved`: did every pool of an InferenceCluster resolve its class?"""

    RESOLVED = "Resolved"
    CLASS_NOT_FOUND = "ClassNotFound"
    INVALID_CLASS = "InvalidClass"
    WAITING_FOR_RESOURCES = "WaitingForResources"
    NOT_PROVISIONABLE = "NotProvisionable"


class CredentialsResolvedReason(StrEnum):
    """`CredentialsResolved`: does the Secret a composite names (a workload cluster's
    kubeconfig, a ModelEndpoint's credential) exist with its key?"""

    RESOLVED = "Resolved"
    SECRET_NOT_FOUND = "SecretNotFound"
    SECRET_KEY_MISSING = "SecretKeyMissing"
    UNSUPPORTED_SOURCE = "UnsupportedSource"
    WAITING_FOR_RESOURCES = "WaitingForResources"
    WAITING_FOR_CLUSTER = "WaitingForCluster"


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
    DRAINING = "Draining"
    REPLACEMENT_UNSCHEDULABLE = "ReplacementUnschedulable"
    REPLICA_UNSCHEDULABLE = "ReplicaUnschedulable"
    QUOTA_EXCEEDED = "QuotaExceeded"
    PRIORITY_NOT_ALLOWED = "PriorityNotAllowed"  # spec.priority not granted to the namespace
    PRIORITY_CLASS_NOT_FOUND = "PriorityClassNotFound"  # spec.priority exists nowhere


class WithinQuotaReason(StrEnum):
    """`WithinQuota`: does the namespace hold no more devices than each FleetQuota limit?"""

    WITHIN_LIMITS = "WithinLimits"
    OVER_LIMIT = "OverLimit"  # a limit lowered below use: nothing is deleted, nothing new placed
    SELECTOR_ERROR = "SelectorError"  # a limit's selector cannot be evaluated: it fails closed


class PreemptionReason(StrEnum):
    """`Preemption`: did a higher-priority deployment preempt this one's replicas, or this
    one preempt another's, in the latest scheduling cycle?"""

    PREEMPTING = "Preempting"
    PREEMPTED = "Preempted"


class AutoscalingReason(StrEnum):
    """`Autoscaling`: what the autoscaler decided from the engines' signals, and may it?"""

    SCALED_UP = "ScaledUp"
    SCALED_DOWN = "ScaledDown"
    STEADY = "Steady"
    STABILIZING = "Stabilizing"
    LIMITED = "Limited"
    SIGNALS_MISSING = "SignalsMissing"
    EXTERNAL_SCALER = "ExternalScaler"


class RolledOutReason(StrEnum):
    """`RolledOut`: does every replica run the spec's revision, and if not, where is the
    rollout (rollout Progressive)?"""

    COMPLETE = "Complete"
    UPDATING = "Updating"
    ANALYZING = "Analyzing"
    WAITING_FOR_CACHE = "WaitingForCache"
    SIGNALS_MISSING = "SignalsMissing"
    WAVE_PASSED = "WavePassed"
    PROMOTING = "Promoting"
    PAUSED = "Paused"
    ANALYSIS_FAILED = "AnalysisFailed"
    ROLLED_BACK = "RolledBack"


class CacheResolvedReason(StrEnum):
    """`CacheResolved`: do the ModelCaches a deployment names exist?"""

    RESOLVED = "Resolved"
    CACHE_NOT_FOUND = "CacheNotFound"


class ArtifactReadyReason(StrEnum):
    """`ArtifactReady`: is a ModelCache's artifact staged on every cluster it covers?"""

    READY = "Ready"
    HYDRATING = "Hydrating"
    HYDRATION_FAILED = "HydrationFailed"
    SOURCE_NOT_IMPLEMENTED = "SourceNotImplemented"
    INVALID_SOURCE = "InvalidSource"
    SECRET_NOT_FOUND = "SecretNotFound"
    CLAIM_NOT_BOUND = "ClaimNotBound"
    NO_CLUSTERS = "NoClusters"
    WAITING_FOR_RESOURCES = "WaitingForResources"
    INVALID_SPEC = "InvalidSpec"


class CacheReadyReason(StrEnum):
    """`CacheReady`: is the replica's ModelCache copy on its cluster Ready to mount?"""

    READY = "Ready"
    COPY_NOT_READY = "CopyNotReady"
    NOT_ON_CLUSTER = "NotOnCluster"
    CACHE_NOT_FOUND = "CacheNotFound"
    WAITING_FOR_RESOURCES = "WaitingForResources"


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


class ControlPlaneReadyReason(StrEnum):
    """`ControlPlaneReady`: is a provisioned cluster's control plane up and reachable?"""

    READY = "Ready"
    PROVISIONING = "Provisioning"
    CONNECTION_SECRET_MISSING = "ConnectionSecretMissing"
    CLOUD_ERROR = "CloudError"


class NodePoolsReadyReason(StrEnum):
    """`NodePoolsReady`: did every node group / node pool of a provisioned cluster come up?"""

    READY = "Ready"
    PROVISIONING = "Provisioning"
    DEGRADED = "Degraded"


class InsufficientGPUCapacityReason(StrEnum):
    """`InsufficientGPUCapacity`: is a pool short of GPU nodes because the cloud has none?"""

    CAPACITY_AVAILABLE = "CapacityAvailable"
    STOCK_OUT = "StockOut"


class ServingStackReadyReason(StrEnum):
    """`ServingStackReady`: is the software replicas need installed and ready on the cluster?"""

    READY = "Ready"
    RELEASE_NOT_READY = "ReleaseNotReady"
    GATEWAY_NOT_PROGRAMMED = "GatewayNotProgrammed"
    COMPONENT_MISSING = "ComponentMissing"
    DISABLED = "Disabled"
    WAITING_FOR_CLUSTER = "WaitingForCluster"


class HardwareDriftReason(StrEnum):
    """`HardwareDrift`: do the ResourceSlices a cluster publishes differ from its pools' classes?"""

    NO_DRIFT = "NoDrift"
    DRIFTED = "Drifted"
    NOT_OBSERVED = "NotObserved"
    INVENTORY_INVALID = "InventoryInvalid"


class ReachableReason(StrEnum):
    """`Reachable`: does the cluster's API server answer the control plane's providers?"""

    REACHABLE = "Reachable"
    UNREACHABLE = "APIServerUnreachable"


class InventoryFreshReason(StrEnum):
    """`InventoryFresh`: is the inventory agent's last report recent enough to act on?

    False (`Stale`) once the report is older than the bound its interval sets:
    its unschedulable replicas and engine signals are then not published, so no
    decision rests on them.
    """

    FRESH = "Fresh"
    STALE = "Stale"


class InputsReadableReason(StrEnum):
    """`InputsReadable`: does every object the composite reads read?

    False (`Unreadable`) names each malformed object and field; what depends
    on it is kept as it is (unknown, not absent) until it reads again.
    """

    READABLE = "Readable"
    UNREADABLE = "Unreadable"


class GatewayReadyReason(StrEnum):
    """`GatewayReady`: does the InferenceGateway's Gateway answer at an address?"""

    ADDRESSED = "Addressed"
    WAITING_FOR_RESOURCES = "WaitingForResources"
    GATEWAY_NOT_FOUND = "GatewayNotFound"
    NO_ADDRESS = "NoAddress"


class EndpointsReadyReason(StrEnum):
    """`EndpointsReady`: does a ModelService have Ready endpoints to route to?"""

    ALL_ENDPOINTS_READY = "AllEndpointsReady"
    SOME_ENDPOINTS_NOT_READY = "SomeEndpointsNotReady"
    # Ready endpoints on a cluster the route does not name yet: its objects come first.
    ENDPOINTS_JOINING = "EndpointsJoining"
    NO_READY_ENDPOINTS = "NoReadyEndpoints"
    CONFLICTING_UPSTREAM_PATHS = "ConflictingUpstreamPaths"
    TOO_MANY_ENDPOINTS = "TooManyEndpoints"
    WAITING_FOR_RESOURCES = "WaitingForResources"


class EndpointsRoutableReason(StrEnum):
    """`EndpointsRoutable`: may the fleet gateway send each selected endpoint traffic?

    An endpoint on a cluster's Gateway is reached under the fleet's identity:
    one whose upstream is not its own namespace's replica path is refused, one
    the fleet gateway cannot reach (no client certificate, cluster unreachable,
    hop Gateway not Programmed) is unreachable. Either gets weight 0.
    """

    ROUTABLE = "AllRoutable"
    REFUSED = "EndpointRefused"
    UNREACHABLE = "EndpointUnreachable"


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
    c.CONDITION_AUTOSCALING: AutoscalingReason,
    c.CONDITION_WITHIN_QUOTA: WithinQuotaReason,
    c.CONDITION_PREEMPTION: PreemptionReason,
    c.CONDITION_CACHE_RESOLVED: CacheResolvedReason,
    c.CONDITION_REPLICAS_READY: ReplicasReadyReason,
    c.CONDITION_CLUSTER_RESOLVED: ClusterResolvedReason,
    c.CONDITION_WORKLOAD_READY: WorkloadReadyReason,
    c.CONDITION_ROUTE_ACCEPTED: RouteAcceptedReason,
    c.CONDITION_CONTROL_PLANE_READY: ControlPlaneReadyReason,
    c.CONDITION_NODE_POOLS_READY: NodePoolsReadyReason,
    c.CONDITION_INSUFFICIENT_GPU_CAPACITY: InsufficientGPUCapacityReason,
    c.CONDITION_SERVING_STACK_READY: ServingStackReadyReason,
    c.CONDITION_HARDWARE_DRIFT: HardwareDriftReason,
    c.CONDITION_ARTIFACT_READY: ArtifactReadyReason,
    c.CONDITION_CACHE_READY: CacheReadyReason,
    c.CONDITION_GATEWAY_READY: GatewayReadyReason,
    c.CONDITION_ENDPOINTS_READY: EndpointsReadyReason,
    c.CONDITION_ENDPOINTS_ROUTABLE: EndpointsRoutableReason,
    c.CONDITION_INPUTS_READABLE: InputsReadableReason,
    c.CONDITION_INVENTORY_FRESH: InventoryFreshReason,
}
"""Condition type → the enum of its reasons. A new condition type adds its enum here."""


def reason_belongs(condition_type: str, reason: StrEnum) -> bool:
    """Whether `reason` is one of the answers of `condition_type`."""
    enum = REASONS.get(condition_type)
    return enum is not None and isinstance(reason, enum)
