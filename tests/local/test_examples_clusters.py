"""examples/clusters: provisioned clusters end to end (issues 13 and 23's acceptance).

An EKS and a GKE cluster, each with two GPU pools, an AKS cluster with one,
their ServingStacks, a simulated stock-out (us-east's h100 pool) and a drifted
pool (eu-west's l4), a deployment that would spread over the first two and one
only the AKS cluster's A10s fit.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api import constants as c
from modelplane.api.clouds import cloud_named
from modelplane.api.readers import read_inference_cluster
from modelplane.local import ControlPlane, Key, RenderResult, load_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "clusters"
NS = c.SYSTEM_NAMESPACE


@pytest.fixture(scope="module")
def rendered() -> RenderResult:
    return ControlPlane(load_paths([EXAMPLE])).run(50)


def _cond(obj: dict[str, Any] | None, type_: str) -> tuple[str, str, str]:
    assert obj is not None
    for cond in obj["status"]["conditions"]:
        if cond["type"] == type_:
            return cond["status"], cond["reason"], cond.get("message", "")
    raise AssertionError(type_)


def _clusters_of(replicas: list[dict[str, Any]], deployment: str) -> list[str]:
    """The clusters a deployment's replicas run on, sorted."""
    return sorted(
        r["spec"]["clusterName"] for r in replicas if r["spec"]["deploymentName"] == deployment
    )


def _cluster(rendered: RenderResult, name: str) -> dict[str, Any]:
    obj = rendered.get(c.API_VERSION, "InferenceCluster", name)
    assert obj is not None
    return obj


def test_every_cluster_is_provisioned_reachable_and_serves_a_stack(rendered: RenderResult) -> None:
    for name, kind in (
        ("us-east", "EKSCluster"),
        ("eu-west", "GKECluster"),
        ("us-central", "AKSCluster"),
    ):
        cluster = _cluster(rendered, name)
        assert rendered.get(c.INFRA_API_VERSION, kind, name, NS) is not None
        assert rendered.get(c.INFRA_API_VERSION, "ServingStack", name, NS) is not None
        observed = read_inference_cluster(cluster)
        assert observed is not None and observed.provider_config_name == f"modelplane-{name}"
        assert _cond(cluster, "ServingStackReady")[:2] == ("True", "Ready")
        for api_version in (c.PROVIDER_KUBERNETES_API_VERSION, c.PROVIDER_HELM_API_VERSION):
            pc = rendered.get(api_version, "ClusterProviderConfig", f"modelplane-{name}")
            assert pc is not None
            assert pc["spec"]["credentials"]["secretRef"] == {
                "namespace": NS,
                "name": f"{name}-kubeconfig",
                "key": "kubeconfig",
            }
    kai = rendered.get(c.PROVIDER_HELM_API_VERSION, "Release", "us-east-kai-scheduler", NS)
    assert kai is not None  # spec.scheduling names KAI with install: true


def test_a_stocked_out_pool_names_zone_and_accelerator_and_publishes_the_nodes_up(
    rendered: RenderResult,
) -> None:
    us_east = _cluster(rendered, "us-east")
    assert _cond(us_east, "InsufficientGPUCapacity") == (
        "True",
        "StockOut",
        "pool 'h100': the cloud has no nvidia-h100-80gb capacity in zone us-east-1a; "
        "0 of 2 node(s) up",
    )
    observed = read_inference_cluster(us_east)
    assert observed is not None
    nodes = {p.name: p.nodes for p in observed.pools}
    assert nodes == {"h100": 0, "l40s": 2}
    eu_west = _cluster(rendered, "eu-west")
    assert _cond(eu_west, "InsufficientGPUCapacity")[:2] == ("False", "CapacityAvailable")


def test_new_replicas_go_to_the_other_cluster_and_the_explanation_says_why(
    rendered: RenderResult,
) -> None:
    replicas = rendered.store.list(c.API_VERSION, "ModelReplica", "ml-team", None)
    assert _clusters_of(replicas, "llama-70b") == ["eu-west", "eu-west"]
    from click.testing import CliRunner

    from modelplane.cli.main import cli

    out = (
        CliRunner()
        .invoke(
            cli,
            ["explain", str(EXAMPLE), "--deployment", "ml-team/llama-70b"],
            env={"COLUMNS": "400"},
        )
        .output
    )
    line = next(x for x in out.splitlines() if "us-east" in x and "h100" in x)
    assert "InsufficientCapacity" in line and "0 free" in line
    assert "cloud stock-out: pool 'h100'" in line and "us-east-1a" in line


def test_the_drifted_pool_names_device_capacity_and_both_values(rendered: RenderResult) -> None:
    assert _cond(_cluster(rendered, "eu-west"), "HardwareDrift") == (
        "True",
        "Drifted",
        "pool 'l4' device 'gpu': capacity memory is 23034Mi on 2 node(s), the class declares 24Gi",
    )
    assert _cond(_cluster(rendered, "us-east"), "HardwareDrift")[:2] == ("False", "NoDrift")


def _order(result: RenderResult) -> dict[Key, int]:
    """The wave each deleted object went in."""
    return {key: i for i, wave in enumerate(result.deletions) for key in wave.keys}


def _last_managed(order: dict[Key, int], group_suffix: str) -> list[Key]:
    """The cloud's managed resources in the last wave that deleted any of them."""
    cloud = {k: i for k, i in order.items() if k.api_version.endswith(group_suffix)}
    last = max(cloud.values())
    return [k for k, i in cloud.items() if i == last]


def _delete_cluster(objects: list[dict[str, Any]], name: str) -> tuple[RenderResult, list[Key]]:
    """Render, delete one InferenceCluster, render again; also the workload Objects it ran."""
    plane = ControlPlane(objects)
    before = plane.run(50)
    workloads = [
        Key(c.PROVIDER_KUBERNETES_API_VERSION, "Object", "ml-team", f"{Key.of(r).name}-deployment")
        for r in before.store.list(c.API_VERSION, "ModelReplica", "ml-team", None)
        if r["spec"]["clusterName"] == name
    ]
    plane.delete(Key(c.API_VERSION, "InferenceCluster", "", name))
    return plane.run(50), workloads


def test_deleting_an_eks_cluster_goes_workloads_releases_node_groups_cluster_network() -> None:
    # Without the stock-out one replica lands on us-east; deleting us-east
    # moves it (the deployment re-places it) and tears the cluster down in the
    # order the composed Usages allow, as the real control plane would.
    objects = [
        o for o in load_paths([EXAMPLE]) if not o["metadata"]["name"].startswith("render-stock-out")
    ]
    result, workloads = _delete_cluster(objects, "us-east")
    assert result.stuck == [] and workloads
    order = _order(result)
    helm, ec2, eks = (
        c.PROVIDER_HELM_API_VERSION,
        "ec2.aws.m.upbound.io/v1beta1",
        "eks.aws.m.upbound.io/v1beta1",
    )
    releases = [
        order[Key(helm, "Release", NS, f"us-east-{r}")]
        for r in ("nvidia-dra-driver", "leaderworkerset", "envoy-gateway")
    ]
    # The workloads are Deployments: they use the DRA driver and the gateway,
    # not the LeaderWorkerSet controller (no Usage holds that one for them).
    used = [
        order[Key(helm, "Release", NS, f"us-east-{r}")]
        for r in ("nvidia-dra-driver", "envoy-gateway")
    ]
    groups = [
        order[Key(eks, "NodeGroup", NS, f"us-east-{g}")]
        for g in ("pool-h100", "pool-l40s", "system")
    ]
    control_plane = order[Key(eks, "Cluster", NS, "us-east-eks")]
    # What releases and workloads need goes after the system node group they
    # run on, and before the control plane it belongs to.
    cluster_children = [
        order[Key(api, kind, NS, f"us-east-{name}")]
        for api, kind, name in (
            (eks, "AccessEntry", "access-0"),
            (eks, "AccessPolicyAssociation", "access-0"),
            (eks, "Addon", "aws-ebs-csi-driver"),
            (eks, "Addon", "aws-efs-csi-driver"),
            ("efs.aws.m.upbound.io/v1beta1", "MountTarget", "efs-us-east-1a"),
        )
    ]
    # The control plane goes before its IAM and all of its network, the nodes'
    # egress path included.
    iam = "iam.aws.m.upbound.io/v1beta1"
    after_control_plane = [
        order[Key(api, kind, NS, f"us-east-{name}")]
        for api, kind, name in (
            (iam, "Role", "cluster"),
            (iam, "Role", "node"),
            (iam, "RolePolicyAttachment", "cluster-amazoneksclusterpolicy"),
            (iam, "RolePolicyAttachment", "node-amazoneksworkernodepolicy"),
            (iam, "RolePolicyAttachment", "node-amazoneks-cni-policy"),
            (ec2, "Subnet", "private-us-east-1a"),
            (ec2, "Subnet", "private-us-east-1b"),
            (ec2, "Subnet", "public-us-east-1a"),
            (ec2, "Subnet", "public-us-east-1b"),
            (ec2, "RouteTableAssociation", "private-us-east-1a"),
            (ec2, "RouteTableAssociation", "private-us-east-1b"),
            (ec2, "Route", "private-default"),
            (ec2, "RouteTable", "private"),
            (ec2, "NATGateway", "nat"),
            (ec2, "EIP", "nat"),
            (ec2, "Route", "public-default"),
            (ec2, "InternetGateway", "igw"),
        )
    ]
    # IAM refuses to delete a role with attached policies; the NAT gateway
    # keeps its address, subnet and internet route until it is gone.
    assert (
        order[Key(iam, "Role", NS, "us-east-node")]
        > order[Key(iam, "RolePolicyAttachment", NS, "us-east-node-amazoneks-cni-policy")]
    )
    nat = order[Key(ec2, "NATGateway", NS, "us-east-nat")]
    assert nat < min(
        order[Key(ec2, kind, NS, f"us-east-{name}")]
        for kind, name in (
            ("EIP", "nat"),
            ("Subnet", "public-us-east-1a"),
            ("Route", "public-default"),
        )
    )
    assert max(order[w] for w in workloads) < min(used)
    assert max(releases) < min(groups)
    assert groups[-1] < min(cluster_children) and max(cluster_children) < control_plane
    assert max(groups) < control_plane < min(after_control_plane)
    vpc = Key(ec2, "VPC", NS, "us-east-vpc")
    assert _last_managed(order, ".aws.m.upbound.io/v1beta1") == [vpc]
    # The deployment re-placed the replica it lost: both now run on eu-west.
    replicas = result.store.list(c.API_VERSION, "ModelReplica", "ml-team", None)
    assert _clusters_of(replicas, "llama-70b") == ["eu-west", "eu-west"]
    assert not [k for k in result.store if k.name.startswith("us-east")]


def test_deleting_a_gke_cluster_goes_workloads_releases_node_pools_cluster_network() -> None:
    # With the stock-out both replicas run on eu-west and have nowhere else to
    # go: the deployment drops them, then the cluster comes down in order.
    result, workloads = _delete_cluster(load_paths([EXAMPLE]), "eu-west")
    assert result.stuck == [] and len(workloads) == 2
    order = _order(result)
    helm, container = c.PROVIDER_HELM_API_VERSION, "container.gcp.m.upbound.io/v1beta1"
    releases = [
        order[Key(helm, "Release", NS, f"eu-west-{r}")]
        for r in ("nvidia-dra-driver", "leaderworkerset", "envoy-gateway")
    ]
    # The workloads are Deployments: they use the DRA driver and the gateway,
    # not the LeaderWorkerSet controller (no Usage holds that one for them).
    used = [
        order[Key(helm, "Release", NS, f"eu-west-{r}")]
        for r in ("nvidia-dra-driver", "envoy-gateway")
    ]
    pools = [
        order[Key(container, "NodePool", NS, f"eu-west-{p}")]
        for p in ("pool-a100", "pool-l4", "system")
    ]
    control_plane = order[Key(container, "Cluster", NS, "eu-west-gke")]
    compute = "compute.gcp.m.upbound.io/v1beta1"
    after_control_plane = [
        order[Key(api, kind, NS, f"eu-west-{name}")]
        for api, kind, name in (
            ("cloudplatform.gcp.m.upbound.io/v1beta1", "ServiceAccount", "nodes"),
            (compute, "Subnetwork", "nodes"),
            (compute, "RouterNAT", "nat"),
            (compute, "Router", "router"),
        )
    ]
    assert max(order[w] for w in workloads) < min(used)
    assert max(releases) < min(pools)
    assert max(pools) < control_plane < min(after_control_plane)
    nat, router = after_control_plane[2:]
    assert nat < router
    network = Key(compute, "Network", NS, "eu-west-network")
    assert _last_managed(order, ".gcp.m.upbound.io/v1beta1") == [network]


def test_the_aks_cluster_takes_the_replica_only_its_a10s_fit(rendered: RenderResult) -> None:
    replicas = rendered.store.list(c.API_VERSION, "ModelReplica", "ml-team", None)
    assert _clusters_of(replicas, "qwen-7b") == ["us-central"]
    stack = rendered.get(c.INFRA_API_VERSION, "ServingStack", "us-central", NS)
    assert stack is not None and stack["spec"]["cloud"] == "AKS"
    classes = {
        o["spec"]["forProvider"]["manifest"]["metadata"]["name"]: o["spec"]["forProvider"][
            "manifest"
        ]["provisioner"]
        for o in rendered.store.list(c.PROVIDER_KUBERNETES_API_VERSION, "Object", NS, None)
        if o["metadata"]["name"].startswith("us-central-modelplane-")
    }
    assert classes == {
        "modelplane-shared": "file.csi.azure.com",
        "modelplane-block": "disk.csi.azure.com",
    }


def test_deleting_an_aks_cluster_goes_pools_cluster_identity_network_group() -> None:
    result, workloads = _delete_cluster(load_paths([EXAMPLE]), "us-central")
    assert result.stuck == [] and len(workloads) == 1
    order = _order(result)
    cs, net = "containerservice.azure.m.upbound.io/v1beta1", "network.azure.m.upbound.io/v1beta1"
    releases = [
        order[Key(c.PROVIDER_HELM_API_VERSION, "Release", NS, f"us-central-{r}")]
        for r in ("nvidia-dra-driver", "leaderworkerset", "envoy-gateway")
    ]
    pool = order[Key(cs, "KubernetesClusterNodePool", NS, "us-central-pool-a10")]
    control_plane = order[Key(cs, "KubernetesCluster", NS, "us-central-aks")]
    after_control_plane = [
        order[Key(api, kind, NS, f"us-central-{name}")]
        for api, kind, name in (
            ("authorization.azure.m.upbound.io/v1beta1", "RoleAssignment", "network-contributor"),
            ("managedidentity.azure.m.upbound.io/v1beta1", "UserAssignedIdentity", "identity"),
            (net, "Subnet", "nodes"),
            (net, "VirtualNetwork", "vnet"),
        )
    ]
    # The workload is a Deployment: it uses the DRA driver and the gateway,
    # not the LeaderWorkerSet controller (no Usage holds that one for it).
    used = [
        order[Key(c.PROVIDER_HELM_API_VERSION, "Release", NS, f"us-central-{r}")]
        for r in ("nvidia-dra-driver", "envoy-gateway")
    ]
    assert max(order[w] for w in workloads) < min(used)
    assert max(releases) < pool < control_plane < min(after_control_plane)
    group = Key("azure.m.upbound.io/v1beta1", "ResourceGroup", NS, "us-central-rg")
    assert _last_managed(order, "azure.m.upbound.io/v1beta1") == [group]
    assert not [k for k in result.store if k.name.startswith("us-central")]


# What each real upjet provider writes into the Secret the cluster's providers
# read, from the providers' sources (provider-upjet-aws ClusterAuth controller,
# provider-upjet-gcp and provider-upjet-azure `config/container*/config.go`):
# cluster → (the kind that owns the Secret, its keys, the identity the provider
# configs add, what the kubeconfig's user carries).
REAL_CONNECTION = {
    "us-east": (
        "ClusterAuth",
        {"kubeconfig", "endpoint", "clusterCA"},
        None,
        {"token"},
    ),
    "eu-west": (
        "Cluster",
        {"kubeconfig"},
        {"type": "GoogleApplicationCredentials", "source": "InjectedIdentity"},
        set(),
    ),
    "us-central": (
        "KubernetesCluster",
        {
            "kubeconfig",
            "kubeconfig.clustercacertificate",
            "kubeconfig.clientcertificate",
            "kubeconfig.clientkey",
        },
        None,
        {"client-certificate-data", "client-key-data"},
    ),
}


@pytest.mark.parametrize("name", sorted(REAL_CONNECTION))
def test_provider_configs_read_what_the_real_provider_writes(
    rendered: RenderResult, name: str
) -> None:
    owner_kind, keys, identity, user_fields = REAL_CONNECTION[name]
    for api_version in (c.PROVIDER_KUBERNETES_API_VERSION, c.PROVIDER_HELM_API_VERSION):
        config = rendered.get(api_version, "ClusterProviderConfig", f"modelplane-{name}")
        assert config is not None, api_version
        ref = config["spec"]["credentials"]["secretRef"]
        assert config["spec"]["credentials"]["source"] == "Secret"
        assert ref["key"] == "kubeconfig"
        assert config["spec"].get("identity") == identity
        secret = rendered.get("v1", "Secret", ref["name"], ref["namespace"])
        assert secret is not None
        (owner,) = secret["metadata"]["ownerReferences"]
        assert owner["kind"] == owner_kind
        assert set(secret["data"]) == keys
        cloud = cloud_named(_cluster(rendered, name)["spec"]["source"])
        assert cloud is not None and set(cloud.connection_keys) == keys
        kubeconfig = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
        (user,) = kubeconfig["users"]
        assert set(user["user"] or {}) == user_fields
        (cluster,) = kubeconfig["clusters"]
        assert cluster["cluster"]["server"].startswith("https://")
        assert cluster["cluster"]["certificate-authority-data"]


def test_the_eks_control_plane_writes_no_kubeconfig(rendered: RenderResult) -> None:
    # provider-upjet-aws publishes none for an EKS Cluster: only ClusterAuth does.
    eks = rendered.get("eks.aws.m.upbound.io/v1beta1", "Cluster", "us-east-eks", NS)
    assert eks is not None
    assert "writeConnectionSecretToRef" not in eks["spec"]
    auth = rendered.get("eks.aws.m.upbound.io/v1beta1", "ClusterAuth", "us-east-auth", NS)
    assert auth is not None
    assert auth["spec"]["forProvider"]["refreshPeriod"] == "10m0s"


def test_every_cluster_has_its_own_gateway_address(rendered: RenderResult) -> None:
    """Three clusters whose Gateways share namespace and name: three load balancers,
    three addresses (a render once gave them one, so they looked like one cluster)."""
    addresses = {
        name: _cluster(rendered, name)["status"]["gatewayAddress"]
        for name in ("us-east", "eu-west", "us-central")
    }
    assert all(addresses.values())
    assert len(set(addresses.values())) == 3, addresses


def test_gateway_addresses_stay_distinct_when_their_names_collide() -> None:
    from modelplane.local.gateway_sim import ADDRESSES, allocate, gateway_address

    taken: set[str] = set()
    # Many clusters' Gateways of one namespace/name: every one gets its own.
    for i in range(300):
        preferred = gateway_address("modelplane-system", "modelplane-inference", f"c{i}")
        address = allocate(preferred, None, taken)
        assert address not in taken and address in ADDRESSES
        taken.add(address)
    assert len(taken) == 300
    # A Gateway keeps the address it has while nobody else holds it.
    assert allocate(ADDRESSES[0], "192.0.2.7", {"192.0.2.8"}) == "192.0.2.7"
    assert allocate(ADDRESSES[0], "192.0.2.7", {"192.0.2.7", ADDRESSES[0]}) == ADDRESSES[1]
