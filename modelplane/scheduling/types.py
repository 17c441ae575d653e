"""The scheduler's inputs and outputs.

`modelplane.scheduling.schedule(deployment, clusters, replicas)` takes raw
Kubernetes objects (dicts, as the function receives them) and returns a
`ScheduleResult`. Everything here is immutable so results can be compared in
table tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from modelplane.api.model_replica import ResolvedDeviceRequest

# Why a candidate cluster could not take a replica. One reason per cluster,
# the first rule that rejected it, in the order the filter applies them.
ClusterReason = Literal[
    "NotSelected",  # clusterSelector does not match the cluster's labels
    "Tainted",  # an untolerated taint (NoSchedule or NoExecute)
    "NotReady",  # the cluster is not Ready or publishes no pools
    "NoMatchingPool",  # no pool's devices satisfy every request of some role
    "InsufficientCapacity",  # pools match but not enough free nodes/devices
    "InvalidNodeSelector",  # a selector does not compile: nothing new is placed
    "WaitingForCache",  # a ModelCache in spec.caches does not exist: nothing new is placed
    "CacheNotOnCluster",  # the deployment's ModelCache stages no copy on the cluster
    "BackendUnsupported",  # the cluster does not run the deployment's spec.backend
    "PodSecurityForbidden",  # the cluster's spec.podSecurity level forbids a template's field
    "PriorityClassMissing",  # the PriorityClass the pods would name does not exist there
    # every matching pool holds a replica of this deployment the cluster reports unschedulable
    "ReplicaUnschedulable",
    "QuotaExceeded",  # the namespace's FleetQuota has no room for one more replica on the pool
    "SpotNotAllowed",  # the pool is Spot capacity and spec.placement.allowSpot is not true
]

# Why an existing replica must leave its place (and be replaced elsewhere).
EvictReason = Literal[
    "ClusterGone",  # its cluster no longer exists
    "Deselected",  # its cluster no longer matches spec.clusterSelector
    "NoExecuteTaint",  # its cluster carries an untolerated NoExecute taint
    "NoIndex",  # the replica names no index
    "NoPool",  # the replica names no node pool
    "FormChanged",  # the deployment moved between unified and disaggregated serving
    "PoolGone",  # its pool is no longer published by a cluster whose pools all read
    "PoolMismatch",  # its pool verifiably no longer matches the (edited) node selector
    "Duplicate",  # another replica holds the same (cluster, index)
    "BackendUnsupported",  # its cluster verifiably no longer runs the deployment's backend
    "Unschedulable",  # its cluster reports its pods unschedulable past the grace period
    "Preempted",  # a higher-priority replica preempts it (no make-before-break)
    "SpotNotAllowed",  # its pool is Spot capacity and spec.placement.allowSpot is not true
    "RevisionChanged",  # replaced by a replica of the new template revision (a rollout)
    "ScaleDown",  # the autoscaler removes it; drained to weight 0 first (never by the scheduler)
]

# Reasons a Ready replica leaves make-before-break (rollout MakeBeforeBreak): it
# still runs where it is, so it keeps serving, marked draining, until a
# replacement is Ready. A gone cluster, or a replica without identity, breaks first.
MAKE_BEFORE_BREAK: frozenset[EvictReason] = frozenset(
    {
        "Deselected",
        "NoExecuteTaint",
        "PoolMismatch",
        "FormChanged",
        "SpotNotAllowed",
        "RevisionChanged",
    }
)

# Why an existing replica's place cannot be verified (it is kept; nothing new goes there).
UnverifiableCause = Literal[
    "ClusterNotReady",  # the cluster is not Ready
    "PoolUnknown",  # the pool is published as unknown (class missing or invalid, unreadable)
    "DevicesUnparsable",  # a device of the pool does not parse in the DRA CEL environment
    "PoolsUnreadable",  # the pool is not listed but some published entry could not be read
]


@dataclass(frozen=True)
class SelectorVerdict:
    """The outcome of one selector against one device."""

    expression: str
    value: bool | None  # None when evaluation errored
    error: str | None = None


@dataclass(frozen=True)
class DeviceVerdict:
    """Why one device of a pool did or did not satisfy one request."""

    device: str  # the InferenceClass device name
    matched: bool
    # In order, up to and including the first that was not true (false or error).
    selectors: tuple[SelectorVerdict, ...] = ()
    # Set when selectors passed but the device had too little unconsumed count.
    insufficient_count: tuple[int, int] | None = None  # (needed, available)


@dataclass(frozen=True)
class RequestVerdict:
    """Why one device request did or did not resolve in a pool."""

    request: str
    matched: bool
    device: str | None = None  # the device it resolved to
    devices: tuple[DeviceVerdict, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class PoolVerdict:
    """How one pool fared for one role."""

    pool: str
    role: str
    matched: bool
    requests: tuple[RequestVerdict, ...] = ()
    needed_nodes: int = 0
    free_nodes: int = 0
    message: str = ""
    refused: str | None = None  # a pool filter's reason when its devices match but it is refused


@dataclass(frozen=True)
class ClusterVerdict:
    """Why a candidate cluster could (not) take more replicas of the deployment."""

    cluster: str
    eligible: bool
    reason: ClusterReason | None = None
    message: str = ""
    pools: tuple[PoolVerdict, ...] = ()


@dataclass(frozen=True)
class RoleAssignment:
    """The pool and DRA requests one role of a replica resolved to."""

    role: str  # constants.ROLE_UNIFIED / ROLE_PREFILL / ROLE_DECODE
    pool: str
    device_requests: tuple[ResolvedDeviceRequest, ...]
    nodes: int  # nodes this role occupies (nodes per worker × workers.count)


@dataclass(frozen=True)
class PlannedReplica:
    """One replica of the desired set."""

    cluster: str
    index: int
    roles: tuple[RoleAssignment, ...]
    retained: bool  # an existing replica kept in place
    name: str  # the ModelReplica's opaque stable name
    ready: bool = False  # the observed replica is Ready (always False for new ones)
    # Set on a replica that must leave and keeps serving until replaced (make-before-break).
    drain_reason: EvictReason | None = None
    drain_message: str = ""
    # Set on a replica its cluster reports unschedulable, kept because no replacement
    # could be placed elsewhere: composed, charged, not counted (it serves nothing).
    unschedulable_since: str | None = None
    # Lower-priority replicas of other deployments this one preempts: (namespace, name).
    preempts: tuple[tuple[str, str], ...] = ()

    @property
    def unschedulable(self) -> bool:
        """Whether the replica is kept although its cluster cannot schedule its pods."""
        return self.unschedulable_since is not None

    @property
    def draining(self) -> bool:
        """Whether the replica is draining: composed unchanged and serving, not counted."""
        return self.drain_reason is not None


@dataclass(frozen=True)
class Withdrawal:
    """A not-yet-Ready replica withdrawn from an oversubscribed pool (contention)."""

    cluster: str
    index: int
    pool: str
    message: str
    name: str = ""  # the withdrawn ModelReplica's name


StuckOutcome = Literal[
    "Moved",  # a replacement was placed elsewhere; the stuck replica is withdrawn
    "Kept",  # no replacement fits anywhere: kept, the cluster may still schedule it
    "Withdrawn",  # rollout Immediate: withdrawn at once, and no replacement fits anywhere
]


@dataclass(frozen=True)
class StuckPlacement:
    """A replica of the deployment whose cluster reports its pods unschedulable, and what
    the scheduler did about it (`StuckOutcome`)."""

    name: str  # the ModelReplica
    cluster: str
    index: int
    pool: str  # the pool the cluster reports (else the replica's first pool)
    since: str  # RFC 3339, as the cluster reports it
    message: str  # the cluster scheduler's message
    outcome: StuckOutcome
    moved_to: tuple[str, int] | None = None  # the replacement's (cluster, index) when Moved


@dataclass(frozen=True)
class Unverifiable:
    """An existing replica kept because its place cannot be verified (SPEC §3.3)."""

    name: str  # the ModelReplica
    cluster: str
    index: int
    pool: str
    class_name: str  # the pool's InferenceClass ("" when unknown)
    cause: UnverifiableCause
    detail: str = ""  # what the cluster or reader said (e.g. the unknown pool's message)


@dataclass(frozen=True)
class PoolAddition:
    """Nodes to add to one pool (of its class) in a what-if answer."""

    pool: str
    class_name: str  # the pool's InferenceClass
    roles: tuple[str, ...]  # the roles of the replica this pool would take
    nodes: int
    # The pool's maxNodeCount when it sets one: its published nodes count up to
    # it already, so these nodes are past it and it must be raised by as many.
    ceiling: int | None = None

    @property
    def raised_ceiling(self) -> int | None:
        """The maxNodeCount that would hold the added nodes; None without a ceiling."""
        return None if self.ceiling is None else self.ceiling + self.nodes


@dataclass(frozen=True)
class StockedOutPool:
    """A pool the what-if would grow but whose cloud has no capacity: never suggested."""

    cluster: str
    pool: str
    note: str  # the cluster's own words for the stock-out (zone, accelerator, nodes up)


@dataclass(frozen=True)
class WhatIf:
    """The smallest change to one eligible cluster's pools that places the missing replicas."""

    cluster: str
    replicas: int  # how many more replicas the change places
    additions: tuple[PoolAddition, ...]

    @property
    def nodes(self) -> int:
        """Nodes added in all."""
        return sum(a.nodes for a in self.additions)


@dataclass(frozen=True)
class RuleScore:
    """One score rule's say about one cluster: its normalised score and its weight."""

    rule: str
    score: float  # within [0, 100], higher is better
    weight: int


@dataclass(frozen=True)
class ScoreCard:
    """Every score rule's say about one cluster, and their weighted sum (the fill's key)."""

    cluster: str
    scores: tuple[RuleScore, ...]

    @property
    def total(self) -> float:
        """The weighted sum the fill maximises (ties go to the first name)."""
        return sum(s.weight * s.score for s in self.scores)


@dataclass(frozen=True)
class Victim:
    """A replica of another deployment a preemption withdraws."""

    namespace: str
    name: str
    deployment: str
    priority: int


@dataclass(frozen=True)
class Preemption:
    """A new replica placed by preempting lower-priority replicas on one pool."""

    replica: str  # the new ModelReplica
    cluster: str
    pool: str
    priority: int  # the preemptor's PriorityClass value
    victims: tuple[Victim, ...]


@dataclass(frozen=True)
class QuotaUse:
    """One FleetQuota limit: devices used by the namespace (this cycle's placements
    included) against its hard limit."""

    quota: str
    limit: str
    used: int
    hard: int


@dataclass(frozen=True)
class ScheduleResult:
    """The desired replicas of one deployment and why any are missing."""

    replicas: tuple[PlannedReplica, ...]  # sorted by (cluster, index)
    desired: int  # spec.replicas
    # Compile errors of the node selector: (field path, compiler message).
    # When non-empty nothing new is placed (existing replicas are retained).
    invalid_selectors: tuple[tuple[str, str], ...] = ()
    clusters: tuple[ClusterVerdict, ...] = ()  # every InferenceCluster considered, by name
    withdrawn: tuple[Withdrawal, ...] = ()
    # Existing replicas dropped (cluster gone, drained, pool no longer matches):
    # (replica name, reason) of each existing replica dropped and to be replaced.
    replaced: tuple[tuple[str, str], ...] = field(default=())
    # Names of existing replicas dropped by scale-down.
    scaled_down: tuple[str, ...] = ()
    # Existing replicas kept although their place cannot be verified.
    unverifiable: tuple[Unverifiable, ...] = ()
    # spec.caches entries not found: no new replica is placed until they exist.
    missing_caches: tuple[str, ...] = ()
    # When replicas are missing: per eligible cluster whose pools match, the
    # smallest pool growth that places them all there (fewest nodes first).
    what_if: tuple[WhatIf, ...] = ()
    # Pools a what-if answer would have grown but whose cloud reports a stock-out
    # (by cluster, pool): left out of `what_if`, named instead.
    stocked_out: tuple[StockedOutPool, ...] = ()
    surge: int = 0  # rollout.maxSurge resolved for spec.replicas (0 under Immediate)
    # Replicas of the deployment their clusters report unschedulable, and what was done.
    stuck: tuple[StuckPlacement, ...] = ()
    # With every verdict explained: the eligible cluster the fill would give one more
    # replica, then the runner-up, with each rule's score (empty when none is eligible).
    ranking: tuple[ScoreCard, ...] = ()
    # Replicas placed by preempting others (this deployment preempting).
    preemptions: tuple[Preemption, ...] = ()
    # This deployment's replicas withdrawn because others preempt them: (name, words).
    preempted: tuple[tuple[str, str], ...] = ()
    # The namespace's FleetQuota limits, as counted after this cycle (empty: no quota).
    quota: tuple[QuotaUse, ...] = ()
    # Draining replicas dropped this cycle because their replacements serve
    # (make-before-break done), as they were planned: still composed today, so the
    # composer routes each out before it is deleted. Also listed in `replaced`.
    superseded: tuple[PlannedReplica, ...] = ()

    @property
    def placed(self) -> int:
        """Replicas placed and counted (draining and unschedulable ones are not)."""
        return sum(1 for r in self.replicas if not r.draining and not r.unschedulable)

    @property
    def draining(self) -> tuple[PlannedReplica, ...]:
        """Replicas that must leave and keep serving until replaced."""
        return tuple(r for r in self.replicas if r.draining)

    @property
    def missing(self) -> int:
        """Replicas that could not be placed."""
        return max(0, self.desired - self.placed)
