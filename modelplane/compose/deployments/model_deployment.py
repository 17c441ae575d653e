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

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.common import format_validation_error
from modelplane.api.frozen import memoized
from modelplane.api.model_deployment import (
    MAX_UNSCHEDULABLE_ENTRIES,
    MAX_UNSCHEDULABLE_MESSAGE,
    ClusterRejection,
    ModelDeploymentSpec,
    ModelDeploymentStatus,
    Placement,
    RolePlacement,
)
from modelplane.api.model_endpoint import read_endpoint
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.objects import condition, is_condition_true, label_value
from modelplane.api.readers import (
    ObservedInferenceCluster,
    ObservedModelReplica,
    read_model_replica,
)
from modelplane.api.reasons import AutoscalingReason, PreemptionReason, ScheduledReason
from modelplane.api.roles import put_role_fields
from modelplane.compose import outcome, unreadable
from modelplane.compose.common import as_desired, meta, parse_spec, without_crossplane_spec
from modelplane.compose.deployments.endpoints import (
    ReplicaView,
    endpoint_for,
    endpoint_key,
    unreadable_status,
)
from modelplane.compose.deployments.observed import scheduler_input
from modelplane.compose.deployments.revisions import Revisions, own_replicas, plan_revisions
from modelplane.compose.deployments.scaling import (
    REMOVAL_REASON,
    Scaling,
    choose_removals,
    drained,
    plan_scaling,
    status_of,
)
from modelplane.compose.replica.workload import template_errors
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)
from modelplane.scheduling import words
from modelplane.scheduling.framework import LastRead, ScheduleInput, read_clusters
from modelplane.scheduling.scheduler import schedule_input
from modelplane.scheduling.types import PlannedReplica, ScheduleResult
from modelplane.scheduling.words import cluster_message, truncate

CLUSTERS_REQUIREMENT = "inference-clusters"
REPLICAS_REQUIREMENT = "model-replicas"
SERVICES_REQUIREMENT = "model-services"
QUOTAS_REQUIREMENT = "fleet-quotas"
PRIORITIES_REQUIREMENT = "priority-classes"
FLEET_QUOTA_KIND = "FleetQuota"
PRIORITY_CLASS_API_VERSION = "scheduling.k8s.io/v1"
PRIORITY_CLASS_KIND = "PriorityClass"
MODEL_REPLICA_KIND = "ModelReplica"
MODEL_CACHE_KIND = "ModelCache"
INFERENCE_CLUSTER_KIND = "InferenceCluster"

# Condition messages are read by people in `kubectl describe`; bound them so a
# fleet of thousands of clusters cannot bloat the object.
MAX_CONDITION_MESSAGE = 1024

# The scheduler seam: one typed input in, the plan out (tests script it).
Scheduler = Callable[[ScheduleInput], ScheduleResult]

_LABEL_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_KEY = re.compile(
    rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_LABEL_NAME}$"
)
# Verdicts of clusters the scheduler tried to fit a replica on; any other
# rejection (labels, taints, readiness) is decided before capacity matters.
_CAPACITY_VERDICTS = frozenset({"NoMatchingPool", "InsufficientCapacity"})


def cache_requirement(name: str) -> str:
    """The requirement name under which a ModelCache is fetched."""
    return f"cache-{name}"


def replica_key(cluster: str, index: int) -> str:
    """The desired-resource key of the replica at `(cluster, index)`."""
    return f"replica-{cluster}-{index}"


def replica_selector(deployment: str) -> str:
    """The label selector of a deployment's replicas (its scale subresource's selector)."""
    return f"{c.LABEL_DEPLOYMENT}={label_value(deployment)}"


def requirements(
    namespace: str, spec: ModelDeploymentSpec | None, replicas: Sequence[Resource] = ()
) -> dict[str, Requirement]:
    """What the composer needs fetched to schedule a deployment.

    The PriorityClasses are asked for only when priority can matter: the
    deployment names one, or a replica of the fleet (`replicas`, once fetched)
    preempts another. So a fleet that never uses priority needs no permission
    to read them (install.md).
    """
    reqs = {
        CLUSTERS_REQUIREMENT: Requirement(api_version=c.API_VERSION, kind=INFERENCE_CLUSTER_KIND),
        REPLICAS_REQUIREMENT: Requirement(
            api_version=c.API_VERSION,
            kind=MODEL_REPLICA_KIND,
            match_labels={c.LABEL_MANAGED_BY: c.MANAGED_BY},
        ),
        # The namespace's FleetQuota limits placements; every PriorityClass gives the
        # fleet's replicas their priority values (a victim checks its preemptor's).
        QUOTAS_REQUIREMENT: Requirement(
            api_version=c.API_VERSION, kind=FLEET_QUOTA_KIND, namespace=namespace
        ),
    }
    if (spec is not None and spec.priority) or _listing(replicas).preempts:
        reqs[PRIORITIES_REQUIREMENT] = Requirement(
            api_version=PRIORITY_CLASS_API_VERSION, kind=PRIORITY_CLASS_KIND
        )
    if spec is not None and spec.autoscaling is not None:
        # A leaving replica is deleted only once every service routes nothing to it.
        reqs[SERVICES_REQUIREMENT] = Requirement(
            api_version=c.API_VERSION, kind="ModelService", namespace=namespace
        )
    for cache in (spec.caches or []) if spec is not None else []:
        reqs[cache_requirement(cache.name)] = Requirement(
            api_version=c.API_VERSION,
            kind=MODEL_CACHE_KIND,
            match_name=cache.name,
            namespace=namespace,
        )
    return reqs


def _preempts(replica: Resource) -> bool:
    """Whether a fleet replica names victims (`spec.preempts`), however it reads."""
    spec = replica.get("spec")
    return isinstance(spec, dict) and bool(spec.get("preempts"))


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

    def clusters(self) -> Sequence[Resource]:
        """Every InferenceCluster fetched."""
        return list(self._inp.required[CLUSTERS_REQUIREMENT])

    def replicas(self) -> Sequence[Resource]:
        """The fleet's replicas, this deployment's observed ones taking precedence."""
        return _fleet_replicas(self._inp, self._namespace)

    def cache(self, name: str) -> Resource | None:
        """The ModelCache fetched under `cache_requirement(name)`, if found."""
        return next(iter(self._inp.required.get(cache_requirement(name), [])), None)

    def quotas(self) -> Sequence[Resource]:
        """The FleetQuotas of the deployment's namespace."""
        return list(self._inp.required.get(QUOTAS_REQUIREMENT, []))

    def priority_classes(self) -> Sequence[Resource]:
        """Every PriorityClass."""
        return list(self._inp.required.get(PRIORITIES_REQUIREMENT, []))


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

    shape_errors = [
        err
        for role in spec.roles().values()
        for err in template_errors(role.workers.template, f"{role.workers_path}.template")
    ]
    if shape_errors:
        # Checked here, not only by the ModelReplica composer, so a template it
        # cannot stamp is never placed; serving replicas keep their old one.
        msg = truncate(
            "; ".join(shape_errors) + " (no new replicas are placed; existing ones are kept)",
            MAX_CONDITION_MESSAGE,
        )
        return outcome.hold(inp, result, c.CONDITION_SCHEDULED, ScheduledReason.INVALID_SPEC, msg)

    fleet = inp.required.get(REPLICAS_REQUIREMENT, [])
    result.requirements = requirements(namespace, spec, fleet)
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)

    by_name = read_clusters(inp.required[CLUSTERS_REQUIREMENT])
    scaling = plan_scaling(spec, _status_of(inp.composite), inp.observed, by_name)
    asked = spec if scaling is None else spec.model_copy(update={"replicas": scaling.ask})
    try:
        observed = scheduler_input(inp.composite, asked, _RequiredFleet(inp, namespace))
        revisions = plan_revisions(inp, spec, observed, by_name)
        rollout = revisions.rollout
        moves = {} if rollout is None else dict.fromkeys(rollout.outdated, revisions.place)
        observed = dataclasses.replace(observed, outdated=moves, serving=_serving(inp, by_name))
        plan = scheduler(observed)
    except Exception as err:  # a scheduler bug must not tear down serving replicas
        return outcome.fatal(
            f"{ScheduledReason.SCHEDULER_ERROR}: scheduling {namespace}/{name} failed: {err}"
        )
    leaving: list[PlannedReplica] = []
    if scaling is not None:
        spec, plan, leaving = _scale(inp, result, spec, plan, scaling, by_name)
    _cache_condition(result, spec, observed.missing_caches, namespace)
    inconsistent = _compose_replicas(inp, result, revisions, plan)
    if inconsistent is not None:
        return outcome.fatal(
            f"{ScheduledReason.SCHEDULER_ERROR}: {inconsistent[0]} of {namespace}/{name} "
            f"is inconsistent with the spec: {inconsistent[1]}"
        )
    placed = plan.placed
    _status(result, name, spec, plan, revisions)
    _scheduled_condition(result, spec, plan, placed)
    _preemption_condition(inp, result, plan)
    _events(result, plan)
    _replicas_ready(result, spec.replicas, placed)
    _rolled_out(result, revisions)
    _compose_endpoints(inp, result, revisions, plan, by_name)
    if scaling is not None:
        _compose_leaving(inp, result, scaling, leaving, by_name)
    return result


def _serving(inp: ComposeInput, clusters: Mapping[str, ObservedInferenceCluster]) -> frozenset[str]:
    """This deployment's replicas that take traffic: Ready, and, when they get a
    ModelEndpoint (`endpoint_for`, as `_compose_endpoints` decides), that endpoint Ready."""
    out = set()
    for key, obj in inp.observed.items():
        replica = read_model_replica(obj) if obj.get("kind") == MODEL_REPLICA_KIND else None
        if replica is None or not replica.ready:
            continue
        view = _replica_view(replica.name, replica.cluster, replica, clusters)
        endpoint = inp.observed.get(endpoint_key(key))
        routed = endpoint_for(view, "", "", {}) is not None
        if not routed or (endpoint is not None and _endpoint_ready(endpoint)):
            out.add(replica.name)
    return frozenset(out)


def _endpoint_ready(obj: Resource) -> bool:
    """Whether an observed ModelEndpoint is Ready, read once per object version."""
    return memoized(obj, "model_deployment.endpoint_ready", lambda o: read_endpoint(o).ready)


def _status_of(composite: Resource) -> Mapping[str, Any]:
    status = composite.get("status")
    return status if isinstance(status, dict) else {}


def _scale(
    inp: ComposeInput,
    result: ComposeResult,
    spec: ModelDeploymentSpec,
    plan: ScheduleResult,
    scaling: Scaling,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> tuple[ModelDeploymentSpec, ScheduleResult, list[PlannedReplica]]:
    """Apply the autoscaler's count: the spec, plan and replicas leaving (still draining).

    The scheduler was asked to keep every counted replica; the ones above the
    decided count leave here (`scaling.choose_removals`): a Ready one is
    drained first (composed as observed, its endpoint at weight 0) and deleted
    once every ModelService shows it at weight 0.
    """
    desired = scaling.decision.desired
    namespace = str(meta(inp.composite).get("namespace", ""))
    kept, removed = choose_removals(plan.replicas, desired, scaling.leaving, clusters, namespace)
    services = list(inp.required.get(SERVICES_REQUIREMENT, []))
    leaving = []
    for p in removed:
        key = replica_key(p.cluster, p.index)
        endpoint = inp.observed.get(endpoint_key(key))
        if p.ready and key in inp.observed and not drained(endpoint, services, p.name):
            leaving.append(p)
            if p.name not in scaling.leaving:
                result.normal(
                    "ScaleDownDraining",
                    f"replica {p.name} on {p.cluster} leaves ({desired} replicas wanted): "
                    "its endpoint goes to weight 0 in every ModelService before it is deleted",
                )
        elif key in inp.observed:
            why = "drained: weight 0 in every ModelService" if p.ready else "not Ready"
            result.normal("ScaleDownRemoved", f"replica {p.name} on {p.cluster} deleted ({why})")
    _autoscaling_condition(result, scaling)
    spec = spec.model_copy(update={"replicas": desired})
    plan = dataclasses.replace(plan, replicas=tuple(kept), desired=desired)
    return spec, plan, leaving


def _autoscaling_condition(result: ComposeResult, scaling: Scaling) -> None:
    d = scaling.decision
    if scaling.external is not None:
        reason = AutoscalingReason.EXTERNAL_SCALER
        result.condition(c.CONDITION_AUTOSCALING, False, str(reason), scaling.external)
        result.warn(str(reason), truncate(scaling.external, 512))
        return
    ok = None if d.reason == AutoscalingReason.SIGNALS_MISSING else True
    msg = truncate(d.message, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_AUTOSCALING, ok, str(d.reason), msg)
    if d.desired != d.current:
        result.normal(str(d.reason), truncate(d.message, 512))


def _compose_leaving(
    inp: ComposeInput,
    result: ComposeResult,
    scaling: Scaling,
    leaving: Sequence[PlannedReplica],
    clusters: Mapping[str, ObservedInferenceCluster],
) -> None:
    """Leaving replicas: composed as observed, endpoint at weight 0, listed as draining."""
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    status = ModelDeploymentStatus.model_validate(result.status)
    placements = list(status.placements or [])
    kept = []
    for p in leaving:
        key = replica_key(p.cluster, p.index)
        manifest = _as_observed(inp, p.name, key)
        if manifest is None:
            continue
        kept.append(p.name)
        result.desired[key] = DesiredResource(manifest, "True")
        observed = read_model_replica(inp.observed[key])
        view = _replica_view(p.name, p.cluster, observed, clusters)
        endpoint = endpoint_for(view, name, namespace, _user_labels(_spec(inp), ComposeResult()))
        if endpoint is not None:
            endpoint["spec"]["draining"] = True
            ekey = endpoint_key(key)
            ready = ekey in inp.observed and _endpoint_ready(inp.observed[ekey])
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
    status.placements = placements
    status.draining_replicas = (status.draining_replicas or 0) + len(kept) or None
    status.autoscaling = status_of(scaling, kept)
    result.status = status.to_dict()


def _spec(inp: ComposeInput) -> ModelDeploymentSpec:
    spec, _ = parse_spec(ModelDeploymentSpec, inp.composite)
    assert spec is not None  # compose_with held before any call when it did not parse
    return spec


def _cache_condition(
    result: ComposeResult, spec: ModelDeploymentSpec, missing: Sequence[str], namespace: str
) -> None:
    if not spec.caches:
        return
    if missing:
        msg = words.cache_not_found(missing, namespace)
        result.condition(c.CONDITION_CACHE_RESOLVED, False, c.REASON_CACHE_NOT_FOUND, msg)
        result.warn(c.REASON_CACHE_NOT_FOUND, msg)
        return
    found_msg = words.caches_found([x.name for x in spec.caches])
    result.condition(c.CONDITION_CACHE_RESOLVED, True, c.REASON_RESOLVED, found_msg)


def _compose_replicas(
    inp: ComposeInput, result: ComposeResult, revisions: Revisions, plan: ScheduleResult
) -> tuple[str, str] | None:
    """One ModelReplica per planned replica, each from the spec of the revision it runs;
    (which, why) when one is inconsistent."""
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    labels = _user_labels(revisions.spec, result)
    for planned in plan.replicas:
        key = replica_key(planned.cluster, planned.index)
        revision = revisions.of(planned.name)
        spec = revisions.spec_for(revision)
        try:
            manifest = _draining_manifest(inp, planned, key)
            if manifest is None and spec is None:
                # A revision it cannot be composed from (no template): it stays as it is
                # until the rollout replaces it.
                manifest = _as_observed(inp, planned.name, key)
            if manifest is None:
                manifest = _replica_manifest(
                    name, namespace, spec or revisions.spec, planned, labels, revision
                )
        except (ValidationError, KeyError) as err:
            detail = (
                format_validation_error(err, "spec") if isinstance(err, ValidationError) else err
            )
            return f"replica {planned.cluster}/{planned.index}", str(detail)
        ready = is_condition_true(inp.observed.get(key), c.CONDITION_READY)
        result.desired[key] = DesiredResource(manifest, "True" if ready else "False")
    return None


def _rolled_out(result: ComposeResult, revisions: Revisions) -> None:
    """`RolledOut` and the rollout's events (rollout Progressive only)."""
    verdict = None if revisions.rollout is None else revisions.rollout.verdict
    if verdict is None:
        return
    msg = truncate(verdict.message, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_ROLLED_OUT, verdict.status, str(verdict.reason), msg)
    for type_, reason, text in verdict.events:
        emit = result.warn if type_ == "Warning" else result.normal
        emit(reason, truncate(text, 512))


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
    # Labels are read again without warnings: `_compose_replicas` reported them.
    labels = _user_labels(revisions.spec, ComposeResult())
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
        view = _replica_view(planned.name, planned.cluster, replica, clusters)
        manifest = endpoint_for(view, name, namespace, labels)
        if manifest is None:
            continue
        revision = revisions.of(planned.name)
        manifest["metadata"]["labels"][c.LABEL_REVISION] = revision
        canary = revisions.canary(revision)
        if canary is not None:
            manifest["spec"]["canaryPercent"] = canary
        ekey = endpoint_key(key)
        ready = ekey in inp.observed and _endpoint_ready(inp.observed[ekey])
        result.desired[ekey] = DesiredResource(manifest, "True" if ready else "False")
    unreadable.report(inp, result, found)


def _replica_view(
    name: str,
    cluster: str,
    replica: ObservedModelReplica | None,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> ReplicaView:
    """What decides a replica's endpoint: its observed readiness and route, its cluster's
    gateway (`endpoints.endpoint_for`)."""
    found = clusters.get(cluster)
    gateway = None if found is None else found.gateway_address
    return ReplicaView(
        name=name,
        ready=replica is not None and replica.ready,
        endpoint=replica.endpoint if replica is not None else None,
        cluster_gateway=gateway,
        cluster=cluster,
    )


def _draining_manifest(inp: ComposeInput, planned: PlannedReplica, key: str) -> Resource | None:
    """A draining replica exactly as observed: it keeps serving what it serves today.

    Re-composing it from the (edited) spec would roll its pods, which is the
    break make-before-break avoids. None when it is not draining or not observed
    (then it is composed from the plan like any other).
    """
    if not planned.draining:
        return None
    return _as_observed(inp, planned.name, key)


def _as_observed(inp: ComposeInput, name: str, key: str) -> Resource | None:
    """The replica `name` (composed under `key`) as observed, as desired state; None if unseen."""
    observed = inp.observed.get(key)
    if observed is None or meta(observed).get("name") != name:
        fleet = inp.required.get(REPLICAS_REQUIREMENT, [])
        observed = next((r for r in fleet if meta(r).get("name") == name), None)
    if observed is None or not isinstance(observed.get("spec"), dict):
        return None
    desired = without_crossplane_spec(as_desired(observed))
    desired["metadata"].pop("annotations", None)
    return desired


def _replicas_ready(result: ComposeResult, want: int, placed: int) -> None:
    # Draining replicas still serve: they count as Ready replicas until replaced,
    # so a make-before-break move never shows the deployment short of replicas.
    serving = sum(1 for d in result.desired.values() if d.ready == "True")
    ready_count = min(want, serving)
    all_ready = serving >= want
    result.condition(
        c.CONDITION_REPLICAS_READY,
        all_ready,
        c.REASON_ALL_REPLICAS_READY if all_ready else c.REASON_REPLICAS_NOT_READY,
        f"{ready_count} of {want} replicas ready",
    )
    result.ready = "True" if all_ready else "False"


def _fleet_replicas(inp: ComposeInput, namespace: str) -> list[Resource]:
    """Every ModelReplica of the fleet, this deployment's observed ones taking precedence.

    The composed resources are the freshest view of this deployment's own
    replicas; merging them in means a lagging fleet listing can never make
    the scheduler forget (and so replace) a replica that exists. A replica
    whose metadata does not read (a name or namespace that is not a string) is
    unknown, never absent and never a second replica: it is matched to its
    other copy by its spec's slot (deployment, cluster, index) and that copy's
    name is used; with no other copy it is kept under its slot.
    """
    listed = inp.required.get(REPLICAS_REQUIREMENT, [])
    owned = own_replicas(inp)
    index = _listing(listed)
    by_id = dict(index.by_id)
    owned_slots = set()
    for obj in owned:
        owned_slots.add(_slot(obj))
        key = _replica_id(obj)
        if key is not None and isinstance(meta(obj).get("namespace"), str):
            # Named in full: listed as it is, so a read-only object keeps its one
            # reading and an unchanged fleet lists the very same objects call after call.
            by_id[key] = obj
            continue
        om = dict(meta(obj))
        if not _readable_name(obj):
            twin = _named_twin(listed, _slot(obj))
            om = dict(meta(twin)) if twin is not None else {"name": _slot_name(obj)}
        om.setdefault("namespace", namespace)
        by_id[(str(om["namespace"]), str(om.get("name", "")))] = {**obj, "metadata": om}
    for obj in index.unnamed:
        if _slot(obj) not in owned_slots:
            om = {**meta(obj), "name": _slot_name(obj)}
            om["namespace"] = om.get("namespace") if isinstance(om.get("namespace"), str) else ""
            by_id[(om["namespace"], om["name"])] = {**obj, "metadata": om}
    return [by_id[k] for k in sorted(by_id)]


@dataclasses.dataclass(frozen=True)
class _Listing:
    """What the composer reads of the fleet's replica listing as a whole."""

    by_id: dict[tuple[str, str], Resource]  # the named ones by (namespace, name), last wins
    unnamed: tuple[Resource, ...]  # those whose metadata does not name them
    preempts: bool  # whether any names victims (`spec.preempts`)


# Every deployment's call lists the same replica objects while the fleet is unchanged.
_LISTINGS = LastRead()


def _listing(listed: Sequence[Resource]) -> _Listing:
    """The listing's index (`_Listing`), reused while the very same objects arrive."""
    return _LISTINGS.get(listed, None, lambda: _index(listed))


def _index(listed: Sequence[Resource]) -> _Listing:
    by_id: dict[tuple[str, str], Resource] = {}
    unnamed = []
    for obj in listed:
        # Once per object version: a changed fleet lists mostly the objects it listed.
        key = memoized(obj, "model_deployment.replica_id", _replica_id)
        if key is None:
            unnamed.append(obj)
        else:
            by_id[key] = obj
    preempts = any(memoized(r, "model_deployment.preempts", _preempts) for r in listed)
    return _Listing(by_id, tuple(unnamed), preempts)


def _replica_id(obj: Resource) -> tuple[str, str] | None:
    """A listed replica's (namespace, name); None when its metadata does not name it."""
    if not _readable_name(obj):
        return None
    om = meta(obj)
    return str(om.get("namespace", "")), str(om["name"])


def _named_twin(listed: Sequence[Resource], slot: tuple[str, str, str]) -> Resource | None:
    """The last listed replica whose metadata names it, in `slot` (by its spec)."""
    return next((o for o in reversed(listed) if _readable_name(o) and _slot(o) == slot), None)


def _readable_name(obj: Resource) -> bool:
    """Whether a replica's metadata names it: a name, and a namespace string when set."""
    om = obj.get("metadata")
    if not isinstance(om, dict) or not isinstance(om.get("name"), str) or not om["name"]:
        return False
    return isinstance(om.get("namespace", ""), str)


def _slot(obj: Resource) -> tuple[str, str, str]:
    """A replica's place by its spec: (deployment, cluster, index), as text."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    return str(spec.get("deploymentName")), str(spec.get("clusterName")), str(spec.get("index"))


def _slot_name(obj: Resource) -> str:
    """A stand-in name for a replica whose metadata does not name it."""
    return "unreadable-" + "-".join(_slot(obj))


def _user_labels(spec: ModelDeploymentSpec, result: ComposeResult) -> dict[str, str]:
    """The workers' template labels a replica inherits, minus reserved and invalid ones."""
    labels: dict[str, str] = {}
    for role in spec.roles().values():
        tmeta = role.workers.template.get("metadata")
        raw = tmeta.get("labels") if isinstance(tmeta, dict) else None
        if not isinstance(raw, dict):
            continue
        for key, value in sorted(raw.items()):
            if str(key).startswith(c.LABEL_PREFIX):
                continue
            if (
                not isinstance(value, str)
                or not _LABEL_KEY.match(str(key))
                or len(str(key).rsplit("/", 1)[-1]) > 63
                or len(str(key)) > 316
                or label_value(value) != value
            ):
                msg = (
                    f"{role.workers_path}.template.metadata.labels: {key!r}={value!r} "
                    "is not a valid Kubernetes label; it is not copied to the replicas"
                )
                result.warn(c.REASON_INVALID_LABEL, msg)
                continue
            labels[str(key)] = value
    return labels


def _replica_manifest(
    deployment: str,
    namespace: str,
    spec: ModelDeploymentSpec,
    planned: PlannedReplica,
    user_labels: dict[str, str],
    revision: str,
) -> Resource:
    """The ModelReplica XR of one planned replica, validated against its own schema."""
    roles = spec.roles()
    body: dict[str, Any] = {
        "deploymentName": deployment,
        "clusterName": planned.cluster,
        "index": planned.index,
    }
    if spec.priority:
        body["priority"] = spec.priority
    if planned.preempts:
        body["preempts"] = [{"namespace": ns, "name": n} for ns, n in planned.preempts]
    if spec.caches:
        body["caches"] = [x.to_dict() for x in spec.caches]
    if spec.backend != c.BACKEND_NATIVE:
        body["backend"] = spec.backend
    assigned = {ra.role for ra in planned.roles}
    if assigned != set(roles):
        raise KeyError(f"planned roles {sorted(assigned)} != spec roles {sorted(roles)}")
    for ra in planned.roles:
        role_body = {
            "nodePoolName": ra.pool,
            "deviceRequests": [d.to_dict() for d in ra.device_requests],
            "workers": roles[ra.role].workers.to_dict(),
        }
        put_role_fields(body, ra.role, role_body)
    ModelReplicaSpec.model_validate(body)
    labels = {
        **user_labels,
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        c.LABEL_DEPLOYMENT: label_value(deployment),
        c.LABEL_CLUSTER: label_value(planned.cluster),
        c.LABEL_REPLICA_INDEX: str(planned.index),
        c.LABEL_REVISION: revision,
    }
    return {
        "apiVersion": c.API_VERSION,
        "kind": MODEL_REPLICA_KIND,
        "metadata": {"name": planned.name, "namespace": namespace, "labels": labels},
        "spec": body,
    }


def _status(
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
            revision=(revisions.running if planned.draining else revisions.of)(planned.name),
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
        changes = _cluster_changes(plan)
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


def _scheduled_condition(
    result: ComposeResult, spec: ModelDeploymentSpec, plan: ScheduleResult, placed: int
) -> None:
    """The `Scheduled` condition: the first answer that applies, most actionable first."""
    summary = words.placed_summary(placed, spec.replicas)
    answers = (
        _invalid_selectors,
        _waiting_for_cache,
        _replica_unschedulable,
        _draining,
        _unverifiable,
        _all_scheduled,
        _quota_exceeded,
    )
    for answer in answers:
        out = answer(plan, summary, spec.replicas - placed)
        if out is not None:
            _set_scheduled(result, *out)
            return
    _set_scheduled(result, *_shortfall(plan, summary, placed))


# (status, reason, message, warn): a Scheduled answer.
Scheduled = tuple[bool | None, ScheduledReason, str, bool]


def _set_scheduled(
    result: ComposeResult, ok: bool | None, reason: ScheduledReason, msg: str, warn: bool
) -> None:
    msg = truncate(msg, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_SCHEDULED, ok, str(reason), msg)
    if warn:
        result.warn(str(reason), msg)


def _invalid_selectors(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    if not plan.invalid_selectors:
        return None
    msg = words.invalid_selectors(plan.invalid_selectors, summary)
    return False, ScheduledReason.INVALID_NODE_SELECTOR, msg, True


def _waiting_for_cache(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    if not plan.missing_caches or missing <= 0:
        return None
    msg = words.cache_hold(summary, missing, plan.missing_caches)
    return False, ScheduledReason.WAITING_FOR_CACHE, msg, False


def _replica_unschedulable(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    """Replicas their clusters report unschedulable: moved, or kept for want of another place.

    True once every one has moved (the replacements are placed); False, with a
    warning and the clusters' reasons, while one is kept or withdrawn unreplaced.
    """
    if not plan.stuck:
        return None
    ok = missing <= 0 and all(s.outcome == "Moved" for s in plan.stuck)
    why = ""
    if not ok:
        why = words.rejection_summary(plan.clusters)
        if plan.what_if or plan.stocked_out:
            why = f"{words.what_if_summary(plan.what_if, plan.stocked_out)}; {why}"
    msg = words.replica_unschedulable(summary, plan.stuck, why)
    return ok, ScheduledReason.REPLICA_UNSCHEDULABLE, msg, not ok


def _draining(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    """Replicas draining make-before-break: in progress, or stuck for want of capacity."""
    draining = plan.draining
    if not draining:
        return None
    if missing <= 0:
        return True, ScheduledReason.DRAINING, words.draining(summary, draining), False
    if len(plan.replicas) >= plan.desired + plan.surge:
        # The fill stopped at spec.replicas + maxSurge: replacements are on their way.
        msg = words.draining(summary, draining, plan.surge)
        return False, ScheduledReason.DRAINING, msg, False
    why = words.rejection_summary(plan.clusters)
    msg = words.replacement_unschedulable(summary, draining, why)
    return False, ScheduledReason.REPLACEMENT_UNSCHEDULABLE, msg, True


def _unverifiable(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    # Each kept replica has its own warning event (`_events`); the condition sums up.
    if not plan.unverifiable or missing > 0:
        return None
    msg = words.unverifiable_summary(summary, plan.unverifiable)
    return None, ScheduledReason.PLACEMENT_UNVERIFIABLE, msg, False


def _all_scheduled(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    if missing > 0:
        return None
    return True, ScheduledReason.ALL_REPLICAS_SCHEDULED, summary, False


def _quota_exceeded(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    """Replicas missing because the namespace's FleetQuota has no room for them anywhere
    they would otherwise fit."""
    refused = [v for v in plan.clusters if v.reason == "QuotaExceeded"]
    if missing <= 0 or not refused or any(v.eligible for v in plan.clusters):
        return None
    why = "; ".join(words.quota_text(u) for u in plan.quota if u.used >= u.hard) or (
        words.rejection_summary(plan.clusters)
    )
    msg = words.shortfall(summary, f"{why}; {words.rejection_summary(plan.clusters)}")
    return False, ScheduledReason.QUOTA_EXCEEDED, msg, True


def _preemption_condition(inp: ComposeInput, result: ComposeResult, plan: ScheduleResult) -> None:
    """`Preemption`: the latest preemption this deployment took part in, either side.

    Set only once a preemption happened (deployments that never took part carry
    no such condition) and kept until a newer one replaces it.
    """
    if plan.preemptions:
        msg = "; ".join(words.preempting_text(p) for p in plan.preemptions)
        reason, text = PreemptionReason.PREEMPTING, msg
    elif plan.preempted:
        msg = "; ".join(f"replica {n} withdrawn: {why}" for n, why in plan.preempted)
        reason, text = PreemptionReason.PREEMPTED, msg
    else:
        _keep_condition(inp, result, c.CONDITION_PREEMPTION)
        return
    text = truncate(text, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_PREEMPTION, True, str(reason), text)
    result.warn(str(reason), text)


def _keep_condition(inp: ComposeInput, result: ComposeResult, type_: str) -> None:
    """Carry an observed condition forward unchanged (the latest preemption is news until
    a newer one replaces it, as a preempted Pod's DisruptionTarget is)."""
    cond = condition(inp.composite, type_)
    if cond is None:
        return
    status = {"True": True, "False": False}.get(str(cond.get("status")))
    reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
    if reason in {r.value for r in PreemptionReason}:
        result.condition(type_, status, reason, truncate(message, MAX_CONDITION_MESSAGE))


def _cluster_changes(plan: ScheduleResult) -> dict[str, str]:
    """Each cluster's what-if, naming the stocked-out pools it must not grow first."""
    found = {w.cluster: w for w in plan.what_if}
    clusters = sorted(set(found) | {s.cluster for s in plan.stocked_out})
    out = {}
    for cluster in clusters:
        stocked = [s for s in plan.stocked_out if s.cluster == cluster]
        text = words.cluster_growth(found.get(cluster), stocked)
        if text is not None:
            out[cluster] = truncate(text, MAX_UNSCHEDULABLE_MESSAGE)
    return out


def _shortfall(plan: ScheduleResult, summary: str, placed: int) -> Scheduled:
    candidates = [v for v in plan.clusters if v.reason != "NotSelected"]
    if not plan.clusters:
        reason, why = ScheduledReason.NO_CLUSTERS, words.NO_CLUSTER_EXISTS
    elif not candidates:
        reason, why = ScheduledReason.NO_CLUSTERS, words.NO_CLUSTER_SELECTED
    elif not placed and not any(v.reason in _CAPACITY_VERDICTS for v in plan.clusters):
        reason, why = ScheduledReason.NO_CLUSTERS, words.no_usable_cluster(plan.clusters)
    else:
        reason = ScheduledReason.PARTIAL if placed else ScheduledReason.INSUFFICIENT_CAPACITY
        why = words.rejection_summary(plan.clusters)
        if plan.what_if or plan.stocked_out:
            # The actionable answer first: the message is truncated at its end.
            why = f"{words.what_if_summary(plan.what_if, plan.stocked_out)}; {why}"
    return False, reason, words.shortfall(summary, why), True


def _events(result: ComposeResult, plan: ScheduleResult) -> None:
    for u in plan.unverifiable[:MAX_UNSCHEDULABLE_ENTRIES]:
        reason = str(ScheduledReason.PLACEMENT_UNVERIFIABLE)
        result.warn(reason, truncate(words.unverifiable_text(u), 512))
    for what, why in plan.replaced[:MAX_UNSCHEDULABLE_ENTRIES]:
        result.normal(c.REASON_REPLICA_REPLACED, truncate(words.replaced_event(what, why), 512))
    for w in plan.withdrawn[:MAX_UNSCHEDULABLE_ENTRIES]:
        result.normal(c.REASON_REPLICA_WITHDRAWN, truncate(words.withdrawn_event(w), 512))
