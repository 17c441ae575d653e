"""Builders an InferenceCluster uses for its infrastructure: pools from classes, configs, Usages."""

from __future__ import annotations

import re
from typing import Any

from modelplane.api.clouds.eks import CLOUD as EKS
from modelplane.api.clouds.gke import CLOUD as GKE
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import Pool
from modelplane.api.objects import dns_label
from modelplane.api.provisioning import ProviderIdentity, read_provisioned_cluster
from modelplane.compose.clusters.infra import (
    node_pool_refs,
    node_pools,
    provider_configs,
    published_nodes,
    stockout_messages,
    workload_usage,
)
from modelplane.compose.clusters.managed import resource_name

GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}


def _class(provisioning: dict[str, Any] | None) -> InferenceClassSpec:
    body: dict[str, Any] = {"devices": [GPU]}
    if provisioning:
        body["provisioning"] = provisioning
    return InferenceClassSpec.model_validate(body)


CLASSES = {
    "h100-eks": _class(
        {
            "provider": "EKS",
            "eks": {"instanceType": "p5.48xlarge", "accelerator": {"type": "h100", "count": 8}},
        }
    ),
    "a100-gke": _class(
        {
            "provider": "GKE",
            "gke": {
                "machineType": "a2-highgpu-8g",
                "accelerator": {"type": "nvidia-tesla-a100", "count": 8},
                "spot": True,
            },
        }
    ),
    "byo": _class(None),
}


def test_eks_pools_come_from_the_classes_provisioning_blocks() -> None:
    pools = [
        Pool(name="h100", class_name="h100-eks", node_count=2, max_node_count=4),
        Pool(name="byo", class_name="byo", node_count=1),
        Pool(name="gke", class_name="a100-gke", node_count=1),
    ]
    out, problems = node_pools(EKS, pools, CLASSES)
    assert out == [
        {
            "name": "h100",
            "instanceType": "p5.48xlarge",
            "accelerator": {"type": "h100", "count": 8},
            "nodeCount": 2,
            "maxNodeCount": 4,
        }
    ]
    assert [p.field for p in problems] == ["spec.pools[1].className", "spec.pools[2].className"]
    assert "'byo'" in problems[0].message and "for EKS" in problems[0].message


def test_gke_pools_carry_the_gke_block() -> None:
    out, problems = node_pools(GKE, [Pool(name="a", class_name="a100-gke")], CLASSES)
    assert problems == []
    assert out == [
        {
            "name": "a",
            "machineType": "a2-highgpu-8g",
            "accelerator": {"type": "nvidia-tesla-a100", "count": 8},
            "spot": True,
            "nodeCount": 1,
        }
    ]


def test_node_pool_refs_name_what_the_provisioning_composers_name() -> None:
    refs = node_pool_refs(GKE, "eu-west", [Pool(name="a100", class_name="x")])
    assert [(r.kind, r.name, r.gpu) for r in refs] == [
        ("NodePool", "eu-west-pool-a100", True),
        ("NodePool", "eu-west-system", False),
    ]


def test_provider_configs_for_both_providers_reference_the_secret_only() -> None:
    secret = {"namespace": "modelplane-system", "name": "us-east-kubeconfig", "key": "kubeconfig"}
    out = provider_configs("us-east", "modelplane-us-east", secret)
    assert {o["apiVersion"] for o in out.values()} == {
        "kubernetes.m.crossplane.io/v1alpha1",
        "helm.m.crossplane.io/v1beta1",
    }
    for obj in out.values():
        assert obj["kind"] == "ClusterProviderConfig"
        assert obj["metadata"]["name"] == "modelplane-us-east"
        assert obj["spec"] == {"credentials": {"source": "Secret", "secretRef": secret}}


def test_provider_configs_add_an_identity_beside_the_secret(oracle: Any) -> None:
    secret = {"namespace": "modelplane-system", "name": "eu-west-kubeconfig", "key": "kubeconfig"}
    identity = ProviderIdentity(type="GoogleApplicationCredentials", source="InjectedIdentity")
    out = provider_configs("eu-west", "modelplane-eu-west", secret, identity)
    for obj in out.values():
        assert obj["spec"] == {
            "credentials": {"source": "Secret", "secretRef": secret},
            "identity": {"type": "GoogleApplicationCredentials", "source": "InjectedIdentity"},
        }
        assert [str(i) for i in oracle.validate(obj)] == []


def test_a_stocked_out_pool_publishes_only_the_nodes_up() -> None:
    view = read_provisioned_cluster(
        {
            "status": {
                "pools": [
                    {
                        "name": "h100",
                        "desiredNodes": 2,
                        "nodesUp": 1,
                        "stockOut": {"zone": "us-east-1a", "accelerator": "h100"},
                    },
                    {"name": "l4", "desiredNodes": 3, "nodesUp": 3, "ready": True},
                ]
            }
        }
    )
    h100 = Pool(name="h100", class_name="x", node_count=2, max_node_count=4)
    l4 = Pool(name="l4", class_name="y", node_count=3)
    assert (published_nodes(view, h100), published_nodes(view, l4)) == (1, 3)
    assert stockout_messages(view) == [
        "pool 'h100': the cloud has no h100 capacity in zone us-east-1a; 1 of 2 node(s) up"
    ]


def test_a_workload_usage_points_across_namespaces_at_the_release(oracle: Any) -> None:
    usage = workload_usage("team-a", "chat-abc123-lws", "us-east", "leaderworkerset")
    assert usage["metadata"]["namespace"] == "team-a"
    assert usage["spec"]["of"]["resourceRef"] == {
        "name": "us-east-leaderworkerset",
        "namespace": "modelplane-system",
    }
    assert usage["spec"]["by"]["resourceRef"] == {"name": "chat-abc123-lws"}
    assert [str(i) for i in oracle.validate(usage)] == []


def test_cluster_usages_of_same_named_resources_of_two_kinds_both_survive() -> None:
    from modelplane.compose.clusters.managed import cluster_usage
    from modelplane.compose.objects import Ref

    plan: dict[str, Any] = {}
    eks = Ref("eks.aws.m.upbound.io/v1beta1", "Cluster", "c-eks")
    subnet = Ref("ec2.aws.m.upbound.io/v1beta1", "Subnet", "c-private-a")
    link = Ref("ec2.aws.m.upbound.io/v1beta1", "RouteTableAssociation", "c-private-a")
    cluster_usage(plan, "c", "ns", subnet, eks, "placed in it")
    cluster_usage(plan, "c", "ns", link, eks, "egress")
    assert sorted(plan) == [
        "usage-cluster-eks-uses-routetableassociation-private-a",
        "usage-eks-uses-private-a",
    ]
    assert plan["usage-eks-uses-private-a"]["spec"]["of"]["kind"] == "Subnet"
    of = plan["usage-cluster-eks-uses-routetableassociation-private-a"]["spec"]["of"]
    assert of["kind"] == "RouteTableAssociation"


def test_a_remembered_resource_name_is_the_dns_label_of_its_parts() -> None:
    # Independent expectations first; then each again, from the memo.
    cases = {
        ("c1", "gateway"): "c1-gateway",
        ("c1", "usage", "a-uses-b"): "c1-usage-a-uses-b",
        ("Prod_East", "gateway"): dns_label("Prod_East-gateway"),
        ("x" * 60, "gateway-class"): dns_label("x" * 60 + "-gateway-class"),
        ("9lives", "gateway"): dns_label("9lives-gateway"),
    }
    for _ in range(2):
        for parts, expected in cases.items():
            name = resource_name(*parts)
            assert name == expected
            assert len(name) <= 63 and re.fullmatch(r"[a-z]([a-z0-9-]*[a-z0-9])?", name)
    assert resource_name("Prod_East", "gateway") != "prod-east-gateway"  # hashed: it was altered
