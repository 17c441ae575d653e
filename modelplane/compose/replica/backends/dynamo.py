"""The Dynamo backend: one NVIDIA Dynamo `nvidia.com` DynamoGraphDeployment per replica.

Dynamo's operator (installed by the cluster's platform team, never by
Modelplane) turns the graph into its components' pods and Services; Modelplane
still decides everything the native backend decides, through the same stamping
code. The mapping, per field of the graph (`nvidia.com/v1alpha1`):

- **`spec.backendFramework`**: the replica's `spec.framework` (vllm, sglang,
  trtllm), which the Dynamo backend requires;
- **services**: `Frontend` (`componentType: frontend`, one pod, the engine's
  image: Dynamo's OpenAI-compatible HTTP frontend and router), and one worker
  service per role (`componentType: worker`): `Worker` for a unified replica,
  `PrefillWorker` and `DecodeWorker` (`subComponentType` prefill / decode) for a
  disaggregated one, whose requests Dynamo's frontend routes prefill → decode
  itself (so no InferencePool is involved);
- **worker pods** are `workload.pod_template` output — pool pin
  (`nodeSelector`), GPU toleration, DRA claims (`stamping/dra.py`), priority,
  scheduler name, KAI queue labels and PodGroup annotations (`schedulers.py`),
  the model cache and `/dev/shm` mounts (`stamping/volumes.py`), engine flags
  (`engines/`) — split into Dynamo's shape: the pod's labels and annotations in
  `extraPodMetadata`, the pod spec in `extraPodSpec`, its engine container in
  `extraPodSpec.mainContainer` (unnamed: Dynamo names its main container), any
  other container in `extraPodSpec.containers`;
- **devices**: Dynamo's own `resources` block is a Dynamo type (string `gpu`
  counts, turned by its operator into device-plugin `nvidia.com/gpu` requests)
  and cannot name a DRA claim template, so it is left unset: the claims ride the
  pod spec Dynamo takes verbatim (`extraPodSpec.resourceClaims` naming the same
  ResourceClaimTemplate as native, `mainContainer.resources.claims`). The limit:
  Dynamo sees no `gpu` count, so whatever its operator derives from it (for a
  multi-node worker, GPUs per node) is not derived; the engine's own parallelism
  flags say it;
- **probes and ports**: a worker is probed by Dynamo's operator on its own system
  port; the serving port and probe Modelplane stamps for a native engine are
  taken off again unless the template declared them;
- **shared memory**: when Modelplane mounts `/dev/shm` (tensor or multi-node
  parallelism) Dynamo's own is turned off (`sharedMemory.disabled`), so the pod
  has one such mount;
- **size**: `replicas` = `workers.count`; a worker over several nodes gets
  `multinode.nodeCount` (Dynamo runs it through Grove or LeaderWorkerSet);
- **the route**: the replica's HTTPRoute targets Dynamo's frontend Service,
  `<name>-frontend`, on its port 8000;
- **readiness**: the graph's `Ready` condition is True and its `status.state`,
  when reported, is `successful` (what Dynamo's operator writes once every
  component is up); an unreadable status is not Ready.

Composed-resource keys: `dynamographdeployment`, `<role>-claims-<digest>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api import backends as api_backends
from modelplane.api import constants as c
from modelplane.api.model_replica import ModelReplicaSpec, PlacedRole
from modelplane.api.objects import condition_status
from modelplane.compose import readiness
from modelplane.compose.objects import Item
from modelplane.compose.replica import workload
from modelplane.compose.replica.backends.base import BackendBuild, Entry, claim_template
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import Resource

NAME = api_backends.DYNAMO.name
FRONTEND = "Frontend"
# Dynamo names a component's Service `<graph>-<component, lower case>`; its
# frontend serves HTTP on 8000 unless told otherwise.
FRONTEND_SERVICE_SUFFIX = "-frontend"
FRONTEND_PORT = 8000
WORKER_SERVICES = {
    c.ROLE_UNIFIED: "Worker",
    c.ROLE_PREFILL: "PrefillWorker",
    c.ROLE_DECODE: "DecodeWorker",
}
# `status.state` once Dynamo's operator found every component ready.
STATE_READY = "successful"
SHM_PATH = "/dev/shm"


# --- readiness ---------------------------------------------------------------------------


def graph_ready(graph: Mapping[str, Any] | None) -> bool:
    """Whether a DynamoGraphDeployment reports itself up: its `Ready` condition is True
    and its `status.state`, if reported, is `successful`; anything unreadable is not."""
    status = (graph or {}).get("status")
    if not isinstance(status, Mapping):
        return False
    state = status.get("state", STATE_READY)
    return state == STATE_READY and condition_status(graph, c.CONDITION_READY) == "True"


def _reads(observed: Resource | None) -> bool:
    graph = readiness.wrapped(observed)
    # Before the provider reported the graph, its own evaluation of the same query.
    return graph_ready(graph) if graph is not None else readiness.object_ready(observed)


READY_CEL = (
    "has(object.status) && has(object.status.conditions) && "
    "object.status.conditions.exists(x, x.type == 'Ready' && x.status == 'True') && "
    f"(!has(object.status.state) || object.status.state == '{STATE_READY}')"
)
READY = readiness.register(
    readiness.ReadinessRule(
        "DynamoGraphReady", {"policy": readiness.POLICY_CEL, "celQuery": READY_CEL}, _reads
    )
)


# --- the spec ----------------------------------------------------------------------------


def spec_errors(spec: ModelReplicaSpec) -> list[str]:
    """Why a replica cannot run on Dynamo: it must name the engine framework."""
    if spec.framework is not None:
        return []
    frameworks = ", ".join(c.DYNAMO_FRAMEWORKS)
    return [f"spec.framework: the Dynamo backend needs the engine framework ({frameworks})"]


# --- claims ------------------------------------------------------------------------------


def _claims(ctx: ReplicaContext, role: PlacedRole) -> tuple[str, Item] | None:
    """The role's claim template's name and item (`base.claim_template`)."""
    made = claim_template(ctx, role)
    return None if made is None else (str(made[0]["metadata"]["name"]), made[1])


# --- services ----------------------------------------------------------------------------


def _unserve(engine: dict[str, Any], written: Mapping[str, Any]) -> None:
    """Put back the engine's ports and readiness probe as the template wrote them."""
    for field in ("ports", "readinessProbe"):
        if field in written:
            engine[field] = written[field]
        else:
            engine.pop(field, None)


def _main_and_sidecars(pod: dict[str, Any], role: PlacedRole) -> dict[str, Any]:
    """The stamped pod spec as Dynamo's `extraPodSpec`: the engine is `mainContainer`."""
    engine = workload.engine(pod)
    _unserve(engine, workload.engine(role.workers.template["spec"]))
    engine.pop("name")
    extra = {k: v for k, v in pod.items() if k != "containers"}
    sidecars = [x for x in pod["containers"] if x is not engine]
    if sidecars:
        extra["containers"] = sidecars
    extra["mainContainer"] = engine
    return extra


def _worker(
    ctx: ReplicaContext, role: PlacedRole, claim: str | None, disaggregated: bool
) -> tuple[Resource, list[str]]:
    """One role's worker service of the graph."""
    # Dynamo starts multi-node workers itself: stamp a single pod (no Ray bootstrap).
    tpl, warnings = workload.pod_template(ctx, role, "single", claim)
    extra = _main_and_sidecars(tpl["spec"], role)
    body: Resource = {"componentType": "worker"}
    if disaggregated:
        body["subComponentType"] = role.name
    body["replicas"] = role.workers.count
    nodes = role.workers.topology.nodes_per_worker
    if nodes > 1:
        body["multinode"] = {"nodeCount": nodes}
    meta = {k: v for k, v in (tpl.get("metadata") or {}).items() if k in ("labels", "annotations")}
    if meta:
        body["extraPodMetadata"] = meta
    mounts = extra["mainContainer"].get("volumeMounts") or []
    if any(m.get("mountPath") == SHM_PATH for m in mounts):
        body["sharedMemory"] = {"disabled": True}
    body["extraPodSpec"] = extra
    return body, warnings


def _frontend(ctx: ReplicaContext, image: Any) -> Resource:
    """Dynamo's HTTP frontend: one CPU pod of the engine's image (Dynamo's runtime images
    carry the frontend); it holds no devices, so it is neither pinned nor ganged."""
    labels = {**ctx.labels, c.LABEL_REPLICA: ctx.base, c.LABEL_ROLE: "frontend"}
    return {
        "componentType": "frontend",
        "replicas": 1,
        "extraPodMetadata": {"labels": labels},
        "extraPodSpec": {"mainContainer": {"image": image}},
    }


def _spec(
    ctx: ReplicaContext,
    roles: Sequence[PlacedRole],
    claims: Mapping[str, str | None],
    framework: str,
) -> tuple[Resource, list[str]]:
    disaggregated = any(r.name == c.ROLE_PREFILL for r in roles)
    services: Resource = {}
    warnings: list[str] = []
    for role in roles:
        services[WORKER_SERVICES[role.name]], more = _worker(
            ctx, role, claims[role.name], disaggregated
        )
        warnings += more
    image = workload.engine(roles[-1].workers.template["spec"]).get("image")
    services = {FRONTEND: _frontend(ctx, image), **services}
    return {"backendFramework": framework, "services": services}, warnings


class DynamoBackend:
    """One DynamoGraphDeployment (plus the roles' DRA claim templates) per replica."""

    name = NAME
    declaration = api_backends.DYNAMO

    def spec_errors(self, spec: ModelReplicaSpec) -> list[str]:
        """Why the replica cannot run on Dynamo (see the module function)."""
        return spec_errors(spec)

    def build(
        self,
        ctx: ReplicaContext,
        roles: Sequence[PlacedRole],
        observed: Mapping[str, Resource],
    ) -> BackendBuild:
        """Compose the replica's DynamoGraphDeployment, entered through Dynamo's frontend."""
        made = {r.name: _claims(ctx, r) for r in roles}
        claims = {name: (m[0] if m else None) for name, m in made.items()}
        # The composer validated the spec first (`spec_errors`): a framework is named.
        spec, warnings = _spec(ctx, roles, claims, ctx.framework or "")
        manifest = {
            "apiVersion": c.DYNAMO_API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": workload.metadata(ctx.base, ctx, dict(ctx.plan.workload_labels)),
            "spec": spec,
        }
        graph = Item(
            "dynamographdeployment",
            workload.object_name(ctx, None, "dynamographdeployment"),
            manifest,
            READY,
            f"DynamoGraphDeployment {ctx.base}",
            serves=True,
        )
        return BackendBuild(
            items=[graph, *(m[1] for m in made.values() if m is not None)],
            entry=Entry(ctx.base + FRONTEND_SERVICE_SUFFIX, FRONTEND_PORT),
            pods=sum(r.workers.count * r.workers.topology.nodes_per_worker for r in roles),
            warnings=warnings,
        )


BACKEND = DynamoBackend()
