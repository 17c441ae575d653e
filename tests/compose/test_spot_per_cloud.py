"""Spot per cloud: one answer per pool (`InferenceClassSpec.pool_capacity`), composed into
each cloud's node pool and published for the scheduler (issue 41, item 2).

Each case takes a class provisioned on one cloud and a pool of it, builds the
provisioning composite's pool entry the InferenceCluster composer builds
(`infra.node_pools`), composes that composite with the cloud's composer and
reads the node pool's `forProvider`: EKS `capacityType: SPOT`, GKE
`nodeConfig.spot: true`, AKS `priority: Spot` with an eviction policy. The
expected fields are the providers' own (provider-upjet-aws NodeGroup,
provider-upjet-gcp NodePool, provider-upjet-azure KubernetesClusterNodePool).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api.clouds import aks as aks_api
from modelplane.api.clouds import eks as eks_api
from modelplane.api.clouds import gke as gke_api
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import Pool
from modelplane.compose.clusters.clouds import aks, eks, gke
from modelplane.compose.clusters.clouds.provisioned import INVENTORY_REQUIREMENT, SECRET_REQUIREMENT
from modelplane.compose.clusters.infra import node_pools
from modelplane.compose.types import ComposeInput

Obj = dict[str, Any]
HERE = Path(__file__).resolve().parent
FETCHED: dict[str, list[Obj]] = {SECRET_REQUIREMENT: [], INVENTORY_REQUIREMENT: []}
DEVICES = [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]

BLOCKS: dict[str, Obj] = {
    "EKS": {"instanceType": "g6e.12xlarge", "accelerator": {"type": "nvidia-l40s", "count": 4}},
    "GKE": {"machineType": "g2-standard-48", "accelerator": {"type": "nvidia-l4", "count": 4}},
    "AKS": {"vmSize": "Standard_NV36ads_A10_v5", "accelerator": {"type": "nvidia-a10", "count": 1}},
}
COMPOSERS = {"EKS": eks.compose, "GKE": gke.compose, "AKS": aks.compose}
CLOUDS = {"EKS": eks_api.CLOUD, "GKE": gke_api.CLOUD, "AKS": aks_api.CLOUD}
AKS_COMPOSITE: Obj = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "AKSCluster",
    "metadata": {"name": "us-central", "namespace": "modelplane-system"},
    "spec": {"clusterName": "us-central", "location": "centralus", "zones": ["1", "2"]},
}
# What each cloud's node pool says about Spot, and what it says without it.
SPOT = {
    "EKS": {"capacityType": "SPOT"},
    "GKE": {"spot": True},
    "AKS": {"priority": "Spot", "evictionPolicy": "Delete", "spotMaxPrice": -1},
}


def _composite(cloud: str) -> Obj:
    if cloud == "AKS":
        return copy.deepcopy(AKS_COMPOSITE)
    path = HERE / "expected" / "provisioning" / f"{cloud.lower()}.yaml"
    composite: Obj = yaml.safe_load(path.read_text())["composite"]
    return composite


def _klass(cloud: str, capacity: str | None = None, block: Obj | None = None) -> InferenceClassSpec:
    spec: Obj = {
        "devices": DEVICES,
        "provisioning": {"provider": cloud, cloud.lower(): {**BLOCKS[cloud], **(block or {})}},
    }
    if capacity is not None:
        spec["capacityType"] = capacity
    return InferenceClassSpec.model_validate(spec)


def _node_pool(cloud: str, klass: InferenceClassSpec, capacity: str | None) -> Obj:
    """The cloud's node pool body for one pool `p` of `klass`."""
    pool = Pool.model_validate(
        {"name": "p", "className": "k", "nodeCount": 1, "capacityType": capacity}
        if capacity
        else {"name": "p", "className": "k", "nodeCount": 1}
    )
    entries, problems = node_pools(CLOUDS[cloud], [pool], {"k": klass})
    assert problems == []
    composite = _composite(cloud)
    composite["spec"]["pools"] = entries
    res = COMPOSERS[cloud](ComposeInput(composite, {}, FETCHED))
    assert res.fatal is None
    body: Obj = res.desired["nodepool-p"].resource["spec"]["forProvider"]
    return body.get("nodeConfig", body) if cloud == "GKE" else body


def _spot_fields(cloud: str, body: Obj) -> Obj:
    return {k: body[k] for k in SPOT[cloud] if k in body}


@pytest.mark.parametrize("cloud", ["EKS", "GKE", "AKS"])
@pytest.mark.parametrize(
    ("class_capacity", "pool_capacity", "spot"),
    [
        (None, None, False),
        ("Spot", None, True),  # the class's
        (None, "Spot", True),  # the pool's
        ("Spot", "OnDemand", False),  # the pool overrides its class
    ],
)
def test_capacity_type_spot_buys_spot_nodes_on_every_cloud(
    cloud: str, class_capacity: str | None, pool_capacity: str | None, spot: bool
) -> None:
    klass = _klass(cloud, class_capacity)
    body = _node_pool(cloud, klass, pool_capacity)
    assert _spot_fields(cloud, body) == (SPOT[cloud] if spot else {})
    # The scheduler reads the same answer from the pool's published capacityType.
    assert (klass.pool_capacity(pool_capacity) == "Spot") is spot


@pytest.mark.parametrize("cloud", ["GKE", "AKS"])
def test_a_class_asking_its_cloud_for_spot_vms_is_spot_for_the_scheduler(cloud: str) -> None:
    # No capacityType anywhere, but the provisioning block buys Spot VMs: Spot it is,
    # so a deployment without allowSpot is not placed there.
    klass = _klass(cloud, None, {"spot": True})
    assert klass.pool_capacity(None) == "Spot"
    assert klass.pool_capacity("OnDemand") == "Spot"  # what the cloud sells wins
    assert _spot_fields(cloud, _node_pool(cloud, klass, None)) == SPOT[cloud]
