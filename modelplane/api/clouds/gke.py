"""GKE: an InferenceCluster provisioned on Google Cloud through provider-upjet-gcp.

Its blocks (the InferenceCluster's `spec.gke`, the InferenceClass's
`spec.provisioning.gke`), the GKECluster composite's spec, and the `Cloud`
declaration the rest of Modelplane reads (`compose/clusters/clouds/gke.py`
composes the managed resources).
"""

from __future__ import annotations

import re
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
    StorageFact,
)
from modelplane.api.clouds.base import Cloud as CloudDeclaration
from modelplane.api.common import DNSLabel, KubeModel


class GKENodePool(SizedPool):
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


class GoogleCredentialsRef(KubeModel):
    """A Google service-account key (JSON) in a Secret."""

    namespace: DNSLabel = Field(description="Namespace of the Secret.")
    name: str = Field(min_length=1, max_length=253, description="Name of the Secret.")
    key: str = Field(min_length=1, max_length=253, description="Key holding the JSON key.")


class GKEIdentity(KubeModel):
    """How the control plane's provider-kubernetes and provider-helm authenticate to GKE.

    GKE issues no client certificate by default, so the kubeconfig
    provider-upjet-gcp writes names only the server and its CA; this Google
    identity supplies the OAuth token (it needs `roles/container.admin` on the
    project, see docs/install.md).
    """

    secret_ref: GoogleCredentialsRef | None = Field(
        default=None,
        description=(
            "A service-account key the providers exchange for tokens; absent: the providers' "
            "own Google credentials (Workload Identity, or GOOGLE_APPLICATION_CREDENTIALS "
            "set through a DeploymentRuntimeConfig)."
        ),
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
        default=c.DEFAULT_KUBERNETES_VERSION,
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
    identity: GKEIdentity | None = Field(
        default=None,
        description=(
            "How provider-kubernetes and provider-helm authenticate to the cluster; "
            "their own Google credentials if absent."
        ),
    )


class GKESource(CloudSource):
    """A GKE cluster Modelplane provisions."""

    project: str = Field(min_length=1, max_length=64, description="GCP project of the cluster.")
    region: str = Field(min_length=1, max_length=64, description="GCP region of the cluster.")
    zones: list[str] | None = Field(
        default=None, max_length=16, description="Zones of the region the node pools use."
    )
    kubernetes_version: str | None = Field(
        default=None,
        max_length=16,
        description="Minimum Kubernetes version of the control plane (GKE's "
        f"minMasterVersion); {c.DEFAULT_KUBERNETES_VERSION} if absent, never the release "
        "channel's default, which may predate DRA's resource.k8s.io/v1 (GA from 1.34).",
    )
    network: GKENetwork | None = Field(
        default=None, description="The network to create, or an existing one to join."
    )
    system_pool: GKESystemPool | None = Field(
        default=None, description="The untainted node pool for system pods."
    )
    provider_config_ref: CloudProviderConfigRef | None = Field(
        default=None, description="The provider-upjet-gcp config; `default` if absent."
    )
    identity: GKEIdentity | None = Field(
        default=None,
        description=(
            "How provider-kubernetes and provider-helm authenticate to the cluster; "
            "their own Google credentials if absent."
        ),
    )

    def composite_spec(self, name: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
        """The GKECluster's spec."""
        body: dict[str, Any] = {
            "clusterName": name,
            "project": self.project,
            "region": self.region,
            "zones": list(self.zones or []),
            "kubernetesVersion": self.kubernetes_version or c.DEFAULT_KUBERNETES_VERSION,
            "pools": pools,
        }
        for key, value in (
            ("network", self.network),
            ("systemPool", self.system_pool),
            ("providerConfigRef", self.provider_config_ref),
            ("identity", self.identity),
        ):
            if value is not None:
                body[key] = value.to_dict()
        return body


class GKEProvisioning(KubeModel):
    """How GKE provisions a node of this class."""

    machine_type: str = Field(
        min_length=1, max_length=128, description="Compute Engine machine type, e.g. a3-highgpu-8g."
    )
    accelerator: Accelerator | None = None
    disk_size_gb: int | None = Field(default=None, ge=10, description="Boot disk size in GB.")
    spot: bool | None = Field(default=None, description="Whether the nodes are Spot VMs.")


CLOUD = CloudDeclaration(
    name="GKE",
    block="gke",
    composite_kind="GKECluster",
    composite_plural="gkeclusters",
    description="A GKE cluster an InferenceCluster provisions (internal).",
    source_model=GKESource,
    class_model=GKEProvisioning,
    spec_model=GKEClusterSpec,
    node_pool=ManagedKind("container.gcp.m.upbound.io/v1beta1", "NodePool"),
    system_pool=ManagedKind("container.gcp.m.upbound.io/v1beta1", "NodePool"),
    system_pool_suffix="system",
    # Also `ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS`.
    stockout_codes=("ZONE_RESOURCE_POOL_EXHAUSTED", "GCE_STOCKOUT"),
    # A GCE zone ("zones/us-central1-a").
    zone_pattern=re.compile(r"\b([a-z]+-[a-z]+\d+-[a-z])\b"),
    storage_classes={
        # Filestore instances are created by GKE's Filestore CSI driver itself,
        # pinned to the cluster's VPC network.
        "SharedFilesystem": StorageClassSpec(
            "filestore.csi.storage.gke.io",
            {"tier": "standard"},
            StorageFact("network", "network", "the cluster's network"),
        ),
        "ObjectStorageMount": StorageClassSpec("gcsfuse.csi.storage.gke.io"),
        "BlockDevice": StorageClassSpec("pd.csi.storage.gke.io", {"type": "pd-balanced"}),
    },
    upjet_providers={
        "provider-gcp-container": (
            "clusters.container.gcp.m.upbound.io",
            "nodepools.container.gcp.m.upbound.io",
        ),
        "provider-gcp-compute": (
            "networks.compute.gcp.m.upbound.io",
            "subnetworks.compute.gcp.m.upbound.io",
            "routers.compute.gcp.m.upbound.io",
            "routernats.compute.gcp.m.upbound.io",
        ),
        "provider-gcp-cloudplatform": (
            "serviceaccounts.cloudplatform.gcp.m.upbound.io",
            # Filestore's API, enabled for a cluster with a SharedFilesystem StorageClass.
            "projectservices.cloudplatform.gcp.m.upbound.io",
        ),
    },
    render_kinds={
        "container.gcp.m.upbound.io": ("Cluster", "NodePool"),
        "compute.gcp.m.upbound.io": ("Network", "Subnetwork", "Router", "RouterNAT"),
        "cloudplatform.gcp.m.upbound.io": ("ServiceAccount", "ProjectService"),
        "filestore.gcp.m.upbound.io": ("Instance",),
    },
    provider_group="gcp.m.upbound.io",
    provider="provider-upjet-gcp",
    # GKE installs the driver under /home/kubernetes/bin/nvidia.
    driver_root="/home/kubernetes/bin/nvidia",
)
