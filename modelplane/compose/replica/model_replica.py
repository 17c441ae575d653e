"""ModelReplica composer: one serving instance composed onto its workload cluster.

One reconcile runs four phases, each a small function:

1. **validate** the replica's spec and its pod templates (`Valid`);
2. **resolve the cluster**: require the InferenceCluster by name and read its
   provider config, gateway and scheduling (`ClusterResolved`); the in-cluster
   scheduler's plan comes from its `spec.scheduling` (`schedulers.py`);
3. **build**: the serving backend (`backends/`: native, kserve, dynamo) composes the
   workload and what it needs; the composer adds the workload namespace, one
   HTTPRoute to the backend's entry Service on the cluster's Gateway, and the
   scheduler's PodGroup where the cluster gangs pods;
4. **readiness and status**: every item declared its readiness rule
   (`readiness.py`); each is marked ready from its observed Object only, the
   replica when every item is. `WorkloadReady` reports the serving items,
   `RouteAccepted` the route; each says when it is the one the replica's
   readiness waits for. `status.endpoint` is the route's path under the
   cluster's `status.gatewayAddress`.

Everything lands on the cluster wrapped in provider-kubernetes Objects
(`objects.py`). The workload namespace on the cluster has the ModelReplica's
namespace's name, so one team's namespace maps to one namespace on every
cluster; its Object never deletes it (replicas of several deployments share it).

Names: control-plane Objects are `<replica>-[<role>-]<kind>` (e.g.
`qwen-3f2a9c1b-deployment`), cut to 63 characters with a hash of the replica
name when longer; a claim template's Object, its wrapped template and its
composed-resource key also carry the digest of the template's spec
(`...-prefill-claims-<digest>`, key `prefill-claims-<digest>`; see
`stamping/dra.py`). Wrapped objects are named `<base>[-<role>]` (the Service
`...-engine`), where `base` is the replica name as an RFC 1035 label of at most
40 characters, so LeaderWorkerSet pod and StatefulSet names stay within
Kubernetes' limits. The HTTPRoute matches the path prefix
`/<namespace>/<deployment>/<index>` (unique per cluster, since a replica is
(namespace, deployment, cluster, index)) and rewrites it to `/`.

Every early stop goes through `outcome` and keeps every observed composed
resource (a resource missing from desired state is deleted by Crossplane):
- the InferenceCluster not fetched yet: `wait` (the requirement goes out; the
  replica stays Ready while what it observed is ready);
- the spec invalid, or the cluster absent, without a provider config, or with
  a bad scheduling template: `hold` with the condition naming the cause;
- the replica without a name or namespace: `fatal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api import pod_security
from modelplane.api.fleet_quota import SYSTEM_PRIORITY_PREFIX
from modelplane.api.inference_cluster import GatewayRef
from modelplane.api.model_endpoint import WorkloadBackendRef
from modelplane.api.model_replica import ModelReplicaSpec, ModelReplicaStatus
from modelplane.api.objects import condition, label_value, replica_base
from modelplane.api.readers import ObservedInferenceCluster, read_inference_cluster, read_placer
from modelplane.api.reasons import (
    ClusterResolvedReason,
    RouteAcceptedReason,
    ValidReason,
    WorkloadReadyReason,
)
from modelplane.compose import outcome, readiness, unreadable
from modelplane.compose.clusters.infra import (
    WORKLOAD_RELEASES,
    has_serving_stack,
    present_releases,
    workload_usages,
)
from modelplane.compose.common import as_desired, meta, parse_spec
from modelplane.compose.objects import Item, wrap
from modelplane.compose.replica import backends, schedulers, workload
from modelplane.compose.replica import cache as replica_cache
from modelplane.compose.replica.schedulers import SchedulingPlan
from modelplane.compose.replica.templates import TemplateVars
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)

CLUSTER_REQUIREMENT = "cluster"
DEPLOYMENT_REQUIREMENT = "deployment"


# --- reading the InferenceCluster --------------------------------------------------------


def read_cluster(fetched: list[Resource], name: str) -> ObservedInferenceCluster | None:
    """The InferenceCluster called `name` among the fetched objects, read by its typed reader."""
    clusters = (read_inference_cluster(x) for x in fetched)
    return next((x for x in clusters if x is not None and x.name == name), None)


# --- phase 1: validate -------------------------------------------------------------------


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _identity(xr: Resource) -> tuple[str, str] | None:
    name, ns = _text(meta(xr).get("name")), _text(meta(xr).get("namespace"))
    return (name, ns) if name and ns else None


def _priority_errors(spec: ModelReplicaSpec) -> list[str]:
    # Defence in depth: a deployment is refused such a class before it places anything.
    if spec.priority and spec.priority.startswith(SYSTEM_PRIORITY_PREFIX):
        return [f"spec.priority: PriorityClass {spec.priority!r} is never allowed"]
    return []


def spec_errors(spec: ModelReplicaSpec) -> list[str]:
    """What the composer refuses in a parsed spec (each naming its field): pod templates
    it cannot stamp, what the backend cannot run, a forbidden PriorityClass."""
    return (
        [
            err
            for role in spec.roles().values()
            for err in workload.template_errors(role.workers.template, workload.template_path(role))
        ]
        or backends.spec_errors(spec)
        or _priority_errors(spec)
    )


def _validate(inp: ComposeInput, res: ComposeResult) -> ModelReplicaSpec | ComposeResult:
    spec, msg = parse_spec(ModelReplicaSpec, inp.composite)
    if spec is not None:
        msg = "; ".join(spec_errors(spec))
    if spec is None or msg:
        return outcome.hold(
            inp,
            res,
            c.CONDITION_VALID,
            ValidReason.INVALID_SPEC,
            msg,
            readiness=readiness.observed_ready,
        )
    res.condition(c.CONDITION_VALID, True, ValidReason.VALID)
    return spec


def _require_owner(res: ComposeResult, spec: ModelReplicaSpec, ns: str) -> None:
    res.requirements[DEPLOYMENT_REQUIREMENT] = Requirement(
        api_version=c.API_VERSION,
        kind=c.KIND_MODEL_DEPLOYMENT,
        match_name=spec.deployment_name,
        namespace=ns,
    )


def _controls(ref: Any, uid: Any) -> bool:
    return (
        isinstance(ref, dict)
        and ref.get("controller") is True
        and ref.get("kind") == c.KIND_MODEL_DEPLOYMENT
        and isinstance(uid, str)
        and bool(uid)
        and ref.get("uid") == uid
    )


def owner_problem(
    replica: Resource, deployments: list[Resource], spec: ModelReplicaSpec, name: str, ns: str
) -> str | None:
    """Why no ModelDeployment vouches for the replica; None when its deployment placed it.

    Its deployment (`spec.deploymentName`, same namespace) must exist and either list
    it in `status.placements` or be its controller (owner reference by uid): a replica
    written directly, by anyone, is composed onto no cluster.
    """
    where = f"spec.deploymentName: ModelDeployment {ns}/{spec.deployment_name}"
    obj = next((d for d in deployments if meta(d).get("name") == spec.deployment_name), None)
    placer = read_placer(obj) if obj is not None else None
    if obj is None or placer is None:
        return f"{where} not found: only a deployment's own replicas are composed"
    refs = meta(replica).get("ownerReferences")
    uid = meta(obj).get("uid")
    if name in placer.placed or any(
        _controls(ref, uid) for ref in (refs if isinstance(refs, list) else [])
    ):
        return None
    return f"{where} did not place replica {name} (not in its status.placements nor its controller)"


def _check_owner(
    inp: ComposeInput, res: ComposeResult, spec: ModelReplicaSpec, name: str, ns: str
) -> ComposeResult | None:
    """Refuse a replica its deployment did not place (issue 40, finding 4)."""
    problem = owner_problem(
        inp.composite, list(inp.required.get(DEPLOYMENT_REQUIREMENT, [])), spec, name, ns
    )
    if problem is None:
        return None
    return outcome.hold(
        inp,
        res,
        c.CONDITION_VALID,
        ValidReason.NOT_PLACED_BY_DEPLOYMENT,
        problem,
        readiness=readiness.observed_ready,
    )


# --- phase 2: resolve the cluster --------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A resolved cluster: how composed resources reach it and how its pods are stamped."""

    cluster: ObservedInferenceCluster
    provider_config: str
    gateway: GatewayRef
    plan: SchedulingPlan


def _hold_cluster(
    inp: ComposeInput, res: ComposeResult, reason: ClusterResolvedReason, message: str
) -> ComposeResult:
    return outcome.hold(
        inp,
        res,
        c.CONDITION_CLUSTER_RESOLVED,
        reason,
        message,
        readiness=readiness.observed_ready,
    )


def _resolve_cluster(
    inp: ComposeInput, res: ComposeResult, spec: ModelReplicaSpec, base: str, ns: str
) -> Target | ComposeResult:
    name = spec.cluster_name
    res.requirements[CLUSTER_REQUIREMENT] = Requirement(
        api_version=c.API_VERSION, kind="InferenceCluster", match_name=name
    )
    if not inp.fetched(CLUSTER_REQUIREMENT):
        return outcome.wait(
            inp,
            res,
            readiness=readiness.observed_ready,
            condition=c.CONDITION_CLUSTER_RESOLVED,
            reason=ClusterResolvedReason.WAITING_FOR_RESOURCES,
            message=f"waiting for InferenceCluster {name!r}",
        )
    cluster = read_cluster(inp.required.get(CLUSTER_REQUIREMENT, []), name)
    if cluster is None:
        return _hold_cluster(
            inp,
            res,
            ClusterResolvedReason.CLUSTER_NOT_FOUND,
            f"spec.clusterName: InferenceCluster {name!r} not found",
        )
    if cluster.provider_config_name is None:
        return _hold_cluster(
            inp,
            res,
            ClusterResolvedReason.PROVIDER_CONFIG_MISSING,
            f"InferenceCluster {name!r} publishes no status.providerConfigName yet: "
            "nothing can reach the cluster",
        )
    variables = TemplateVars(namespace=ns, name=spec.deployment_name, cluster=name)
    plan, errors = schedulers.plan(cluster.scheduling, spec.priority, variables, base)
    if cluster.scheduling_error is not None:
        errors = [cluster.scheduling_error, *errors]
    if errors:
        return _hold_cluster(
            inp,
            res,
            ClusterResolvedReason.INVALID_SCHEDULING_TEMPLATE,
            f"InferenceCluster {name!r}: " + "; ".join(errors),
        )
    res.condition(
        c.CONDITION_CLUSTER_RESOLVED,
        True,
        ClusterResolvedReason.RESOLVED,
        f"InferenceCluster {name!r} through ClusterProviderConfig {cluster.provider_config_name!r}",
    )
    gateway = cluster.gateway or GatewayRef()
    return Target(cluster, cluster.provider_config_name, gateway, plan)


def _pod_security(
    inp: ComposeInput, res: ComposeResult, spec: ModelReplicaSpec, cluster: ObservedInferenceCluster
) -> ComposeResult | None:
    """Refuse, before anything lands, a pod template the cluster's Pod Security level forbids."""
    level = cluster.pod_security
    found = [
        err
        for role in spec.roles().values()
        for err in pod_security.violations(
            role.workers.template, level, workload.template_path(role)
        )
    ]
    if not found:
        return None
    message = (
        f"forbidden by Pod Security level {level!r} of InferenceCluster {cluster.name!r} "
        f"(spec.podSecurity): " + "; ".join(found)
    )
    return outcome.hold(
        inp,
        res,
        c.CONDITION_VALID,
        ValidReason.FORBIDDEN_BY_POD_SECURITY,
        message,
        readiness=readiness.observed_ready,
    )


def _admit(
    inp: ComposeInput,
    res: ComposeResult,
    spec: ModelReplicaSpec,
    name: str,
    ns: str,
    target: Target,
) -> backends.ServingBackend | ComposeResult:
    """The replica's serving backend, or a stop: unless its deployment placed it and its
    cluster's Pod Security level allows its templates (wait while the deployment is
    being fetched); fatal for a backend not registered."""
    if not inp.fetched(DEPLOYMENT_REQUIREMENT):
        return outcome.wait(inp, res, readiness=readiness.observed_ready)
    refused = _check_owner(inp, res, spec, name, ns) or _pod_security(
        inp, res, spec, target.cluster
    )
    if refused is not None:
        return refused
    backend = backends.backend(spec.backend)
    if backend is None:
        return outcome.fatal(f"no serving backend {spec.backend!r} registered")
    return backend


# --- phase 3: build ----------------------------------------------------------------------


def _context(
    name: str,
    ns: str,
    base: str,
    spec: ModelReplicaSpec,
    target: Target,
    cache: replica_cache.ReplicaCache | None,
) -> ReplicaContext:
    labels = {
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        c.LABEL_DEPLOYMENT: label_value(spec.deployment_name),
        c.LABEL_CLUSTER: label_value(spec.cluster_name),
        c.LABEL_REPLICA_INDEX: str(spec.index),
        c.LABEL_REPLICA: base,
    }
    return ReplicaContext(
        replica=name,
        base=base,
        namespace=ns,
        deployment=spec.deployment_name,
        cluster=spec.cluster_name,
        index=spec.index,
        plan=target.plan,
        cache=cache.mount if cache is not None else None,
        labels=labels,
        pod_security=target.cluster.pod_security,
        framework=spec.framework,
    )


def _route(ctx: ReplicaContext, target: Target, entry: backends.Entry) -> Item:
    gw = target.gateway
    ref = workload.backend_ref(entry.service, entry.port, entry.kind, entry.group)
    route = workload.http_route(ctx, entry.service, entry.port, gw.name, gw.namespace, ref)
    return Item(
        "route",
        workload.object_name(ctx, None, "route"),
        route,
        readiness.ROUTE_ACCEPTED,
        f"HTTPRoute {route['metadata']['name']}",
    )


def _items(ctx: ReplicaContext, target: Target, build: backends.BackendBuild) -> list[Item]:
    namespace = Item(
        "namespace",
        workload.object_name(ctx, None, "namespace"),
        workload.namespace(ctx),
        readiness.EXISTS,
        f"Namespace {ctx.namespace}",
        deletable=False,
    )
    items = [namespace, *build.items, _route(ctx, target, build.entry)]
    group = schedulers.pod_group(ctx.plan, ctx.base, ctx.namespace, build.pods, ctx.labels)
    if group is not None:
        name = workload.object_name(ctx, None, "podgroup")
        items.append(Item("podgroup", name, group, readiness.EXISTS, "PodGroup"))
    return items


# --- phase 4: readiness and status -------------------------------------------------------


def _desire(
    inp: ComposeInput,
    res: ComposeResult,
    ctx: ReplicaContext,
    target: Target,
    items: list[Item],
    retained: list[str],
) -> None:
    for item in items:
        obj = wrap(item, ctx.namespace, target.provider_config, ctx.labels)
        res.desired[item.key] = DesiredResource(obj, item.rule.ready(inp.observed.get(item.key)))
    for key in retained:
        obs = inp.observed[key]
        res.desired[key] = DesiredResource(as_desired(obs), readiness.declared(obs).ready(obs))
    res.ready = "True" if all(res.desired[i.key].ready == "True" for i in items) else "False"


_RELEASE_SUFFIXES = tuple(f"-{release}" for release in WORKLOAD_RELEASES)
Unreadable = unreadable.Unreadable


def _usages(
    inp: ComposeInput, res: ComposeResult, ns: str, cluster: str, items: list[Item]
) -> None:
    """Usages: the workload goes before its cluster's DRA driver, LWS and gateway releases."""
    fetched = inp.required.get(CLUSTER_REQUIREMENT) or []
    if not fetched:
        return
    problem = unreadable.conditions_problem(fetched[0])
    kept = [k for k in inp.observed if k.startswith("usage-") and k.endswith(_RELEASE_SUFFIXES)]
    if problem is not None:
        # Whether the cluster runs the stack is unknown: its Usages stay as they are.
        field, why = unreadable.split(problem)
        unreadable.keep(inp, res, sorted(kept))
        kept_what = "the replica's Usages of its releases are kept as they are"
        found = Unreadable(f"InferenceCluster {cluster}", field, why, kept_what)
        unreadable.report(inp, res, [found])
        return
    unreadable.report(inp, res, [])
    if condition(fetched[0], c.CONDITION_SERVING_STACK_READY) is None:
        # Not reported (yet, or any more): unknown, not Disabled; keep what exists.
        unreadable.keep(inp, res, sorted(kept))
        return
    if not has_serving_stack(fetched[0]):
        return
    kinds = {i.name: str(i.manifest.get("kind") or "") for i in items if i.serves}
    absent = present_releases(fetched[0])
    for key, usage in workload_usages(ns, cluster, kinds, absent).items():
        res.desired[key] = DesiredResource(usage, "True")


def _workload_condition(
    inp: ComposeInput, res: ComposeResult, items: list[Item], route: Item
) -> None:
    serving = [i for i in items if i.serves]
    waiting = [
        f"{i.what} {'not Available' if i.key in inp.observed else 'not created yet'}"
        for i in serving
        if i.key not in res.desired or res.desired[i.key].ready != "True"
    ]
    if waiting:
        res.condition(
            c.CONDITION_WORKLOAD_READY,
            False,
            WorkloadReadyReason.WORKLOAD_NOT_AVAILABLE,
            "; ".join(waiting) + ": the replica is not Ready until it is Available",
        )
        return
    route_waits = res.desired[route.key].ready != "True"
    waits = f"; the replica still waits for {route.what} (RouteAccepted)" if route_waits else ""
    res.condition(
        c.CONDITION_WORKLOAD_READY,
        True,
        WorkloadReadyReason.AVAILABLE,
        "; ".join(f"{i.what} Available" for i in serving) + waits,
    )


def _route_condition(inp: ComposeInput, res: ComposeResult, route: Item, gw: GatewayRef) -> None:
    # Ready waits for both the workload and its route: a serving workload
    # behind a rejected route is unreachable.
    gateway = f"Gateway {gw.namespace}/{gw.name}"
    observed = inp.observed.get(route.key)
    if res.desired[route.key].ready == "True":
        res.condition(
            c.CONDITION_ROUTE_ACCEPTED,
            True,
            RouteAcceptedReason.ACCEPTED,
            f"{route.what} accepted by {gateway}",
        )
        return
    rejection = readiness.route_rejection(observed)
    if observed is None:
        why = f"{route.what} not created yet"
    elif rejection is not None:
        why = f"{route.what} rejected by {gateway} ({rejection})"
    else:
        why = f"{route.what} not accepted by {gateway} yet"
    res.condition(
        c.CONDITION_ROUTE_ACCEPTED,
        False,
        RouteAcceptedReason.ROUTE_NOT_ACCEPTED,
        f"{why}: the replica is not Ready until it is accepted",
    )


def _status(
    ctx: ReplicaContext, cluster: ObservedInferenceCluster, entry: backends.Entry
) -> Resource:
    address = cluster.gateway_address
    endpoint = None
    if address:
        # The cluster's Gateway serves only HTTPS (compose/clusters/gateway_hop.py).
        base = address if "://" in address else f"https://{address}"
        endpoint = base.rstrip("/") + workload.route_path(ctx)
    if endpoint is None:
        return ModelReplicaStatus(namespace=ctx.namespace).to_dict()
    ref = WorkloadBackendRef(
        name=entry.service,
        port=entry.port if entry.kind == "Service" else None,
        kind=entry.kind,
        group=entry.group or None,
    )
    return ModelReplicaStatus(namespace=ctx.namespace, endpoint=endpoint, backend_ref=ref).to_dict()


# --- the composer ------------------------------------------------------------------------


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose the replica's serving workload on its cluster."""
    res = ComposeResult()
    identity = _identity(inp.composite)
    if identity is None:
        return outcome.fatal("ModelReplica has no metadata.name or metadata.namespace")
    name, ns = identity
    spec = _validate(inp, res)
    if isinstance(spec, ComposeResult):
        return spec
    base = replica_base(name)
    _require_owner(res, spec, ns)
    target = _resolve_cluster(inp, res, spec, base, ns)
    if isinstance(target, ComposeResult):
        return target
    backend = _admit(inp, res, spec, name, ns, target)
    if isinstance(backend, ComposeResult):
        return backend
    cache_req = replica_cache.requirement(spec, ns)
    if cache_req is not None:
        res.requirements[replica_cache.CACHE_REQUIREMENT] = cache_req
        if not inp.fetched(replica_cache.CACHE_REQUIREMENT):
            return outcome.wait(inp, res, readiness=readiness.observed_ready)
    cache = replica_cache.resolve(inp, res, spec)
    ctx = _context(name, ns, base, spec, target, cache)
    build = backend.build(ctx, list(spec.roles().values()), inp.observed)
    for warning in build.warnings:
        res.warn(c.REASON_GPU_LIMIT_IGNORED, warning)
    items = _items(ctx, target, build)
    route = next(i for i in items if i.key == "route")
    held = replica_cache.held(inp, items, cache)
    _desire(inp, res, ctx, target, [i for i in items if i.key not in held], build.retained)
    for key, usage in replica_cache.usages(items, held, cache, spec.cluster_name, ns).items():
        res.desired[key] = DesiredResource(usage, "True" if key in inp.observed else "False")
    if cache is not None and not cache.ready:
        res.ready = "False"
    _usages(inp, res, ns, spec.cluster_name, items)
    _workload_condition(inp, res, items, route)
    _route_condition(inp, res, route, target.gateway)
    res.status = _status(ctx, target.cluster, build.entry)
    return res
