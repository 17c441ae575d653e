"""Rendering provisioned clusters: simulated clouds, a stock-out, providers, deletion order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from oracles import CONFORMANCE

from modelplane.api.provisioning import read_provisioned_cluster
from modelplane.local import ControlPlane, Key, RenderResult, load_paths
from modelplane.local.output import write_output_dir

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "clusters"
INFRA = "infrastructure.modelplane.ai/v1alpha1"
NS = "modelplane-system"


@pytest.fixture(scope="module")
def rendered() -> RenderResult:
    return ControlPlane(load_paths([FIXTURE])).run()


def _cond(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    for c in obj["status"]["conditions"]:
        if c["type"] == type_:
            return c["status"], c["reason"], c.get("message", "")
    raise AssertionError(type_)


def test_simulated_clouds_bring_clusters_up_and_write_their_kubeconfig(
    rendered: RenderResult,
) -> None:
    gke = rendered.get(INFRA, "GKECluster", "eu-west", NS)
    assert gke is not None
    assert _cond(gke, "Ready")[0] == "True"
    view = read_provisioned_cluster(gke)
    assert view.reachable
    secret = rendered.get("v1", "Secret", "eu-west-kubeconfig", NS)
    assert secret is not None and "kubeconfig" in secret["data"]
    pool = view.pool("a100")
    assert pool is not None and (pool.nodes_up, pool.ready) == (1, True)


def test_a_simulated_stock_out_names_pool_zone_accelerator_and_nodes_up(
    rendered: RenderResult,
) -> None:
    eks = rendered.get(INFRA, "EKSCluster", "us-east", NS)
    assert eks is not None
    status, reason, message = _cond(eks, "InsufficientGPUCapacity")
    assert (status, reason) == ("True", "StockOut")
    assert message == (
        "pool 'h100': the cloud has no nvidia-h100-80gb capacity in zone us-east-1a; "
        "1 of 2 node(s) up"
    )
    view = read_provisioned_cluster(eks)
    h100, l4 = view.pool("h100"), view.pool("l4")
    assert h100 is not None and l4 is not None
    assert (h100.nodes_up, h100.ready) == (1, False)
    assert (l4.nodes_up, l4.ready, l4.stock_out) == (3, True, None)
    # Reachable all the same: the control plane is up, only a pool is short.
    assert view.reachable


def test_output_dir_writes_managed_resources_per_provider(
    rendered: RenderResult, tmp_path: Path
) -> None:
    write_output_dir(rendered, tmp_path)
    providers = {p.name for p in (tmp_path / "providers").iterdir()}
    assert providers == {"provider-upjet-aws", "provider-upjet-gcp", "provider-helm"}
    aws = tmp_path / "providers" / "provider-upjet-aws"
    assert (aws / "nodegroup" / NS / "us-east-pool-h100.yaml").is_file()
    assert (tmp_path / "providers" / "provider-upjet-gcp" / "nodepool" / NS).is_dir()
    if not (CONFORMANCE / "check.py").is_file():
        pytest.skip("schema oracles not found")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [
            sys.executable,
            str(CONFORMANCE / "check.py"),
            "--quiet",
            "--xrd",
            "package/configuration/apis",
            str(tmp_path),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if "ModuleNotFoundError" in proc.stderr:
        pytest.skip("conformance requirements not installed")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.strip().splitlines()[-1].endswith(" 0 invalid")


def _deleted(*keys: Key) -> RenderResult:
    """A fresh render of the fixture, then the deletion of `keys`, to a fixed point."""
    plane = ControlPlane(load_paths([FIXTURE]))
    plane.run()
    plane.delete(*keys)
    return plane.run()


def test_deleting_the_cluster_and_its_stack_goes_releases_pools_control_plane_network() -> None:
    result = _deleted(
        Key(INFRA, "EKSCluster", NS, "us-east"), Key(INFRA, "ServingStack", NS, "us-east")
    )
    assert result.stuck == []
    order = {key: i for i, wave in enumerate(result.deletions) for key in wave.keys}

    def wave(api_version: str, kind: str, name: str) -> int:
        return order[Key(api_version, kind, NS, name)]

    release = wave("helm.m.crossplane.io/v1beta1", "Release", "us-east-nvidia-dra-driver")
    gateway = wave("kubernetes.m.crossplane.io/v1alpha1", "Object", "us-east-gateway")
    envoy = wave("helm.m.crossplane.io/v1beta1", "Release", "us-east-envoy-gateway")
    pool = wave("eks.aws.m.upbound.io/v1beta1", "NodeGroup", "us-east-pool-h100")
    system = wave("eks.aws.m.upbound.io/v1beta1", "NodeGroup", "us-east-system")
    control_plane = wave("eks.aws.m.upbound.io/v1beta1", "Cluster", "us-east-eks")
    vpc = wave("ec2.aws.m.upbound.io/v1beta1", "VPC", "us-east-vpc")
    subnet = wave("ec2.aws.m.upbound.io/v1beta1", "Subnet", "us-east-private-us-east-1a")
    assert gateway < envoy
    assert release < pool and envoy < system
    assert max(pool, system) < control_plane < min(vpc, subnet)
    # The fixture's inventory Object stands for what the (undeleted) InferenceCluster composes.
    left = [k for k in result.store if k.name.startswith("us-east")]
    assert left == [Key("kubernetes.m.crossplane.io/v1alpha1", "Object", NS, "us-east-inventory")]


def test_a_node_group_a_live_stack_still_uses_is_not_deleted() -> None:
    result = _deleted(Key(INFRA, "EKSCluster", NS, "us-east"))
    stuck = "\n".join(result.stuck)
    for name in ("us-east-pool-h100", "us-east-system", "us-east-eks", "us-east-vpc"):
        assert f"/{name} cannot be deleted" in stuck, name
    (system,) = [
        line
        for line in result.stuck
        if line.startswith("NodeGroup modelplane-system/us-east-system cannot be deleted: ")
    ]
    assert (
        "in use by Release "
        "modelplane-system/us-east-envoy-gateway (Usage modelplane-system/"
        "us-east-usage-envoy-gateway-uses-system), and nothing deletes Release "
        "modelplane-system/us-east-envoy-gateway"
    ) in system
    node_group = Key("eks.aws.m.upbound.io/v1beta1", "NodeGroup", NS, "us-east-system")
    assert node_group in result.store


def test_a_drift_fixture_changes_what_the_simulated_slices_publish() -> None:
    from modelplane.api.inference_class import Device
    from modelplane.compose.clusters.drift import Drift, hardware_drift
    from modelplane.compose.clusters.inventory import inventory_observation, observed_inventory
    from modelplane.local.conditions import Clock
    from modelplane.local.simulate_cloud import simulate_cloud
    from modelplane.local.store import ObjectStore

    gpu = {
        "name": "gpu",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": 2,
        "capacity": {"memory": {"value": "80Gi"}},
    }
    store = ObjectStore()
    store.put(
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "InferenceCluster",
            "metadata": {"name": "us-east"},
            "status": {
                "gpuPools": [{"name": "h100", "className": "h", "nodes": 1, "devices": [gpu]}]
            },
        }
    )
    store.put(
        {
            "apiVersion": "eks.aws.m.upbound.io/v1beta1",
            "kind": "NodeGroup",
            "metadata": {
                "name": "us-east-pool-h100",
                "namespace": NS,
                "labels": {
                    "modelplane.ai/cluster": "us-east",
                    "modelplane.ai/component": "node-pool",
                    "modelplane.ai/pool": "h100",
                },
            },
            "spec": {"forProvider": {"scalingConfig": {"desiredSize": 1}}},
        }
    )
    store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "drift",
                "namespace": NS,
                "labels": {"modelplane.ai/render-fixture": "drift"},
            },
            "data": {
                "cluster": "us-east",
                "pool": "h100",
                "device": "gpu",
                "capacity": "memory",
                "value": "40Gi",
            },
        }
    )
    # The InferenceCluster's observation of the agent's ConfigMap, as the
    # provider-kubernetes simulation leaves it (synced, nothing written yet).
    observation = inventory_observation("us-east", "modelplane-us-east")
    manifest = observation["spec"]["forProvider"]["manifest"]
    observation["status"] = {"atProvider": {"manifest": dict(manifest)}}
    store.put(observation)
    clock = Clock()
    simulate_cloud(store, clock)
    before = store.snapshot()
    simulate_cloud(store, clock)
    assert store.snapshot() == before  # a second pass changes nothing
    (observed,) = [o for o in store.objects() if o["kind"] == "Object"]
    summary, problem = observed_inventory(observed)
    assert summary is not None, problem
    pool = summary.pool("h100")
    assert pool is not None and (pool.nodes, pool.ready_nodes) == (1, 1)
    drifts = hardware_drift("h100", [Device.model_validate(gpu)], pool)
    assert drifts == [Drift("h100", "gpu", "capacity memory", "80Gi", "40Gi")]
