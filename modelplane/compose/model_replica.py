"""ModelReplica composer: one serving instance composed onto its workload cluster.

Reads the replica (its cluster, pools, resolved DRA requests, workers) and its
InferenceCluster (required by name: provider config, `spec.scheduling`,
`spec.gateway`, `status.gatewayAddress`) and composes, as provider-kubernetes
Objects on that cluster (see `objects.py`, `workload.py`, `schedulers.py`):
the workload namespace, per role a Deployment or LeaderWorkerSet, its DRA
ResourceClaimTemplate and a Service, one HTTPRoute, and the scheduler's
PodGroup where the cluster gangs pods.

The workload namespace on the cluster has the ModelReplica's namespace's name,
so one team's namespace maps to one namespace on every cluster. Its Object
never deletes it (replicas of several deployments share it).

Names: control-plane Objects are `<replica>-[<role>-]<kind>` (e.g.
`qwen-3f2a9c1b-deployment`), cut to 63 characters with a hash of the replica
name when longer; a claim template's Object, its wrapped template and its
composed-resource key also carry the digest of the template's spec
(`...-prefill-claims-<digest>`, key `prefill-claims-<digest>`; see
`workload.py`). Wrapped objects are named
`<base>[-<role>]` (the Service `...-engine`), where `base` is the replica name
as an RFC 1035 label of at most 40 characters, so LeaderWorkerSet pod and
StatefulSet names stay within Kubernetes' limits. The HTTPRoute matches the
path prefix `/<namespace>/<deployment>/<index>` (unique per cluster, since a
replica is (namespace, deployment, cluster, index)) and rewrites it to `/`;
`status.endpoint` is that path under the cluster's `status.gatewayAddress`.

Safety when the answer is incomplete (composed resources missing from desired
state are deleted by Crossplane, so an incomplete answer would tear down a
serving replica):
- InferenceCluster not fetched yet: return the requirement and keep every
  observed composed resource as desired, unchanged. A fatal result cannot
  carry the requirement, so it would never be fetched.
- Cluster fetched but absent, without a provider config, or with a bad
  scheduling template; or the replica's spec invalid: a condition naming the
  cause, a warning event, and again every observed composed resource kept
  as it is (nothing new is composed). The replica is not ready.
Readiness is only ever read from observed state: a composed resource is ready
when its Object is observed ready (a workload: its `Available` condition; the
HTTPRoute: a parent Gateway's `Accepted` condition), the replica when every
composed resource is. `WorkloadReady` reports the workloads, `RouteAccepted`
the route; each says when it is the one the replica's readiness waits for.
"""

from __future__ import annotations

import re
from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.objects import label_value
from modelplane.compose import objects, schedulers, workload
from modelplane.compose.common import as_desired, parse_spec
from modelplane.compose.templates import TemplateVars
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Readiness,
    Requirement,
    Resource,
)

CLUSTER_REQUIREMENT = "cluster"
WORKLOAD_KINDS = ("Deployment", "LeaderWorkerSet")
# Room for "-prefill", LeaderWorkerSet group/worker suffixes and StatefulSet
# revision labels within the 63-character limits.
BASE_NAME_MAX = 40


def _readiness_of(obj: Resource) -> objects.Readiness:
    kind = _wrapped_kind(obj)
    if kind in WORKLOAD_KINDS:
        return "Workload"
    return "Route" if kind == "HTTPRoute" else "Config"


def _wrapped_kind(obj: Resource) -> str:
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest") or {}
    return str(manifest.get("kind", "")) if isinstance(manifest, dict) else ""


def _observed_ready(obj: Resource | None, how: objects.Readiness) -> bool:
    if how == "Workload":
        return objects.workload_available(obj)
    if how == "Route":
        return objects.route_accepted(obj)
    return objects.config_ready(obj)


def _hold(inp: ComposeInput, res: ComposeResult, *, ready: bool | None) -> ComposeResult:
    """Keep every observed composed resource exactly as it is.

    `ready=None` derives the replica's readiness from what is observed.
    """
    all_ready = bool(inp.observed)
    for key, obs in sorted(inp.observed.items()):
        ok = _observed_ready(obs, _readiness_of(obs))
        all_ready = all_ready and ok
        res.desired[key] = DesiredResource(as_desired(obs), "True" if ok else "False")
    res.ready = "True" if (all_ready if ready is None else ready) else "False"
    return res


def _keep_retiring_claims(
    inp: ComposeInput, res: ComposeResult, claim_keys: dict[str, tuple[str, str, str]]
) -> None:
    """Keep a role's previous claim templates until its workload has rolled off them.

    A pod of the previous revision that is recreated mid-rollout (evicted,
    crashed node) needs its ResourceClaimTemplate; deleting it early would
    leave that pod pending. `<role>-claims` is the key before templates
    carried a digest.
    """
    for role, (key, template, workload_key) in claim_keys.items():
        if objects.rolled_onto(inp.observed.get(workload_key), template):
            continue
        previous = re.compile(rf"^{re.escape(role)}-claims(-[0-9a-f]{{8}})?$")
        for okey, obs in sorted(inp.observed.items()):
            if okey != key and previous.match(okey):
                ready: Readiness = "True" if objects.config_ready(obs) else "False"
                res.desired[okey] = DesiredResource(as_desired(obs), ready)


def _gateway(cluster: Resource) -> tuple[str, str]:
    gw = (cluster.get("spec") or {}).get("gateway")
    gw = gw if isinstance(gw, dict) else {}
    name, ns = gw.get("name"), gw.get("namespace")
    return (
        name if isinstance(name, str) and name else c.DEFAULT_GATEWAY_NAME,
        ns if isinstance(ns, str) and ns else c.DEFAULT_GATEWAY_NAMESPACE,
    )


def _endpoint(address: Any, path: str) -> str | None:
    if not isinstance(address, str) or not address:
        return None
    base = address if "://" in address else f"http://{address}"
    return base.rstrip("/") + path


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose the replica's serving workload on its cluster."""
    res = ComposeResult()
    xr = inp.composite
    meta = xr.get("metadata") or {}
    name, ns = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(ns, str) or not name or not ns:
        return ComposeResult(fatal="ModelReplica has no metadata.name or metadata.namespace")
    spec, msg = parse_spec(ModelReplicaSpec, xr)
    if spec is None:
        res.condition(c.CONDITION_VALID, False, c.REASON_INVALID_SPEC, msg)
        res.warn(c.REASON_INVALID_SPEC, msg)
        return _hold(inp, res, ready=False)
    shape_errors = [
        err
        for role, role_spec in spec.roles().items()
        for err in workload.template_errors(
            role_spec.workers.template,
            "spec.workers.template" if role == c.ROLE_UNIFIED else f"spec.{role}.workers.template",
        )
    ]
    if shape_errors:
        msg = "; ".join(shape_errors)
        res.condition(c.CONDITION_VALID, False, c.REASON_INVALID_SPEC, msg)
        res.warn(c.REASON_INVALID_SPEC, msg)
        return _hold(inp, res, ready=False)
    res.condition(c.CONDITION_VALID, True, c.REASON_VALID)

    res.requirements[CLUSTER_REQUIREMENT] = Requirement(
        api_version=c.API_VERSION, kind="InferenceCluster", match_name=spec.cluster_name
    )
    if not inp.fetched(CLUSTER_REQUIREMENT):
        res.condition(
            c.CONDITION_CLUSTER_RESOLVED,
            None,
            c.REASON_WAITING_FOR_RESOURCES,
            f"waiting for InferenceCluster {spec.cluster_name!r}",
        )
        return _hold(inp, res, ready=None)
    cluster = next(
        (
            x
            for x in inp.required.get(CLUSTER_REQUIREMENT, [])
            if (x.get("metadata") or {}).get("name") == spec.cluster_name
        ),
        None,
    )
    if cluster is None:
        msg = f"spec.clusterName: InferenceCluster {spec.cluster_name!r} not found"
        res.condition(c.CONDITION_CLUSTER_RESOLVED, False, c.REASON_CLUSTER_NOT_FOUND, msg)
        res.warn(c.REASON_CLUSTER_NOT_FOUND, msg)
        return _hold(inp, res, ready=False)
    cstatus = cluster.get("status") or {}
    provider_config = cstatus.get("providerConfigName")
    if not isinstance(provider_config, str) or not provider_config:
        msg = (
            f"InferenceCluster {spec.cluster_name!r} publishes no status.providerConfigName yet: "
            "nothing can reach the cluster"
        )
        res.condition(c.CONDITION_CLUSTER_RESOLVED, False, c.REASON_PROVIDER_CONFIG_MISSING, msg)
        res.warn(c.REASON_PROVIDER_CONFIG_MISSING, msg)
        return _hold(inp, res, ready=False)

    base = objects.dns_label(name, BASE_NAME_MAX)
    variables = TemplateVars(namespace=ns, name=spec.deployment_name, cluster=spec.cluster_name)
    plan, errors = schedulers.plan(
        (cluster.get("spec") or {}).get("scheduling"), spec.priority, variables, base
    )
    if errors:
        msg = f"InferenceCluster {spec.cluster_name!r}: " + "; ".join(errors)
        res.condition(
            c.CONDITION_CLUSTER_RESOLVED, False, c.REASON_INVALID_SCHEDULING_TEMPLATE, msg
        )
        res.warn(c.REASON_INVALID_SCHEDULING_TEMPLATE, msg)
        return _hold(inp, res, ready=False)
    res.condition(
        c.CONDITION_CLUSTER_RESOLVED,
        True,
        c.REASON_RESOLVED,
        f"InferenceCluster {spec.cluster_name!r} through ClusterProviderConfig {provider_config!r}",
    )

    labels = {
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        c.LABEL_DEPLOYMENT: label_value(spec.deployment_name),
        c.LABEL_CLUSTER: label_value(spec.cluster_name),
        c.LABEL_REPLICA_INDEX: str(spec.index),
        c.LABEL_REPLICA: base,
    }
    ctx = workload.ReplicaContext(
        replica=name,
        base=base,
        namespace=ns,
        deployment=spec.deployment_name,
        cluster=spec.cluster_name,
        index=spec.index,
        plan=plan,
        cache=spec.caches[0].name if spec.caches else None,
        labels=labels,
    )
    roles = spec.roles()
    unified = list(roles) == [c.ROLE_UNIFIED]

    def obj(*suffix: str) -> str:
        return objects.object_name(name, *suffix)

    def role_suffix(role: str, kind: str) -> tuple[str, ...]:
        return (kind,) if unified else (role, kind)

    # key -> (Object, description, how its readiness is read)
    wanted: dict[str, tuple[Resource, str, objects.Readiness]] = {}
    ns_obj = objects.wrap(
        obj("namespace"),
        ns,
        provider_config,
        workload.namespace(ctx),
        "Config",
        labels,
        deletable=False,
    )
    wanted["namespace"] = (ns_obj, f"Namespace {ns}", "Config")
    pods = 0
    services: dict[str, tuple[str, int]] = {}
    # role -> (claims key, claim template name, workload key)
    claim_keys: dict[str, tuple[str, str, str]] = {}
    for role, role_spec in roles.items():
        built = workload.build_role(ctx, role, role_spec)
        pods += built.pods
        for warning in built.warnings:
            res.warn(c.REASON_GPU_LIMIT_IGNORED, warning)
        kind = str(built.workload["kind"])
        wkey = f"{role}-{kind.lower()}"
        wanted[wkey] = (
            objects.wrap(
                obj(*role_suffix(role, kind.lower())),
                ns,
                provider_config,
                built.workload,
                "Workload",
                labels,
            ),
            f"{kind} {built.workload['metadata']['name']} ({role})",
            "Workload",
        )
        if built.claims is not None and built.claims_hash is not None:
            # The digest is in the key and the Object's name too: a changed
            # template is a new composed resource, so Crossplane deletes the
            # old Object (and its template) instead of trying to rename it.
            ckey = f"{role}-claims-{built.claims_hash}"
            claim_keys[role] = (ckey, str(built.claims["metadata"]["name"]), wkey)
            wanted[ckey] = (
                objects.wrap(
                    obj(*role_suffix(role, "claims"), built.claims_hash),
                    ns,
                    provider_config,
                    built.claims,
                    "Config",
                    labels,
                ),
                f"ResourceClaimTemplate ({role})",
                "Config",
            )
        wanted[f"{role}-service"] = (
            objects.wrap(
                obj(*role_suffix(role, "service")),
                ns,
                provider_config,
                built.service,
                "Config",
                labels,
            ),
            f"Service ({role})",
            "Config",
        )
        services[role] = (str(built.service["metadata"]["name"]), built.port)

    # A disaggregated replica is entered through its decode role, which pulls
    # prefill results from the prefill role's Service.
    entry = services.get(c.ROLE_DECODE) or services[c.ROLE_UNIFIED]
    gw_name, gw_ns = _gateway(cluster)
    route = workload.http_route(ctx, *entry, gw_name, gw_ns)
    route_what = f"HTTPRoute {route['metadata']['name']}"
    wanted["route"] = (
        objects.wrap(obj("route"), ns, provider_config, route, "Route", labels),
        route_what,
        "Route",
    )
    group = schedulers.pod_group(plan, base, ns, pods, labels)
    if group is not None:
        wanted["podgroup"] = (
            objects.wrap(obj("podgroup"), ns, provider_config, group, "Config", labels),
            "PodGroup",
            "Config",
        )

    not_available: list[str] = []
    available: list[str] = []
    all_ready = True
    for key, (resource, what, how) in wanted.items():
        observed = inp.observed.get(key)
        ok = _observed_ready(observed, how)
        all_ready = all_ready and ok
        readiness: Readiness = "True" if ok else "False"
        res.desired[key] = DesiredResource(resource, readiness)
        if how == "Workload":
            if ok:
                available.append(f"{what} Available")
            else:
                state = "not Available" if observed else "not created yet"
                not_available.append(f"{what} {state}")
    _keep_retiring_claims(inp, res, claim_keys)
    # Ready waits for both the workload and its route: a serving workload
    # behind a rejected route is unreachable. Each condition says which waits.
    route_observed = inp.observed.get("route")
    route_ok = objects.route_accepted(route_observed)
    gateway = f"Gateway {gw_ns}/{gw_name}"
    if not_available:
        res.condition(
            c.CONDITION_WORKLOAD_READY,
            False,
            c.REASON_WORKLOAD_NOT_AVAILABLE,
            "; ".join(not_available) + ": the replica is not Ready until it is Available",
        )
    else:
        waits = "" if route_ok else f"; the replica still waits for {route_what} (RouteAccepted)"
        res.condition(
            c.CONDITION_WORKLOAD_READY, True, c.REASON_AVAILABLE, "; ".join(available) + waits
        )
    if route_ok:
        res.condition(
            c.CONDITION_ROUTE_ACCEPTED,
            True,
            c.REASON_ACCEPTED,
            f"{route_what} accepted by {gateway}",
        )
    else:
        rejection = objects.route_rejection(route_observed)
        if route_observed is None:
            why = f"{route_what} not created yet"
        elif rejection is not None:
            why = f"{route_what} rejected by {gateway} ({rejection})"
        else:
            why = f"{route_what} not accepted by {gateway} yet"
        res.condition(
            c.CONDITION_ROUTE_ACCEPTED,
            False,
            c.REASON_ROUTE_NOT_ACCEPTED,
            f"{why}: the replica is not Ready until it is accepted",
        )
    res.ready = "True" if all_ready else "False"

    res.status = {"namespace": ns}
    endpoint = _endpoint(cstatus.get("gatewayAddress"), workload.route_path(ctx))
    if endpoint:
        res.status["endpoint"] = endpoint
    return res
