"""ServingStack: the in-cluster software Modelplane installs on one workload cluster.

One per InferenceCluster (any source), composed in the function's system
namespace. It installs, through provider-helm Releases with chart versions
pinned here, what the manifests a replica emits need: Node Feature Discovery,
the NVIDIA DRA driver, LeaderWorkerSet, Envoy Gateway with the cluster's
inference Gateway, optionally the KAI scheduler, and one StorageClass per CSI
driver the cluster asks for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from modelplane.api import constants as c
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    StatusModel,
    format_validation_error,
)
from modelplane.api.provisioning import CSIDriver

ChartVersion = str

# The versions the Helm values oracle knows (shared/conformance/CHARTS.md).
DEFAULT_NFD_VERSION = "0.19.0"
DEFAULT_DRA_DRIVER_VERSION = "25.12.0"
DEFAULT_LWS_VERSION = "0.10.0"
DEFAULT_ENVOY_GATEWAY_VERSION = "v1.9.0"
DEFAULT_KAI_VERSION = "v0.13.0"


class ChartVersions(KubeModel):
    """Pinned chart versions; the defaults are the versions this release was checked with."""

    node_feature_discovery: str = Field(default=DEFAULT_NFD_VERSION, max_length=32)
    nvidia_dra_driver: str = Field(default=DEFAULT_DRA_DRIVER_VERSION, max_length=32)
    leader_worker_set: str = Field(default=DEFAULT_LWS_VERSION, max_length=32)
    envoy_gateway: str = Field(default=DEFAULT_ENVOY_GATEWAY_VERSION, max_length=32)
    kai_scheduler: str = Field(default=DEFAULT_KAI_VERSION, max_length=32)


class StackGateway(KubeModel):
    """The Gateway replicas' HTTPRoutes attach to."""

    name: DNSSubdomain = c.DEFAULT_GATEWAY_NAME
    namespace: DNSLabel = c.DEFAULT_GATEWAY_NAMESPACE


class StackStorage(KubeModel):
    """StorageClasses to create and the cloud facts they need."""

    csi_drivers: list[CSIDriver] | None = Field(default=None, max_length=3)
    shared_filesystem_id: str | None = Field(
        default=None, max_length=64, description="The EFS file system (EKS)."
    )
    network: str | None = Field(
        default=None, max_length=253, description="The VPC network Filestore pins to (GKE)."
    )


class NodePoolRef(KubeModel):
    """A node group / node pool the stack's releases run on (for deletion order)."""

    api_version: str = Field(min_length=1, max_length=253)
    kind: str = Field(min_length=1, max_length=63)
    name: DNSSubdomain
    gpu: bool = False


class ServingStackSpec(KubeModel):
    """What to install on one workload cluster and how to reach it."""

    cluster_name: DNSLabel = Field(description="The InferenceCluster this stack serves.")
    provider_config_name: DNSSubdomain = Field(
        description="The provider-helm and provider-kubernetes ClusterProviderConfig name."
    )
    cloud: Literal["EKS", "GKE", "Existing"] = "Existing"
    charts: ChartVersions = Field(default_factory=ChartVersions)
    gateway: StackGateway = Field(default_factory=StackGateway)
    gpu_scheduler: Literal["KAI", "Volcano"] | None = Field(
        default=None, description="The in-cluster GPU scheduler to install, if any."
    )
    storage: StackStorage | None = None
    node_pools: list[NodePoolRef] | None = Field(default=None, max_length=17)


class ReleaseStatus(StatusModel):
    """One Release of the stack."""

    name: str
    chart: str
    version: str
    ready: bool = False


class ServingStackStatus(ConditionedStatus):
    """Releases and the inference Gateway's address."""

    releases: list[ReleaseStatus] | None = None
    gateway_address: str | None = None


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
