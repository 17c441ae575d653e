"""ModelDeployment: what to run, how many replicas, on what hardware."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from modelplane.api import constants as c
from modelplane.api.autoscaling import MAX_DRAIN_MESSAGE, Autoscaling, AutoscalingStatus
from modelplane.api.common import (
    CELExpression,
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    LabelSelector,
    LocalObjectReference,
    StatusModel,
    Toleration,
    cel_rules,
)
from modelplane.api.roles import role_path
from modelplane.api.rollout import Rollout, RolloutStatus

MAX_REPLICAS = 10000
# Bounds on the placement explanation written to status, so a fleet of
# thousands of clusters cannot push the object past etcd's size limit.
MAX_UNSCHEDULABLE_ENTRIES = 32
MAX_UNSCHEDULABLE_MESSAGE = 1024


class DeviceSelector(KubeModel):
    """One DRA CEL expression evaluated against a single device."""

    cel: CELExpression = Field(description="A DRA CEL expression over one device; true selects it.")


class DeviceRequest(KubeModel):
    """A request for devices on each node, like a DRA ResourceClaim request."""

    name: DNSLabel = Field(description="Request name.")
    count: int = Field(default=1, ge=1, le=128, description="Devices of this request on each node.")
    selectors: list[DeviceSelector] = Field(
        min_length=1, max_length=8, description="CEL selectors a device must all satisfy."
    )


class NodeSelector(KubeModel):
    """The devices each node of a worker needs."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.devices.all(d, self.devices.exists_one(e, e.name == d.name))",
                "device request names must be unique",
            )
        )
    }

    devices: list[DeviceRequest] = Field(
        min_length=1,
        max_length=16,
        description="Device requests every node of a worker must satisfy.",
    )

    @model_validator(mode="after")
    def _unique(self) -> NodeSelector:
        seen: set[str] = set()
        for d in self.devices:
            if d.name in seen:
                raise ValueError(f"device request names must be unique: {d.name!r} appears twice")
            seen.add(d.name)
        return self


class Topology(KubeModel):
    """Parallelism of one worker; nodes per worker = pipeline × data / dataLocal."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "(self.pipeline * self.data) % self.dataLocal == 0",
                "pipeline × data must be a multiple of dataLocal",
            )
        )
    }

    tensor: int = Field(
        default=1, ge=1, le=1024, description="Tensor-parallel degree within a node."
    )
    pipeline: int = Field(default=1, ge=1, le=1024, description="Pipeline-parallel stages.")
    data: int = Field(default=1, ge=1, le=1024, description="Data-parallel ranks.")
    data_local: int = Field(
        default=1, ge=1, le=1024, description="Data-parallel ranks that share one node."
    )

    @model_validator(mode="after")
    def _divisible(self) -> Topology:
        if (self.pipeline * self.data) % self.data_local:
            raise ValueError("pipeline × data must be a multiple of dataLocal")
        return self

    @property
    def nodes_per_worker(self) -> int:
        """How many nodes one worker spans."""
        return (self.pipeline * self.data) // self.data_local


PodTemplate = dict[str, Any]
# The serving backends (c.BACKENDS); a Literal so the XRD validates it as an enum.
Backend = Literal["Native", "KServe", "Dynamo"]
# The engine framework of a Dynamo replica (c.DYNAMO_FRAMEWORKS), Dynamo's backendFramework.
Framework = Literal["vllm", "sglang", "trtllm"]
FRAMEWORK_DESCRIPTION = (
    "The engine framework Dynamo runs (vllm, sglang or trtllm; the DynamoGraphDeployment's "
    "backendFramework); set exactly when backend is Dynamo."
)


class Workers(KubeModel):
    """The serving workers of one role: how many, their shape, their pod."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "has(self.template.spec) && has(self.template.spec.containers)"
                " && self.template.spec.containers.filter(x, has(x.name) && x.name == 'engine')"
                ".size() == 1",
                "template.spec.containers must have exactly one container named engine",
            )
        )
    }

    count: int = Field(default=1, ge=1, le=1024, description="Workers of this role in one replica.")
    topology: Topology = Field(default_factory=Topology)
    template: PodTemplate = Field(
        json_schema_extra={
            "x-kubernetes-preserve-unknown-fields": True,
            # CEL cannot see fields kept only by preserve-unknown-fields, so the
            # path the engine-container rule reads is declared (and bounded, to
            # keep the rule inside the API server's cost budget).
            "properties": {
                "spec": {
                    "type": "object",
                    "description": "The pod spec; fields beyond containers are kept as written.",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "containers": {
                            "type": "array",
                            "description": "The pod's containers; exactly one is named engine.",
                            "maxItems": 64,
                            "items": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "name": {
                                        "type": "string",
                                        "maxLength": 63,
                                        "description": "Container name.",
                                    }
                                },
                            },
                        }
                    },
                }
            },
        },
        description="A PodTemplateSpec; exactly one container must be named engine.",
    )

    @field_validator("template")
    @classmethod
    def _one_engine(cls, v: PodTemplate) -> PodTemplate:
        spec = v.get("spec") if isinstance(v, dict) else None
        containers = spec.get("containers") if isinstance(spec, dict) else None
        if not isinstance(containers, list):
            raise ValueError("template.spec.containers must be a list")
        engines = [x for x in containers if isinstance(x, dict) and x.get("name") == "engine"]
        if len(engines) != 1:
            raise ValueError(
                f"template must have exactly one container named {c.ENGINE_CONTAINER!r}, "
                f"found {len(engines)}"
            )
        metadata = v.get("metadata")
        for field in ("labels", "annotations"):
            values = metadata.get(field) if isinstance(metadata, dict) else None
            if values is None:
                continue
            # Composers copy these onto pods: they must be string maps, as the
            # API server would insist once they reach a workload cluster.
            if not isinstance(values, dict) or not all(
                isinstance(k, str) and isinstance(x, str) for k, x in values.items()
            ):
                raise ValueError(f"template.metadata.{field} must map strings to strings")
        return v

    @property
    def nodes(self) -> int:
        """Nodes this role of one replica occupies."""
        return self.topology.nodes_per_worker * self.count


class RoleSpec(KubeModel):
    """One role (prefill or decode) of a disaggregated deployment."""

    node_selector: NodeSelector
    workers: Workers


class DeploymentRole(RoleSpec):
    """One role of a deployment as callers use it: its spec plus its name and wire path.

    Returned by `ModelDeploymentSpec.roles()`; never part of the schema (`name`
    and `path` are not serialized).
    """

    name: str = Field(exclude=True)
    path: str = Field(exclude=True, description="`spec` (unified) or `spec.<role>`.")

    @property
    def node_selector_path(self) -> str:
        """Wire path of the role's node selector, e.g. `spec.prefill.nodeSelector`."""
        return f"{self.path}.nodeSelector"

    @property
    def workers_path(self) -> str:
        """Wire path of the role's workers, e.g. `spec.workers`."""
        return f"{self.path}.workers"


PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]


class PlacementPolicy(KubeModel):
    """How much cost weighs in placement, and whether spot capacity may be used."""

    preference: Literal["Spread", "LowestCost"] = Field(
        default="Spread",
        description="Spread (the default): replicas spread over clusters; LowestCost: the "
        "cheaper pool per device-hour weighs in beside spread (a weighted score, not a tier).",
    )
    allow_spot: bool = Field(
        default=False,
        description="Whether replicas may run on Spot pools (the cloud may reclaim them; a "
        "reclaimed replica moves like one on a stocked-out pool).",
    )


class ModelDeploymentSpec(KubeModel):
    """What to serve and where it may run."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "(has(self.nodeSelector) && has(self.workers) && !has(self.prefill)"
                " && !has(self.decode)) || (!has(self.nodeSelector) && !has(self.workers)"
                " && has(self.prefill) && has(self.decode))",
                "set either nodeSelector and workers (unified) or prefill and decode "
                "(disaggregated), not both",
            ),
            (
                "has(self.framework) == (has(self.backend) && self.backend == 'Dynamo')",
                "framework is set exactly when backend is Dynamo",
            ),
        )
    }

    replicas: int = Field(
        default=1,
        ge=0,
        le=MAX_REPLICAS,
        description="Desired replicas; the scale subresource reads and writes it.",
    )
    cluster_selector: LabelSelector | None = Field(
        default=None,
        description="Which InferenceClusters may run replicas, by their labels; absent means all.",
    )
    tolerations: list[Toleration] | None = Field(
        default=None, max_length=32, description="Cluster taints the replicas tolerate."
    )
    priority: DNSSubdomain | None = Field(
        default=None, description="A PriorityClass name stamped on every serving pod."
    )
    preemption_policy: PreemptionPolicy | None = Field(
        default=None,
        description="PreemptLowerPriority (the default): when a replica fits nowhere, strictly "
        "lower-priority replicas of other deployments on one pool may be preempted for it; "
        "Never: this deployment waits instead.",
    )
    placement: PlacementPolicy | None = Field(
        default=None, description="Cost and spot preferences of the placement."
    )
    caches: list[LocalObjectReference] | None = Field(
        default=None,
        max_length=1,
        description="ModelCaches (same namespace) whose weights the engine reads.",
    )
    backend: Backend = Field(
        default="Native",
        description="What runs each replica: Native (a Deployment or LeaderWorkerSet), "
        "KServe (an LLMInferenceService; only on clusters whose servingStack enables KServe) "
        "or Dynamo (a DynamoGraphDeployment; only on clusters whose servingStack says Dynamo "
        "is present).",
    )
    framework: Framework | None = Field(default=None, description=FRAMEWORK_DESCRIPTION)
    rollout: Rollout = Field(
        default_factory=Rollout,
        description="How replicas that must leave their cluster or pool are replaced, and how "
        "a changed replica template reaches them (Progressive: in waves, judged on signals).",
    )
    autoscaling: Autoscaling | None = Field(
        default=None,
        description="Size the deployment from its engines' signals (queue depth, KV-cache use, "
        "time to first token) summed over the fleet; spec.replicas is then only the start, "
        "and an external scaler of the scale subresource is refused.",
    )
    node_selector: NodeSelector | None = None
    workers: Workers | None = None
    prefill: RoleSpec | None = None
    decode: RoleSpec | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ModelDeploymentSpec:
        unified = self.node_selector is not None or self.workers is not None
        disagg = self.prefill is not None or self.decode is not None
        if unified and disagg:
            raise ValueError(
                "set either nodeSelector and workers (unified) or prefill and decode "
                "(disaggregated), not both"
            )
        if disagg and (self.prefill is None or self.decode is None):
            raise ValueError("disaggregated serving needs both prefill and decode")
        if not disagg and (self.node_selector is None or self.workers is None):
            raise ValueError("unified serving needs both nodeSelector and workers")
        if (self.framework is not None) != (self.backend == c.BACKEND_DYNAMO):
            raise ValueError("framework is set exactly when backend is Dynamo")
        return self

    def roles(self) -> dict[str, DeploymentRole]:
        """The deployment's roles by name, in a fixed order, each carrying its wire path."""
        if self.prefill is not None and self.decode is not None:
            specs = {c.ROLE_PREFILL: self.prefill, c.ROLE_DECODE: self.decode}
        else:
            assert self.node_selector is not None and self.workers is not None
            specs = {
                c.ROLE_UNIFIED: RoleSpec(node_selector=self.node_selector, workers=self.workers)
            }
        return {
            name: DeploymentRole(
                node_selector=rs.node_selector,
                workers=rs.workers,
                name=name,
                path=role_path(name),
            )
            for name, rs in specs.items()
        }


class RolePlacement(StatusModel):
    """The pool one role of a replica landed on."""

    role: str = Field(description="The role: unified, prefill or decode.")
    pool: str = Field(description="The pool the role runs on.")


class Placement(StatusModel):
    """Where one replica runs."""

    cluster: str = Field(description="The cluster the replica runs on.")
    index: int = Field(description="The replica's index on that cluster.")
    replica_name: str = Field(description="Name of the ModelReplica.")
    pools: list[RolePlacement] = Field(max_length=2, description="The pool of each role.")
    ready: bool = Field(default=False, description="Whether the replica is Ready.")
    draining: bool | None = Field(
        default=None,
        description="True when the replica must leave (drainReason): it keeps serving until "
        "its replacement is Ready (rollout MakeBeforeBreak), then leaves the routes "
        "(drainingSince) before it is deleted; absent otherwise.",
    )
    drain_reason: str | None = Field(
        default=None, description="Why a draining replica must leave, as a CamelCase reason."
    )
    draining_since: str | None = Field(
        default=None,
        max_length=64,
        description="When a draining replica started leaving the routes (RFC 3339): its "
        "replacement serves (or the autoscaler removes it), it is at weight 0 in every "
        "ModelService and is deleted once its requests in flight are done or its drain "
        "timeout, counted from then, has passed; absent while it still serves.",
    )
    drain_message: str | None = Field(
        default=None,
        max_length=MAX_DRAIN_MESSAGE,
        description="What a replica leaving the routes waits for before it is deleted.",
    )
    unschedulable: bool | None = Field(
        default=None,
        description="True when the replica's cluster reports its pods unschedulable past the "
        "grace period and no other cluster or pool can take a replacement yet: it serves "
        "nothing and is not counted in status.replicas; absent otherwise.",
    )
    unschedulable_since: str | None = Field(
        default=None,
        max_length=64,
        description="When the cluster first saw the replica's pods unschedulable (RFC 3339).",
    )
    revision: str | None = Field(
        default=None,
        max_length=64,
        description="The replica template revision it runs (label modelplane.ai/revision).",
    )


class ClusterRejection(StatusModel):
    """Why one candidate cluster could not take a replica."""

    cluster: str = Field(description="The candidate cluster.")
    reason: str = Field(description="Why not, as a CamelCase reason.")
    message: str = Field(max_length=MAX_UNSCHEDULABLE_MESSAGE, description="Why not, in words.")
    what_if: str | None = Field(
        default=None,
        max_length=MAX_UNSCHEDULABLE_MESSAGE,
        description=(
            "The smallest growth of this cluster's pools that would place the missing "
            "replicas here (which pool, how many nodes), when adding nodes can help."
        ),
    )


class ModelDeploymentStatus(ConditionedStatus):
    """Observed placement and readiness."""

    replicas: int | None = Field(default=None, description="Replicas placed (composed).")
    ready_replicas: int | None = Field(default=None, description="Placed replicas that are Ready.")
    draining_replicas: int | None = Field(
        default=None,
        description="Replicas that must leave and keep serving until replaced (absent when none).",
    )
    selector: str | None = Field(
        default=None, description="Label selector of the replicas (scale subresource)."
    )
    placements: list[Placement] | None = Field(
        default=None, max_length=MAX_REPLICAS, description="Where each replica runs."
    )
    unschedulable: list[ClusterRejection] | None = Field(
        default=None,
        max_length=MAX_UNSCHEDULABLE_ENTRIES,
        description="Why each candidate cluster rejected the missing replicas (bounded).",
    )
    unschedulable_omitted: int | None = Field(
        default=None, description="Rejecting clusters left out of unschedulable to bound its size."
    )
    autoscaling: AutoscalingStatus | None = Field(
        default=None, description="The signals used, the proposal and why (spec.autoscaling)."
    )
    rollout: RolloutStatus | None = Field(
        default=None,
        description="Rollout Progressive: revisions, the current wave, each wave's analysis and "
        "the decision.",
    )
