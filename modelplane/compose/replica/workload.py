"""What every serving backend shares for one replica (SPEC §4).

The replica's context (names, labels, its cluster's scheduling plan), the
names of its wrapped objects, the engine's port, the checks a pod template
must pass before Modelplane edits it, the serving pod template itself, and the
replica-level manifests every backend sends: the workload namespace and the
HTTPRoute on the cluster's inference Gateway. Pure functions over plain dicts.

`pod_template` stamps one serving pod in a fixed order, each concern in its
own module: DRA claims and device-plugin GPU stripping (`stamping/dra.py`),
the in-cluster scheduler's labels, annotations, scheduler name and priority
(`schedulers.py`), shared memory and the cache (`stamping/volumes.py`), and the
engine's specifics (`engines/vllm.py`, `engines/ray.py`). Every pod is pinned
to its pool (`nodeSelector: {modelplane.ai/pool: <pool>}`); a serving pod
declares the engine's port and gets a readiness probe on it unless it has one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from modelplane.api import constants as c
from modelplane.api.model_replica import PlacedRole
from modelplane.compose import objects
from modelplane.compose.replica import schedulers
from modelplane.compose.replica.engines import ray, vllm
from modelplane.compose.replica.schedulers import SchedulingPlan
from modelplane.compose.replica.stamping import dra, volumes
from modelplane.compose.types import Resource

PodKind = Literal["single", "leader", "worker"]


@dataclass(frozen=True)
class ReplicaContext:
    """What every manifest of one replica shares."""

    replica: str  # the ModelReplica's name
    base: str  # RFC 1035 base of every wrapped object's name
    namespace: str  # the workload namespace on the cluster
    deployment: str
    cluster: str
    index: int
    plan: SchedulingPlan
    cache: volumes.CacheMount | None = None
    labels: dict[str, str] = field(default_factory=dict)  # common labels on every object
    pod_security: str = "baseline"  # the cluster's Pod Security level (its namespaces' labels)
    framework: str | None = None  # the engine framework a Dynamo replica names


def _role_suffix(role: PlacedRole) -> tuple[str, ...]:
    # A role's names carry its wire path below `spec`: nothing for a unified
    # replica (its names predate disaggregation), `prefill`/`decode` otherwise.
    return tuple(role.path.split(".")[1:])


def template_path(role: PlacedRole) -> str:
    """The wire path of a role's pod template, for messages."""
    return f"{role.workers_path}.template"


def object_name(ctx: ReplicaContext, role: PlacedRole | None, *suffix: str) -> str:
    """The control-plane Object name of one of the replica's items (`role=None`: replica-wide)."""
    return objects.object_name(ctx.replica, *(_role_suffix(role) if role else ()), *suffix)


def role_name(ctx: ReplicaContext, role: PlacedRole) -> str:
    """The wrapped objects' name for one role."""
    return "-".join((ctx.base, *_role_suffix(role)))


def service_name(ctx: ReplicaContext, role: PlacedRole) -> str:
    """The role's Service name; a LeaderWorkerSet already owns a headless
    Service named after itself, so this one carries a suffix."""
    return f"{role_name(ctx, role)}-engine"


def selector(ctx: ReplicaContext, role: PlacedRole) -> dict[str, str]:
    """The labels that select one role's pods."""
    return {c.LABEL_REPLICA: ctx.base, c.LABEL_ROLE: role.name}


def metadata(name: str, ctx: ReplicaContext, extra: dict[str, str] | None = None) -> Resource:
    """A wrapped object's metadata: its name, the workload namespace, the replica's labels."""
    return {"name": name, "namespace": ctx.namespace, "labels": {**ctx.labels, **(extra or {})}}


def _declared_port(item: Any) -> int | None:
    port = item.get("containerPort") if isinstance(item, dict) else None
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536:
        return port
    return None


def engine_port(container: dict[str, Any]) -> int:
    """The port the engine serves on: its declared containerPort named
    `http`, else its first declared containerPort, else the default 8000.

    A declared port counts only when it is an integer in 1..65535 (not a
    boolean, not a string): anything else falls through to the next choice.
    """
    declared = [p for p in container.get("ports") or [] if _declared_port(p) is not None]
    named = [p for p in declared if p.get("name") == c.ENGINE_PORT_NAME]
    chosen = (named or declared or [None])[0]
    port = _declared_port(chosen)
    return port if port is not None else c.ENGINE_PORT


def engine(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """The pod's engine container (a valid template has exactly one)."""
    found: dict[str, Any] = next(
        x for x in pod_spec["containers"] if x.get("name") == c.ENGINE_CONTAINER
    )
    return found


_TEMPLATE_SHAPE: dict[str, type] = {
    "metadata": dict,
    "metadata.labels": dict,
    "metadata.annotations": dict,
    "spec": dict,
    "spec.containers": list,
    "spec.initContainers": list,
    "spec.volumes": list,
    "spec.tolerations": list,
    "spec.resourceClaims": list,
    "spec.nodeSelector": dict,
}
_CONTAINER_SHAPE: dict[str, type] = {
    "command": list,
    "args": list,
    "ports": list,
    "volumeMounts": list,
    "resources": dict,
    "resources.limits": dict,
    "resources.requests": dict,
    "resources.claims": list,
}


def _shape_errors(obj: Any, shape: dict[str, type], where: str) -> list[str]:
    errors = []
    for path, kind in shape.items():
        value: Any = obj
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and not isinstance(value, kind):
            what = "an object" if kind is dict else "a list"
            errors.append(f"{where}.{path}: must be {what}")
    return errors


def template_errors(template: Any, where: str) -> list[str]:
    """Why a pod template cannot be stamped (wrong types where Modelplane edits it)."""
    if not isinstance(template, dict):
        return [f"{where}: must be an object"]
    errors = _shape_errors(template, _TEMPLATE_SHAPE, where)
    raw_spec = template.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    for key in ("initContainers", "containers", "volumes", "tolerations", "resourceClaims"):
        items = spec.get(key)
        for i, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                errors.append(f"{where}.spec.{key}[{i}]: must be an object")
            elif key.endswith("ontainers"):
                errors.extend(_shape_errors(item, _CONTAINER_SHAPE, f"{where}.spec.{key}[{i}]"))
    return errors


def _serve(engine_ctr: dict[str, Any], port: int) -> None:
    """Declare the serving port (unless declared) and probe it (unless probed)."""
    ports = list(engine_ctr.get("ports") or [])
    if not any(_declared_port(p) == port for p in ports):
        ports.append({"name": c.ENGINE_PORT_NAME, "containerPort": port, "protocol": "TCP"})
    engine_ctr["ports"] = ports
    engine_ctr.setdefault(
        "readinessProbe",
        {
            "httpGet": {"path": c.ENGINE_HEALTH_PATH, "port": port},
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
    )


def _stamp_engine(
    ctx: ReplicaContext, role: PlacedRole, kind: PodKind, engine_ctr: dict[str, Any], port: int
) -> None:
    on_ray = ray.needs_ray(role, engine_ctr)
    if kind == "worker" and on_ray:
        ray.stamp_worker(engine_ctr)
        return
    vllm.point_at_cache(engine_ctr, ctx.cache.claim if ctx.cache else None)
    if kind == "leader" and on_ray:
        ray.stamp_leader(engine_ctr)
    if kind != "worker":
        _serve(engine_ctr, port)


def _stamp_metadata(ctx: ReplicaContext, role: PlacedRole, meta: dict[str, Any], pod: Any) -> None:
    # Modelplane's own label prefix is reserved for what it stamps itself;
    # the scheduler's labels come next and the replica's own win.
    user = meta.get("labels") or {}
    meta["labels"] = {k: v for k, v in user.items() if not k.startswith(c.LABEL_PREFIX)}
    schedulers.stamp_pod(meta, pod, ctx.plan)
    meta["labels"].update({**ctx.labels, **selector(ctx, role)})


def pod_template(
    ctx: ReplicaContext,
    role: PlacedRole,
    kind: PodKind,
    claim_template: str | None = None,
) -> tuple[Resource, list[str]]:
    """One role's serving pod template, stamped for its pool, claims, scheduler and engine.

    `claim_template` names the role's ResourceClaimTemplate (None: no devices).
    Returns the template and a warning per device-plugin GPU resource removed.
    """
    tpl: dict[str, Any] = copy.deepcopy(role.workers.template)
    meta = tpl.setdefault("metadata", {})
    pod = tpl.setdefault("spec", {})
    warnings = dra.strip_gpu_resources(pod, template_path(role))
    _stamp_metadata(ctx, role, meta, pod)
    pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), c.LABEL_POOL: role.node_pool_name}
    engine_ctr = engine(pod)
    port = engine_port(engine_ctr)
    if claim_template is not None:
        dra.stamp_claims(pod, engine_ctr, claim_template)
    volumes.stamp(pod, engine_ctr, role.workers.topology, ctx.cache)
    _stamp_engine(ctx, role, kind, engine_ctr, port)
    return tpl, warnings


def route_path(ctx: ReplicaContext) -> str:
    """The path prefix unique to the replica on its cluster's gateway."""
    return f"/{ctx.namespace}/{ctx.deployment}/{ctx.index}"


def backend_ref(service: str, port: int, kind: str = "Service", group: str = "") -> Resource:
    """An HTTPRoute backendRef: a Service and its port, or another kind (an InferencePool)."""
    if kind == "Service":
        return {"name": service, "port": port}
    return {"group": group, "kind": kind, "name": service}


def http_route(
    ctx: ReplicaContext,
    service: str,
    port: int,
    gateway_name: str,
    gateway_namespace: str,
    ref: Resource | None = None,
) -> Resource:
    """The replica's HTTPRoute: its path prefix, rewritten to `/`, to `service`'s `port`
    (or to `ref`, another backendRef such as an InferencePool)."""
    return {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": metadata(ctx.base, ctx),
        "spec": {
            "parentRefs": [
                {
                    "group": c.GATEWAY_GROUP,
                    "kind": "Gateway",
                    "name": gateway_name,
                    "namespace": gateway_namespace,
                }
            ],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": route_path(ctx)}}],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}
                            },
                        }
                    ],
                    "backendRefs": [ref or backend_ref(service, port)],
                }
            ],
        },
    }


POD_SECURITY_MODES = ("enforce", "warn", "audit")


def namespace(ctx: ReplicaContext) -> Resource:
    """The workload namespace (shared by every replica from the same namespace), with
    the cluster's Pod Security level enforced, warned and audited (policy version latest)."""
    labels = {c.LABEL_MANAGED_BY: c.MANAGED_BY}
    for mode in POD_SECURITY_MODES:
        labels[f"pod-security.kubernetes.io/{mode}"] = ctx.pod_security
        labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Namespace",
        "metadata": {"name": ctx.namespace, "labels": labels},
    }
