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
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.common import format_validation_error
from modelplane.api.fleet_quota import priority_problem
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
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.objects import is_condition_true, label_value
from modelplane.api.readers import ObservedInferenceCluster, read_model_replica
from modelplane.api.reasons import ScheduledReason
from modelplane.api.roles import put_role_fields
from modelplane.compose import outcome, unreadable
from modelplane.compose.common import as_desired, meta, parse_spec, without_crossplane_spec
from modelplane.compose.deployments.conditions import (
    MAX_CONDITION_MESSAGE,
    autoscaling_condition,
    cache_condition,
    cluster_changes,
    events,
    preemption_condition,
    replicas_ready,
    rolled_out,
    scheduled_condition,
)
from modelplane.compose.deployments.endpoints import (
    endpoint_for,
    endpoint_key,
    endpoint_ready,
    replica_view,
    unreadable_status,
)
from modelplane.compose.deployments.planner import (
    DeploymentPlan,
    Scheduler,
    observed_replica,
    plan_deployment,
    replica_key,
)
from modelplane.compose.deployments.revisions import Revisions, own_replicas
from modelplane.compose.deployments.scaling import REMOVAL_REASON, status_of
from modelplane.compose.replica.workload import template_errors
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)
from modelplane.scheduling import words
from modelplane.scheduling.framework import (
    LastRead,
    ScheduleInput,
    read_clusters,
    read_priorities,
)
from modelplane.scheduling.scheduler import schedule_input
from modelplane.scheduling.types import PlannedReplica, ScheduleResult
from modelplane.scheduling.words import cluster_message, truncate

CLUSTERS_REQUIREMENT = "inference-clusters"
REPLICAS_REQUIREMENT = "model-replicas"
SERVICES_REQUIREMENT = "model-services"
QUOTAS_REQUIREMENT = "fleet-quotas"
PRIORITIES_REQUIREMENT = "priority-classes"
PLACERS_REQUIREMENT = "model-deployments"
_LABEL_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_KEY = re.compile(
    rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_LABEL_NAME}$"
)


def cache_requirement(name: str) -> str:
    """The requirement name under which a ModelCache is fetched."""
    return f"cache-{name}"


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
        CLUSTERS_REQUIREMENT: Requirement(api_version=c.API_VERSION, kind=c.KIND_INFERENCE_CLUSTER),
        REPLICAS_REQUIREMENT: Requirement(
            api_version=c.API_VERSION,
            kind=c.KIND_MODEL_REPLICA,
            match_labels={c.LABEL_MANAGED_BY: c.MANAGED_BY},
        ),
        # The namespace's FleetQuota limits placements; every PriorityClass gives the
        # fleet's replicas their priority values (a victim checks its preemptor's).
        QUOTAS_REQUIREMENT: Requirement(
            api_version=c.API_VERSION, kind=c.KIND_FLEET_QUOTA, namespace=namespace
        ),
    }
    preempting = _listing(replicas).preempts
    if (spec is not None and spec.priority) or preempting:
        reqs[PRIORITIES_REQUIREMENT] = Requirement(
            api_version=c.PRIORITY_CLASS_API_VERSION, kind=c.KIND_PRIORITY_CLASS
        )
    if preempting:
        # A preemption is honoured only for a replica its own deployment placed.
        reqs[PLACERS_REQUIREMENT] = Requirement(
            api_version=c.API_VERSION, kind=c.KIND_MODEL_DEPLOYMENT
        )
    if spec is not None and spec.autoscaling is not None:
        # A leaving replica is deleted only once every service routes nothing to it.
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

    def composed(self) -> Mapping[str, Resource]:
        """This deployment's composed resources, as observed."""
        return self._inp.observed

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

    def placers(self) -> Sequence[Resource]:
        """Every ModelDeployment, fetched while some replica of the fleet preempts."""
        return list(self._inp.required.get(PLACERS_REQUIREMENT, []))

    def services(self) -> Sequence[Resource]:
        """The ModelServices of the namespace (fetched under autoscaling only)."""
        return list(self._inp.required.get(SERVICES_REQUIREMENT, []))


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
    result.requirements = requirements(namespace, spec, fleet)
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)
    refused = _priority_refused(inp, result, spec, namespace)
    if refused is None:
        refused = _priority_unknown(inp, result, spec)
    if refused is not None:
        return refused

    try:
        plan = plan_deployment(inp.composite, spec, _RequiredFleet(inp, namespace), scheduler)
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
    if plan.scaling is not None:
        _removal_events(result, plan)
        autoscaling_condition(result, plan.scaling)
    cache_condition(result, spec, plan.input.missing_caches, namespace)
    inconsistent = _compose_replicas(inp, result, revisions, schedule)
    if inconsistent is not None:
        return outcome.fatal(
            f"{ScheduledReason.SCHEDULER_ERROR}: {inconsistent[0]} of {namespace}/{name} "
            f"is inconsistent with the spec: {inconsistent[1]}"
        )
    placed = schedule.placed
    _status(result, name, spec, schedule, revisions)
    scheduled_condition(result, spec, schedule, placed)
    preemption_condition(inp.composite, result, schedule)
    events(result, schedule)
    replicas_ready(result, spec.replicas, placed)
    rolled_out(result, revisions)
    clusters = read_clusters(inp.required[CLUSTERS_REQUIREMENT])
    _compose_endpoints(inp, result, revisions, schedule, clusters)
    if plan.scaling is not None:
        _compose_leaving(inp, result, plan, clusters)
    return result


def _removal_events(result: ComposeResult, plan: DeploymentPlan) -> None:
    """One event per replica the autoscaler starts draining or deletes."""
    assert plan.scaling is not None
    desired = plan.scaling.decision.desired
    for removal in plan.removals:
        p = removal.replica
        if removal.draining:
            if p.name not in plan.scaling.leaving:
                result.normal(
                    "ScaleDownDraining",
                    f"replica {p.name} on {p.cluster} leaves ({desired} replicas wanted): "
                    "its endpoint goes to weight 0 in every ModelService before it is deleted",
                )
        elif removal.observed:
            why = "drained: weight 0 in every ModelService" if p.ready else "not Ready"
            result.normal("ScaleDownRemoved", f"replica {p.name} on {p.cluster} deleted ({why})")


def _compose_leaving(
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
    labels = _user_labels(plan.revisions.spec, ComposeResult())
    for p, observed in plan.leaving:
        key = replica_key(p.cluster, p.index)
        result.desired[key] = DesiredResource(_desired_copy(observed), "True")
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
    status.autoscaling = status_of(plan.scaling, kept)
    result.status = status.to_dict()


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
    listed = inp.required.get(REPLICAS_REQUIREMENT, [])
    found = observed_replica(inp.observed, listed, name, key)
    return None if found is None else _desired_copy(found)


def _desired_copy(observed: Resource) -> Resource:
    """An observed replica as desired state: kept exactly as it runs."""
    desired = without_crossplane_spec(as_desired(observed))
    desired["metadata"].pop("annotations", None)
    return desired


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
    owned = own_replicas(inp.observed)
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

    by_id: Mapping[tuple[str, str], Resource]  # the named ones by (namespace, name), last wins
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
    return _Listing(MappingProxyType(by_id), tuple(unnamed), preempts)  # shared: `_LISTINGS`


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
        "kind": c.KIND_MODEL_REPLICA,
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
