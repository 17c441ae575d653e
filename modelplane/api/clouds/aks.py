"""AKS: an InferenceCluster provisioned on Azure through provider-upjet-azure.

Its blocks (the InferenceCluster's `spec.aks`, the InferenceClass's
`spec.provisioning.aks`), the AKSCluster composite's spec, and the `Cloud`
declaration the rest of Modelplane reads (`compose/clusters/clouds/aks.py`
composes the managed resources).

The KubernetesCluster itself writes the kubeconfig into its connection Secret
under `kubeconfig` (provider-upjet-azure's `kube_config_raw`, a client
certificate rather than a short-lived token); AKS has no separate auth kind.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from modelplane.api import constants as c
from modelplane.api.clouds.base import (
    Accelerator,
    CloudProviderConfigRef,
    CloudSource,
    CSIDriver,
    ManagedKind,
    SizedPool,
    StorageClassSpec,
)
from modelplane.api.clouds.base import Cloud as CloudDeclaration
from modelplane.api.common import DNSLabel, KubeModel

CONTAINERSERVICE = "containerservice.azure.m.upbound.io/v1beta1"
# Azure availability zones are numbers within the region.
AZURE_ZONE_PATTERN = r"^[1-9]$"


class AKSNodePool(SizedPool):
    """One AKS user node pool for one InferenceCluster pool."""

    vm_size: str = Field(min_length=1, max_length=128, description="Azure VM size.")
    zone: str | None = Field(
        default=None,
        max_length=1,
        pattern=AZURE_ZONE_PATTERN,
        description="Availability zone of the pool's nodes; the cluster's first zone if absent.",
    )
    os_disk_size_gb: int | None = Field(
        default=None, ge=30, le=4096, description="OS disk size in GB; AKS's if absent."
    )
    spot: bool | None = Field(default=None, description="Run the pool on Spot VMs.")


class AKSSystemPool(KubeModel):
    """The small untainted default node pool for system components."""

    vm_size: str = Field(
        default="Standard_D4s_v5", min_length=1, max_length=128, description="Azure VM size."
    )
    node_count: int = Field(default=2, ge=1, le=100, description="Nodes of the system pool.")


class ExistingAzureNetwork(KubeModel):
    """A subnet the cluster's nodes join instead of a new virtual network."""

    subnet_id: str = Field(
        min_length=1, max_length=1024, description="Azure resource id of the subnet."
    )


class AKSNetwork(KubeModel):
    """A new virtual network with one subnet for the nodes, or an existing subnet.

    Pods get addresses from an overlay (Azure CNI overlay), so only nodes use
    the subnet.
    """

    vnet_cidr: str = Field(
        default="10.0.0.0/16", max_length=32, description="Address space of a new virtual network."
    )
    nodes_cidr: str = Field(
        default="10.0.0.0/20", max_length=32, description="Address prefix of the nodes' subnet."
    )
    pods_cidr: str = Field(
        default="10.244.0.0/16", max_length=32, description="Overlay range for pods."
    )
    services_cidr: str = Field(
        default="10.96.0.0/16", max_length=32, description="Range for Services."
    )
    dns_service_ip: str = Field(
        default="10.96.0.10", max_length=45, description="Cluster DNS address, in servicesCidr."
    )
    existing: ExistingAzureNetwork | None = Field(
        default=None, description="Join this subnet instead of creating a network."
    )


class AKSClusterSpec(KubeModel):
    """An AKS cluster: resource group, network, identity, control plane, one node pool per pool."""

    cluster_name: DNSLabel = Field(description="The InferenceCluster this cluster serves.")
    location: str = Field(min_length=1, max_length=64, description="Azure region.")
    zones: list[str] | None = Field(
        default=None,
        max_length=3,
        description="Availability zones of the system pool and, unless a pool names one, of "
        "the GPU pools.",
    )
    kubernetes_version: str = Field(
        default=c.DEFAULT_KUBERNETES_VERSION,
        max_length=16,
        description="Kubernetes version of the control plane and every node pool (a minor "
        "version such as 1.36 takes its latest GA patch).",
    )
    network: AKSNetwork | None = Field(
        default=None, description="Defaults to a new network with the default ranges."
    )
    pools: list[AKSNodePool] = Field(
        min_length=1, max_length=16, description="One user node pool per pool."
    )
    system_pool: AKSSystemPool = Field(
        default_factory=AKSSystemPool,
        description="The untainted default node pool for system pods.",
    )
    csi_drivers: list[CSIDriver] | None = Field(
        default=None, max_length=3, description="CSI drivers to enable on the cluster."
    )
    provider_config_ref: CloudProviderConfigRef = Field(
        default_factory=CloudProviderConfigRef,
        description="The provider-upjet-azure config the managed resources use.",
    )


class AKSSource(CloudSource):
    """An AKS cluster Modelplane provisions."""

    location: str = Field(min_length=1, max_length=64, description="Azure region of the cluster.")
    zones: list[str] | None = Field(
        default=None, max_length=3, description="Availability zones the node pools use."
    )
    kubernetes_version: str | None = Field(
        default=None,
        max_length=16,
        description=f"Kubernetes version of the control plane and the node pools; "
        f"{c.DEFAULT_KUBERNETES_VERSION} if absent, never AKS's default, which may predate "
        "DRA's resource.k8s.io/v1 (GA from 1.34).",
    )
    network: AKSNetwork | None = Field(
        default=None, description="The network to create, or an existing subnet to join."
    )
    system_pool: AKSSystemPool | None = Field(
        default=None, description="The untainted default node pool for system pods."
    )
    provider_config_ref: CloudProviderConfigRef | None = Field(
        default=None, description="The provider-upjet-azure config; `default` if absent."
    )

    def composite_spec(self, name: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
        """The AKSCluster's spec."""
        body: dict[str, Any] = {"clusterName": name, "location": self.location, "pools": pools}
        if self.zones:
            body["zones"] = list(self.zones)
        body["kubernetesVersion"] = self.kubernetes_version or c.DEFAULT_KUBERNETES_VERSION
        for key, value in (
            ("network", self.network),
            ("systemPool", self.system_pool),
            ("providerConfigRef", self.provider_config_ref),
        ):
            if value is not None:
                body[key] = value.to_dict()
        return body


class AKSProvisioning(KubeModel):
    """How AKS provisions a node of this class."""

    vm_size: str = Field(
        min_length=1,
        max_length=128,
        description="Azure VM size, e.g. Standard_NC40ads_H100_v5.",
    )
    accelerator: Accelerator | None = None
    os_disk_size_gb: int | None = Field(
        default=None, ge=30, le=4096, description="OS disk size in GB."
    )
    spot: bool | None = Field(default=None, description="Whether the nodes are Spot VMs.")


CLOUD = CloudDeclaration(
    name="AKS",
    block="aks",
    composite_kind="AKSCluster",
    composite_plural="aksclusters",
    description="An AKS cluster an InferenceCluster provisions (internal).",
    source_model=AKSSource,
    class_model=AKSProvisioning,
    spec_model=AKSClusterSpec,
    node_pool=ManagedKind(CONTAINERSERVICE, "KubernetesClusterNodePool"),
    # The system nodes are the KubernetesCluster's own default node pool.
    system_pool=ManagedKind(CONTAINERSERVICE, "KubernetesCluster"),
    system_pool_suffix="aks",
    # Azure Compute's capacity errors, as ARM reports a failed VM scale set
    # operation of an agent pool.
    stockout_codes=(
        "SkuNotAvailable",
        "ZonalAllocationFailed",
        "AllocationFailed",
        "OverconstrainedZonalAllocationRequest",
        "OverconstrainedAllocationRequest",
    ),
    # Azure's messages name no zone: the pool's own zone is reported.
    zone_pattern=None,
    storage_classes={
        "SharedFilesystem": StorageClassSpec("file.csi.azure.com", {"skuName": "Premium_LRS"}),
        "ObjectStorageMount": StorageClassSpec("blob.csi.azure.com", {"protocol": "fuse2"}),
        "BlockDevice": StorageClassSpec("disk.csi.azure.com", {"skuName": "Premium_LRS"}),
    },
    upjet_providers={
        "provider-azure-containerservice": (
            "kubernetesclusters.containerservice.azure.m.upbound.io",
            "kubernetesclusternodepools.containerservice.azure.m.upbound.io",
        ),
        "provider-azure-network": (
            "virtualnetworks.network.azure.m.upbound.io",
            "subnets.network.azure.m.upbound.io",
        ),
        "provider-azure-managedidentity": (
            "userassignedidentities.managedidentity.azure.m.upbound.io",
        ),
        "provider-azure-authorization": ("roleassignments.authorization.azure.m.upbound.io",),
        "provider-azure-azure": ("resourcegroups.azure.m.upbound.io",),
    },
    render_kinds={
        "azure.m.upbound.io": ("ResourceGroup",),
        "containerservice.azure.m.upbound.io": ("KubernetesCluster", "KubernetesClusterNodePool"),
        "network.azure.m.upbound.io": ("VirtualNetwork", "Subnet"),
        "managedidentity.azure.m.upbound.io": ("UserAssignedIdentity",),
        "authorization.azure.m.upbound.io": ("RoleAssignment",),
    },
    provider_group="azure.m.upbound.io",
    provider="provider-upjet-azure",
    # provider-upjet-azure's KubernetesCluster: `kube_config_raw` and its parts.
    connection_keys=(
        "kubeconfig",
        "kubeconfig.clustercacertificate",
        "kubeconfig.clientcertificate",
        "kubeconfig.clientkey",
    ),
)
