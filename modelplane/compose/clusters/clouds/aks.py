"""AKSCluster composer: an AKS cluster from provider-upjet-azure managed resources.

Composes (all in the composite's namespace, `*.azure.m.upbound.io`):
- a resource group that holds everything below;
- network, unless `spec.network.existing` names a subnet: a virtual network
  and one subnet for the nodes (pods get overlay addresses, Azure CNI overlay);
- a user-assigned identity the control plane runs as and, once Azure has given
  it a principal and the subnet an id, its Network Contributor role assignment
  on the subnet (the cluster manages load balancers and node NICs there);
- the AKS control plane at `kubernetesVersion` (1.36 unless the cluster names
  one, never AKS's default, which may predate DRA v1; the node pools run it
  too): its default node pool is the small untainted
  system pool; OIDC issuer and workload identity on; the CSI drivers
  `spec.csiDrivers` call for enabled in its storage profile; its kubeconfig
  written to a connection Secret under `kubeconfig`;
- one user node pool per pool, in one zone (the pool's, else the cluster's
  first) so `nodeCount` is the pool's total: VM size, AKS's NVIDIA driver
  installation (AKS installs no device plugin, so the NVIDIA DRA driver alone
  publishes the GPUs), label `modelplane.ai/pool=<pool>`, taint
  `nvidia.com/gpu=present:NoSchedule`, autoscaling from `nodeCount` to
  `maxNodeCount`; Azure names agent pools with at most 12 lowercase
  alphanumerics, so each gets such a name as its external name;
- Usages so deletion runs node pools → control plane → role assignment,
  identity and subnet → virtual network → resource group, last (see `build`).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds.aks import CLOUD, AKSClusterSpec, AKSNetwork, AKSNodePool
from modelplane.api.objects import short_hash
from modelplane.compose.clusters.clouds.provisioned import (
    CONTROL_PLANE_KEY,
    CloudBuild,
    Lookup,
    Plan,
    PoolPlan,
    ProviderReports,
    Provisioner,
    compose_provisioned,
    connection_secret_name,
    kubeconfig_text,
    pool_key,
    simulated_ca,
)
from modelplane.compose.clusters.managed import (
    Ref,
    at_provider,
    resource_name,
    selector,
)
from modelplane.compose.types import ComposeInput, ComposeResult, Resource

AZURE = "azure.m.upbound.io/v1beta1"
NETWORK = "network.azure.m.upbound.io/v1beta1"
CONTAINERSERVICE = "containerservice.azure.m.upbound.io/v1beta1"
MANAGEDIDENTITY = "managedidentity.azure.m.upbound.io/v1beta1"
AUTHORIZATION = "authorization.azure.m.upbound.io/v1beta1"

EXTERNAL_NAME = c.EXTERNAL_NAME_ANNOTATION
SYSTEM_POOL_NAME = "system"
NETWORK_ROLE = "Network Contributor"
# csiDrivers entry → the storage profile switch of AKS's managed CSI driver.
CSI_DRIVERS = {
    "SharedFilesystem": "fileDriverEnabled",
    "ObjectStorageMount": "blobDriverEnabled",
    "BlockDevice": "diskDriverEnabled",
}
# Azure agent pool names (Linux): a lowercase letter, then lowercase letters and
# digits, 12 characters at most.
_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_POOL_NAME_MAX = 12
_HASH = 4


def agent_pool_name(pool: str) -> str:
    """The Azure name of a pool's node pool: the pool's own name when Azure allows it.

    Otherwise `p` + its first letters and digits + a hash of the whole name, so
    two pools never share one (and no pool takes the system pool's name).
    """
    if _POOL_NAME.match(pool) and pool != SYSTEM_POOL_NAME:
        return pool
    kept = re.sub(r"[^a-z0-9]", "", pool.lower())[: _POOL_NAME_MAX - 1 - _HASH]
    return f"p{kept}{short_hash(pool, length=_HASH)}"


@dataclass
class _Build(CloudBuild):
    spec: AKSClusterSpec = field(kw_only=True)

    @property
    def net(self) -> AKSNetwork:
        return self.spec.network or AKSNetwork()

    def in_group(self, located: bool = True) -> dict[str, object]:
        """The resource group reference (and location) every top-level Azure resource needs."""
        out: dict[str, object] = {
            "resourceGroupNameSelector": selector(self.cluster, "resource-group")
        }
        if located:
            out["location"] = self.spec.location
        return out

    def subnet(self) -> dict[str, object]:
        """How a node pool names the nodes' subnet: by id, or by selector."""
        existing = self.net.existing
        if existing is not None:
            return {"vnetSubnetId": existing.subnet_id}
        return {"vnetSubnetIdSelector": selector(self.cluster, "subnet")}


def _network(b: _Build, group: Ref) -> tuple[Ref | None, str | None]:
    """The virtual network and the nodes' subnet; returns the subnet and its Azure id."""
    existing = b.net.existing
    if existing is not None:
        b.plan.network = existing.subnet_id
        return None, existing.subnet_id
    vnet = b.add(
        "virtual-network",
        b.ref(NETWORK, "VirtualNetwork", "vnet"),
        "virtual-network",
        {**b.in_group(), "addressSpace": [b.net.vnet_cidr]},
    )
    b.use(group, vnet, "the resource group goes last")
    subnet = b.add(
        "subnet",
        b.ref(NETWORK, "Subnet", "nodes"),
        "subnet",
        {
            **b.in_group(located=False),
            "virtualNetworkNameSelector": selector(b.cluster, "virtual-network"),
            "addressPrefixes": [b.net.nodes_cidr],
        },
    )
    b.use(vnet, subnet, "subnets go before their virtual network")
    b.plan.network = vnet.name
    return subnet, at_provider(b.inp.observed.get("subnet")).get("id")


def _identity(b: _Build, group: Ref) -> Ref:
    name = resource_name(b.cluster, "identity")
    ref = b.add(
        "identity",
        Ref(MANAGEDIDENTITY, "UserAssignedIdentity", name),
        "identity",
        {**b.in_group(), "name": name},
    )
    b.use(group, ref, "the resource group goes last")
    return ref


def _role_assignment(b: _Build, identity: Ref, scope: str | None) -> Ref | None:
    """Network Contributor on the subnet, once the identity's principal and the scope are known.

    Neither has a reference field in the RoleAssignment's schema, so both are
    read from what Azure reported.
    """
    principal = _text(at_provider(b.inp.observed.get("identity")).get("principalId"))
    principal = principal or _composed_with(b, "principalId")
    scope = _text(scope) or _composed_with(b, "scope")
    if not principal or not scope:
        return None
    ref = b.add(
        "role-assignment",
        b.ref(AUTHORIZATION, "RoleAssignment", "network-contributor"),
        "role-assignment",
        {
            "principalId": principal,
            "principalType": "ServicePrincipal",
            "roleDefinitionName": NETWORK_ROLE,
            "scope": scope,
            "skipServicePrincipalAadCheck": True,
        },
    )
    b.use(identity, ref, "a role assignment goes before its identity")
    return ref


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _composed_with(b: _Build, field: str) -> str | None:
    """What the observed role assignment was composed with, when Azure's report does not read.

    An identity or subnet whose status is absent or malformed keeps an
    existing role assignment as it is rather than withdrawing it (and with it
    the Usages that order the deletion).
    """
    spec = (b.inp.observed.get("role-assignment") or {}).get("spec")
    provider = spec.get("forProvider") if isinstance(spec, dict) else None
    return _text(provider.get(field)) if isinstance(provider, dict) else None


def _default_pool(b: _Build) -> dict[str, object]:
    """The control plane's default node pool: the untainted system nodes."""
    pool: dict[str, object] = {
        "name": SYSTEM_POOL_NAME,
        "vmSize": b.spec.system_pool.vm_size,
        "nodeCount": b.spec.system_pool.node_count,
        **b.subnet(),
    }
    if b.spec.zones:
        pool["zones"] = list(b.spec.zones)
    return pool


def _control_plane(b: _Build) -> Ref:
    net = b.net
    body: dict[str, object] = {
        **b.in_group(),
        "dnsPrefix": b.cluster,
        "defaultNodePool": _default_pool(b),
        "identity": {
            "type": "UserAssigned",
            "identityIdsSelector": selector(b.cluster, "identity"),
        },
        "networkProfile": {
            "networkPlugin": "azure",
            "networkPluginMode": "overlay",
            "podCidr": net.pods_cidr,
            "serviceCidr": net.services_cidr,
            "dnsServiceIp": net.dns_service_ip,
            "loadBalancerSku": "standard",
        },
        "oidcIssuerEnabled": True,
        "workloadIdentityEnabled": True,
    }
    body["kubernetesVersion"] = b.spec.kubernetes_version
    if b.spec.csi_drivers:
        body["storageProfile"] = {CSI_DRIVERS[d]: True for d in b.spec.csi_drivers}
    return b.add(
        CONTROL_PLANE_KEY,
        b.ref(CONTAINERSERVICE, "KubernetesCluster", "aks"),
        "control-plane",
        body,
        connection_secret=connection_secret_name(b.cluster),
    )


def _gpu(pool: AKSNodePool, body: dict[str, Any]) -> None:
    """Label, taint and driver of a pool's nodes (only GPU nodes are tainted)."""
    body["nodeLabels"] = {c.LABEL_POOL: pool.name}
    if pool.accelerator is None:
        return
    body["nodeLabels"] = {c.LABEL_POOL: pool.name, c.GPU_PRESENT_LABEL: "true"}
    body["nodeTaints"] = [f"{c.GPU_TAINT_KEY}={c.GPU_TAINT_VALUE}:NoSchedule"]
    body["gpuDriver"] = "Install"


def _sizing(pool: AKSNodePool, body: dict[str, Any]) -> dict[str, Any] | None:
    """Fixed size, or autoscaling (the autoscaler owns the count); returns initProvider."""
    if not pool.autoscaled:
        body["nodeCount"] = pool.node_count
        return None
    body.update(autoScalingEnabled=True, minCount=pool.node_count, maxCount=pool.ceiling)
    return {"nodeCount": pool.node_count}


def _node_pool(b: _Build, pool: AKSNodePool) -> Ref:
    zone = pool.zone or (b.spec.zones[0] if b.spec.zones else None)
    body: dict[str, Any] = {
        "kubernetesClusterIdSelector": selector(b.cluster, "control-plane"),
        "mode": "User",
        "vmSize": pool.vm_size,
        # Left out, AKS would take its recommended version, which may not serve DRA v1.
        "orchestratorVersion": b.spec.kubernetes_version,
        **b.subnet(),
    }
    if zone is not None:
        body["zones"] = [zone]
    _gpu(pool, body)
    if pool.os_disk_size_gb is not None:
        body["osDiskSizeGb"] = pool.os_disk_size_gb
    if pool.spot:
        body.update(priority="Spot", evictionPolicy="Delete", spotMaxPrice=-1)
    initial = _sizing(pool, body)
    ref = b.add(
        pool_key(pool.name),
        b.ref(CONTAINERSERVICE, "KubernetesClusterNodePool", "pool", pool.name),
        "node-pool",
        body,
        {c.LABEL_POOL: pool.name},
        init_provider=initial,
    )
    b.plan.resources[pool_key(pool.name)]["metadata"]["annotations"] = {
        EXTERNAL_NAME: agent_pool_name(pool.name)
    }
    accelerator = pool.accelerator.type if pool.accelerator else None
    # AKS labels nodes `topology.kubernetes.io/zone=<location>-<zone>`.
    where = f"{b.spec.location}-{zone}" if zone else None
    b.plan.pools.append(PoolPlan(pool.name, accelerator, pool.node_count, where))
    return ref


def build(spec: AKSClusterSpec, cluster: str, namespace: str, inp: ComposeInput) -> Plan:
    """Every managed resource and Usage of one AKS cluster.

    The Usages order a deletion: node pools, then the control plane, then its
    role assignment, identity and subnet, then the virtual network, the
    resource group last. A Usage a chain of others already implies is left out
    (the subnet waits for the control plane, the network for the subnet).
    """
    b = _Build(
        cluster,
        namespace,
        inp,
        Plan(system_pool_key=CONTROL_PLANE_KEY),
        spec.provider_config_ref,
        spec=spec,
    )
    group = b.add(
        "resource-group",
        b.ref(AZURE, "ResourceGroup", "rg"),
        "resource-group",
        {"location": spec.location},
    )
    subnet, scope = _network(b, group)
    identity = _identity(b, group)
    role = _role_assignment(b, identity, scope)
    control_plane = _control_plane(b)
    for pool in spec.pools:
        b.use(control_plane, _node_pool(b, pool), "node pools go before their control plane")
    placement = [subnet] if subnet is not None else [group]
    for part in placement:
        b.use(part, control_plane, "the control plane goes before its network")
    for part in [identity, *([role] if role is not None else [])]:
        b.use(part, control_plane, "the control plane keeps its identity and permissions")
    return b.plan


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose an AKSCluster's managed resources and publish its status."""
    return compose_provisioned(inp, CLOUD, build)


_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
# Kind → its Azure resource type, for plausible resource ids.
_RESOURCE_TYPES = {
    "VirtualNetwork": "Microsoft.Network/virtualNetworks",
    "UserAssignedIdentity": "Microsoft.ManagedIdentity/userAssignedIdentities",
    "KubernetesCluster": "Microsoft.ContainerService/managedClusters",
}


def _guid(*parts: str) -> str:
    h = short_hash(*parts, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _resource_id(obj: Resource) -> str:
    kind = str(obj.get("kind", ""))
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    cluster = str((meta.get("labels") or {}).get(c.LABEL_CLUSTER, ""))
    group = f"/subscriptions/{_SUBSCRIPTION}/resourceGroups/{resource_name(cluster, 'rg')}"
    if kind == "ResourceGroup":
        return f"/subscriptions/{_SUBSCRIPTION}/resourceGroups/{name}"
    if kind == "Subnet":
        vnet = resource_name(cluster, "vnet")
        return f"{group}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{name}"
    if kind == "KubernetesClusterNodePool":
        aks = resource_name(cluster, "aks")
        pool = (meta.get("annotations") or {}).get(EXTERNAL_NAME, name)
        return f"{group}/providers/{_RESOURCE_TYPES['KubernetesCluster']}/{aks}/agentPools/{pool}"
    if kind == "RoleAssignment":
        return f"{group}/providers/Microsoft.Authorization/roleAssignments/{_guid(name)}"
    return f"{group}/providers/{_RESOURCE_TYPES.get(kind, kind)}/{name}"


def reported_at_provider(obj: Resource, digest: str) -> dict[str, Any]:
    """What provider-upjet-azure reports: resource ids, an identity's principal, the
    cluster's API server name."""
    at: dict[str, Any] = {"id": _resource_id(obj)}
    kind = obj.get("kind")
    name = str((obj.get("metadata") or {}).get("name", ""))
    if kind == "UserAssignedIdentity":
        at.update(principalId=_guid(name, "principal"), clientId=_guid(name, "client"))
    elif kind == "KubernetesCluster":
        location = ((obj.get("spec") or {}).get("forProvider") or {}).get("location", "")
        at["fqdn"] = f"{name}-{digest[:8]}.hcp.{location}.azmk8s.io"
    return at


def reported_stockout(obj: Resource, cluster: str, zone: str) -> str:
    """Azure's message for an agent pool whose VM size has no capacity in its zone."""
    vm_size = ((obj.get("spec") or {}).get("forProvider") or {}).get("vmSize", "the requested")
    pool = ((obj.get("metadata") or {}).get("annotations") or {}).get(EXTERNAL_NAME, "")
    return (
        "async create failed: failed to create the resource: creating Kubernetes Cluster "
        f"Node Pool (Kubernetes Cluster Name: {resource_name(cluster, 'aks')!r}, Agent Pool "
        f'Name: {pool!r}): polling after CreateOrUpdate: Code="ZonalAllocationFailed" '
        'Message="Allocation failed. We do not have sufficient capacity for the requested '
        f"VM size {vm_size} in zone {zone!r}. Read more about improving likelihood of "
        'allocation success at http://aka.ms/allocation-guidance"'
    )


def reported_connection(obj: Resource, lookup: Lookup) -> dict[str, str]:
    """What provider-upjet-azure writes for a KubernetesCluster: `kube_config_raw`
    (the local account's client certificate) under `kubeconfig`, and its parts."""
    if obj.get("kind") != "KubernetesCluster":
        return {}
    name = str((obj.get("metadata") or {}).get("name", ""))
    fqdn = str(lookup("KubernetesCluster", name).get("fqdn", ""))
    ca = simulated_ca(name)
    cert = simulated_ca(f"{name} clusterUser")
    key = simulated_ca(f"{name} clusterUser key").replace("CERTIFICATE", "RSA PRIVATE KEY")
    user = {
        "client-certificate-data": base64.b64encode(cert.encode()).decode(),
        "client-key-data": base64.b64encode(key.encode()).decode(),
    }
    return {
        "kubeconfig": kubeconfig_text(name, f"https://{fqdn}:443", ca, user),
        "kubeconfig.clustercacertificate": ca,
        "kubeconfig.clientcertificate": cert,
        "kubeconfig.clientkey": key,
    }


PROVISIONER = Provisioner(
    CLOUD,
    compose,
    ProviderReports(reported_at_provider, reported_stockout, reported_connection),
)
