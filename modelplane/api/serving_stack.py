"""ServingStack: the in-cluster software Modelplane installs on one workload cluster.

One per InferenceCluster (any source), composed in the function's system
namespace. It installs, through provider-helm Releases with chart versions
pinned here, what the manifests a replica emits need: Node Feature Discovery,
the NVIDIA DRA driver, LeaderWorkerSet, Envoy Gateway with the cluster's
inference Gateway and its InferencePool support (the Gateway API Inference
Extension CRD and Envoy AI Gateway), cert-manager, KServe's LLMInferenceService
controller when the cluster runs KServe, the GPU scheduler and Kueue when asked
(with their queues and the cluster's PriorityClasses), and one StorageClass per
CSI driver the cluster asks for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from modelplane.api import constants as c
from modelplane.api.clouds import StackCloudName
from modelplane.api.clouds.base import CSIDriver
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    StatusModel,
    format_validation_error,
)

ChartVersion = str

# The versions the Helm values oracle knows (shared/conformance/CHARTS.md).
DEFAULT_NFD_VERSION = "0.19.0"
DEFAULT_DRA_DRIVER_VERSION = "25.12.0"
DEFAULT_LWS_VERSION = "0.10.0"
DEFAULT_ENVOY_GATEWAY_VERSION = "v1.9.0"
DEFAULT_KAI_VERSION = "v0.13.0"
DEFAULT_VOLCANO_VERSION = "1.15.1"
DEFAULT_KUEUE_VERSION = "0.19.2"
DEFAULT_KSERVE_VERSION = "v0.20.0"
# KServe v0.20.0 pins cert-manager v1.17.0; v1.21.1 serves a superset of its
# CRD fields and is the newest stable release the values oracle knows.
DEFAULT_CERT_MANAGER_VERSION = "v1.21.1"
DEFAULT_ENVOY_AI_GATEWAY_VERSION = "v1.1.0"


class ChartVersions(KubeModel):
    """Pinned chart versions; the defaults are the versions this release was checked with."""

    node_feature_discovery: str = Field(
        default=DEFAULT_NFD_VERSION, max_length=32, description="node-feature-discovery chart."
    )
    nvidia_dra_driver: str = Field(
        default=DEFAULT_DRA_DRIVER_VERSION,
        max_length=32,
        description="nvidia-dra-driver-gpu chart.",
    )
    leader_worker_set: str = Field(
        default=DEFAULT_LWS_VERSION, max_length=32, description="lws (LeaderWorkerSet) chart."
    )
    envoy_gateway: str = Field(
        default=DEFAULT_ENVOY_GATEWAY_VERSION,
        max_length=32,
        description="gateway-helm (Envoy Gateway) chart.",
    )
    kai_scheduler: str = Field(
        default=DEFAULT_KAI_VERSION, max_length=32, description="kai-scheduler chart."
    )
    volcano: str = Field(
        default=DEFAULT_VOLCANO_VERSION, max_length=32, description="volcano chart."
    )
    kueue: str = Field(default=DEFAULT_KUEUE_VERSION, max_length=32, description="kueue chart.")
    kserve: str = Field(
        default=DEFAULT_KSERVE_VERSION,
        max_length=32,
        description="KServe's kserve-llmisvc-crd, kserve-llmisvc-resources and "
        "kserve-runtime-configs charts (one KServe release).",
    )
    cert_manager: str = Field(
        default=DEFAULT_CERT_MANAGER_VERSION, max_length=32, description="cert-manager chart."
    )
    envoy_ai_gateway: str = Field(
        default=DEFAULT_ENVOY_AI_GATEWAY_VERSION,
        max_length=32,
        description="Envoy AI Gateway's ai-gateway-crds-helm and ai-gateway-helm charts "
        "(the gateway's InferencePool support).",
    )


class InventoryConfig(KubeModel):
    """The inventory agent the serving stack installs on a workload cluster (api/inventory.py)."""

    enabled: bool = Field(
        default=True,
        description="Run the inventory agent; without it HardwareDrift stays Unknown and "
        "unschedulable replicas are not reported.",
    )
    unschedulable_after: str = Field(
        default=c.DEFAULT_UNSCHEDULABLE_AFTER,
        max_length=32,
        pattern=c.DURATION_PATTERN,
        description="How long a replica's pod may stay Unschedulable before it is reported "
        "(e.g. 5m, 1h30m).",
    )
    interval: str = Field(
        default="60s",
        max_length=32,
        pattern=c.DURATION_PATTERN,
        description="How often the agent rewrites the summary.",
    )
    engine_metrics: bool = Field(
        default=False,
        description="Also scrape each Ready replica pod's engine metrics (vLLM, port 8000) "
        "and report them for autoscaling (docs/autoscaling.md); the summary is then "
        "rewritten every interval. Off, the cluster reports no engine signal: autoscaling "
        "holds its replicas' count and a Progressive rollout's wave there never passes "
        "(SignalsMissing).",
    )


class StackGateway(KubeModel):
    """The Gateway replicas' HTTPRoutes attach to."""

    name: DNSSubdomain = Field(default=c.DEFAULT_GATEWAY_NAME, description="Gateway name.")
    namespace: DNSLabel = Field(
        default=c.DEFAULT_GATEWAY_NAMESPACE, description="Gateway namespace."
    )


class StackStorage(KubeModel):
    """StorageClasses to create and the cloud facts they need."""

    csi_drivers: list[CSIDriver] | None = Field(
        default=None, max_length=3, description="One StorageClass per entry."
    )
    shared_filesystem_id: str | None = Field(
        default=None, max_length=64, description="The EFS file system (EKS)."
    )
    network: str | None = Field(
        default=None, max_length=253, description="The VPC network Filestore pins to (GKE)."
    )


class PriorityClassSpec(KubeModel):
    """A PriorityClass the serving stack creates on the cluster (scheduling.k8s.io/v1)."""

    name: DNSSubdomain = Field(description="Its name, as pods' priorityClassName names it.")
    value: int = Field(
        ge=-2147483648, le=1000000000, description="Its priority; higher preempts lower."
    )
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = Field(
        default=None, description="Whether its pods preempt lower-priority pods (default: do)."
    )
    description: str | None = Field(default=None, max_length=256, description="What it is for.")


QueueSystem = Literal["KAI", "Volcano", "Kueue"]
# Components a workload cluster may already run (a brownfield cluster): marked
# present, the stack installs none of them, and checks that each is there.
StackComponent = Literal["CertManager", "NodeFeatureDiscovery", "EnvoyGateway"]
# The stack's Release of each such component (its chart's key), which it then lacks.
COMPONENT_RELEASES: dict[str, str] = {
    "CertManager": "cert-manager",
    "NodeFeatureDiscovery": "node-feature-discovery",
    "EnvoyGateway": "envoy-gateway",
}
PRESENT_DESCRIPTION = (
    "Components the cluster already runs, which the serving stack then does not install "
    "(installing them again would clash with the running ones): CertManager, "
    "NodeFeatureDiscovery, EnvoyGateway. Each is still required: the stack checks that its "
    "CRDs exist on the cluster, and ServingStackReady names a component marked present "
    "that is missing."
)


class StackQueue(KubeModel):
    """The queue a cluster's pods name for one queueing system, as a template.

    The template uses `{{ .Namespace }}`, `{{ .Name }}` and `{{ .Cluster }}`
    like `spec.scheduling.defaultLabels`; the stack renders it for every
    replica on the cluster, as the replica renders its pods' labels.
    """

    system: QueueSystem = Field(description="Which system's queue: KAI, Volcano or Kueue.")
    template: str = Field(max_length=253, description="The queue name's template.")


class NodePoolRef(KubeModel):
    """A node group / node pool the stack's releases run on (for deletion order)."""

    api_version: str = Field(min_length=1, max_length=253, description="Its apiVersion.")
    kind: str = Field(min_length=1, max_length=63, description="Its kind.")
    name: DNSSubdomain = Field(description="Its name, in the stack's namespace.")
    gpu: bool = Field(default=False, description="Whether GPU pods run there (tainted).")


class ServingStackSpec(KubeModel):
    """What to install on one workload cluster and how to reach it."""

    cluster_name: DNSLabel = Field(description="The InferenceCluster this stack serves.")
    provider_config_name: DNSSubdomain = Field(
        description="The provider-helm and provider-kubernetes ClusterProviderConfig name."
    )
    cloud: StackCloudName = Field(
        default="Existing", description="Where the cluster runs: maps CSI drivers and drivers."
    )
    charts: ChartVersions = Field(
        default_factory=ChartVersions, description="Pinned chart versions."
    )
    gateway: StackGateway = Field(
        default_factory=StackGateway, description="The inference Gateway to create."
    )
    gpu_scheduler: Literal["KAI", "Volcano"] | None = Field(
        default=None, description="The in-cluster GPU scheduler to install, if any."
    )
    inference_pool: bool = Field(
        default=True,
        description="Install InferencePool support: the InferencePool CRD and Envoy AI Gateway.",
    )
    kueue: bool = Field(default=False, description="Install Kueue.")
    kserve: bool = Field(
        default=False, description="Install KServe's LLMInferenceService controller."
    )
    queues: list[StackQueue] | None = Field(
        default=None,
        max_length=3,
        description="Queues to create for the installed queueing systems, per replica.",
    )
    priority_classes: list[PriorityClassSpec] | None = Field(
        default=None, max_length=16, description="PriorityClasses to create."
    )
    storage: StackStorage | None = Field(default=None, description="StorageClasses to create.")
    node_pools: list[NodePoolRef] | None = Field(
        default=None,
        max_length=17,
        description="Node pools the releases run on: deleted only after the releases.",
    )
    inventory: InventoryConfig = Field(
        default_factory=InventoryConfig, description="The inventory agent."
    )
    modelplane_image: str | None = Field(
        default=None,
        max_length=512,
        pattern=c.IMAGE_PATTERN,
        description="The inventory agent's image; the function's image if absent.",
    )
    present: list[StackComponent] | None = Field(
        default=None, max_length=3, description=PRESENT_DESCRIPTION
    )
    dynamo_namespace: DNSLabel | None = Field(
        default=None,
        description="Where Dynamo's platform runs, when the cluster runs Dynamo (installed by "
        "its platform team, never by the stack): the stack checks that this namespace and the "
        "DynamoGraphDeployment CRD exist, and ServingStackReady names what is missing.",
    )


class ReleaseStatus(StatusModel):
    """One Release of the stack."""

    name: str = Field(description="The release's component name.")
    chart: str = Field(description="Chart name.")
    version: str = Field(description="Chart version.")
    ready: bool = Field(default=False, description="Whether provider-helm reports it Ready.")


class PresentComponentStatus(StatusModel):
    """A component the cluster already runs (not installed by the stack): is it there?"""

    name: str = Field(description="The component (CertManager, NodeFeatureDiscovery, ...).")
    found: bool = Field(
        default=False, description="Whether every CRD (or namespace) it is checked by exists."
    )
    missing: list[str] | None = Field(
        default=None, description="The CRDs (or namespaces) not found on the cluster (yet)."
    )


class ServingStackStatus(ConditionedStatus):
    """Releases and the inference Gateway's address."""

    releases: list[ReleaseStatus] | None = Field(default=None, description="Each Release.")
    present: list[PresentComponentStatus] | None = Field(
        default=None, description="Each component marked present, and whether it was found."
    )
    gateway_address: str | None = Field(
        default=None, description="The address the inference Gateway reports."
    )


@dataclass(frozen=True)
class ServingStackView:
    """The tolerant reading of a ServingStack's status (`problem` when unreadable)."""

    status: ServingStackStatus | None
    problem: str | None = None

    @property
    def not_ready(self) -> list[str]:
        """Names of the releases that are not ready (empty when unknown)."""
        return [r.name for r in (self.status.releases or []) if not r.ready] if self.status else []


def read_serving_stack(obj: Mapping[str, Any] | None) -> ServingStackView:
    """Read a ServingStack's status; a malformed status is kept as unknown."""
    raw = (obj or {}).get("status")
    if raw is None:
        return ServingStackView(ServingStackStatus())
    try:
        return ServingStackView(ServingStackStatus.model_validate(raw))
    except ValidationError as err:
        return ServingStackView(None, format_validation_error(err, "status"))
