"""GKECluster composer: a GKE cluster from provider-upjet-gcp managed resources.

Composes (all in the composite's namespace, `*.gcp.m.upbound.io`):
- network, unless `spec.network.existing` names one: a custom-mode VPC
  Network, one regional Subnetwork with secondary ranges for pods and
  services, a Cloud Router and Cloud NAT for the private nodes' egress;
- a service account the nodes run as;
- the regional GKE control plane at `kubernetesVersion` (VPC-native, private
  nodes, Workload Identity, the CSI drivers `spec.csiDrivers` call for as
  GKE add-ons), its default node pool removed and its kubeconfig written to a
  connection Secret;
- one node pool per pool, in one zone (the pool's, else the cluster's first)
  so `nodeCount` is the pool's total: machine type, guest accelerators with
  GKE's driver installation, label `modelplane.ai/pool=<pool>`, taint
  `nvidia.com/gpu=present:NoSchedule`, the labels GKE documents for DRA (no
  default device plugin, `nvidia.com/gpu.present`), and autoscaling from
  `nodeCount` to `maxNodeCount`; plus one small untainted system pool;
- Filestore's API (`file.googleapis.com`, a ProjectService) when `csiDrivers`
  asks for a SharedFilesystem;
- Usages so deletion runs node pools → control plane → service account and
  network, the Network last (see `build`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds.gke import CLOUD, GKEClusterSpec, GKENetwork, GKENodePool
from modelplane.compose.clusters.clouds.provisioned import (
    CONTROL_PLANE_KEY,
    SYSTEM_POOL_KEY,
    CloudBuild,
    Plan,
    PoolPlan,
    ProviderReports,
    Provisioner,
    compose_provisioned,
    connection_secret_name,
    pool_key,
)
from modelplane.compose.clusters.managed import (
    Ref,
    selector,
)
from modelplane.compose.objects import dns_label
from modelplane.compose.types import ComposeInput, ComposeResult, Resource

CONTAINER = "container.gcp.m.upbound.io/v1beta1"
COMPUTE = "compute.gcp.m.upbound.io/v1beta1"
CLOUDPLATFORM = "cloudplatform.gcp.m.upbound.io/v1beta1"

PODS_RANGE = "pods"
SERVICES_RANGE = "services"
MASTER_CIDR = "172.16.0.0/28"
OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
# GKE's DRA guide: GKE installs the driver, its device plugin stays off so the
# NVIDIA DRA driver alone publishes the GPUs.
NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
GPU_DRIVER_VERSION = "LATEST"
# csiDrivers entry → the GKE add-on that provides it.
CSI_ADDONS = {
    "SharedFilesystem": "gcpFilestoreCsiDriverConfig",
    "ObjectStorageMount": "gcsFuseCsiDriverConfig",
    "BlockDevice": "gcePersistentDiskCsiDriverConfig",
}
# The API GKE's Filestore CSI driver creates instances through.
FILESTORE_API = "file.googleapis.com"
# A GCP service account id: 6-30 characters.
_ACCOUNT_ID_MAX = 30


@dataclass
class _Build(CloudBuild):
    spec: GKEClusterSpec = field(kw_only=True)

    @property
    def net(self) -> GKENetwork:
        return self.spec.network or GKENetwork()

    def located(self, ref: Ref, for_provider: dict[str, object]) -> dict[str, object]:
        """Every GCP resource names the cluster's project (first, as before)."""
        return {"project": self.spec.project, **for_provider}

    def network_refs(self) -> dict[str, object]:
        existing = self.net.existing
        if existing is not None:
            return {"network": existing.network, "subnetwork": existing.subnetwork}
        return {
            "networkSelector": selector(self.cluster, "network"),
            "subnetworkSelector": selector(self.cluster, "subnetwork"),
        }


def _network(b: _Build) -> tuple[list[Ref], list[Ref]]:
    """Network, Subnetwork, Router and NAT, each Usage within them.

    Returns what the control plane is placed in (the subnetwork) and what the
    nodes' egress needs (the NAT); both empty for an existing network.
    """
    net = b.net
    if net.existing is not None:
        b.plan.network = net.existing.network
        return [], []
    network = b.add(
        "network",
        b.ref(COMPUTE, "Network", "network"),
        "network",
        {"autoCreateSubnetworks": False, "routingMode": "REGIONAL"},
    )
    b.plan.network = network.name
    subnetwork = b.add(
        "subnetwork",
        b.ref(COMPUTE, "Subnetwork", "nodes"),
        "subnetwork",
        {
            "region": b.spec.region,
            "ipCidrRange": net.nodes_cidr,
            "networkSelector": selector(b.cluster, "network"),
            "privateIpGoogleAccess": True,
            "secondaryIpRange": [
                {"rangeName": PODS_RANGE, "ipCidrRange": net.pods_cidr},
                {"rangeName": SERVICES_RANGE, "ipCidrRange": net.services_cidr},
            ],
        },
    )
    b.use(network, subnetwork, "subnetworks go before their network")
    router = b.add(
        "router",
        b.ref(COMPUTE, "Router", "router"),
        "router",
        {"region": b.spec.region, "networkSelector": selector(b.cluster, "network")},
    )
    b.use(network, router, "the router goes before its network")
    nat = b.add(
        "router-nat",
        b.ref(COMPUTE, "RouterNAT", "nat"),
        "router-nat",
        {
            "region": b.spec.region,
            "routerSelector": selector(b.cluster, "router"),
            "natIpAllocateOption": "AUTO_ONLY",
            "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
        },
    )
    b.use(router, nat, "Cloud NAT goes before its router")
    return [subnetwork], [nat]


def _ranges(b: _Build) -> dict[str, str]:
    existing = b.net.existing
    if existing is not None:
        return {
            "clusterSecondaryRangeName": existing.pods_range_name,
            "servicesSecondaryRangeName": existing.services_range_name,
        }
    return {"clusterSecondaryRangeName": PODS_RANGE, "servicesSecondaryRangeName": SERVICES_RANGE}


def _control_plane(b: _Build) -> Ref:
    addons = {CSI_ADDONS[d]: {"enabled": True} for d in b.spec.csi_drivers or []}
    body: dict[str, object] = {
        "location": b.spec.region,
        "nodeLocations": list(b.spec.zones),
        "minMasterVersion": b.spec.kubernetes_version,
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "deletionProtection": False,
        "networkingMode": "VPC_NATIVE",
        "ipAllocationPolicy": _ranges(b),
        "privateClusterConfig": {
            "enablePrivateNodes": True,
            "enablePrivateEndpoint": False,
            "masterIpv4CidrBlock": MASTER_CIDR,
        },
        "workloadIdentityConfig": {"workloadPool": f"{b.spec.project}.svc.id.goog"},
        **b.network_refs(),
    }
    if addons:
        body["addonsConfig"] = addons
    return b.add(
        CONTROL_PLANE_KEY,
        b.ref(CONTAINER, "Cluster", "gke"),
        "control-plane",
        body,
        connection_secret=connection_secret_name(b.cluster),
    )


def _node_config(b: _Build, machine_type: str) -> dict[str, object]:
    return {
        "machineType": machine_type,
        "serviceAccountSelector": selector(b.cluster, "service-account"),
        "oauthScopes": list(OAUTH_SCOPES),
    }


def _gpu_config(pool: GKENodePool, config: dict[str, object]) -> None:
    config["labels"] = {c.LABEL_POOL: pool.name}
    if pool.accelerator is None:
        return
    config["guestAccelerator"] = [
        {
            "type": pool.accelerator.type,
            "count": pool.accelerator.count,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": GPU_DRIVER_VERSION},
        }
    ]
    config["labels"] = {
        c.LABEL_POOL: pool.name,
        c.GPU_PRESENT_LABEL: "true",
        NO_DEVICE_PLUGIN_LABEL: "true",
    }
    config["taint"] = [
        {"key": c.GPU_TAINT_KEY, "value": c.GPU_TAINT_VALUE, "effect": "NO_SCHEDULE"}
    ]


def _node_pool(b: _Build, pool: GKENodePool) -> Ref:
    zone = pool.zone or b.spec.zones[0]
    config = _node_config(b, pool.machine_type)
    _gpu_config(pool, config)
    if pool.disk_size_gb is not None:
        config["diskSizeGb"] = pool.disk_size_gb
    if pool.spot is not None:
        config["spot"] = pool.spot
    body: dict[str, object] = {
        "location": b.spec.region,
        "clusterSelector": selector(b.cluster, "control-plane"),
        "nodeLocations": [zone],
        "nodeConfig": config,
        "management": {"autoRepair": True, "autoUpgrade": True},
    }
    if pool.autoscaled:
        # GKE's autoscaler owns the size; the count is only where it starts.
        body["initialNodeCount"] = pool.node_count
        body["autoscaling"] = {"minNodeCount": pool.node_count, "maxNodeCount": pool.ceiling}
    else:
        body["nodeCount"] = pool.node_count
    ref = b.add(
        pool_key(pool.name),
        b.ref(CONTAINER, "NodePool", "pool", pool.name),
        "node-pool",
        body,
        {c.LABEL_POOL: pool.name},
    )
    accelerator = pool.accelerator.type if pool.accelerator else None
    b.plan.pools.append(PoolPlan(pool.name, accelerator, pool.node_count, zone))
    return ref


def _system_pool(b: _Build) -> Ref:
    return b.add(
        SYSTEM_POOL_KEY,
        b.ref(CONTAINER, "NodePool", "system"),
        "node-pool",
        {
            "location": b.spec.region,
            "clusterSelector": selector(b.cluster, "control-plane"),
            "nodeLocations": list(b.spec.zones),
            "nodeCount": b.spec.system_pool.node_count,
            "nodeConfig": _node_config(b, b.spec.system_pool.machine_type),
            "management": {"autoRepair": True, "autoUpgrade": True},
        },
    )


def _service_account(b: _Build) -> Ref:
    # The account id is the resource's name: 6-30 characters.
    name = dns_label(f"{b.cluster}-nodes", _ACCOUNT_ID_MAX)
    return b.add(
        "service-account",
        Ref(CLOUDPLATFORM, "ServiceAccount", name),
        "service-account",
        {"displayName": f"Modelplane nodes of {b.cluster}"},
    )


def _filestore_api(b: _Build) -> None:
    """Enable Filestore's API when the cluster gets a SharedFilesystem StorageClass.

    Left enabled when the cluster goes (`disableOnDestroy: false`): other
    Filestore instances of the project may still use it.
    """
    if "SharedFilesystem" not in (b.spec.csi_drivers or []):
        return
    b.add(
        "filestore-api",
        b.ref(CLOUDPLATFORM, "ProjectService", "filestore-api"),
        "project-service",
        {"service": FILESTORE_API, "disableOnDestroy": False},
    )


def build(spec: GKEClusterSpec, cluster: str, namespace: str, inp: ComposeInput) -> Plan:
    """Every managed resource and Usage of one GKE cluster.

    The Usages order a deletion: node pools, then the control plane, then the
    nodes' service account and the network, the Network last. What the nodes
    need until they are gone (their account, their egress) is used by the
    control plane, which every node pool goes before; a Usage a chain of others
    already implies is left out.
    """
    b = _Build(cluster, namespace, inp, Plan(), spec.provider_config_ref, spec=spec)
    placement, egress = _network(b)
    account = _service_account(b)
    control_plane = _control_plane(b)
    pools = [_node_pool(b, pool) for pool in spec.pools] + [_system_pool(b)]
    for pool in pools:
        b.use(control_plane, pool, "node pools go before their control plane")
    for part in placement:
        b.use(part, control_plane, "the control plane goes before its network")
    for part in [account, *egress]:
        b.use(part, control_plane, "nodes keep their account and egress to the end")
    _filestore_api(b)
    return b.plan


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose a GKECluster's managed resources and publish its status."""
    return compose_provisioned(inp, CLOUD, build)


def reported_at_provider(obj: Resource, digest: str) -> dict[str, Any]:
    """What provider-upjet-gcp reports: resources by name, the cluster's endpoint address."""
    at: dict[str, Any] = {"id": str((obj.get("metadata") or {}).get("name", ""))}
    if obj.get("kind") == "Cluster":
        at["endpoint"] = "34.0.0." + str(int(digest[:2], 16) % 250 + 1)
    return at


def reported_stockout(obj: Resource, cluster: str, zone: str) -> str:
    """GKE's message for a node pool whose zone has no capacity left."""
    project = ((obj.get("spec") or {}).get("forProvider") or {}).get("project", "project")
    return (
        "async create failed: error waiting for creating GKE NodePool: "
        f"code=ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/{project}/zones/{zone}' "
        "does not have enough resources available to fulfill the request. "
        "Try a different zone, or try again later."
    )


PROVISIONER = Provisioner(CLOUD, compose, ProviderReports(reported_at_provider, reported_stockout))
