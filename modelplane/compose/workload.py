"""The manifests one replica sends to its workload cluster (SPEC §4).

Per role: a Deployment (one node per worker) or a LeaderWorkerSet (several),
its DRA ResourceClaimTemplate and a Service; per replica: the namespace, an
HTTPRoute on the cluster's inference Gateway and, when the cluster's scheduler
gangs pods, a PodGroup (`schedulers.py`). Pure functions over plain dicts.

Decisions worth knowing:
- GPUs bind only through DRA. Any `nvidia.com/gpu` request or limit the user
  put in the pod template is removed (and reported), because it would ask the
  legacy device plugin for a second, unrelated set of GPUs.
- A ResourceClaimTemplate's spec is immutable, yet a replica's resolved
  device requests can change in place (an edited selector that still matches
  the pinned pool). So the template's name carries a digest of its spec
  (`<base>[-<role>]-<8 hex of sha256 over the spec as canonical JSON>`): a
  changed spec is a new template, and the pods reference the new name, so the
  Deployment or LeaderWorkerSet rolls onto it (the composer keeps the previous
  template until the workload reports every pod on the new one).
- Rollouts never surge (maxSurge 0, maxUnavailable 1): the fleet reserved
  GPUs for exactly `workers.count` workers.
- A pod claims a GPU when its role has at least one DRA device request: every
  resolved request is a `claim: DRA` device of a GPU pool, and the pool pin
  already keeps the pod on that pool, so tolerating `nvidia.com/gpu:NoSchedule`
  there can never put it on a GPU node it was not placed on.
- Multi-node vLLM (pipeline or data parallelism across nodes) runs on Ray: the
  leader runs `ray start --head` and then execs the engine, workers join the
  head and block. The scripts are constants; the engine's argv reaches the
  leader only as `"$@"` arguments of `sh -c`, never spliced into script text.
  LeaderWorkerSet injects `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE` and
  `LWS_WORKER_INDEX` (the rank; 0 is the leader) into every container, which is
  how leader and workers learn the leader's address and their rank.
- `/dev/shm` is a memory-backed volume whenever a worker shards over several
  GPUs (tensor > 1) or nodes (NCCL and Ray's object store both use it).
- A cache (`spec.caches[0]`) is the PVC of the same name in the workload
  namespace (the ModelCache composer's naming), mounted read-only at
  `/mnt/models`; a vLLM engine that names no model gets `--model=/mnt/models`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from modelplane.api import constants as c
from modelplane.api.model_replica import ReplicaRole, ResolvedDeviceRequest
from modelplane.api.objects import short_hash
from modelplane.compose.schedulers import SchedulingPlan
from modelplane.compose.types import Resource

CLAIM_NAME = "devices"
CLAIM_HASH = 8
SHM_VOLUME = "dshm"
CACHE_VOLUME = "model-cache"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
# The vLLM OpenAI server image's ENTRYPOINT; used when a wrapped engine
# container sets no command of its own.
VLLM_ENTRYPOINT = ("python3", "-m", "vllm.entrypoints.openai.api_server")

# The Ray bootstrap for multi-node vLLM. The leader's engine argv follows the
# script as "$@" ($0 is the name below), so no user text is ever part of it.
RAY_LEADER_SCRIPT = f'ray start --head --port={c.RAY_PORT} && exec "$@"'
# A worker waits for the head first: LeaderWorkerSet starts leader and workers
# together, and a worker that exits early would restart the whole group.
RAY_WORKER_SCRIPT = (
    f'until ray health-check --address="${{LWS_LEADER_ADDRESS}}:{c.RAY_PORT}" >/dev/null 2>&1;'
    f' do sleep 5; done; exec ray start --address="${{LWS_LEADER_ADDRESS}}:{c.RAY_PORT}" --block'
)
RAY_SCRIPT_NAME = "modelplane-ray-leader"

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
    cache: str | None = None
    labels: dict[str, str] = field(default_factory=dict)  # common labels on every object


@dataclass
class Built:
    """The manifests of one role, plus anything worth a warning."""

    workload: Resource
    claims: Resource | None
    claims_hash: str | None  # digest of the claim template's spec, in its names
    service: Resource
    pods: int
    port: int  # the engine's serving port, behind the Service
    warnings: list[str] = field(default_factory=list)


def role_name(ctx: ReplicaContext, role: str) -> str:
    """The wrapped objects' name for one role."""
    return ctx.base if role == c.ROLE_UNIFIED else f"{ctx.base}-{role}"


def service_name(ctx: ReplicaContext, role: str) -> str:
    """The role's Service name; a LeaderWorkerSet already owns a headless
    Service named after itself, so this one carries a suffix."""
    return f"{role_name(ctx, role)}-engine"


def selector(ctx: ReplicaContext, role: str) -> dict[str, str]:
    """The labels that select one role's pods."""
    return {c.LABEL_REPLICA: ctx.base, c.LABEL_ROLE: role}


def is_vllm(container: dict[str, Any]) -> bool:
    """Whether the engine container runs vLLM (by image or command)."""
    image = str(container.get("image", "")).lower()
    command = " ".join(str(x) for x in (container.get("command") or [])).lower()
    return "vllm" in image or "vllm" in command


def needs_ray(role: ReplicaRole, engine: dict[str, Any]) -> bool:
    """Multi-node vLLM: pipeline or data parallelism over several nodes runs on Ray."""
    topo = role.workers.topology
    return topo.nodes_per_worker > 1 and (topo.pipeline > 1 or topo.data > 1) and is_vllm(engine)


def _declared_port(item: Any) -> int | None:
    port = item.get("containerPort") if isinstance(item, dict) else None
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536:
        return port
    return None


def engine_port(engine: dict[str, Any]) -> int:
    """The port the engine serves on: its declared containerPort named
    `http`, else its first declared containerPort, else the default 8000."""
    declared = [p for p in engine.get("ports") or [] if _declared_port(p) is not None]
    named = [p for p in declared if p.get("name") == c.ENGINE_PORT_NAME]
    chosen = (named or declared or [None])[0]
    port = _declared_port(chosen)
    return port if port is not None else c.ENGINE_PORT


def _engine(pod_spec: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(
        x for x in pod_spec["containers"] if x.get("name") == c.ENGINE_CONTAINER
    )
    return found


def _names_model(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg == "--model" or arg.startswith("--model="):
            return True
        if arg == "serve" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return True
    return False


def _strip_gpu_resources(pod_spec: dict[str, Any], where: str) -> list[str]:
    warnings = []
    for key in ("initContainers", "containers"):
        for ctr in pod_spec.get(key) or []:
            res = ctr.get("resources") if isinstance(ctr, dict) else None
            if not isinstance(res, dict):
                continue
            for part in ("limits", "requests"):
                values = res.get(part)
                if isinstance(values, dict) and c.GPU_RESOURCE_NAME in values:
                    del values[c.GPU_RESOURCE_NAME]
                    warnings.append(
                        f"{where}.spec.{key}[{ctr.get('name')}].resources.{part}"
                        f"[{c.GPU_RESOURCE_NAME}] ignored: GPUs bind only through DRA"
                    )
                    if not values:
                        del res[part]
    return warnings


def _upsert(items: list[dict[str, Any]], item: dict[str, Any], key: str = "name") -> None:
    for i, existing in enumerate(items):
        if isinstance(existing, dict) and existing.get(key) == item[key]:
            items[i] = item
            return
    items.append(item)


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


def pod_template(
    ctx: ReplicaContext,
    role: str,
    spec: ReplicaRole,
    kind: PodKind,
    where: str,
    claim_template: str | None = None,
) -> tuple[Resource, list[str]]:
    """One role's serving pod template, stamped for its pool, claims and scheduler.

    `claim_template` names the role's ResourceClaimTemplate (None: no devices).
    """
    tpl: dict[str, Any] = copy.deepcopy(spec.workers.template)
    meta = tpl.setdefault("metadata", {})
    pod = tpl.setdefault("spec", {})
    warnings = _strip_gpu_resources(pod, where)

    labels = {
        k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith(c.LABEL_PREFIX)
    }
    labels.update(ctx.plan.pod_labels)
    labels.update(ctx.labels)
    labels.update(selector(ctx, role))
    meta["labels"] = labels
    annotations = dict(meta.get("annotations") or {})
    annotations.update(ctx.plan.pod_annotations)
    if annotations:
        meta["annotations"] = annotations

    pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), c.LABEL_POOL: spec.node_pool_name}
    if ctx.plan.scheduler_name:
        pod["schedulerName"] = ctx.plan.scheduler_name
    if ctx.plan.priority_class:
        pod["priorityClassName"] = ctx.plan.priority_class

    engine = _engine(pod)
    port = engine_port(engine)
    ray = needs_ray(spec, engine)
    if claim_template is not None:
        claims = list(pod.get("resourceClaims") or [])
        _upsert(claims, {"name": CLAIM_NAME, "resourceClaimTemplateName": claim_template})
        pod["resourceClaims"] = claims
        resources = engine.setdefault("resources", {})
        ctr_claims = list(resources.get("claims") or [])
        _upsert(ctr_claims, {"name": CLAIM_NAME})
        resources["claims"] = ctr_claims
        tolerations = list(pod.get("tolerations") or [])
        gpu = {"key": c.GPU_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule"}
        if gpu not in tolerations:
            tolerations.append(gpu)
        pod["tolerations"] = tolerations

    volumes = list(pod.get("volumes") or [])
    mounts = list(engine.get("volumeMounts") or [])
    topo = spec.workers.topology
    if topo.tensor > 1 or topo.nodes_per_worker > 1:
        _upsert(volumes, {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
        _upsert(mounts, {"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    if ctx.cache:
        _upsert(
            volumes,
            {
                "name": CACHE_VOLUME,
                "persistentVolumeClaim": {"claimName": ctx.cache, "readOnly": True},
            },
        )
        _upsert(mounts, {"name": CACHE_VOLUME, "mountPath": c.CACHE_MOUNT_PATH, "readOnly": True})
    if volumes:
        pod["volumes"] = volumes
    if mounts:
        engine["volumeMounts"] = mounts

    if kind == "worker" and ray:
        # A Ray worker serves nothing: it joins the leader's Ray cluster and blocks.
        engine["command"] = ["/bin/sh", "-c", RAY_WORKER_SCRIPT]
        engine.pop("args", None)
        engine.pop("readinessProbe", None)
        return tpl, warnings

    command = [str(x) for x in engine.get("command") or []]
    args = [str(x) for x in engine.get("args") or []]
    if ctx.cache and is_vllm(engine) and not _names_model(command + args):
        args.append(f"--model={c.CACHE_MOUNT_PATH}")
        engine["args"] = args
    if kind == "leader" and ray:
        argv = (command or list(VLLM_ENTRYPOINT)) + args
        engine["command"] = ["/bin/sh", "-c", RAY_LEADER_SCRIPT, RAY_SCRIPT_NAME]
        engine["args"] = argv

    if kind != "worker":
        ports = list(engine.get("ports") or [])
        if not any(_declared_port(p) == port for p in ports):
            ports.append({"name": c.ENGINE_PORT_NAME, "containerPort": port, "protocol": "TCP"})
        engine["ports"] = ports
        engine.setdefault(
            "readinessProbe",
            {
                "httpGet": {"path": c.ENGINE_HEALTH_PATH, "port": port},
                "periodSeconds": 10,
                "failureThreshold": 3,
            },
        )
    return tpl, warnings


def _meta(name: str, ctx: ReplicaContext, extra: dict[str, str] | None = None) -> Resource:
    return {"name": name, "namespace": ctx.namespace, "labels": {**ctx.labels, **(extra or {})}}


def spec_hash(spec: Any) -> str:
    """A short digest of `spec` (canonical JSON: sorted keys, no spaces)."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return short_hash(canonical, length=CLAIM_HASH)


def resource_claim_template(
    ctx: ReplicaContext, role: str, requests: list[ResolvedDeviceRequest]
) -> tuple[Resource, str]:
    """The role's DRA ResourceClaimTemplate (one request per resolved device
    request) and the digest of its spec, which its name carries."""
    spec = {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": r.name,
                        "exactly": {
                            "deviceClassName": r.device_class_name,
                            "allocationMode": "ExactCount",
                            "count": r.count,
                            "selectors": [{"cel": {"expression": s.cel}} for s in r.selectors],
                        },
                    }
                    for r in requests
                ]
            }
        }
    }
    digest = spec_hash(spec)
    template = {
        "apiVersion": c.DRA_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": _meta(f"{role_name(ctx, role)}-{digest}", ctx, {c.LABEL_ROLE: role}),
        "spec": spec,
    }
    return template, digest


def build_role(ctx: ReplicaContext, role: str, spec: ReplicaRole) -> Built:
    """The workload, claim template and Service of one role."""
    name = role_name(ctx, role)
    workers = spec.workers
    size = workers.topology.nodes_per_worker
    workload_meta = _meta(name, ctx, {c.LABEL_ROLE: role, **ctx.plan.workload_labels})
    warnings: list[str] = []
    service_selector = selector(ctx, role)
    port = engine_port(_engine(workers.template["spec"]))
    claims, digest = (
        resource_claim_template(ctx, role, spec.device_requests)
        if spec.device_requests
        else (None, None)
    )
    claim_name = claims["metadata"]["name"] if claims is not None else None
    where = "spec.workers.template" if role == c.ROLE_UNIFIED else f"spec.{role}.workers.template"
    workload: Resource
    if size == 1:
        tpl, warnings = pod_template(ctx, role, spec, "single", where, claim_name)
        workload = {
            "apiVersion": c.APPS_API_VERSION,
            "kind": "Deployment",
            "metadata": workload_meta,
            "spec": {
                "replicas": workers.count,
                "selector": {"matchLabels": selector(ctx, role)},
                # Replace one worker at a time and never surge: the fleet
                # ledger reserved exactly `count` workers' GPUs, so Kubernetes'
                # default maxSurge of 25% would wait for GPUs nobody reserved.
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                },
                "template": tpl,
            },
        }
    else:
        leader, w1 = pod_template(ctx, role, spec, "leader", where, claim_name)
        worker, _ = pod_template(ctx, role, spec, "worker", where, claim_name)
        warnings = w1
        workload = {
            "apiVersion": c.LWS_API_VERSION,
            "kind": "LeaderWorkerSet",
            "metadata": workload_meta,
            "spec": {
                "replicas": workers.count,
                # LeaderWorkerSet's CRD already defaults maxSurge to 0 (and
                # maxUnavailable to 1); stated here because a surge group would
                # need a whole extra set of GPU nodes the ledger never reserved,
                # and a changed upstream default must not silently start one.
                "rolloutStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 1},
                },
                "leaderWorkerTemplate": {
                    "size": size,
                    "restartPolicy": "RecreateGroupOnPodRestart",
                    "leaderTemplate": leader,
                    "workerTemplate": worker,
                },
            },
        }
        # Only the leader serves the OpenAI API.
        service_selector = {**service_selector, LWS_WORKER_INDEX_LABEL: "0"}
    service = {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Service",
        "metadata": _meta(service_name(ctx, role), ctx, {c.LABEL_ROLE: role}),
        "spec": {
            "selector": service_selector,
            "ports": [
                {
                    "name": c.ENGINE_PORT_NAME,
                    "port": port,
                    "targetPort": port,
                    "protocol": "TCP",
                }
            ],
        },
    }
    return Built(workload, claims, digest, service, workers.count * size, port, warnings)


def route_path(ctx: ReplicaContext) -> str:
    """The path prefix unique to the replica on its cluster's gateway."""
    return f"/{ctx.namespace}/{ctx.deployment}/{ctx.index}"


def http_route(
    ctx: ReplicaContext, service: str, port: int, gateway_name: str, gateway_namespace: str
) -> Resource:
    """The replica's HTTPRoute: its path prefix, rewritten to `/`, to `service`'s `port`."""
    return {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": _meta(ctx.base, ctx),
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
                    "backendRefs": [{"name": service, "port": port}],
                }
            ],
        },
    }


def namespace(ctx: ReplicaContext) -> Resource:
    """The workload namespace (shared by every replica from the same namespace)."""
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Namespace",
        "metadata": {"name": ctx.namespace, "labels": {c.LABEL_MANAGED_BY: c.MANAGED_BY}},
    }
