"""EKSCluster and GKECluster: internal kinds that provision a workload cluster.

An InferenceCluster with `source: EKS|GKE` composes one of these in the
function's system namespace, with every pool's InferenceClass already resolved
into machine types and accelerators, so the provisioning composers never look a
class up. Their status is the contract back to the InferenceCluster: the
kubeconfig Secret once the control plane is reachable, and per pool the nodes
asked for, the nodes actually up and any cloud stock-out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from modelplane.api import constants as c
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    StatusModel,
    cel_rules,
    format_validation_error,
)
from modelplane.api.inference_class import Accelerator

CSIDriver = Literal["SharedFilesystem", "ObjectStorageMount", "BlockDevice"]

_MAX_AT_LEAST_COUNT = (
    "!has(self.maxNodeCount) || self.maxNodeCount >= self.nodeCount",
    "maxNodeCount must be at least nodeCount",
)


class CloudProviderConfigRef(KubeModel):
    """The upjet provider config the managed resources use (Crossplane v2 style)."""

    kind: Literal["ProviderConfig", "ClusterProviderConfig"] = Field(
        default="ClusterProviderConfig",
        description="ProviderConfig (in the composite's namespace) or ClusterProviderConfig.",
    )
    name: DNSSubdomain = Field(
        default=c.DEFAULT_CLOUD_PROVIDER_CONFIG, description="Name of the provider config."
    )


class _SizedPool(KubeModel):
    """Size of a node pool: a fixed count, or autoscaling from it up to a ceiling."""

    model_config = KubeModel.model_config | {"json_schema_extra": cel_rules(_MAX_AT_LEAST_COUNT)}

    name: DNSLabel = Field(description="The InferenceCluster pool this node pool serves.")
    accelerator: Accelerator | None = Field(
        default=None, description="GPUs each node carries; absent for a CPU-only pool."
    )
    node_count: int = Field(
        default=1, ge=0, le=1000, description="Nodes to start with (the autoscaling floor)."
    )
    max_node_count: int | None = Field(
        default=None, ge=0, le=1000, description="Autoscaling ceiling; absent means fixed size."
    )

    @model_validator(mode="after")
    def _max_at_least_count(self) -> _SizedPool:
        if self.max_node_count is not None and self.max_node_count < self.node_count:
            raise ValueError("maxNodeCount must be at least nodeCount")
        return self

    @property
    def ceiling(self) -> int:
        """The autoscaling ceiling: maxNodeCount when set, else nodeCount."""
        return self.max_node_count if self.max_node_count is not None else self.node_count


class EKSNodePool(_SizedPool):
    """One managed node group for one InferenceCluster pool."""

    instance_type: str = Field(min_length=1, max_length=128, description="EC2 instance type.")
    disk_size_gb: int | None = Field(
        default=None, ge=20, le=16384, description="Root volume size in GiB; the AMI's if absent."
    )


class EKSSystemPool(KubeModel):
    """The small untainted node group for system components (gateway, controllers)."""

    instance_type: str = Field(
        default="m7i.xlarge", min_length=1, max_length=128, description="EC2 instance type."
    )
    node_count: int = Field(default=2, ge=1, le=100, description="Nodes of the system group.")


class ExistingAWSNetwork(KubeModel):
    """A VPC the cluster joins instead of creating one."""

    vpc_id: str = Field(min_length=1, max_length=64, description="Id of the VPC.")
    subnet_ids: list[str] = Field(
        min_length=2, max_length=16, description="Subnets (in two zones or more) nodes run in."
    )


class EKSNetwork(KubeModel):
    """The cluster's network: a new VPC over `zones`, or an existing one by id."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "has(self.existing) || (has(self.zones) && size(self.zones) >= 2)",
                "zones needs at least two availability zones unless existing is set",
            )
        )
    }

    vpc_cidr: str = Field(
        default="10.0.0.0/16",
        max_length=32,
        description="CIDR of a new VPC; each zone gets a public and a private sixteenth.",
    )
    zones: list[str] | None = Field(
        default=None, max_length=6, description="Availability zones of a new VPC (two or more)."
    )
    existing: ExistingAWSNetwork | None = Field(
        default=None, description="Join this VPC instead of creating one."
    )

    @model_validator(mode="after")
    def _zones(self) -> EKSNetwork:
        if self.existing is None and len(self.zones or []) < 2:
            raise ValueError("zones needs at least two availability zones unless existing is set")
        return self


class EKSClusterSpec(KubeModel):
    """An EKS cluster: network, control plane, one node group per pool, a system group."""

    cluster_name: DNSLabel = Field(description="The InferenceCluster this cluster serves.")
    region: str = Field(min_length=1, max_length=64, description="AWS region.")
    kubernetes_version: str = Field(
        default=c.DEFAULT_EKS_KUBERNETES_VERSION,
        max_length=16,
        description="Kubernetes version of the control plane.",
    )
    network: EKSNetwork = Field(description="The cluster's network.")
    pools: list[EKSNodePool] = Field(
        min_length=1, max_length=16, description="One managed node group per pool."
    )
    system_pool: EKSSystemPool = Field(
        default_factory=EKSSystemPool, description="The untainted node group for system pods."
    )
    access_principal_arns: list[str] | None = Field(
        default=None,
        max_length=8,
        description="IAM principals granted cluster admin through access entries "
        "(the role Crossplane's providers run as).",
    )
    csi_drivers: list[CSIDriver] | None = Field(
        default=None, max_length=3, description="CSI drivers to install as EKS add-ons."
    )
    provider_config_ref: CloudProviderConfigRef = Field(
        default_factory=CloudProviderConfigRef,
        description="The provider-upjet-aws config the managed resources use.",
    )


class GKENodePool(_SizedPool):
    """One GKE node pool for one InferenceCluster pool, in one zone."""

    machine_type: str = Field(min_length=1, max_length=128, description="GCE machine type.")
    zone: str | None = Field(
        default=None,
        max_length=64,
        description="Zone of the pool's nodes; defaults to the cluster's first zone.",
    )
    disk_size_gb: int | None = Field(
        default=None, ge=10, le=65536, description="Boot disk size in GB; GKE's if absent."
    )
    spot: bool | None = Field(default=None, description="Run the pool on Spot VMs.")


class GKESystemPool(KubeModel):
    """The small untainted node pool for system components."""

    machine_type: str = Field(
        default="e2-standard-4", min_length=1, max_length=128, description="GCE machine type."
    )
    node_count: int = Field(default=1, ge=1, le=100, description="Nodes per zone.")


class ExistingGCPNetwork(KubeModel):
    """A VPC network and subnetwork the cluster joins instead of creating them."""

    network: str = Field(min_length=1, max_length=253, description="Name of the VPC network.")
    subnetwork: str = Field(
        min_length=1, max_length=253, description="Name of the subnetwork nodes use."
    )
    pods_range_name: str = Field(
        default="pods", max_length=63, description="Secondary range for pods."
    )
    services_range_name: str = Field(
        default="services", max_length=63, description="Secondary range for services."
    )


class GKENetwork(KubeModel):
    """A new network with a subnetwork and Cloud NAT, or an existing one."""

    nodes_cidr: str = Field(
        default="10.0.0.0/20", max_length=32, description="Primary range of the subnetwork."
    )
    pods_cidr: str = Field(
        default="10.16.0.0/14", max_length=32, description="Secondary range for pods."
    )
    services_cidr: str = Field(
        default="10.20.0.0/20", max_length=32, description="Secondary range for services."
    )
    existing: ExistingGCPNetwork | None = Field(
        default=None, description="Join this network instead of creating one."
    )


class GKEClusterSpec(KubeModel):
    """A GKE cluster: network, control plane, one node pool per pool, a system pool."""

    cluster_name: DNSLabel = Field(description="The InferenceCluster this cluster serves.")
    project: str = Field(min_length=1, max_length=64, description="GCP project.")
    region: str = Field(min_length=1, max_length=64, description="GCP region (regional cluster).")
    zones: list[str] = Field(
        min_length=1, max_length=8, description="Zones of the control plane and system pool."
    )
    kubernetes_version: str = Field(
        default=c.DEFAULT_EKS_KUBERNETES_VERSION,
        max_length=16,
        description="Minimum Kubernetes version of the control plane.",
    )
    network: GKENetwork | None = Field(
        default=None, description="Defaults to a new network with the default ranges."
    )
    pools: list[GKENodePool] = Field(
        min_length=1, max_length=16, description="One node pool per pool."
    )
    system_pool: GKESystemPool = Field(
        default_factory=GKESystemPool, description="The untainted node pool for system pods."
    )
    csi_drivers: list[CSIDriver] | None = Field(
        default=None, max_length=3, description="CSI drivers to enable as GKE add-ons."
    )
    provider_config_ref: CloudProviderConfigRef = Field(
        default_factory=CloudProviderConfigRef,
        description="The provider-upjet-gcp config the managed resources use.",
    )


class StockOut(StatusModel):
    """The cloud could not find capacity for a pool."""

    zone: str | None = Field(default=None, description="The zone without capacity.")
    accelerator: str | None = Field(default=None, description="The accelerator type asked for.")
    message: str = Field(default="", description="The cloud's own error message.")


class ProvisionedPoolStatus(StatusModel):
    """One pool as the cloud reports it."""

    name: str = Field(description="The pool.")
    desired_nodes: int = Field(description="Nodes the pool asked for.")
    nodes_up: int | None = Field(
        default=None, description="Ready nodes observed on the cluster; absent if not observed."
    )
    ready: bool = Field(default=False, description="Whether the cloud reports the pool Ready.")
    stock_out: StockOut | None = Field(
        default=None, description="Set while the cloud has no capacity for the pool."
    )


class KubeconfigSecret(StatusModel):
    """Where the reachable cluster's kubeconfig is (never the credential itself)."""

    namespace: str = Field(description="Namespace of the Secret.")
    name: str = Field(description="Name of the Secret.")
    key: str = Field(default=c.KUBECONFIG_CONNECTION_KEY, description="Key holding the kubeconfig.")


class ProvisionedClusterStatus(ConditionedStatus):
    """What an EKSCluster or GKECluster tells its InferenceCluster."""

    kubeconfig_secret: KubeconfigSecret | None = Field(
        default=None, description="The kubeconfig Secret, once the cluster is reachable."
    )
    reachable: bool | None = Field(
        default=None, description="Whether the control plane is Ready and its kubeconfig exists."
    )
    pools: list[ProvisionedPoolStatus] | None = Field(
        default=None, description="Each pool as the cloud reports it."
    )
    network: str | None = Field(default=None, description="The VPC id or network name.")
    shared_filesystem_id: str | None = Field(
        default=None, description="The shared file system (EFS) id, when one was created."
    )


@dataclass(frozen=True)
class ProvisionedClusterView:
    """The tolerant reading of a provisioned cluster's status.

    `status` is None when the status could not be read; `problem` then says
    why, so a caller can surface it instead of treating the cluster as absent.
    """

    status: ProvisionedClusterStatus | None
    problem: str | None = None

    @property
    def reachable(self) -> bool:
        """Whether the control plane is up and its kubeconfig Secret exists."""
        return bool(self.status and self.status.reachable and self.status.kubeconfig_secret)

    def pool(self, name: str) -> ProvisionedPoolStatus | None:
        """The status of pool `name`, if reported."""
        for p in (self.status.pools or []) if self.status else []:
            if p.name == name:
                return p
        return None


def read_provisioned_cluster(obj: Mapping[str, Any] | None) -> ProvisionedClusterView:
    """Read an EKSCluster's or GKECluster's status; a malformed status is kept as unknown."""
    raw = (obj or {}).get("status")
    if raw is None:
        return ProvisionedClusterView(ProvisionedClusterStatus())
    try:
        return ProvisionedClusterView(ProvisionedClusterStatus.model_validate(raw))
    except ValidationError as err:
        return ProvisionedClusterView(None, format_validation_error(err, "status"))
