"""The typed readers: every kind read through one tolerant reader in `api`."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api.inference_class import Device
from modelplane.api.inference_cluster import GPUPool, InferenceClusterStatus
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.readers import (
    MAX_WORKERS,
    ObservedPool,
    Unknown,
    read_inference_cluster,
    read_model_deployment,
    read_model_replica,
    read_published_pools,
)
from modelplane.api.reasons import UnknownReason
from modelplane.crossplane.convert import freeze

GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}
ENGINE = {"spec": {"containers": [{"name": "engine", "image": "x"}]}}


def _cluster(pools: Any, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "east", "labels": {"region": "eu"}},
        "spec": spec,
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "gpuPools": pools,
            "providerConfigName": "modelplane-east",
            "gatewayAddress": "east.example.com",
        },
    }


def test_a_written_status_reads_back_as_written() -> None:
    status = InferenceClusterStatus(
        gpu_pools=[
            GPUPool(name="l4", class_name="l4-1x", nodes=3, devices=[Device.model_validate(GPU)]),
            GPUPool(
                name="h100",
                class_name="h100-8x",
                nodes=2,
                reason=UnknownReason.CLASS_NOT_FOUND,
                message="InferenceClass 'h100-8x' not found",
            ),
        ],
        provider_config_name="modelplane-east",
        gateway_address="east.example.com",
    ).to_dict()
    cl = read_inference_cluster({"metadata": {"name": "east"}, "status": status})
    assert cl is not None
    assert cl.provider_config_name == "modelplane-east"
    assert cl.gateway_address == "east.example.com"
    assert [p.name for p in cl.pools] == ["h100", "l4"]
    h100, l4 = cl.pools
    assert h100 == ObservedPool(
        "h100",
        "h100-8x",
        2,
        (),
        Unknown(UnknownReason.CLASS_NOT_FOUND, "InferenceClass 'h100-8x' not found"),
    )
    assert l4.known and l4.nodes == 3
    assert l4.devices == [{**GPU, "claim": "DRA", "count": 1}]


def test_the_wire_names_are_the_contract() -> None:
    # Renaming a status field changes what every older writer and reader
    # exchanges: it must break this test, not quietly give pools 0 nodes.
    pool = GPUPool(name="p", class_name="k", nodes=1, devices=[]).to_dict()
    assert sorted(pool) == ["className", "devices", "name", "nodes"]
    status = InferenceClusterStatus(gpu_pools=[], provider_config_name="x", gateway_address="y")
    assert sorted(status.to_dict()) == ["gatewayAddress", "gpuPools", "providerConfigName"]


@pytest.mark.parametrize(
    ("entry", "reason", "message"),
    [
        ({"name": "p", "className": "k", "devices": []}, "Unreadable", "gpuPools[0].nodes"),
        ({"name": "p", "nodes": "x", "devices": []}, "Unreadable", "gpuPools[0].nodes"),
        ({"name": "p", "nodes": -1, "devices": []}, "Unreadable", "gpuPools[0].nodes"),
        ({"name": "p", "nodes": 2, "devices": "nope"}, "Unreadable", "gpuPools[0].devices"),
        ({"name": "p", "nodes": 2, "devices": [None]}, "Unreadable", "gpuPools[0].devices"),
        ({"name": "p", "nodes": 2, "reason": "Whatever"}, "Unreadable", "unknown"),
        (
            {"name": "p", "nodes": 2, "reason": "InvalidClass", "message": "class k is invalid"},
            "InvalidClass",
            "class k is invalid",
        ),
    ],
)
def test_a_malformed_pool_is_unknown_never_absent(
    entry: dict[str, Any], reason: str, message: str
) -> None:
    cl = read_inference_cluster(_cluster([entry]))
    assert cl is not None and cl.published
    (pool,) = cl.pools
    assert pool.name == "p" and not pool.known
    assert pool.unknown is not None
    assert pool.unknown.reason == reason
    assert message in pool.unknown.message


def test_unnamed_entries_and_bad_taints_are_listed_as_unreadable() -> None:
    cl = read_inference_cluster(
        _cluster(
            [{"nodes": 1}, "junk", {"name": "ok", "nodes": 1, "devices": [GPU]}],
            taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "Sometimes"}],
        )
    )
    assert cl is not None
    assert [p.name for p in cl.pools] == ["ok"]
    assert [t.key for t in cl.taints] == ["a"]
    assert cl.pools_unreadable
    assert cl.unreadable[:2] == (
        "status.gpuPools[0]: no pool name",
        "status.gpuPools[1]: no pool name",
    )
    assert cl.unreadable[2].startswith("spec.taints[1].effect")


@pytest.mark.parametrize(
    "obj",
    [{}, {"metadata": "x"}, {"metadata": {"name": 3}}, {"metadata": {"name": ""}}],
)
def test_a_cluster_without_a_name_is_none(obj: dict[str, Any]) -> None:
    assert read_inference_cluster(obj) is None


def test_a_non_list_gpu_pools_is_unreadable_not_empty() -> None:
    cl = read_inference_cluster(_cluster("nope"))
    assert cl is not None and not cl.published and cl.pools_unreadable


def test_spec_blocks_are_typed_and_an_invalid_one_is_reported() -> None:
    cl = read_inference_cluster(
        _cluster(
            [],
            gateway={"name": "gw", "namespace": "infra"},
            scheduling={"defaultLabels": {"team": "{{ .Secret }}"}},
        )
    )
    assert cl is not None
    assert cl.gateway is not None and cl.gateway.name == "gw"
    assert cl.scheduling is None
    assert cl.scheduling_error is not None
    assert cl.scheduling_error.startswith("spec.scheduling.defaultLabels")


def _replica(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "r", "namespace": "ns", **meta},
        "spec": {"deploymentName": "d", "clusterName": "east", "index": 0, **spec},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "endpoint": "/x"},
    }


def test_replica_roles_are_read_at_their_wire_paths() -> None:
    role = {
        "nodePoolName": "l4",
        "deviceRequests": [
            {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": "true"}]}
        ],
        "workers": {"count": 2, "topology": {"pipeline": 2}, "template": ENGINE},
    }
    unified = read_model_replica(_replica(role))
    assert unified is not None and unified.ready and unified.endpoint == "/x"
    (only,) = unified.roles
    assert (only.role, only.pool, only.workers, only.nodes_per_worker) == ("unified", "l4", 2, 2)
    assert only.request_key == (("gpu.nvidia.com", 1, ("true",)),)
    disagg = read_model_replica(
        _replica({"prefill": role, "decode": {**role, "nodePoolName": "h"}})
    )
    assert disagg is not None
    assert [(r.role, r.pool) for r in disagg.roles] == [("prefill", "l4"), ("decode", "h")]


def test_observed_numbers_are_clamped_to_the_api_limits() -> None:
    huge = {
        "nodePoolName": "l4",
        "workers": {"count": 10**6, "topology": {"pipeline": 10**9, "data": 5000}},
    }
    r = read_model_replica(_replica(huge))
    assert r is not None
    (role,) = r.roles
    assert role.workers == MAX_WORKERS == 1024
    assert role.nodes_per_worker == 1024 * 1024


def test_replica_identity_falls_back_to_labels() -> None:
    obj = {
        "metadata": {
            "name": "r",
            "namespace": "ns",
            "labels": {
                c.LABEL_CLUSTER: "short",
                c.LABEL_DEPLOYMENT: "d",
                "modelplane.ai/replica-index": "3",
            },
        },
        "spec": {},
    }
    r = read_model_replica(obj, {"short": "a-very-long-cluster"})
    assert r is not None
    assert (r.cluster, r.deployment, r.index, r.deployment_is_label) == (
        "a-very-long-cluster",
        "d",
        3,
        True,
    )
    assert r.belongs_to("ns", "d") and not r.roles
    assert read_model_replica({"metadata": {"name": "x"}}) is None


def test_deployment_status_reader_keeps_good_entries_and_lists_bad_ones() -> None:
    obj = {
        "metadata": {"name": "d", "namespace": "ns"},
        "status": {
            "replicas": 1,
            "conditions": [{"type": "Scheduled", "status": "False", "reason": "Partial"}],
            "placements": [
                {"cluster": "a", "index": 0, "replicaName": "r", "pools": [], "ready": True},
                {"cluster": "b"},
            ],
        },
    }
    d = read_model_deployment(obj)
    assert d.status.replicas == 1
    assert [p.cluster for p in d.status.placements or []] == ["a"]
    assert d.unreadable and "placements[1]" in d.unreadable[0]
    cond = d.condition("Scheduled")
    assert cond is not None and cond.reason == "Partial"
    assert read_model_deployment({}).status.replicas is None


def test_roles_carry_their_wire_paths() -> None:
    role = {
        "nodeSelector": {"devices": [{"name": "gpu", "selectors": [{"cel": "true"}]}]},
        "workers": {"template": ENGINE},
    }
    unified = ModelDeploymentSpec.model_validate(role).roles()
    assert [(r.name, r.node_selector_path, r.workers_path) for r in unified.values()] == [
        ("unified", "spec.nodeSelector", "spec.workers")
    ]
    disagg = ModelDeploymentSpec.model_validate({"prefill": role, "decode": role}).roles()
    assert [(r.name, r.node_selector_path) for r in disagg.values()] == [
        ("prefill", "spec.prefill.nodeSelector"),
        ("decode", "spec.decode.nodeSelector"),
    ]
    replica = ModelReplicaSpec.model_validate(
        {
            "deploymentName": "d",
            "clusterName": "c",
            "index": 0,
            "prefill": {"nodePoolName": "a", "workers": {"template": ENGINE}},
            "decode": {"nodePoolName": "b", "workers": {"template": ENGINE}},
        }
    ).roles()
    assert [(r.name, r.workers_path) for r in replica.values()] == [
        ("prefill", "spec.prefill.workers"),
        ("decode", "spec.decode.workers"),
    ]
    # The role objects never leak into what is written.
    assert "path" not in replica["prefill"].to_dict()


@pytest.mark.parametrize(
    ("stack", "backends", "error"),
    [
        (None, {"Native"}, False),
        ({}, {"Native"}, False),
        ({"kserve": {"enabled": False}}, {"Native"}, False),
        ({"kserve": {"enabled": True}}, {"Native", "KServe"}, False),
        ({"enabled": False, "kserve": {"enabled": True}}, {"Native", "KServe"}, False),
        ({"kserve": {"enabled": "maybe"}}, None, True),
    ],
)
def test_read_backends(stack: Any, backends: set[str] | None, error: bool) -> None:
    from modelplane.api.readers import read_backends

    spec = {} if stack is None else {"servingStack": stack}
    got, err = read_backends(spec)
    assert (set(got) if got is not None else None) == backends
    assert (err is not None) == error
    if err is not None:
        assert "spec.servingStack.kserve.enabled" in err


def test_unschedulable_replicas_are_read_by_name_and_malformed_entries_skipped() -> None:
    from modelplane.api.readers import StuckReplica, read_inference_cluster

    obj = {
        "metadata": {"name": "east"},
        "status": {
            "unschedulableReplicas": [
                {
                    "replica": "llama-0",
                    "pool": "h100",
                    "pods": 2,
                    "since": "2026-11-23T10:00:00Z",
                    "message": "0/4 nodes are available",
                },
                {"pool": "h100"},
                "junk",
                {"replica": "llama-1", "pods": "x"},
            ]
        },
    }
    cluster = read_inference_cluster(obj)
    assert cluster is not None
    assert dict(cluster.unschedulable) == {
        "llama-0": StuckReplica(
            "llama-0", "h100", 2, "2026-11-23T10:00:00Z", "0/4 nodes are available"
        ),
        "llama-1": StuckReplica("llama-1", None, 1, "", ""),
    }


def test_a_read_only_replica_is_read_once_and_a_label_lookup_every_time() -> None:
    role = {"nodePoolName": "l4", "deviceRequests": [{"deviceClassName": "gpu.nvidia.com"}]}
    frozen = freeze(_replica(role))
    first = read_model_replica(frozen)
    assert first is not None and read_model_replica(frozen, {"x": "y"}) is first
    plain = _replica(role)
    assert read_model_replica(plain) == first and read_model_replica(plain) is not first
    # Known by labels alone, the cluster depends on the lookup passed in: never remembered.
    by_label = freeze(
        {
            "metadata": {
                "name": "r",
                "namespace": "ns",
                "labels": {c.LABEL_CLUSTER: "short", c.LABEL_DEPLOYMENT: "d"},
            },
            "spec": role,
        }
    )
    a, b = (
        read_model_replica(by_label, {"short": "a"}),
        read_model_replica(by_label, {"short": "b"}),
    )
    assert a is not None and b is not None and (a.cluster, b.cluster) == ("a", "b")
    assert len(a.roles) == 1 and a.roles is b.roles  # the spec's reading is the object's own


@pytest.mark.parametrize(
    "obj",
    [
        _cluster([{"name": "l4", "className": "l4-1x", "nodes": 3, "devices": [GPU]}]),
        _cluster(
            [
                {"name": "b", "nodes": 1, "devices": [GPU], "pricePerDeviceHour": 2.5},
                {"nodes": 1},
                {"name": "a", "nodes": 2.0, "devices": "junk"},
                {"name": "b", "nodes": 9, "devices": []},  # a second "b": the first is kept
                {"name": "u", "nodes": 1, "reason": "ClassNotFound", "message": "gone"},
            ],
            taints=[{"key": "b", "effect": "Sometimes"}],  # the rest of the spec is not read
        ),
        _cluster("nope"),
        {"metadata": {"name": "east"}},
        {"metadata": {"name": ""}, "status": {"gpuPools": [{"name": "x", "nodes": 1}]}},
    ],
)
def test_the_published_pools_alone_read_as_the_whole_reading_has_them(obj: dict[str, Any]) -> None:
    whole = read_inference_cluster(obj)
    expected = {p.name: p for p in whole.pools} if whole is not None else {}
    assert read_published_pools(obj) == expected
    assert read_published_pools(freeze(obj)) == expected
