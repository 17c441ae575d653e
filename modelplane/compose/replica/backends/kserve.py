"""The KServe backend: one `serving.kserve.io` LLMInferenceService per replica.

KServe's LLMInferenceService controller (v0.20; `v1alpha2` is the CRD's stored
and recommended version) runs the engine; Modelplane still decides everything
the native backend decides, through the same stamping code:

- **pods** are `workload.pod_template` output — DRA claims (`stamping/dra.py`),
  pool pin, GPU toleration, priority, scheduler name, labels and PodGroup
  annotations (`schedulers.py`), shared memory, engine flags (`engines/`) —
  turned into KServe's shape: the pod spec in `template` (the leader of a
  multi-node worker; its workers in `worker`), the pod labels and annotations
  in the service's `labels`/`annotations`, and the engine container renamed
  `main`, the container KServe's presets merge into;
- **claims**: per role with device requests the same ResourceClaimTemplate as
  native (same name, same spec), composed beside the service;
- **model**: `pvc://<cache>` when the replica names a ModelCache (KServe mounts
  the claim at /mnt/models, so the cache volume is not stamped a second time and
  a vLLM engine that names no model is pointed there), else the model the engine
  names (`--model X` / `vllm serve X`): a URI is kept (`hf://`, `s3://`, `pvc://`),
  a Hugging Face repo id `org/name` becomes `hf://org/name`. Credentials stay
  where the user put them: Secret references in the engine's env;
- **size**: `replicas` = `workers.count` (1 unless the user asks for more
  workers; the fleet scheduler owns the number of replicas), `parallelism` =
  `workers.topology` (tensor, pipeline, data, dataLocal);
- **disaggregated**: decode is the service's main workload and prefill its
  `prefill` section; `router.scheduler` asks KServe for its endpoint picker
  and InferencePool (`<name>-inference-pool`), which the replica's HTTPRoute
  targets, so requests flow through the picker's prefill/decode profile;
- **unified**: no `router`: the replica's own HTTPRoute targets KServe's
  workload Service `<name>-kserve-workload-svc` on the engine's port;
- **readiness**: the LLMInferenceService's `Ready` condition.

Composed-resource keys: `llminferenceservice`, `<role>-claims-<digest>`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from modelplane.api import backends as api_backends
from modelplane.api import constants as c
from modelplane.api.model_deployment import Topology
from modelplane.api.model_replica import ModelReplicaSpec, PlacedRole
from modelplane.compose import readiness
from modelplane.compose.objects import Item
from modelplane.compose.replica import workload
from modelplane.compose.replica.backends.base import BackendBuild, Entry, claim_template
from modelplane.compose.replica.engines import vllm
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import Resource

NAME = api_backends.KSERVE.name
MAIN_CONTAINER = "main"  # the container KServe's LLMInferenceServiceConfig presets merge into
WORKLOAD_SERVICE_SUFFIX = "-kserve-workload-svc"
INFERENCE_POOL_SUFFIX = "-inference-pool"
MODEL_SCHEMES = ("hf://", "s3://", "pvc://", "gs://", "oci://")

READY = readiness.READY_CONDITION


# --- the model ---------------------------------------------------------------------------


def _named_model(argv: list[str]) -> str | None:
    """The model an engine argv names (`--model X`, `--model=X`, `serve X`), if any."""
    for i, arg in enumerate(argv):
        if arg.startswith("--model="):
            return arg.split("=", 1)[1]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg in ("--model", "serve") and nxt is not None and not nxt.startswith("-"):
            return nxt
    return None


def _uri(model: str) -> str | None:
    if model.startswith(MODEL_SCHEMES):
        return model
    parts = model.split("/")
    if len(parts) == 2 and all(parts) and "://" not in model:
        return f"hf://{model}"  # a Hugging Face repo id
    return None


def _uri_of(cache: str | None, role: PlacedRole) -> str | None:
    if cache:
        return f"pvc://{cache}"
    ctr = workload.engine(role.workers.template["spec"])
    named = _named_model([str(x) for x in (ctr.get("command") or []) + (ctr.get("args") or [])])
    return _uri(named) if named else None


def model_uri(spec: ModelReplicaSpec) -> str | None:
    """The LLMInferenceService's `model.uri`: the cache's PVC, else the model the
    (decode, else only) role's engine names; None when neither says."""
    cache = spec.caches[0].name if spec.caches else None
    return _uri_of(cache, _entry_role(list(spec.roles().values())))


def spec_errors(spec: ModelReplicaSpec) -> list[str]:
    """Why a replica cannot run on KServe: it must say which model to serve."""
    if model_uri(spec) is not None:
        return []
    role = _entry_role(list(spec.roles().values()))
    return [
        f"{workload.template_path(role)}: the KServe backend needs the model as a URI "
        "(hf://, s3://, pvc://) or a Hugging Face repo id in the engine's --model, "
        "or a ModelCache in spec.caches"
    ]


# --- pods --------------------------------------------------------------------------------


def _entry_role(roles: Sequence[PlacedRole]) -> PlacedRole:
    return next((r for r in roles if r.name == c.ROLE_DECODE), roles[0])


def _pod(
    ctx: ReplicaContext, role: PlacedRole, kind: workload.PodKind, claim: str | None
) -> tuple[Resource, list[str]]:
    """One stamped pod template as KServe takes it: metadata apart, engine named `main`."""
    # KServe mounts the pvc:// model itself at /mnt/models: stamp without the
    # cache volume, then point a vLLM engine that names no model at the mount.
    tpl, warnings = workload.pod_template(dataclasses.replace(ctx, cache=None), role, kind, claim)
    pod = tpl["spec"]
    engine = workload.engine(pod)
    if kind != "worker":
        vllm.point_at_cache(engine, ctx.cache.claim if ctx.cache else None)
    engine["name"] = MAIN_CONTAINER
    return {"metadata": tpl.get("metadata") or {}, "spec": pod}, warnings


def _parallelism(t: Topology) -> Resource:
    return {"tensor": t.tensor, "pipeline": t.pipeline, "data": t.data, "dataLocal": t.data_local}


def _workload(
    ctx: ReplicaContext, role: PlacedRole, claim: str | None
) -> tuple[Resource, list[str]]:
    """One role's fields of the service: replicas, parallelism, pods, labels, annotations."""
    multi_node = role.workers.topology.nodes_per_worker > 1
    lead, warnings = _pod(ctx, role, "leader" if multi_node else "single", claim)
    body: Resource = {
        "replicas": role.workers.count,
        "parallelism": _parallelism(role.workers.topology),
        "template": lead["spec"],
    }
    if multi_node:
        body["worker"] = _pod(ctx, role, "worker", claim)[0]["spec"]
    for field in ("labels", "annotations"):
        if lead["metadata"].get(field):
            body[field] = lead["metadata"][field]
    return body, warnings


# --- claims ------------------------------------------------------------------------------


def _claims(ctx: ReplicaContext, role: PlacedRole) -> tuple[str, Item] | None:
    """The role's claim template's name and item (`base.claim_template`)."""
    made = claim_template(ctx, role)
    return None if made is None else (str(made[0]["metadata"]["name"]), made[1])


# --- the service -------------------------------------------------------------------------


def _spec(
    ctx: ReplicaContext, roles: Sequence[PlacedRole], claims: Mapping[str, str | None]
) -> tuple[Resource, list[str]]:
    main = _entry_role(roles)
    body, warnings = _workload(ctx, main, claims[main.name])
    spec: Resource = {"model": {"uri": _model(ctx, main)}, **body}
    prefill = next((r for r in roles if r.name == c.ROLE_PREFILL), None)
    if prefill is not None:
        spec["prefill"], more = _workload(ctx, prefill, claims[prefill.name])
        warnings = [*warnings, *more]
        spec["router"] = {"scheduler": {}}
    return spec, warnings


def _model(ctx: ReplicaContext, role: PlacedRole) -> str:
    # The composer validated the spec (`spec_errors`): a model is named.
    # KServe's pvc://<claim>/<path>: the folder the cache's Job publishes.
    cache = ctx.cache
    path = None if cache is None else "/".join(filter(None, (cache.claim, cache.sub_path)))
    return _uri_of(path, role) or ""


class KServeBackend:
    """One LLMInferenceService (plus the roles' DRA claim templates) per replica."""

    name = NAME
    declaration = api_backends.KSERVE

    def spec_errors(self, spec: ModelReplicaSpec) -> list[str]:
        """Why the replica cannot run on KServe (see the module function)."""
        return spec_errors(spec)

    def build(
        self,
        ctx: ReplicaContext,
        roles: Sequence[PlacedRole],
        observed: Mapping[str, Resource],
    ) -> BackendBuild:
        """Compose the replica's LLMInferenceService, entered through KServe's Service or pool."""
        made = {r.name: _claims(ctx, r) for r in roles}
        claims = {name: (m[0] if m else None) for name, m in made.items()}
        spec, warnings = _spec(ctx, roles, claims)
        manifest = {
            "apiVersion": c.KSERVE_LLMISVC_API_VERSION,
            "kind": "LLMInferenceService",
            "metadata": workload.metadata(ctx.base, ctx, dict(ctx.plan.workload_labels)),
            "spec": spec,
        }
        service = Item(
            "llminferenceservice",
            workload.object_name(ctx, None, "llminferenceservice"),
            manifest,
            READY,
            f"LLMInferenceService {ctx.base}",
            serves=True,
        )
        main = _entry_role(roles)
        port = workload.engine_port(workload.engine(main.workers.template["spec"]))
        if "router" in spec:
            pool = ctx.base + INFERENCE_POOL_SUFFIX
            entry = Entry(pool, port, "InferencePool", c.INFERENCE_GROUP)
        else:
            entry = Entry(ctx.base + WORKLOAD_SERVICE_SUFFIX, port)
        return BackendBuild(
            items=[service, *(m[1] for m in made.values() if m is not None)],
            entry=entry,
            pods=sum(r.workers.count * r.workers.topology.nodes_per_worker for r in roles),
            warnings=warnings,
        )


BACKEND = KServeBackend()
