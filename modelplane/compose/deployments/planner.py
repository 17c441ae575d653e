"""A ModelDeployment's whole decision for one reconcile, made once: `plan_deployment`.

The composer emits its desired state from the plan; `modelplane explain` and
`modelplane fleet` compute the plan over the rendered store and print it, so
what they show is what the status says. The phases, in order:

1. **Scaling** (`scaling.plan_scaling`): with `spec.autoscaling`, how many
   replicas, and how many the scheduler is asked to keep or place (every
   counted one, so the least useful can leave afterwards).
2. **The scheduler's input** (`observed.scheduler_input`): every cluster,
   the fleet's replicas, caches, quotas and priority classes.
3. **Revisions** (`revisions.plan_revisions`): which template revision each
   replica runs and, under rollout Progressive, the next wave: the replicas
   outdated this step are handed to the scheduler to move make-before-break
   (under MakeBeforeBreak, every replica of another revision).
4. **What serves** (`serving`): the replicas taking traffic, so the scheduler
   never drains one whose replacement does not serve yet.
5. **The schedule**: one call of the scheduler on that complete input; under
   MakeBeforeBreak, a second one when some outdated replicas are updated in
   place instead (`in_place`: none could surge, or `maxUnavailable` allows).
6. **Replicas leaving**: above the decided count (`scaling.choose_removals`),
   and, make-before-break, those whose replacements serve (the schedule's
   `superseded`). A Ready one leaves the routes first (kept, at weight 0) until
   every ModelService shows it at weight 0 and its engine reports no request
   in flight, or the drain timeout passes (`drain.decide_drain`); the others
   go at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from modelplane.api import constants as c
from modelplane.api.autoscaling import ReplicaSignals
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.readers import ObservedInferenceCluster, read_model_replica
from modelplane.api.rollout import STRATEGY_IMMEDIATE
from modelplane.compose.common import meta
from modelplane.compose.deployments.drain import DrainVerdict, decide_drain, drain_now
from modelplane.compose.deployments.endpoints import (
    endpoint_for,
    endpoint_key,
    endpoint_ready,
    replica_view,
)
from modelplane.compose.deployments.observed import Object, ObservedFleet, scheduler_input
from modelplane.compose.deployments.revisions import Revisions, plan_revisions
from modelplane.compose.deployments.scaling import (
    REMOVAL_REASON,
    Scaling,
    choose_removals,
    drained,
    plan_scaling,
    routed,
)
from modelplane.compose.types import Resource
from modelplane.scheduling.framework import ScheduleInput, read_clusters
from modelplane.scheduling.types import PlannedReplica, ScheduleResult

# The scheduler seam: one typed input in, the schedule out (tests script it).
Scheduler = Callable[[ScheduleInput], ScheduleResult]


class DeploymentFleet(ObservedFleet, Protocol):
    """What one deployment's plan reads: the fleet, and the deployment's own objects."""

    def composed(self) -> Mapping[str, Resource]:
        """The deployment's composed resources (ModelReplicas, ModelEndpoints) by
        composition resource name, as observed."""

    def services(self) -> Sequence[Resource] | None:
        """The ModelServices of the deployment's namespace (a leaving replica goes once
        every one routes nothing to it); None when they were not read."""


def replica_key(cluster: str, index: int) -> str:
    """The composition resource name of the replica at `(cluster, index)`."""
    return f"replica-{cluster}-{index}"


@dataclass(frozen=True)
class Removal:
    """A replica that leaves this reconcile: the autoscaler takes it away (its
    `drain_reason` is `REMOVAL_REASON`), or its replacement serves."""

    replica: PlannedReplica
    draining: bool  # Ready or routed, and not yet drained (weight 0, in flight): kept
    observed: bool  # it exists (composed and observed) today
    drain: DrainVerdict | None = None  # a Ready or routed replica's drain: when, done, why
    started: bool = False  # it was already leaving before this reconcile

    @property
    def scaled_down(self) -> bool:
        """Whether the autoscaler removes it (else a make-before-break replacement serves)."""
        return self.replica.drain_reason == REMOVAL_REASON


@dataclass(frozen=True)
class DeploymentPlan:
    """Everything one reconcile of a ModelDeployment decided, before anything is emitted."""

    spec: ModelDeploymentSpec  # the spec, its replicas the decided count
    scaling: Scaling | None  # the autoscaler's answer; None without spec.autoscaling
    revisions: Revisions  # which revision each replica runs; the rollout's step
    input: ScheduleInput  # the scheduler's complete input (outdated and serving included)
    schedule: ScheduleResult  # the replicas kept or placed; desired is the decided count
    removals: tuple[Removal, ...] = ()  # replicas that leave, in order (`Removal`)
    leaving: tuple[tuple[PlannedReplica, Resource], ...] = ()  # draining away, as observed

    @property
    def placements(self) -> tuple[PlannedReplica, ...]:
        """Every replica the status lists: the schedule's, then those leaving (draining)."""
        return self.schedule.replicas + tuple(p for p, _ in self.leaving)

    def shown(self) -> ScheduleResult:
        """The schedule as `explain` and the fleet view print it: every placement listed."""
        return dataclasses.replace(self.schedule, replicas=self.placements)


def plan_deployment(
    composite: Resource,
    spec: ModelDeploymentSpec,
    fleet: DeploymentFleet,
    schedule: Scheduler,
    now: str | None = None,
) -> DeploymentPlan:
    """Decide one reconcile of `composite`, whose validated spec is `spec`.

    Pure: everything read comes from `composite` and `fleet`, and `schedule`
    is a pure function of its input. `now` is the call's time when the
    function's runtime gives one (leaving replicas' drain timeouts). Raises
    what the scheduler raises.
    """
    composed = fleet.composed()
    clusters = read_clusters(fleet.clusters())
    scaling = plan_scaling(spec, _status_of(composite), composed, clusters)
    asked = spec if scaling is None else spec.model_copy(update={"replicas": scaling.ask})
    observed = scheduler_input(composite, asked, fleet)
    revisions = plan_revisions(composite, composed, spec, observed, clusters)
    observed = dataclasses.replace(
        observed, outdated=revisions.moves(), serving=serving(composed, clusters)
    )
    result = schedule(observed)
    if revisions.replacing:
        chosen = in_place(spec, observed, result)
        if chosen:
            revisions = dataclasses.replace(revisions, in_place=chosen)
            observed = dataclasses.replace(observed, outdated=revisions.moves())
            result = schedule(observed)
    plan = DeploymentPlan(spec, scaling, revisions, observed, result)
    namespace = str(meta(composite).get("namespace", ""))
    # Read once, and only when some replica may leave (`_Drains.leave`).
    leaving = scaling is not None or bool(result.superseded)
    services = fleet.services() if leaving else None
    drains = _Drains(clusters, namespace, now, fleet, composed, services)
    if scaling is not None:
        plan = _scale(plan, scaling, drains)
    return _route_out(plan, composite, drains)


def in_place(
    spec: ModelDeploymentSpec, inp: ScheduleInput, result: ScheduleResult
) -> frozenset[str]:
    """The replicas of an older revision updated where they run this cycle (MakeBeforeBreak).

    Replacing within maxSurge comes first: a replica updated in place stops serving
    while its pods restart. Up to `maxUnavailable` replicas may be down at once; where
    the scheduler could place no replacement this cycle, at least one (one at a time,
    so a full fleet still gets the new template). Replicas already down (not serving,
    a replacement or an update still starting) use up that allowance.
    """
    if inp.missing_caches:
        return frozenset()  # the new template's cache does not exist yet: nothing to update to
    surged = any(not r.retained and not r.draining for r in result.replicas)
    allowed = max(spec.rollout.max_unavailable, 0 if surged else 1)
    serving_now = inp.serving or frozenset()
    down = sum(1 for r in result.replicas if not r.draining and r.name not in serving_now)
    waiting = sorted(
        (r for r in result.replicas if r.drain_reason == "RevisionChanged"),
        key=lambda r: (r.cluster, r.index),
    )
    return frozenset(r.name for r in waiting[: max(0, allowed - down)])


@dataclass(frozen=True)
class _Drains:
    """What the drains of one reconcile read: the clusters' reports, the call's time and
    the deployment's own objects and services."""

    clusters: Mapping[str, ObservedInferenceCluster]
    namespace: str
    call_time: str | None
    fleet: DeploymentFleet
    composed: Mapping[str, Resource]  # the deployment's own objects, as observed
    services: Sequence[Resource] | None  # the namespace's ModelServices (None: not read)

    def signal(self, p: PlannedReplica) -> ReplicaSignals | None:
        """What `p`'s cluster reports for it, if anything."""
        cl = self.clusters.get(p.cluster)
        return cl.signal(p.name, self.namespace) if cl is not None else None

    def now(self, replicas: Sequence[PlannedReplica]) -> str | None:
        """The newest time the inputs carry: `replicas`' report times and the call's."""
        reports = (s.scraped_at for p in replicas if (s := self.signal(p)) is not None)
        return drain_now([self.call_time, *reports])

    def leave(
        self, p: PlannedReplica, since: str | None, now: str | None, timeout: int
    ) -> tuple[Removal, Resource | None]:
        """How `p` leaves: at once when it does not exist, or is not Ready and no
        ModelService may route to it; else drained first (the `Removal`), and the
        replica as observed while it is kept to drain."""
        composed = self.composed
        key = replica_key(p.cluster, p.index)
        exists = key in composed
        endpoint, services = composed.get(endpoint_key(key)), self.services
        verdict = None
        # Not Ready by its own condition is not unrouted: a service that has not yet
        # seen it go still sends it requests, which fail once it is deleted.
        if exists and (p.ready or routed(endpoint, services, p.name)):
            verdict = decide_drain(
                drained(endpoint, services, p.name),
                since or now,
                now,
                timeout,
                self.signal(p),
                self.call_time is not None,
            )
        draining = verdict is not None and not verdict.done
        removal = Removal(p, draining, exists, verdict, started=since is not None)
        if not draining:
            return removal, None
        return removal, observed_replica(composed, self.fleet.replicas(), p.name, key)


def _scale(plan: DeploymentPlan, scaling: Scaling, drains: _Drains) -> DeploymentPlan:
    """Apply the autoscaler's count: which replicas stay, which drain, which go now.

    The scheduler was asked to keep every counted replica; the ones above the
    decided count leave (`scaling.choose_removals`): a Ready one, or one a
    ModelService still routes to (`scaling.routed`), is drained
    first (composed as observed, its endpoint at weight 0) and deleted once
    every ModelService shows it at weight 0 and its requests in flight are
    done or its drain timeout passed (`drain.decide_drain`).
    """
    desired = scaling.decision.desired
    kept, removed = choose_removals(
        plan.schedule.replicas, desired, scaling.leaving, drains.clusters, drains.namespace
    )
    now = drains.now(plan.schedule.replicas)
    assert plan.spec.autoscaling is not None
    timeout = plan.spec.autoscaling.drain_timeout_seconds
    removals = []
    leaving = []
    for p in removed:
        p = dataclasses.replace(p, drain_reason=REMOVAL_REASON)
        removal, found = drains.leave(p, scaling.since.get(p.name), now, timeout)
        removals.append(removal)
        if found is not None:
            leaving.append((p, found))
    return dataclasses.replace(
        plan,
        spec=plan.spec.model_copy(update={"replicas": desired}),
        schedule=dataclasses.replace(plan.schedule, replicas=tuple(kept), desired=desired),
        removals=tuple(removals),
        leaving=tuple(leaving),
    )


def _route_out(plan: DeploymentPlan, composite: Resource, drains: _Drains) -> DeploymentPlan:
    """Make-before-break's last step: a replaced replica whose replacement serves leaves
    the routes before it is deleted.

    It is kept as observed with its endpoint at weight 0 until every
    ModelService shows it at weight 0 and its requests in flight are done or
    `spec.rollout.drainTimeoutSeconds` passed since it started leaving (kept in
    its placement's `drainingSince`). Deleting it at once would leave its
    cluster's route naming a Service that is gone until the ModelService's next
    call, and Envoy answers those requests with errors. Under Immediate it goes
    at once, as that strategy says.
    """
    superseded = plan.schedule.superseded
    if not superseded or plan.spec.rollout.strategy == STRATEGY_IMMEDIATE:
        return plan
    started = draining_since(composite)
    now = drains.now(plan.schedule.replicas + superseded)
    timeout = plan.spec.rollout.drain_timeout
    removals, leaving = list(plan.removals), list(plan.leaving)
    for p in superseded:
        removal, found = drains.leave(p, started.get(p.name), now, timeout)
        removals.append(removal)
        if found is not None:
            leaving.append((p, found))
    return dataclasses.replace(plan, removals=tuple(removals), leaving=tuple(leaving))


def lists_draining(composite: Resource) -> bool:
    """Whether the deployment's last `status.placements` lists a draining replica (one
    that may leave the routes next: the namespace's services are read for it)."""
    placements = _status_of(composite).get("placements")
    entries = placements if isinstance(placements, list) else ()
    return any(isinstance(e, dict) and e.get("draining") is True for e in entries)


def draining_since(composite: Resource) -> dict[str, str]:
    """When each replica leaving the routes started to, by name, from the deployment's
    last `status.placements` (`drainingSince`); entries that do not read are left out
    (their drain starts again: it waits longer, never shorter)."""
    placements = _status_of(composite).get("placements")
    out: dict[str, str] = {}
    for entry in placements if isinstance(placements, list) else ():
        if not isinstance(entry, dict):
            continue
        name, since = entry.get("replicaName"), entry.get("drainingSince")
        if isinstance(name, str) and isinstance(since, str):
            out.setdefault(name, since)
    return out


def observed_replica(
    composed: Mapping[str, Resource], listed: Sequence[Object], name: str, key: str
) -> Resource | None:
    """The replica `name` (composed under `key`) as observed; None if unseen or its spec
    does not read."""
    found: Object | None = composed.get(key)
    if found is None or _name(found) != name:
        found = next((r for r in listed if _name(r) == name), None)
    if not isinstance(found, dict) or not isinstance(found.get("spec"), dict):
        return None
    return found


def _name(obj: Object) -> Any:
    m = obj.get("metadata")
    return m.get("name") if isinstance(m, dict) else None


def serving(
    composed: Mapping[str, Resource], clusters: Mapping[str, ObservedInferenceCluster]
) -> frozenset[str]:
    """This deployment's replicas that take traffic: Ready, and, when they get a
    ModelEndpoint (`endpoint_for`), that endpoint Ready."""
    out = set()
    for key, obj in composed.items():
        replica = read_model_replica(obj) if obj.get("kind") == c.KIND_MODEL_REPLICA else None
        if replica is None or not replica.ready:
            continue
        view = replica_view(replica.name, replica.cluster, replica, clusters)
        endpoint = composed.get(endpoint_key(key))
        routed = endpoint_for(view, "", "", {}) is not None
        if not routed or (endpoint is not None and endpoint_ready(endpoint)):
            out.add(replica.name)
    return frozenset(out)


def _status_of(composite: Object) -> Mapping[str, Any]:
    status = composite.get("status")
    return status if isinstance(status, dict) else {}
