"""ModelDeployment composer: place the replicas, compose one ModelReplica each.

Inputs it requires from the control plane:

- every InferenceCluster (cluster-scoped, no selector). `clusterSelector` is
  applied by the scheduler, not by the requirement, so that a cluster left out
  by labels is still explained as NotSelected;
- every ModelReplica in the fleet, across all namespaces: the scheduler charges
  other deployments' replicas against pool capacity. A requirement without a
  namespace that matches by labels selects across all namespaces (Crossplane's
  ResourceSelector semantics), and every ModelReplica this composer writes
  carries `app.kubernetes.io/managed-by: modelplane`, so that label is the
  selector;
- the ModelCache named in `spec.caches` (same namespace), when set.

While any of them has not been fetched yet, the answer is the requirements
plus every observed composed resource unchanged: an empty desired state would
make Crossplane delete the serving replicas, and a fatal result would carry
no requirements, so the control plane could never fetch them. Crossplane and
the local engine both call again at once with the requirements resolved, and
only that answer is acted on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from modelplane.api import constants as c
from modelplane.api.fleet_quota import priority_problem
from modelplane.api.kinds import MODEL_DEPLOYMENT
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.readers import ObservedInferenceCluster, read_model_replica
from modelplane.api.reasons import ScheduledReason
from modelplane.compose import outcome, unreadable
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.deployments.conditions import (
    MAX_CONDITION_MESSAGE,
    autoscaling_condition,
    cache_condition,
    events,
    preemption_condition,
    replicas_ready,
    rolled_out,
    scheduled_condition,
)
from modelplane.compose.deployments.deployment_status import write_status
from modelplane.compose.deployments.endpoints import (
    endpoint_for,
    endpoint_key,
    endpoint_ready,
    replica_view,
    unreadable_status,
)
from modelplane.compose.deployments.leaving import compose_leaving, removal_events
from modelplane.compose.deployments.listing import fleet_replicas, listing
from modelplane.compose.deployments.planner import (
    DeploymentPlan,
    Scheduler,
    lists_draining,
    plan_deployment,
    replica_key,
)
from modelplane.compose.deployments.replica_manifests import compose_replicas, user_labels
from modelplane.compose.deployments.revisions import Revisions
from modelplane.compose.replica.workload import template_errors
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)
from modelplane.scheduling.framework import ScheduleInput, read_clusters, read_priorities
from modelplane.scheduling.scheduler import schedule_input
from modelplane.scheduling.types import ScheduleResult
from modelplane.scheduling.words import truncate

CLUSTERS_REQUIREMENT = c.REQUIREMENT_INFERENCE_CLUSTERS
REPLICAS_REQUIREMENT = c.REQUIREMENT_MODEL_REPLICAS
SERVICES_REQUIREMENT = "model-services"
QUOTAS_REQUIREMENT = c.REQUIREMENT_FLEET_QUOTAS
PRIORITIES_REQUIREMENT = "priority-classes"
PLACERS_REQUIREMENT = "model-deployments"


def cache_requirement(name: str) -> str:
    """The requirement name under which a ModelCache is fetched."""
    return f"cache-{name}"


def requirements(
    namespace: str,
    spec: ModelDeploymentSpec | None,
    replicas: Sequence[Resource] = (),
    draining: bool = False,
) -> dict[str, Requirement]:
    """What the composer needs fetched to schedule a deployment.

    The PriorityClasses are asked for only when priority can matter: the
    deployment names one, or a replica of the fleet (`replicas`, once fetched)
    preempts another. So a fleet that never uses priority needs no permission
    to read them (install.md).
    """
    # Every cluster and replica of the fleet, and the namespace's FleetQuota, which
    # limits placements: what the Composition also fetches before the first call.
    reqs = {
        up.name: Requirement(
            api_version=up.api_version,
            kind=up.kind,
            match_labels=dict(up.match_labels) or None,
            namespace=namespace if up.own_namespace else None,
        )
        for up in MODEL_DEPLOYMENT.up_front
    }
    # Every PriorityClass gives the fleet's replicas their priority values (a victim
    # checks its preemptor's).
    preempting = listing(replicas).preempts
    if (spec is not None and spec.priority) or preempting:
        reqs[PRIORITIES_REQUIREMENT] = Requirement(
            api_version=c.PRIORITY_CLASS_API_VERSION, kind=c.KIND_PRIORITY_CLASS
        )
    if preempting:
        # A preemption is honoured only for a replica its own deployment placed.
        reqs[PLACERS_REQUIREMENT] = Requirement(
            api_version=c.API_VERSION, kind=c.KIND_MODEL_DEPLOYMENT
        )
    if draining or (spec is not None and spec.autoscaling is not None):
        # A leaving replica (scaled down, or replaced make-before-break) is deleted only
        # once every service routes nothing to it. A replica replaced make-before-break
        # drains (status.placements) before it leaves, so the services are read by then.
        reqs[SERVICES_REQUIREMENT] = Requirement(
            api_version=c.API_VERSION, kind=c.KIND_MODEL_SERVICE, namespace=namespace
        )
    for cache in (spec.caches or []) if spec is not None else []:
        reqs[cache_requirement(cache.name)] = Requirement(
            api_version=c.API_VERSION,
            kind=c.KIND_MODEL_CACHE,
            match_name=cache.name,
            namespace=namespace,
        )
    return reqs


# A replica waits for capacity, a cluster or a quota that frees elsewhere in the
# fleet: another deployment's replicas leaving, a cluster joining or growing. Crossplane
# does not watch required resources, so nothing this deployment composes changes
# when that happens; without a recall it would place on its next call, up to the
# function's TTL (a minute) later. Only a deployment that waits is recalled this
# often (docs/architecture.md, "The control plane's work per replica").
WAITS_ON_THE_FLEET = frozenset(
    {
        ScheduledReason.PARTIAL,
        ScheduledReason.INSUFFICIENT_CAPACITY,
        ScheduledReason.NO_CLUSTERS,
        ScheduledReason.QUOTA_EXCEEDED,
        ScheduledReason.REPLICA_UNSCHEDULABLE,
        ScheduledReason.REPLACEMENT_UNSCHEDULABLE,
        ScheduledReason.WAITING_FOR_CACHE,
    }
)
RECALL_WHILE_WAITING = 10  # seconds; Crossplane adds up to 10% of jitter


def recall_while_waiting(result: ComposeResult) -> int | None:
    """How soon to be called again: RECALL_WHILE_WAITING while `Scheduled` says a replica
    waits on the fleet (WAITS_ON_THE_FLEET), else the function's default (None)."""
    scheduled = next((x for x in result.conditions if x.type == c.CONDITION_SCHEDULED), None)
    if (
        scheduled is not None
        and scheduled.status != "True"
        and scheduled.reason in WAITS_ON_THE_FLEET
    ):
        return RECALL_WHILE_WAITING
    return None


def compose(inp: ComposeInput) -> ComposeResult:
    """Schedule the deployment and compose one ModelReplica per placed replica."""
    return compose_with(inp, _schedule)


def _schedule(inp: ScheduleInput) -> ScheduleResult:
    # The status explains only what is missing: every cluster's verdict (a
    # trial placement each) is computed only when some replica is unplaced.
    return schedule_input(inp, explain_all=False)


class _RequiredFleet:
    """The fleet as the function's required resources deliver it (see `requirements`)."""

    def __init__(self, inp: ComposeInput, namespace: str) -> None:
        self._inp = inp
        self._namespace = namespace

    def composed(self) -> Mapping[str, Resource]:
        """This deployment's composed resources, as observed."""
        return self._inp.observed

    def clusters(self) -> Sequence[Resource]:
        """Every InferenceCluster fetched."""
        return list(self._inp.required[CLUSTERS_REQUIREMENT])

    def replicas(self) -> Sequence[Resource]:
        """The fleet's replicas, this deployment's observed ones taking precedence."""
        listed = self._inp.required.get(REPLICAS_REQUIREMENT, [])
        return fleet_replicas(listed, self._inp.observed, self._namespace)

    def cache(self, name: str) -> Resource | None:
        """The ModelCache fetched under `cache_requirement(name)`, if found."""
        return next(iter(self._inp.required.get(cache_requirement(name), [])), None)

    def quotas(self) -> Sequence[Resource]:
        """The FleetQuotas of the deployment's namespace."""
        return list(self._inp.required.get(QUOTAS_REQUIREMENT, []))

    def priority_classes(self) -> Sequence[Resource]:
        """Every PriorityClass."""
        return list(self._inp.required.get(PRIORITIES_REQUIREMENT, []))

    def placers(self) -> Sequence[Resource]:
        """Every ModelDeployment, fetched while some replica of the fleet preempts."""
        return list(self._inp.required.get(PLACERS_REQUIREMENT, []))

    def services(self) -> Sequence[Resource] | None:
        """The ModelServices of the namespace; None when not fetched (`requirements`)."""
        found = self._inp.required.get(SERVICES_REQUIREMENT)
        return None if found is None else list(found)


def _priority_refused(
    inp: ComposeInput, result: ComposeResult, spec: ModelDeploymentSpec, namespace: str
) -> ComposeResult | None:
    """Hold a deployment whose spec.priority its namespace's FleetQuotas do not grant."""
    if not spec.priority:
        return None
    quotas = list(inp.required.get(QUOTAS_REQUIREMENT, []))
    refused = priority_problem(quotas, namespace, spec.priority)
    if refused is None:
        return None
    msg = f"{refused} (no new replicas are placed; existing ones are kept)"
    reason = ScheduledReason.PRIORITY_NOT_ALLOWED
    return outcome.hold(inp, result, c.CONDITION_SCHEDULED, reason, msg)


def _priority_unknown(
    inp: ComposeInput, result: ComposeResult, spec: ModelDeploymentSpec
) -> ComposeResult | None:
    """Hold a deployment whose spec.priority names a PriorityClass that exists nowhere:
    not on the control plane (where its value orders the fleet) and on no cluster (where
    the pods would name it). A misspelled class would otherwise mean priority 0, silently."""
    if not spec.priority:
        return None
    known = read_priorities(inp.required.get(PRIORITIES_REQUIREMENT, []))
    if spec.priority in known:
        return None
    clusters = read_clusters(inp.required.get(CLUSTERS_REQUIREMENT, []))
    if any(
        cl.scheduling is not None and cl.scheduling.has_priority_class(spec.priority)
        for cl in clusters.values()
    ):
        return None
    msg = (
        f"spec.priority: PriorityClass {spec.priority} exists neither on the control plane nor "
        "on any InferenceCluster (spec.scheduling.priorityClasses or "
        "existingPriorityClasses) (no new replicas are placed; existing ones are kept)"
    )
    reason = ScheduledReason.PRIORITY_CLASS_NOT_FOUND
    return outcome.hold(inp, result, c.CONDITION_SCHEDULED, reason, msg)


def spec_errors(spec: ModelDeploymentSpec) -> list[str]:
    """What the composer refuses in a parsed spec before placing anything (each naming
    its field): a role's pod template the replicas could not stamp."""
    return [
        err
        for role in spec.roles().values()
        for err in template_errors(role.workers.template, f"{role.workers_path}.template")
    ]


def compose_with(inp: ComposeInput, scheduler: Scheduler) -> ComposeResult:
    """`compose`, with the scheduler passed in (tests script its answer)."""
    result = ComposeResult()
    m = meta(inp.composite)
    name = str(m.get("name", ""))
    namespace = str(m.get("namespace", ""))

    spec, error = parse_spec(ModelDeploymentSpec, inp.composite)
    if spec is None:
        # Keep every replica that serves today; the user fixes the spec.
        return outcome.hold(inp, result, c.CONDITION_SCHEDULED, ScheduledReason.INVALID_SPEC, error)

    shape_errors = spec_errors(spec)
    if shape_errors:
        # Checked here, not only by the ModelReplica composer, so a template it
        # cannot stamp is never placed; serving replicas keep their old one.
        msg = truncate(
            "; ".join(shape_errors) + " (no new replicas are placed; existing ones are kept)",
            MAX_CONDITION_MESSAGE,
        )
        return outcome.hold(inp, result, c.CONDITION_SCHEDULED, ScheduledReason.INVALID_SPEC, msg)

    fleet = inp.required.get(REPLICAS_REQUIREMENT, [])
    result.requirements = requirements(namespace, spec, fleet, lists_draining(inp.composite))
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)
    refused = _priority_refused(inp, result, spec, namespace)
    if refused is None:
        refused = _priority_unknown(inp, result, spec)
    if refused is not None:
        return refused

    try:
        required = _RequiredFleet(inp, namespace)
        plan = plan_deployment(inp.composite, spec, required, scheduler, inp.now)
    except Exception as err:  # a scheduler bug must not tear down serving replicas
        return outcome.fatal(
            f"{ScheduledReason.SCHEDULER_ERROR}: scheduling {namespace}/{name} failed: {err}"
        )
    return _emit(inp, result, plan)


def _emit(inp: ComposeInput, result: ComposeResult, plan: DeploymentPlan) -> ComposeResult:
    """The desired state, status, conditions and events of one decided plan."""
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    spec, schedule, revisions = plan.spec, plan.schedule, plan.revisions
    removal_events(result, plan)
    if plan.scaling is not None:
        autoscaling_condition(result, plan.scaling)
    cache_condition(result, spec, plan.input.missing_caches, namespace)
    listed = inp.required.get(REPLICAS_REQUIREMENT, [])
    inconsistent = compose_replicas(inp, result, revisions, schedule, listed)
    if inconsistent is not None:
        return outcome.fatal(
            f"{ScheduledReason.SCHEDULER_ERROR}: {inconsistent[0]} of {namespace}/{name} "
            f"is inconsistent with the spec: {inconsistent[1]}"
        )
    placed = schedule.placed
    write_status(result, name, spec, schedule, revisions)
    scheduled_condition(result, spec, schedule, placed)
    result.recall_seconds = recall_while_waiting(result)
    preemption_condition(inp.composite, result, schedule)
    # A replaced replica still leaving the routes was reported when it started to.
    events(result, schedule, frozenset(r.replica.name for r in plan.removals if r.started))
    replicas_ready(result, spec.replicas, placed)
    rolled_out(result, revisions)
    clusters = read_clusters(inp.required[CLUSTERS_REQUIREMENT])
    _compose_endpoints(inp, result, revisions, schedule, clusters)
    if plan.scaling is not None or plan.leaving:
        compose_leaving(inp, result, plan, clusters)
    return result


def _compose_endpoints(
    inp: ComposeInput,
    result: ComposeResult,
    revisions: Revisions,
    plan: ScheduleResult,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> None:
    """One ModelEndpoint per replica that is Ready behind its cluster's gateway.

    Added after readiness is counted: endpoints are not replicas. A replica
    that is not Ready (warming up, draining) has none, so it is withdrawn from
    every ModelService at once (`deployments/endpoints.py`).
    """
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    # Labels are read again without warnings: `compose_replicas` reported them.
    labels = user_labels(revisions.spec, ComposeResult())
    found = []
    for planned in plan.replicas:
        key = replica_key(planned.cluster, planned.index)
        observed = inp.observed.get(key)
        problem = unreadable_status(planned.name, observed)
        if problem is not None:  # unknown, not withdrawn
            found.append(problem)
            unreadable.keep(inp, result, [endpoint_key(key)])
            continue
        replica = read_model_replica(observed) if observed is not None else None
        view = replica_view(planned.name, planned.cluster, replica, clusters)
        manifest = endpoint_for(view, name, namespace, labels)
        if manifest is None:
            continue
        revision = revisions.of(planned.name)
        manifest["metadata"]["labels"][c.LABEL_REVISION] = revision
        canary = revisions.canary(revision)
        if canary is not None:
            manifest["spec"]["canaryPercent"] = canary
        ekey = endpoint_key(key)
        ready = ekey in inp.observed and endpoint_ready(inp.observed[ekey])
        result.desired[ekey] = DesiredResource(manifest, "True" if ready else "False")
    unreadable.report(inp, result, found)
