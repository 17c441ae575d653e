"""EKSCluster composer: an EKS cluster from provider-upjet-aws managed resources.

Composes (all in the composite's namespace, `*.aws.m.upbound.io`):
- network, unless `spec.network.existing` names one: a VPC, an internet
  gateway, a public and a private subnet per zone, one NAT gateway with its
  Elastic IP, public/private route tables with their default routes and
  associations;
- IAM: the control plane's role and the nodes' role with AWS's managed policies
  (plus the EBS/EFS CSI policies when the cluster asks for those drivers);
- the EKS control plane at `kubernetesVersion` (API authentication mode, so
  access entries decide who may reach it; the principal that creates it, the
  provider's, is cluster admin), an access entry with cluster-admin per
  principal, and a ClusterAuth: the EKS Cluster publishes no kubeconfig, its
  ClusterAuth does (keys `kubeconfig`, `endpoint`, `clusterCA`), with a token
  provider-upjet-aws signs with its own AWS credentials and refreshes every
  `refreshPeriod` (10 minutes, the most it allows). That Secret is what the
  cluster's provider-kubernetes and provider-helm configs read;
- one managed node group per pool: the NVIDIA AL2023 AMI when it carries
  accelerators (drivers preinstalled; DRA is GA in Kubernetes and needs no
  feature gate), label `modelplane.ai/pool=<pool>`, taint
  `nvidia.com/gpu=present:NoSchedule`, `minSize = nodeCount` and `maxSize =
  maxNodeCount`; plus one small untainted system node group;
- the CSI add-ons `spec.csiDrivers` call for and, for SharedFilesystem, an EFS
  file system with a mount target per private subnet;
- Usages so deletion runs node groups → control plane → IAM and network, the
  VPC last (see `build`).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds.eks import CLOUD, EKSClusterSpec, EKSNodePool
from modelplane.api.objects import short_hash
from modelplane.compose.clusters.clouds.provisioned import (
    CONTROL_PLANE_KEY,
    SYSTEM_POOL_KEY,
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
    selector,
    split_cidr,
)
from modelplane.compose.types import ComposeInput, ComposeResult, Resource

EKS = "eks.aws.m.upbound.io/v1beta1"
EC2 = "ec2.aws.m.upbound.io/v1beta1"
IAM = "iam.aws.m.upbound.io/v1beta1"
EFS = "efs.aws.m.upbound.io/v1beta1"

# Each zone gets a public and a private subnet, one sixteenth of the VPC each.
MAX_SUBNET_PREFIX = 28
GPU_AMI = "AL2023_x86_64_NVIDIA"
STANDARD_AMI = "AL2023_x86_64_STANDARD"
_POLICY = "arn:aws:iam::aws:policy/"
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
)
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# How often ClusterAuth re-signs the kubeconfig's token (the most it allows; a
# token lives 15 minutes).
REFRESH_PERIOD = "10m0s"
# csiDrivers entry → (EKS add-on, the node role policy the driver needs).
CSI_ADDONS: dict[str, tuple[str, str | None]] = {
    "BlockDevice": ("aws-ebs-csi-driver", "service-role/AmazonEBSCSIDriverPolicy"),
    "SharedFilesystem": ("aws-efs-csi-driver", "service-role/AmazonEFSCSIDriverPolicy"),
    # Mountpoint for S3 needs bucket-specific permissions: granted per bucket by
    # the platform team, never a blanket policy here.
    "ObjectStorageMount": ("aws-mountpoint-s3-csi-driver", None),
}


def _trust(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sts:AssumeRole",
                }
            ],
        },
        sort_keys=True,
    )


@dataclass
class _Build(CloudBuild):
    spec: EKSClusterSpec = field(kw_only=True)

    def located(self, ref: Ref, for_provider: dict[str, object]) -> dict[str, object]:
        """Every EKS resource but IAM's (global) names the cluster's region."""
        if ref.api_version == IAM:
            return for_provider
        return {**for_provider, "region": self.spec.region}

    def private_subnets(self) -> dict[str, object]:
        existing = self.spec.network.existing
        if existing is not None:
            return {"subnetIds": list(existing.subnet_ids)}
        return {
            "subnetIdSelector": selector(self.cluster, "subnet", **{c.LABEL_SUBNET_TIER: "private"})
        }


@dataclass(frozen=True)
class _Net:
    """What the cluster's machines need of a composed network (empty for an existing one)."""

    subnets: list[Ref]
    """Every subnet: the control plane and nodes sit in the private ones, the
    load balancers the cluster creates in the public ones (the `elb` tag)."""
    egress: list[Ref]
    """The nodes' way out: the private default route and the private subnets' associations."""


def _subnets(b: _Build, vpc: Ref, zones: list[str], cidrs: list[str]) -> list[Ref]:
    out = []
    for i, zone in enumerate(zones):
        for tier, cidr, elb in (
            ("public", cidrs[i], "kubernetes.io/role/elb"),
            ("private", cidrs[len(zones) + i], "kubernetes.io/role/internal-elb"),
        ):
            ref = b.add(
                f"subnet-{tier}-{zone}",
                b.ref(EC2, "Subnet", tier, zone),
                "subnet",
                {
                    "availabilityZone": zone,
                    "cidrBlock": cidr,
                    "vpcIdSelector": selector(b.cluster, "vpc"),
                    "mapPublicIpOnLaunch": tier == "public",
                    "tags": {elb: "1", "Name": f"{b.cluster}-{tier}-{zone}"},
                },
                {c.LABEL_SUBNET_TIER: tier, c.LABEL_ZONE: zone},
            )
            b.use(vpc, ref, "subnets go before their VPC")
            out.append(ref)
    return out


def _nat(b: _Build, zone: str) -> Ref:
    eip = b.add("eip-nat", b.ref(EC2, "EIP", "nat"), "eip", {"domain": "vpc"})
    nat = b.add(
        "nat",
        b.ref(EC2, "NATGateway", "nat"),
        "nat",
        {
            "allocationIdSelector": selector(b.cluster, "eip"),
            "subnetIdSelector": selector(
                b.cluster, "subnet", **{c.LABEL_SUBNET_TIER: "public", c.LABEL_ZONE: zone}
            ),
        },
    )
    b.use(eip, nat, "a NAT gateway goes before its Elastic IP")
    b.use(b.ref(EC2, "Subnet", "public", zone), nat, "a NAT gateway goes before its subnet")
    return nat


def _route_table(b: _Build, vpc: Ref, tier: str, gateway: Ref, target: dict[str, object]) -> Ref:
    """A tier's route table and default route through `gateway`; returns the route."""
    table = {c.LABEL_SUBNET_TIER: tier}
    table_ref = b.add(
        f"route-table-{tier}",
        b.ref(EC2, "RouteTable", tier),
        "route-table",
        {"vpcIdSelector": selector(b.cluster, "vpc")},
        table,
    )
    b.use(vpc, table_ref, "route tables go before their VPC")
    route = b.add(
        f"route-{tier}",
        b.ref(EC2, "Route", tier, "default"),
        "route",
        {
            "destinationCidrBlock": "0.0.0.0/0",
            "routeTableIdSelector": selector(b.cluster, "route-table", **table),
            **target,
        },
    )
    b.use(table_ref, route, "a route goes before its route table")
    b.use(gateway, route, "a route goes before the gateway it routes to")
    return route


def _associations(b: _Build, tier: str, zones: list[str]) -> list[Ref]:
    out = []
    for zone in zones:
        ref = b.add(
            f"route-association-{tier}-{zone}",
            b.ref(EC2, "RouteTableAssociation", tier, zone),
            "route-association",
            {
                "routeTableIdSelector": selector(
                    b.cluster, "route-table", **{c.LABEL_SUBNET_TIER: tier}
                ),
                "subnetIdSelector": selector(
                    b.cluster, "subnet", **{c.LABEL_SUBNET_TIER: tier, c.LABEL_ZONE: zone}
                ),
            },
        )
        b.use(b.ref(EC2, "RouteTable", tier), ref, "associations go before their route table")
        out.append(ref)
    return out


def _routes(b: _Build, vpc: Ref, igw: Ref, zones: list[str]) -> list[Ref]:
    """Internet and NAT egress; returns the private subnets' egress path the nodes use."""
    first = zones[0]
    nat = _nat(b, first)
    public = _route_table(
        b, vpc, "public", igw, {"gatewayIdSelector": selector(b.cluster, "internet-gateway")}
    )
    public_links = _associations(b, "public", zones)
    # The NAT gateway reaches the internet through its public subnet's route.
    b.use(public, nat, "the NAT gateway's internet route outlives it")
    b.use(public_links[0], nat, "the NAT gateway's subnet stays routed while it exists")
    private = _route_table(
        b, vpc, "private", nat, {"natGatewayIdSelector": selector(b.cluster, "nat")}
    )
    return [private, *_associations(b, "private", zones)]


def _network(b: _Build) -> _Net:
    """The VPC and its pieces, each Usage within them; returns what the machines need."""
    net = b.spec.network
    if net.existing is not None:
        b.plan.network = net.existing.vpc_id
        return _Net([], [])
    zones = list(net.zones or [])
    try:
        prefix = ipaddress.ip_network(net.vpc_cidr, strict=True).prefixlen + 4
        if prefix > MAX_SUBNET_PREFIX:
            raise ValueError(
                f"{net.vpc_cidr} is too small: its subnets would be /{prefix}, AWS allows at "
                f"most /{MAX_SUBNET_PREFIX}"
            )
        cidrs = split_cidr(net.vpc_cidr, prefix, 2 * len(zones))
    except ValueError as err:
        raise ValueError(f"spec.network.vpcCidr: {err}") from err
    vpc = b.add(
        "vpc",
        b.ref(EC2, "VPC", "vpc"),
        "vpc",
        {
            "cidrBlock": net.vpc_cidr,
            "enableDnsHostnames": True,
            "enableDnsSupport": True,
            "tags": {"Name": b.cluster},
        },
    )
    b.plan.network = _provider_id(b.inp.observed.get("vpc"))
    igw = b.add(
        "internet-gateway",
        b.ref(EC2, "InternetGateway", "igw"),
        "internet-gateway",
        {"vpcIdSelector": selector(b.cluster, "vpc")},
    )
    b.use(vpc, igw, "the internet gateway goes before its VPC")
    subnets = _subnets(b, vpc, zones, cidrs)
    return _Net(subnets, _routes(b, vpc, igw, zones))


def _role(b: _Build, who: str, service: str, policies: tuple[str, ...]) -> list[Ref]:
    """A role and its policy attachments; returns the attachments (each uses the role)."""
    role = b.add(
        f"role-{who}",
        b.ref(IAM, "Role", who),
        f"role-{who}",
        {"assumeRolePolicy": _trust(service)},
    )
    attachments = []
    for policy in policies:
        short = policy.rsplit("/", 1)[-1]
        attachment = b.add(
            f"role-{who}-{short}",
            b.ref(IAM, "RolePolicyAttachment", who, short.lower().replace("_", "-")),
            "role-policy",
            {"policyArn": _POLICY + policy, "roleSelector": selector(b.cluster, f"role-{who}")},
        )
        # IAM refuses to delete a role that still has policies attached.
        b.use(role, attachment, "policy attachments go before their role")
        attachments.append(attachment)
    return attachments


def _iam(b: _Build) -> tuple[list[Ref], list[Ref]]:
    """Both roles; returns the control plane's and the nodes' policy attachments."""
    drivers = b.spec.csi_drivers or []
    node_policies = NODE_POLICIES + tuple(p for d in drivers if (p := CSI_ADDONS[d][1]) is not None)
    return (
        _role(b, "cluster", "eks.amazonaws.com", CLUSTER_POLICIES),
        _role(b, "node", "ec2.amazonaws.com", node_policies),
    )


def _control_plane(b: _Build) -> tuple[Ref, list[Ref]]:
    """The control plane and its access entries (returned: what the providers reach it by)."""
    ref = b.add(
        CONTROL_PLANE_KEY,
        b.ref(EKS, "Cluster", "eks"),
        "control-plane",
        {
            "version": b.spec.kubernetes_version,
            "roleArnSelector": selector(b.cluster, "role-cluster"),
            "vpcConfig": {
                "endpointPrivateAccess": True,
                "endpointPublicAccess": True,
                **b.private_subnets(),
            },
            "accessConfig": {
                "authenticationMode": "API",
                "bootstrapClusterCreatorAdminPermissions": True,
            },
        },
    )
    access: list[Ref] = []
    for i, arn in enumerate(b.spec.access_principal_arns or []):
        cluster_sel = {"clusterNameSelector": selector(b.cluster, "control-plane")}
        entry = b.add(
            f"access-entry-{i}",
            b.ref(EKS, "AccessEntry", "access", str(i)),
            "access-entry",
            {**cluster_sel, "principalArn": arn, "type": "STANDARD"},
        )
        policy = b.add(
            f"access-policy-{i}",
            b.ref(EKS, "AccessPolicyAssociation", "access", str(i)),
            "access-policy",
            {
                **cluster_sel,
                "principalArn": arn,
                "policyArn": CLUSTER_ADMIN_POLICY,
                "accessScope": {"type": "cluster"},
            },
        )
        access += [entry, policy]
    access.append(_cluster_auth(b, ref))
    return ref, access


def _cluster_auth(b: _Build, control_plane: Ref) -> Ref:
    """The ClusterAuth whose connection Secret the cluster's providers read."""
    return b.add(
        "cluster-auth",
        b.ref(EKS, "ClusterAuth", "auth"),
        "cluster-auth",
        {"clusterNameRef": {"name": control_plane.name}, "refreshPeriod": REFRESH_PERIOD},
        connection_secret=connection_secret_name(b.cluster),
    )


def _scaling(pool: EKSNodePool) -> tuple[dict[str, object], dict[str, object]]:
    """(forProvider, initProvider) scaling: an autoscaled group owns its desired size."""
    low, high = pool.node_count, max(pool.ceiling, 1)
    if pool.autoscaled:
        return {"minSize": low, "maxSize": high}, {"desiredSize": low}
    return {"minSize": low, "maxSize": high, "desiredSize": low}, {}


def _node_group(b: _Build, pool: EKSNodePool) -> Ref:
    scaling, initial = _scaling(pool)
    body: dict[str, object] = {
        "clusterNameSelector": selector(b.cluster, "control-plane"),
        "nodeRoleArnSelector": selector(b.cluster, "role-node"),
        "instanceTypes": [pool.instance_type],
        "amiType": GPU_AMI if pool.accelerator else STANDARD_AMI,
        "labels": {c.LABEL_POOL: pool.name},
        "scalingConfig": scaling,
        **b.private_subnets(),
    }
    if pool.accelerator is not None:
        body["labels"] = {c.LABEL_POOL: pool.name, c.GPU_PRESENT_LABEL: "true"}
        body["taint"] = [
            {"key": c.GPU_TAINT_KEY, "value": c.GPU_TAINT_VALUE, "effect": "NO_SCHEDULE"}
        ]
    if pool.disk_size_gb is not None:
        body["diskSize"] = pool.disk_size_gb
    if pool.spot:
        body["capacityType"] = "SPOT"
    ref = b.add(
        pool_key(pool.name),
        b.ref(EKS, "NodeGroup", "pool", pool.name),
        "node-pool",
        body,
        {c.LABEL_POOL: pool.name},
        init_provider={"scalingConfig": initial} if initial else None,
    )
    b.plan.pools.append(
        PoolPlan(pool.name, pool.accelerator.type if pool.accelerator else None, pool.node_count)
    )
    return ref


def _system_group(b: _Build) -> Ref:
    size = b.spec.system_pool.node_count
    return b.add(
        SYSTEM_POOL_KEY,
        b.ref(EKS, "NodeGroup", "system"),
        "node-pool",
        {
            "clusterNameSelector": selector(b.cluster, "control-plane"),
            "nodeRoleArnSelector": selector(b.cluster, "role-node"),
            "instanceTypes": [b.spec.system_pool.instance_type],
            "amiType": STANDARD_AMI,
            "scalingConfig": {"minSize": size, "maxSize": size, "desiredSize": size},
            **b.private_subnets(),
        },
    )


def _storage(b: _Build) -> list[Ref]:
    """The CSI add-ons and EFS; returns what the cluster's workloads mount storage through."""
    drivers = b.spec.csi_drivers or []
    out = [
        b.add(
            f"addon-{addon}",
            b.ref(EKS, "Addon", addon),
            "addon",
            {"clusterNameSelector": selector(b.cluster, "control-plane"), "addonName": addon},
        )
        for addon in (CSI_ADDONS[driver][0] for driver in drivers)
    ]
    if "SharedFilesystem" in drivers:
        out += _efs(b)
    return out


def _efs(b: _Build) -> list[Ref]:
    """The file system and, once the cluster's security group is known, its mount targets."""
    efs = b.add(
        "efs",
        b.ref(EFS, "FileSystem", "efs"),
        "efs",
        {"encrypted": True, "performanceMode": "generalPurpose", "throughputMode": "elastic"},
    )
    b.plan.shared_filesystem_id = _provider_id(b.inp.observed.get("efs"))
    # Mount targets join the cluster security group EKS creates, which admits
    # every node; its id exists only once the control plane is up.
    group = _security_group(b)
    if not group:
        return []
    existing = b.spec.network.existing
    targets = (
        [(str(i), {"subnetId": s}) for i, s in enumerate(existing.subnet_ids)]
        if existing is not None
        else [
            (
                z,
                {
                    "subnetIdSelector": selector(
                        b.cluster, "subnet", **{c.LABEL_SUBNET_TIER: "private", c.LABEL_ZONE: z}
                    )
                },
            )
            for z in b.spec.network.zones or []
        ]
    )
    mounts = []
    for suffix, subnet in targets:
        mount = b.add(
            f"efs-mount-{suffix}",
            b.ref(EFS, "MountTarget", "efs", suffix),
            "efs-mount",
            {
                "fileSystemIdSelector": selector(b.cluster, "efs"),
                "securityGroups": [group],
                **subnet,
            },
        )
        b.use(efs, mount, "EFS refuses to delete a file system that has mount targets")
        mounts.append(mount)
    return mounts


def _provider_id(observed: Resource | None) -> str | None:
    """A managed resource's `status.atProvider.id`; None when absent or not a string."""
    value = at_provider(observed).get("id")
    return value if isinstance(value, str) and value else None


def _security_group(b: _Build) -> str | None:
    """The cluster security group the mount targets join, or None while it is not known.

    Read from the control plane's `status.atProvider.vpcConfig`; when that does
    not read (absent or malformed) but mount targets exist, the group they
    were composed with: an unreadable status keeps them as they are rather
    than withdrawing them.
    """
    vpc_config = at_provider(b.inp.observed.get(CONTROL_PLANE_KEY)).get("vpcConfig")
    group = vpc_config.get("clusterSecurityGroupId") if isinstance(vpc_config, dict) else None
    if isinstance(group, str) and group:
        return group
    for key, obj in sorted(b.inp.observed.items()):
        if key.startswith("efs-mount-"):
            spec = obj.get("spec")
            provider = spec.get("forProvider") if isinstance(spec, dict) else None
            groups = provider.get("securityGroups") if isinstance(provider, dict) else None
            if isinstance(groups, list) and groups and isinstance(groups[0], str):
                return groups[0]
    return None


def _use_all(b: _Build, of: list[Ref], by: Ref, reason: str) -> None:
    for part in of:
        b.use(part, by, reason)


def build(spec: EKSClusterSpec, cluster: str, namespace: str, inp: ComposeInput) -> Plan:
    """Every managed resource and Usage of one EKS cluster.

    The Usages order a deletion: node groups, then the control plane, then IAM
    and the network, the VPC last. What the nodes need until they are gone
    (their role's policies, their egress) is used by the control plane, which
    every node group goes before. A Usage a chain of others already implies
    is left out (a node group's subnets wait for the control plane too).
    """
    b = _Build(cluster, namespace, inp, Plan(), spec.provider_config_ref, spec=spec)
    net = _network(b)
    cluster_policies, node_policies = _iam(b)
    control_plane, access = _control_plane(b)
    groups = [_node_group(b, pool) for pool in spec.pools] + [_system_group(b)]
    storage = _storage(b)
    for group in groups:
        b.use(control_plane, group, "node groups go before their control plane")
    # Every release and workload runs on the system group: until it is gone the
    # providers keep their access and workloads their storage drivers.
    _use_all(b, access + storage, groups[-1], "what releases and workloads need outlives them")
    for child in access + storage:
        b.use(control_plane, child, "add-ons, access and mount targets go before the cluster")
    _use_all(
        b,
        cluster_policies + net.subnets,
        control_plane,
        "the control plane goes before its network",
    )
    _use_all(
        b, node_policies + net.egress, control_plane, "nodes keep permissions and egress to the end"
    )
    return b.plan


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose an EKSCluster's managed resources and publish its status."""
    return compose_provisioned(inp, CLOUD, build)


# The render's clock starts at the epoch of `local/conditions.py`.
REPORTED_REFRESH_TIME = "2026-01-01T00:00:00Z"
# External id prefixes EC2 and EFS use, for plausible `status.atProvider.id`s.
_ID_PREFIX = {
    "VPC": "vpc-",
    "Subnet": "subnet-",
    "InternetGateway": "igw-",
    "NATGateway": "nat-",
    "EIP": "eipalloc-",
    "RouteTable": "rtb-",
    "SecurityGroup": "sg-",
    "FileSystem": "fs-",
    "MountTarget": "fsmt-",
}


def reported_at_provider(obj: Resource, digest: str) -> dict[str, Any]:
    """What provider-upjet-aws reports: ids, an ACTIVE cluster and node group, the
    cluster's endpoint and security group (EFS mount targets join it)."""
    kind = str(obj.get("kind", ""))
    name = str((obj.get("metadata") or {}).get("name", ""))
    at: dict[str, Any] = {"id": _ID_PREFIX[kind] + digest if kind in _ID_PREFIX else name}
    if kind == "Cluster":
        at.update(
            status="ACTIVE",
            endpoint=f"https://{digest.upper()}.gr7.eks.amazonaws.com",
            vpcConfig={"clusterSecurityGroupId": "sg-" + short_hash(name, "cluster-sg", length=17)},
        )
    elif kind == "NodeGroup":
        at["status"] = "ACTIVE"
    elif kind == "ClusterAuth":
        # ClusterAuth reports only when it last signed the token.
        return {"lastRefreshTime": REPORTED_REFRESH_TIME}
    return at


def reported_stockout(obj: Resource, cluster: str, zone: str) -> str:
    """EKS's message for a node group Auto Scaling could not launch for lack of capacity."""
    for_provider = (obj.get("spec") or {}).get("forProvider") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    instance = (for_provider.get("instanceTypes") or ["the requested"])[0]
    return (
        f"async create failed: waiting for EKS Node Group ({cluster}:{name}) create: "
        "unexpected state 'CREATE_FAILED', wanted target 'ACTIVE'. last error: "
        "AsgInstanceLaunchFailures: Could not launch On-Demand Instances. "
        f"InsufficientInstanceCapacity - We currently do not have sufficient {instance} "
        f"capacity in the Availability Zone you requested ({zone})."
    )


def reported_connection(obj: Resource, lookup: Lookup) -> dict[str, str]:
    """What provider-upjet-aws writes for a ClusterAuth: a kubeconfig with a signed
    token, the endpoint and the CA; no other kind here writes connection details."""
    if obj.get("kind") != "ClusterAuth":
        return {}
    for_provider = (obj.get("spec") or {}).get("forProvider") or {}
    cluster = str((for_provider.get("clusterNameRef") or {}).get("name", ""))
    endpoint = str(lookup("Cluster", cluster).get("endpoint", ""))
    ca = simulated_ca(cluster)
    # The token is `k8s-aws-v1.` and a presigned sts:GetCallerIdentity URL.
    token = "k8s-aws-v1." + short_hash(cluster, "token", length=32)
    return {
        "kubeconfig": kubeconfig_text(cluster, endpoint, ca, {"token": token}),
        "endpoint": endpoint,
        "clusterCA": ca,
    }


PROVISIONER = Provisioner(
    CLOUD,
    compose,
    ProviderReports(reported_at_provider, reported_stockout, reported_connection),
)
