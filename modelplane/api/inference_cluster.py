"""InferenceCluster: one workload cluster of the fleet and the pools it holds."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from modelplane.api import constants as c
from modelplane.api.autoscaling import MAX_REPLICA_SIGNALS, ReplicaSignals
from modelplane.api.clouds import EXISTING, SourceName, cloud_named, source_rules
from modelplane.api.clouds.aks import AKSSource
from modelplane.api.clouds.eks import EKSSource
from modelplane.api.clouds.gke import GKESource
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    SecretKeyRef,
    StatusModel,
    cel_rules,
)
from modelplane.api.inference_class import CapacityType, Device
from modelplane.api.reasons import UnknownReason
from modelplane.api.serving_stack import (
    PRESENT_DESCRIPTION,
    ChartVersions,
    InventoryConfig,
    PriorityClassSpec,
    QueueSystem,
    StackComponent,
    StackQueue,
)

# The only template variables a label or annotation value may use (SPEC §5).
TEMPLATE_VARIABLES = ("Namespace", "Name", "Cluster")
_TEMPLATE_TOKEN = re.compile(r"\{\{(.*?)\}\}")
_TEMPLATE_VAR = re.compile(r"^\s*\.(Namespace|Name|Cluster)\s*$")

# Kubernetes' Pod Security Standards levels, most permissive first.
PodSecurityLevel = Literal["privileged", "baseline", "restricted"]
POD_SECURITY_LEVELS: tuple[str, ...] = ("privileged", "baseline", "restricted")
DEFAULT_POD_SECURITY = "baseline"


def template_errors(value: str) -> list[str]:
    """Return why a label/annotation template is not allowed (empty when it is)."""
    errors = []
    for m in _TEMPLATE_TOKEN.finditer(value):
        if not _TEMPLATE_VAR.match(m.group(1)):
            errors.append(
                f"unsupported template {m.group(0)!r}: only {{{{ .Namespace }}}}, "
                "{{ .Name }} and {{ .Cluster }} are allowed"
            )
    rest = _TEMPLATE_TOKEN.sub("", value)
    if "{{" in rest or "}}" in rest:
        errors.append(f"unbalanced template braces in {value!r}")
    return errors


def render_template(value: str, namespace: str, name: str, cluster: str) -> str:
    """Substitute the three template variables in `value` (check it with `template_errors`).

    Plain text substitution: no template engine ever sees user text.
    """
    table = {"Namespace": namespace, "Name": name, "Cluster": cluster}
    return _TEMPLATE_RENDER.sub(lambda m: table[m.group(1)], value)


_TEMPLATE_RENDER = re.compile(r"\{\{\s*\.(Namespace|Name|Cluster)\s*\}\}")


class ExistingSource(KubeModel):
    """A cluster that already exists, reached through a kubeconfig Secret."""

    kubeconfig_secret_ref: SecretKeyRef


class Pool(KubeModel):
    """A node pool of one InferenceClass."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "!has(self.maxNodeCount) || self.maxNodeCount >= self.nodeCount",
                "maxNodeCount must be at least nodeCount",
            )
        )
    }

    name: DNSLabel = Field(
        description="Pool name; its nodes carry the label modelplane.ai/pool=<name>."
    )
    class_name: DNSSubdomain = Field(
        description="The InferenceClass that describes each node of the pool."
    )
    node_count: int = Field(default=1, ge=0, le=10000, description="Nodes in the pool.")
    max_node_count: int | None = Field(
        default=None,
        ge=0,
        le=10000,
        description="Autoscaling ceiling; the scheduler counts capacity up to it.",
    )
    price_per_device_hour: float | None = Field(
        default=None,
        ge=0,
        description="Overrides the class's pricePerDeviceHour for this pool (a region's price).",
    )
    capacity_type: CapacityType | None = Field(
        default=None, description="Overrides the class's capacityType for this pool."
    )

    @model_validator(mode="after")
    def _max_at_least_count(self) -> Pool:
        if self.max_node_count is not None and self.max_node_count < self.node_count:
            raise ValueError("maxNodeCount must be at least nodeCount")
        return self

    @property
    def capacity_nodes(self) -> int:
        """Nodes the pool can hold: the autoscaling ceiling if set, else its size."""
        return self.max_node_count if self.max_node_count is not None else self.node_count


class Taint(KubeModel):
    """A cluster taint; NoExecute drains the cluster of untolerating replicas."""

    key: str = Field(min_length=1, max_length=317, description="Taint key.")
    value: str | None = Field(default=None, max_length=63, description="Taint value.")
    effect: Literal["NoSchedule", "NoExecute"] = Field(
        description="NoSchedule keeps new replicas away; NoExecute also drains."
    )


Packing = Literal["BinPack", "Spread"]
# In-cluster schedulers that pack pods onto the fewest nodes by default; every
# other scheduler (the default kube-scheduler's least-allocated scoring) spreads.
BIN_PACKING_SCHEDULERS = frozenset({c.KAI_SCHEDULER_NAME, c.VOLCANO_SCHEDULER_NAME})


class SchedulingConfig(KubeModel):
    """How pods are stamped for the cluster's in-cluster GPU scheduler (SPEC §5)."""

    scheduler_name: str | None = Field(
        default=None, max_length=253, description="schedulerName stamped on every serving pod."
    )
    default_priority: str | None = Field(
        default=None, max_length=253, description="PriorityClass for deployments that name none."
    )
    default_labels: dict[str, str] | None = Field(
        default=None,
        description="Pod labels; values may use {{ .Namespace }}, {{ .Name }}, {{ .Cluster }}.",
    )
    default_annotations: dict[str, str] | None = Field(
        default=None, description="Pod annotations, templated like defaultLabels."
    )
    install: bool | None = Field(
        default=None,
        description="Install with the serving stack what this block names: the scheduler "
        "schedulerName names (kai-scheduler or volcano), and Kueue when defaultLabels carry "
        "kueue.x-k8s.io/queue-name; with them the queues the pods name (a KAI Queue under "
        "the parent queue modelplane, a Volcano Queue, a Kueue LocalQueue on the "
        "ClusterQueue modelplane) and priorityClasses.",
    )
    priority_classes: list[PriorityClassSpec] | None = Field(
        default=None,
        max_length=16,
        description="PriorityClasses the serving stack creates on the cluster (e.g. the one "
        "defaultPriority names); created whatever install says.",
    )
    existing_priority_classes: list[DNSSubdomain] | None = Field(
        default=None,
        max_length=16,
        description="PriorityClasses that already exist on the cluster, created outside "
        "Modelplane. A replica goes only to a cluster where the PriorityClass its pods name "
        "(spec.priority, else defaultPriority) is created by the serving stack or listed here.",
    )

    def has_priority_class(self, name: str) -> bool:
        """Whether PriorityClass `name` exists on the cluster: the stack creates it, or it
        is declared as already there."""
        # Asked of every cluster a deployment naming a class may go to: the declared
        # list first, and no set built.
        if name in (self.existing_priority_classes or ()):
            return True
        created = self.priority_classes
        return created is not None and any(p.name == name for p in created)

    packing: Packing | None = Field(
        default=None,
        description="How the cluster's scheduler places pods on a pool's nodes, which the fleet "
        "scheduler's ledger assumes: BinPack fills the fullest node that fits, Spread the "
        "emptiest (so each small replica may hold a node of its own). Absent: BinPack for "
        "kai-scheduler and volcano, Spread for any other scheduler.",
    )

    @property
    def effective_packing(self) -> Packing:
        """`packing`, or the default of the cluster's scheduler."""
        if self.packing is not None:
            return self.packing
        return "BinPack" if self.scheduler_name in BIN_PACKING_SCHEDULERS else "Spread"

    def queue_templates(self) -> list[StackQueue]:
        """The queue name templates the cluster's pods carry, one per queueing system.

        The same keys the replica's scheduling plan reads (compose/replica/schedulers.py):
        KAI's queue label (or its legacy one), Volcano's queue annotation (or label),
        and Kueue's queue-name label whatever the scheduler.
        """
        labels, annotations = self.default_labels or {}, self.default_annotations or {}
        found: list[tuple[QueueSystem, str | None]] = [("Kueue", labels.get(c.KUEUE_QUEUE_LABEL))]
        if self.scheduler_name == c.KAI_SCHEDULER_NAME:
            kai = labels.get(c.KAI_QUEUE_LABEL) or labels.get(c.KAI_LEGACY_QUEUE_LABEL)
            found.insert(0, ("KAI", kai))
        if self.scheduler_name == c.VOLCANO_SCHEDULER_NAME:
            volcano = annotations.get(c.VOLCANO_QUEUE_KEY) or labels.get(c.VOLCANO_QUEUE_KEY)
            found.insert(0, ("Volcano", volcano))
        return [StackQueue(system=s, template=t) for s, t in found if t]

    @field_validator("default_labels", "default_annotations")
    @classmethod
    def _templates(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        for key, value in (v or {}).items():
            errs = template_errors(value)
            if errs:
                raise ValueError(f"{key}: {'; '.join(errs)}")
        return v


class StorageConfig(KubeModel):
    """Storage the cluster offers for model caches."""

    storage_class_name: str | None = Field(
        default=None, max_length=253, description="StorageClass for model caches."
    )
    csi_drivers: list[Literal["SharedFilesystem", "ObjectStorageMount", "BlockDevice"]] | None = (
        Field(default=None, description="Kinds of storage the cluster offers to model caches.")
    )


class KServeConfig(KubeModel):
    """KServe's LLMInferenceService controller on the cluster (the KServe serving backend)."""

    enabled: bool = Field(
        default=False,
        description="KServe's LLMInferenceService controller runs on the cluster: the "
        "serving stack installs it (KServe's llmisvc CRD, controller and runtime presets, "
        "with cert-manager), or the platform team does when servingStack.enabled is false; "
        "only then may KServe deployments place replicas here.",
    )


class DynamoConfig(KubeModel):
    """NVIDIA Dynamo on the cluster (the Dynamo serving backend), installed by its platform team."""

    present: bool = Field(
        default=False,
        description="Dynamo's platform (its operator and the DynamoGraphDeployment CRD) runs "
        "on the cluster, installed by the platform team: Modelplane never installs it, "
        "checks that the DynamoGraphDeployment CRD exists, and only then may Dynamo "
        "deployments place replicas here.",
    )
    namespace: DNSLabel = Field(
        default="dynamo-system",
        description="The namespace Dynamo's platform (operator, etcd, NATS) runs in; the "
        "serving stack checks that it exists.",
    )


class InferencePoolConfig(KubeModel):
    """InferencePool support on the cluster: what a disaggregated replica routes through."""

    enabled: bool = Field(
        default=True,
        description="The cluster serves InferencePools: the serving stack installs the "
        "Gateway API Inference Extension's InferencePool CRD and Envoy AI Gateway, whose "
        "extension server Envoy Gateway hands InferencePool backends to (with the stack "
        "disabled, the platform team did). False: neither is installed, and no "
        "disaggregated (prefill/decode) replica is placed here (BackendUnsupported).",
    )


class ServingStackConfig(KubeModel):
    """The in-cluster software Modelplane installs (SPEC §7)."""

    enabled: bool = Field(
        default=True, description="Install the serving stack; false when the platform team does."
    )
    charts: ChartVersions | None = Field(
        default=None, description="Chart versions; the versions this release was checked with."
    )
    kserve: KServeConfig | None = Field(
        default=None, description="KServe's LLMInferenceService controller; absent means off."
    )
    dynamo: DynamoConfig | None = Field(
        default=None,
        description="NVIDIA Dynamo, installed by the platform team; absent means not present.",
    )
    inference_pool: InferencePoolConfig | None = Field(
        default=None,
        description="InferencePool support for disaggregated replicas; absent means on.",
    )

    @property
    def serves_inference_pools(self) -> bool:
        """Whether the cluster serves InferencePools: on unless `inferencePool.enabled` is false."""
        return self.inference_pool is None or self.inference_pool.enabled

    inventory: InventoryConfig | None = Field(
        default=None,
        description="The inventory agent that reports nodes, devices and unschedulable "
        "replicas; on (unschedulableAfter 5m) unless enabled is false.",
    )
    present: list[StackComponent] | None = Field(
        default=None, max_length=3, description=PRESENT_DESCRIPTION
    )
    modelplane_image: str | None = Field(
        default=None,
        max_length=512,
        pattern=c.IMAGE_PATTERN,
        description=(
            "The image of Modelplane's own programs on this cluster (the inventory agent, "
            "ModelCache hydration Jobs), e.g. a mirror its nodes pull from; absent: the "
            "image the function runs (`modelplane package build --function-package`)."
        ),
    )


class GatewayRef(KubeModel):
    """The cluster's inference Gateway that replicas' HTTPRoutes attach to."""

    name: DNSSubdomain = Field(
        default=c.DEFAULT_GATEWAY_NAME, description="Name of the cluster's inference Gateway."
    )
    namespace: DNSLabel = Field(
        default=c.DEFAULT_GATEWAY_NAMESPACE,
        description="Namespace of the cluster's inference Gateway.",
    )
    address: str | None = Field(
        default=None,
        max_length=253,
        description=(
            "The gateway's external address (host or URL), e.g. a DNS name in front of its "
            "load balancer. When set it wins over the address the Gateway reports: "
            "status.gatewayAddress is this, status.observedGatewayAddress what the Gateway reports."
        ),
    )


class InferenceClusterSpec(KubeModel):
    """Where the cluster comes from and what hardware it holds."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.source != 'Existing' || has(self.existing)",
                "existing is required when source is Existing",
            ),
            *source_rules("source"),
            (
                "self.pools.all(p, self.pools.exists_one(q, q.name == p.name))",
                "pool names must be unique",
            ),
        )
    }

    source: SourceName = Field(description="Where the cluster comes from.")
    existing: ExistingSource | None = None
    # One block per registered cloud (api/clouds/), named by its `block`.
    eks: EKSSource | None = None
    gke: GKESource | None = None
    aks: AKSSource | None = None
    pools: list[Pool] = Field(
        min_length=1, max_length=16, description="The cluster's GPU node pools."
    )
    taints: list[Taint] | None = Field(
        default=None,
        max_length=32,
        description="Cluster taints; deployments must tolerate them to run here.",
    )
    scheduling: SchedulingConfig | None = None
    storage: StorageConfig | None = None
    gateway: GatewayRef | None = None
    serving_stack: ServingStackConfig | None = Field(
        default=None, description="The serving stack; installed unless enabled is false."
    )
    pod_security: PodSecurityLevel = Field(
        default="baseline",
        description="The Pod Security Standards level enforced on the namespaces Modelplane "
        "creates on the cluster (labels pod-security.kubernetes.io/enforce, warn and audit); "
        "a replica whose pod template the level forbids is refused before anything lands.",
    )

    def source_block(self) -> KubeModel | None:
        """The block `source` names: `existing`, or the cloud's (`eks`, `gke`, ...)."""
        cloud = cloud_named(self.source)
        if cloud is None:
            return self.existing if self.source == EXISTING else None
        block: KubeModel | None = getattr(self, cloud.block)
        return block

    @model_validator(mode="after")
    def _source_block(self) -> InferenceClusterSpec:
        if self.source_block() is None:
            raise ValueError(f"{self.source.lower()} is required when source is {self.source}")
        seen: set[str] = set()
        for p in self.pools:
            if p.name in seen:
                raise ValueError(f"pool names must be unique: {p.name!r} appears twice")
            seen.add(p.name)
        return self


class GPUPool(StatusModel):
    """A pool as the scheduler sees it: its class's devices and node capacity.

    A pool whose class is missing or invalid is still published, as *unknown*:
    `reason` and `message` say why and `devices` is empty. Replicas already on
    it are kept; no new replica is placed there (SPEC §3.3).
    """

    name: str = Field(description="Pool name.")
    class_name: str = Field(description="The pool's InferenceClass.")
    nodes: int = Field(description="Nodes the pool can hold.")
    devices: list[Device] = Field(
        default_factory=list,
        description="The class's devices, copied verbatim; empty while the pool is unknown.",
    )
    reason: UnknownReason | None = Field(
        default=None, description="Set when the pool is unknown: why its devices are not known."
    )
    message: str | None = Field(
        default=None, max_length=1024, description="What to fix when the pool is unknown."
    )
    capacity_note: str | None = Field(
        default=None,
        max_length=1024,
        description="Why the pool offers fewer nodes than it asked for (a cloud stock-out).",
    )
    price_per_device_hour: float | None = Field(
        default=None, description="What one device costs per hour (the pool's, else its class's)."
    )
    capacity_type: CapacityType | None = Field(
        default=None,
        description="OnDemand or Spot (the pool's, else its class's); absent: OnDemand.",
    )


class UnschedulableReplica(KubeModel):
    """A replica whose pods the cluster's scheduler has not placed for longer than the grace period.

    Reported by the cluster's inventory agent (ServingStack); the fleet
    scheduler moves such a replica elsewhere, make-before-break.
    """

    replica: str = Field(
        max_length=253, description="The ModelReplica (pod label `modelplane.ai/replica`)."
    )
    namespace: str | None = Field(
        default=None,
        max_length=63,
        description="The namespace of the pods (the replica's own, when they are its); absent "
        "from agents that do not report it.",
    )
    pool: str | None = Field(
        default=None, max_length=63, description="The pool the pods asked for, when known."
    )
    pods: int = Field(default=1, ge=1, description="How many of its pods are unschedulable.")
    since: str = Field(
        max_length=64, description="RFC 3339 time the first pod became unschedulable."
    )
    message: str = Field(
        default="", max_length=512, description="The cluster scheduler's message, shortened."
    )


class InferenceClusterStatus(ConditionedStatus):
    """Published capacity and how to reach the cluster."""

    gpu_pools: list[GPUPool] | None = Field(
        default=None, description="Each pool's devices and capacity, as the scheduler reads them."
    )
    provider_config_name: str | None = Field(
        default=None, description="ClusterProviderConfig through which composed objects reach it."
    )
    gateway_address: str | None = Field(
        default=None,
        description=(
            "External address of the cluster's inference gateway, as replicas publish it: "
            "spec.gateway.address when given, else the address the Gateway reports."
        ),
    )
    observed_gateway_address: str | None = Field(
        default=None,
        description="The address the cluster's inference Gateway reports (its load balancer).",
    )
    unschedulable_replicas: list[UnschedulableReplica] | None = Field(
        default=None,
        max_length=100,
        description=(
            "Replicas whose pods stayed unschedulable past the grace period, as the cluster's "
            "inventory agent last reported them."
        ),
    )
    replica_signals: list[ReplicaSignals] | None = Field(
        default=None,
        max_length=MAX_REPLICA_SIGNALS,
        description=(
            "Per replica, its engine's signals (queue, KV-cache use, time to first token) as "
            "the cluster's inventory agent last scraped them; autoscaling reads them."
        ),
    )
