"""The native backend: a Deployment or LeaderWorkerSet per role, its DRA claims, a Service.

- **Single node per worker** → a `Deployment` of `workers.count` pods.
  **Several nodes per worker** → a `LeaderWorkerSet` (group size = nodes per
  worker) whose leader and workers are stamped apart (`workload.pod_template`:
  for Ray-based engines the leader starts the Ray head, workers join it).
- Per role with device requests, its DRA ResourceClaimTemplate
  (`stamping/dra.py`); the previous template is kept until the workload has
  rolled every pod off it.
- Per role, a Service on the engine's port (for a LeaderWorkerSet only the
  leader, worker index 0, serves the OpenAI API).
- Rollouts never surge (maxSurge 0, maxUnavailable 1): the fleet reserved GPUs
  for exactly `workers.count` workers.
- A disaggregated replica is entered through its decode role, which pulls
  prefill results from the prefill role's Service.

Composed-resource keys: `<role>-deployment` / `<role>-leaderworkerset`,
`<role>-claims-<digest>`, `<role>-service`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplane.api import backends as api_backends
from modelplane.api import constants as c
from modelplane.api.model_replica import PlacedRole
from modelplane.compose import readiness
from modelplane.compose.objects import Item
from modelplane.compose.replica import disaggregation, workload
from modelplane.compose.replica.backends.base import BackendBuild, Entry, claim_template
from modelplane.compose.replica.stamping import dra
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import Resource

NAME = api_backends.NATIVE.name
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


@dataclass(frozen=True)
class _Claims:
    key: str
    template: Resource
    item: Item


def _claims(ctx: ReplicaContext, role: PlacedRole) -> _Claims | None:
    made = claim_template(ctx, role)
    return None if made is None else _Claims(made[1].key, *made)


def _deployment(
    ctx: ReplicaContext, role: PlacedRole, claim: str | None
) -> tuple[Resource, list[str]]:
    tpl, warnings = workload.pod_template(ctx, role, "single", claim)
    return {
        "replicas": role.workers.count,
        "selector": {"matchLabels": workload.selector(ctx, role)},
        # Replace one worker at a time and never surge: the fleet ledger
        # reserved exactly `count` workers' GPUs, so Kubernetes' default
        # maxSurge of 25% would wait for GPUs nobody reserved.
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
        },
        "template": tpl,
    }, warnings


def _leader_worker_set(
    ctx: ReplicaContext, role: PlacedRole, claim: str | None
) -> tuple[Resource, list[str]]:
    leader, warnings = workload.pod_template(ctx, role, "leader", claim)
    worker, _ = workload.pod_template(ctx, role, "worker", claim)
    return {
        "replicas": role.workers.count,
        # LeaderWorkerSet's CRD already defaults maxSurge to 0 (and
        # maxUnavailable to 1); stated here because a surge group would need a
        # whole extra set of GPU nodes the ledger never reserved, and a changed
        # upstream default must not silently start one.
        "rolloutStrategy": {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 1},
        },
        "leaderWorkerTemplate": {
            "size": role.workers.topology.nodes_per_worker,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": leader,
            "workerTemplate": worker,
        },
    }, warnings


def _workload(ctx: ReplicaContext, role: PlacedRole, claim: str | None) -> tuple[Item, list[str]]:
    multi_node = role.workers.topology.nodes_per_worker > 1
    kind, api_version = (
        ("LeaderWorkerSet", c.LWS_API_VERSION) if multi_node else ("Deployment", c.APPS_API_VERSION)
    )
    build = _leader_worker_set if multi_node else _deployment
    body, warnings = build(ctx, role, claim)
    name = workload.role_name(ctx, role)
    manifest = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": workload.metadata(
            name, ctx, {c.LABEL_ROLE: role.name, **ctx.plan.workload_labels}
        ),
        "spec": body,
    }
    item = Item(
        f"{role.name}-{kind.lower()}",
        workload.object_name(ctx, role, kind.lower()),
        manifest,
        readiness.WORKLOAD_AVAILABLE if multi_node else readiness.DEPLOYMENT_ROLLED_OUT,
        f"{kind} {name} ({role.name})",
        serves=True,
    )
    return item, warnings


def _service(ctx: ReplicaContext, role: PlacedRole, port: int) -> Item:
    pods = workload.selector(ctx, role)
    if role.workers.topology.nodes_per_worker > 1:
        # Only the leader serves the OpenAI API.
        pods = {**pods, LWS_WORKER_INDEX_LABEL: "0"}
    manifest = {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Service",
        "metadata": workload.metadata(
            workload.service_name(ctx, role), ctx, {c.LABEL_ROLE: role.name}
        ),
        "spec": {
            "selector": pods,
            "ports": [
                {"name": c.ENGINE_PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}
            ],
        },
    }
    return Item(
        f"{role.name}-service",
        workload.object_name(ctx, role, "service"),
        manifest,
        readiness.EXISTS,
        f"Service ({role.name})",
    )


def _role(ctx: ReplicaContext, role: PlacedRole, observed: Mapping[str, Resource]) -> BackendBuild:
    claims = _claims(ctx, role)
    claim_name = str(claims.template["metadata"]["name"]) if claims else None
    serving, warnings = _workload(ctx, role, claim_name)
    port = workload.engine_port(workload.engine(role.workers.template["spec"]))
    service = _service(ctx, role, port)
    retained = (
        dra.retiring_claims(observed, role.name, claims.key, claim_name, serving.key)
        if claims and claim_name
        else []
    )
    return BackendBuild(
        items=[serving, *([claims.item] if claims else []), service],
        entry=Entry(str(service.manifest["metadata"]["name"]), port),
        pods=role.workers.count * role.workers.topology.nodes_per_worker,
        warnings=warnings,
        retained=retained,
    )


class NativeBackend:
    """Deployment or LeaderWorkerSet + DRA claim templates + Service, per role."""

    name = NAME
    declaration = api_backends.NATIVE

    def build(
        self,
        ctx: ReplicaContext,
        roles: Sequence[PlacedRole],
        observed: Mapping[str, Resource],
    ) -> BackendBuild:
        """Compose every role; the replica is entered through decode, else its only role."""
        built = {role.name: _role(ctx, role, observed) for role in roles}
        entry = built.get(c.ROLE_DECODE) or next(iter(built.values()))
        items = [item for b in built.values() for item in b.items]
        if c.ROLE_PREFILL in built and c.ROLE_DECODE in built:
            return _disaggregated(ctx, built, items)
        return BackendBuild(
            items=items,
            entry=entry.entry,
            pods=sum(b.pods for b in built.values()),
            warnings=[w for b in built.values() for w in b.warnings],
            retained=[k for b in built.values() for k in b.retained],
        )


def _disaggregated(
    ctx: ReplicaContext, built: dict[str, BackendBuild], items: list[Item]
) -> BackendBuild:
    """Requests flow prefill → decode: an InferencePool with a P/D endpoint picker,
    the decode pods' routing sidecar, NIXL on both roles (`disaggregation.py`)."""
    port = built[c.ROLE_DECODE].entry.port
    for item in items:
        if item.serves:
            role = item.manifest["metadata"]["labels"][c.LABEL_ROLE]
            disaggregation.stamp_pods(item.manifest, role, port)
    extra, pool = disaggregation.items(ctx, port)
    return BackendBuild(
        items=[*items, *extra],
        entry=Entry(pool, port, "InferencePool", c.INFERENCE_GROUP),
        pods=sum(b.pods for b in built.values()),
        warnings=[w for b in built.values() for w in b.warnings],
        retained=[k for b in built.values() for k in b.retained],
    )


BACKEND = NativeBackend()
