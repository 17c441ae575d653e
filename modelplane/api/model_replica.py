"""ModelReplica: one complete serving instance on one cluster (internal)."""

from __future__ import annotations

from pydantic import Field, model_validator

from modelplane.api import constants as c
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    LocalObjectReference,
    cel_rules,
)
from modelplane.api.model_deployment import (
    FRAMEWORK_DESCRIPTION,
    Backend,
    DeviceSelector,
    Framework,
    Workers,
)
from modelplane.api.model_endpoint import WorkloadBackendRef
from modelplane.api.roles import role_path


class ResolvedDeviceRequest(KubeModel):
    """A DRA request the replica's pool resolved: what the ResourceClaimTemplate asks for."""

    name: DNSLabel = Field(description="Request name, as in the deployment.")
    device_class_name: DNSSubdomain = Field(
        description="DeviceClass of the pool's matching devices."
    )
    count: int = Field(default=1, ge=1, le=128, description="Devices of this request on each node.")
    selectors: list[DeviceSelector] = Field(
        min_length=1, max_length=8, description="The deployment's selectors for this request."
    )


class ReplicaRole(KubeModel):
    """One role of a replica: its pool, its DRA requests and its workers."""

    node_pool_name: DNSLabel = Field(description="The pool the role runs on.")
    device_requests: list[ResolvedDeviceRequest] = Field(
        default_factory=list, max_length=16, description="The DRA requests the pool resolved."
    )
    workers: Workers


class PlacedRole(ReplicaRole):
    """One role of a replica as callers use it: its fields plus its name and wire path.

    Returned by `ModelReplicaSpec.roles()`; never part of the schema.
    """

    name: str = Field(exclude=True)
    path: str = Field(exclude=True, description="`spec` (unified) or `spec.<role>`.")

    @property
    def workers_path(self) -> str:
        """Wire path of the role's workers, e.g. `spec.decode.workers`."""
        return f"{self.path}.workers"


MAX_PREEMPTED = 32
"""The most replicas one placement may preempt (a pool holds few replicas of others)."""


class PreemptedReplica(KubeModel):
    """A replica of another deployment that a higher-priority replica preempts."""

    namespace: DNSLabel = Field(description="The preempted ModelReplica's namespace.")
    name: DNSSubdomain = Field(description="The preempted ModelReplica's name.")


class ModelReplicaSpec(KubeModel):
    """A placed replica: which deployment, which cluster, which pools."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "(has(self.nodePoolName) && has(self.workers) && !has(self.prefill)"
                " && !has(self.decode)) || (!has(self.nodePoolName) && !has(self.workers)"
                " && has(self.prefill) && has(self.decode))",
                "set either nodePoolName and workers (unified) or prefill and decode",
            ),
        )
    }

    deployment_name: DNSSubdomain = Field(description="The ModelDeployment the replica belongs to.")
    cluster_name: DNSSubdomain = Field(description="The InferenceCluster the replica runs on.")
    index: int = Field(
        ge=0, description="The replica's index among the deployment's on that cluster."
    )
    priority: str | None = Field(
        default=None, max_length=253, description="PriorityClass stamped on the replica's pods."
    )
    preempts: list[PreemptedReplica] | None = Field(
        default=None,
        max_length=MAX_PREEMPTED,
        description="Lower-priority replicas this one preempts on its pool: their deployments "
        "withdraw them (no make-before-break) and re-place them elsewhere if they fit.",
    )
    caches: list[LocalObjectReference] | None = Field(
        default=None, max_length=1, description="ModelCaches the engine reads."
    )
    backend: Backend = Field(
        default="Native", description="The serving backend that runs the replica's engine."
    )
    framework: Framework | None = Field(default=None, description=FRAMEWORK_DESCRIPTION)
    node_pool_name: DNSLabel | None = Field(
        default=None, description="The pool the replica runs on (unified serving)."
    )
    device_requests: list[ResolvedDeviceRequest] | None = Field(
        default=None,
        max_length=16,
        description="The DRA requests the pool resolved (unified serving).",
    )
    workers: Workers | None = None
    prefill: ReplicaRole | None = None
    decode: ReplicaRole | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ModelReplicaSpec:
        unified = self.node_pool_name is not None or self.workers is not None
        disagg = self.prefill is not None or self.decode is not None
        if unified == disagg or (disagg and (self.prefill is None or self.decode is None)):
            raise ValueError("set either nodePoolName and workers (unified) or prefill and decode")
        if unified and (self.node_pool_name is None or self.workers is None):
            raise ValueError("unified replicas need both nodePoolName and workers")
        return self

    def roles(self) -> dict[str, PlacedRole]:
        """The replica's roles by name, in a fixed order, each carrying its wire path."""
        if self.prefill is not None and self.decode is not None:
            specs = {c.ROLE_PREFILL: self.prefill, c.ROLE_DECODE: self.decode}
        else:
            assert self.node_pool_name is not None and self.workers is not None
            specs = {
                c.ROLE_UNIFIED: ReplicaRole(
                    node_pool_name=self.node_pool_name,
                    device_requests=self.device_requests or [],
                    workers=self.workers,
                )
            }
        return {
            name: PlacedRole(
                node_pool_name=r.node_pool_name,
                device_requests=r.device_requests,
                workers=r.workers,
                name=name,
                path=role_path(name),
            )
            for name, r in specs.items()
        }


class ModelReplicaStatus(ConditionedStatus):
    """Where the replica is reachable once serving."""

    endpoint: str | None = Field(
        default=None, description="URL of the serving endpoint once the replica is Ready."
    )
    namespace: str | None = Field(
        default=None, description="Namespace of the workload on its cluster."
    )
    backend_ref: WorkloadBackendRef | None = Field(
        default=None,
        description=(
            "What the replica's route sends traffic to on its cluster, in `namespace` "
            "there (its serving backend's entry): a ModelService's route on that cluster "
            "sends to it directly."
        ),
    )
