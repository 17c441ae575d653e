"""AKSCluster composer: table tests of what it composes, the deletion order its Usages
give, readiness and stock-outs; every composed resource checked by the schema oracle."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.compose.clusters.clouds import aks
from modelplane.compose.clusters.clouds.provisioned import INVENTORY_REQUIREMENT, SECRET_REQUIREMENT
from modelplane.compose.types import ComposeInput, ComposeResult

NS = "modelplane-system"
FETCHED: dict[str, list[dict[str, Any]]] = {SECRET_REQUIREMENT: [], INVENTORY_REQUIREMENT: []}
COMPOSITE: dict[str, Any] = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "AKSCluster",
    "metadata": {"name": "us-central", "namespace": NS},
    "spec": {
        "clusterName": "us-central",
        "location": "centralus",
        "zones": ["1", "2"],
        "csiDrivers": ["SharedFilesystem", "BlockDevice"],
        "pools": [
            {
                "name": "h100",
                "vmSize": "Standard_NC40ads_H100_v5",
                "accelerator": {"type": "nvidia-h100-nvl", "count": 1},
                "nodeCount": 1,
                "maxNodeCount": 4,
            },
            {"name": "cpu-pool", "vmSize": "Standard_D8s_v5", "nodeCount": 2, "zone": "2"},
        ],
    },
}
# What Azure reports once the identity and the subnet exist.
REPORTED = {
    "identity": {"status": {"atProvider": {"principalId": "11111111-2222-3333-4444-555555555555"}}},
    "subnet": {"status": {"atProvider": {"id": "/subscriptions/s/resourceGroups/rg/subnet"}}},
}


def _compose(
    spec: dict[str, Any] | None = None, observed: dict[str, Any] | None = None
) -> ComposeResult:
    composite = copy.deepcopy(COMPOSITE)
    composite["spec"].update(spec or {})
    return aks.compose(ComposeInput(composite, observed or {}, FETCHED))


def _for_provider(res: ComposeResult, key: str) -> dict[str, Any]:
    body: dict[str, Any] = res.desired[key].resource["spec"]["forProvider"]
    return body


def test_composes_group_network_identity_control_plane_and_one_pool_per_pool() -> None:
    res = _compose()
    assert res.fatal is None
    managed = {k for k, d in res.desired.items() if d.resource["kind"] != "Usage"}
    assert managed == {
        "resource-group",
        "virtual-network",
        "subnet",
        "identity",
        "cluster",
        "nodepool-h100",
        "nodepool-cpu-pool",
    }
    cluster = _for_provider(res, "cluster")
    assert cluster["defaultNodePool"]["name"] == "system"
    assert cluster["defaultNodePool"]["zones"] == ["1", "2"]
    assert cluster["storageProfile"] == {"fileDriverEnabled": True, "diskDriverEnabled": True}
    assert cluster["identity"]["type"] == "UserAssigned"
    # Pinned: AKS's own default may predate DRA's resource.k8s.io/v1 (GA from 1.34).
    assert cluster["kubernetesVersion"] == "1.36"
    secret = res.desired["cluster"].resource["spec"]["writeConnectionSecretToRef"]
    assert secret == {"name": "us-central-kubeconfig"}


@pytest.mark.parametrize(
    ("spec", "version"), [({}, "1.36"), ({"kubernetesVersion": "1.35"}, "1.35")]
)
def test_the_control_plane_and_every_node_pool_run_the_pinned_version(
    spec: dict[str, Any], version: str
) -> None:
    """AKS would otherwise pick its recommended version for the control plane and for
    each node pool (the CRD's words), which may not serve DRA v1."""
    res = _compose(spec)
    assert _for_provider(res, "cluster")["kubernetesVersion"] == version
    for pool in ("h100", "cpu-pool"):
        assert _for_provider(res, f"nodepool-{pool}")["orchestratorVersion"] == version


def test_an_inference_cluster_without_a_version_asks_for_the_pinned_one() -> None:
    from modelplane.api.clouds.aks import AKSSource

    source = AKSSource.model_validate({"location": "centralus"})
    assert source.composite_spec("c", [])["kubernetesVersion"] == "1.36"
    pinned = AKSSource.model_validate({"location": "centralus", "kubernetesVersion": "1.35"})
    assert pinned.composite_spec("c", [])["kubernetesVersion"] == "1.35"


@pytest.mark.parametrize(
    ("pool", "labels", "taints", "driver"),
    [
        (
            "h100",
            {"modelplane.ai/pool": "h100", "nvidia.com/gpu.present": "true"},
            ["nvidia.com/gpu=present:NoSchedule"],
            "Install",
        ),
        ("cpu-pool", {"modelplane.ai/pool": "cpu-pool"}, None, None),
    ],
)
def test_gpu_pools_carry_label_taint_and_driver_cpu_pools_only_the_label(
    pool: str, labels: dict[str, str], taints: list[str] | None, driver: str | None
) -> None:
    body = _for_provider(_compose(), f"nodepool-{pool}")
    assert (body["nodeLabels"], body.get("nodeTaints"), body.get("gpuDriver")) == (
        labels,
        taints,
        driver,
    )


@pytest.mark.parametrize(
    ("pool", "sizing", "init", "zones"),
    [
        # Autoscaled: the autoscaler owns the count, which only starts it.
        (
            "h100",
            {"autoScalingEnabled": True, "minCount": 1, "maxCount": 4},
            {"nodeCount": 1},
            ["1"],
        ),
        # Fixed size, in the pool's own zone.
        ("cpu-pool", {"nodeCount": 2}, None, ["2"]),
    ],
)
def test_sizing_and_zone(
    pool: str, sizing: dict[str, Any], init: dict[str, Any] | None, zones: list[str]
) -> None:
    resource = _compose().desired[f"nodepool-{pool}"].resource
    body = resource["spec"]["forProvider"]
    assert {k: body[k] for k in sizing} == sizing
    assert resource["spec"].get("initProvider") == init
    assert body["zones"] == zones


@pytest.mark.parametrize(
    ("pool", "azure_name"),
    [
        ("h100", "h100"),
        ("a10", "a10"),
        ("cpu-pool", "pcpupool" + aks.short_hash("cpu-pool", length=4)),
        ("system", "psystem" + aks.short_hash("system", length=4)),
        ("averyverylongpoolname", "paveryve" + aks.short_hash("averyverylongpoolname", length=4)),
        ("9lives", "p9lives" + aks.short_hash("9lives", length=4)),
    ],
)
def test_agent_pool_names_are_what_azure_allows(pool: str, azure_name: str) -> None:
    name = aks.agent_pool_name(pool)
    assert name == azure_name
    assert len(name) <= 12 and name[0].isalpha() and name.isalnum() and name.islower()


def test_the_role_assignment_waits_for_the_identitys_principal_and_the_subnets_id() -> None:
    assert "role-assignment" not in _compose().desired
    assert "role-assignment" not in _compose(observed={"identity": REPORTED["identity"]}).desired
    body = _for_provider(_compose(observed=REPORTED), "role-assignment")
    assert body["principalId"] == "11111111-2222-3333-4444-555555555555"
    assert body["scope"] == "/subscriptions/s/resourceGroups/rg/subnet"
    assert body["roleDefinitionName"] == "Network Contributor"


@pytest.mark.parametrize(
    ("key", "status"),
    [
        ("identity", None),
        ("identity", {"atProvider": None}),
        ("identity", {"atProvider": {"principalId": 7}}),
        ("subnet", "not a mapping"),
        ("subnet", {"atProvider": {"id": ["a", "list"]}}),
    ],
)
def test_an_unreadable_report_keeps_the_role_assignment_as_composed(key: str, status: Any) -> None:
    """Found by the XR fuzz: a malformed identity or subnet status withdrew the role
    assignment and the Usages ordering its deletion."""
    composed = _compose(observed=REPORTED)
    observed = {
        **REPORTED,
        "role-assignment": composed.desired["role-assignment"].resource,
        key: {"status": status},
    }
    res = _compose(observed=observed)
    assert _for_provider(res, "role-assignment") == _for_provider(composed, "role-assignment")
    assert _usages(res) == _usages(composed)


def test_an_existing_subnet_composes_no_network_and_scopes_the_role_to_it() -> None:
    subnet = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/vnets/v/subnets/n"
    res = _compose(
        {"network": {"existing": {"subnetId": subnet}}},
        observed={"identity": REPORTED["identity"]},
    )
    assert "virtual-network" not in res.desired and "subnet" not in res.desired
    assert _for_provider(res, "role-assignment")["scope"] == subnet
    assert _for_provider(res, "nodepool-h100")["vnetSubnetId"] == subnet
    assert _for_provider(res, "cluster")["defaultNodePool"]["vnetSubnetId"] == subnet


def _usages(res: ComposeResult) -> set[tuple[str, str]]:
    """(of, by) names of every Usage: `of` is deleted only after `by`."""
    out = set()
    for d in res.desired.values():
        if d.resource["kind"] == "Usage":
            spec = d.resource["spec"]
            out.add((spec["of"]["resourceRef"]["name"], spec["by"]["resourceRef"]["name"]))
    return out


def test_usages_order_deletion_pools_control_plane_identity_network_group() -> None:
    assert _usages(_compose(observed=REPORTED)) == {
        ("us-central-aks", "us-central-pool-h100"),
        ("us-central-aks", "us-central-pool-cpu-pool"),
        ("us-central-nodes", "us-central-aks"),
        ("us-central-identity", "us-central-aks"),
        ("us-central-network-contributor", "us-central-aks"),
        ("us-central-identity", "us-central-network-contributor"),
        ("us-central-vnet", "us-central-nodes"),
        ("us-central-rg", "us-central-vnet"),
        ("us-central-rg", "us-central-identity"),
    }


def _ready() -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_the_system_pool_is_the_control_planes_so_its_readiness_counts() -> None:
    res = _compose()
    observed = {k: {**d.resource, **_ready()} for k, d in res.desired.items()}
    ready = aks.compose(ComposeInput(copy.deepcopy(COMPOSITE), observed, FETCHED))
    (cond,) = [x for x in ready.conditions if x.type == "NodePoolsReady"]
    assert cond.status == "True"
    del observed["cluster"]
    waiting = aks.compose(ComposeInput(copy.deepcopy(COMPOSITE), observed, FETCHED))
    (cond,) = [x for x in waiting.conditions if x.type == "NodePoolsReady"]
    assert (cond.status, cond.message) == ("False", "node pool(s) not Ready: system")


def test_a_stocked_out_pool_names_its_zone_as_aks_labels_it() -> None:
    res = _compose()
    pool = res.desired["nodepool-h100"].resource
    message = aks.reported_stockout(pool, "us-central", "centralus-1")
    observed = {
        "nodepool-h100": {"status": {"conditions": [{"type": "Synced", "message": message}]}}
    }
    out = aks.compose(ComposeInput(copy.deepcopy(COMPOSITE), observed, FETCHED))
    (cond,) = [x for x in out.conditions if x.type == "InsufficientGPUCapacity"]
    assert (cond.status, cond.message) == (
        "True",
        "pool 'h100': the cloud has no nvidia-h100-nvl capacity in zone centralus-1; "
        "0 of 1 node(s) up",
    )


@pytest.mark.parametrize(
    "observed", [{}, REPORTED], ids=["before-azure-reports", "after-azure-reports"]
)
def test_composed_resources_pass_the_oracles(observed: dict[str, Any], oracle: Any) -> None:
    res = _compose(observed=observed)
    for key, desired in res.desired.items():
        assert [str(i) for i in oracle.validate(desired.resource)] == [], key
