"""InferenceCluster with source EKS/GKE: provisioning composite, reachability, stack, capacity."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.compose.clusters import inference_cluster
from modelplane.compose.types import ComposeInput, ComposeResult

GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}
H100 = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "h100-eks"},
    "spec": {
        "devices": [GPU],
        "provisioning": {
            "provider": "EKS",
            "eks": {"instanceType": "p5.48xlarge", "accelerator": {"type": "h100", "count": 8}},
        },
    },
}
A100_GKE = {
    **H100,
    "metadata": {"name": "a100-gke"},
    "spec": {
        "devices": [GPU],
        "provisioning": {"provider": "GKE", "gke": {"machineType": "a2-highgpu-8g"}},
    },
}
FETCHED = {"observed-nodes": [], "observed-resourceslices": []}


def _cluster(**spec: Any) -> dict[str, Any]:
    body = {
        "source": "EKS",
        "eks": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "pools": [{"name": "h100", "className": "h100-eks", "nodeCount": 2, "maxNodeCount": 4}],
        **spec,
    }
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "us-east"},
        "spec": body,
    }


def _compose(
    xr: dict[str, Any], observed: dict[str, Any] | None = None, klass: dict[str, Any] = H100
) -> ComposeResult:
    required = {**FETCHED, f"class-{klass['metadata']['name']}": [klass]}
    return inference_cluster.compose(ComposeInput(xr, observed or {}, required))


def _cond(res: ComposeResult, type_: str) -> tuple[str, str, str]:
    (cond,) = [x for x in res.conditions if x.type == type_]
    return cond.status, str(cond.reason), cond.message


REACHABLE = {
    "status": {
        "conditions": [{"type": "Ready", "status": "True"}],
        "reachable": True,
        "kubeconfigSecret": {
            "namespace": "modelplane-system",
            "name": "us-east-kubeconfig",
            "key": "kubeconfig",
        },
        "pools": [{"name": "h100", "desiredNodes": 2, "nodesUp": 2, "ready": True}],
    }
}


def test_composes_the_eks_cluster_from_the_classes_and_publishes_no_config_until_reachable() -> (
    None
):
    res = _compose(_cluster())
    eks = res.desired["infrastructure"].resource
    assert (eks["kind"], eks["metadata"]["namespace"], eks["metadata"]["name"]) == (
        "EKSCluster",
        "modelplane-system",
        "us-east",
    )
    assert eks["spec"]["pools"] == [
        {
            "name": "h100",
            "instanceType": "p5.48xlarge",
            "accelerator": {"type": "h100", "count": 8},
            "nodeCount": 2,
            "maxNodeCount": 4,
        }
    ]
    assert eks["spec"]["kubernetesVersion"] == "1.36"
    stack = res.desired["serving-stack"].resource
    assert stack["kind"] == "ServingStack"
    assert stack["spec"]["providerConfigName"] == "modelplane-us-east"
    assert [p["name"] for p in stack["spec"]["nodePools"]] == [
        "us-east-pool-h100",
        "us-east-system",
    ]
    assert "providerConfigName" not in res.status
    assert not {"provider-config", "provider-config-helm"} & set(res.desired)
    assert _cond(res, "CredentialsResolved")[:2] == ("False", "WaitingForCluster")
    assert res.ready == "False"


def test_reachable_cluster_gets_both_provider_configs_and_publishes_the_name() -> None:
    observed = {
        "infrastructure": {**_compose(_cluster()).desired["infrastructure"].resource, **REACHABLE}
    }
    res = _compose(_cluster(), observed)
    assert res.status["providerConfigName"] == "modelplane-us-east"
    kinds = {
        res.desired[k].resource["apiVersion"] for k in ("provider-config", "provider-config-helm")
    }
    assert kinds == {"kubernetes.m.crossplane.io/v1alpha1", "helm.m.crossplane.io/v1beta1"}
    secret = res.desired["provider-config"].resource["spec"]["credentials"]["secretRef"]
    assert secret == {
        "namespace": "modelplane-system",
        "name": "us-east-kubeconfig",
        "key": "kubeconfig",
    }
    assert _cond(res, "CredentialsResolved")[:2] == ("True", "Resolved")
    assert _cond(res, "InsufficientGPUCapacity")[:2] == ("False", "CapacityAvailable")

    # The cluster becomes unreachable: the configs replicas use are kept, the
    # name is no longer published.
    observed.update(
        {k: res.desired[k].resource for k in ("provider-config", "provider-config-helm")}
    )
    observed["infrastructure"] = {**observed["infrastructure"], "status": {"reachable": False}}
    again = _compose(_cluster(), observed)
    assert {"provider-config", "provider-config-helm"} <= set(again.desired)
    assert "providerConfigName" not in again.status


def test_a_stock_out_publishes_the_nodes_up_and_names_zone_and_accelerator() -> None:
    status = dict(REACHABLE["status"])
    status["pools"] = [
        {
            "name": "h100",
            "desiredNodes": 2,
            "nodesUp": 1,
            "stockOut": {"zone": "us-east-1a", "accelerator": "h100", "message": "..."},
        }
    ]
    observed = {"infrastructure": {"status": status}}
    res = _compose(_cluster(), observed)
    (pool,) = res.status["gpuPools"]
    assert pool["nodes"] == 1
    assert _cond(res, "InsufficientGPUCapacity") == (
        "True",
        "StockOut",
        "pool 'h100': the cloud has no h100 capacity in zone us-east-1a; 1 of 2 node(s) up",
    )
    assert "h100 (h100-eks, 1 nodes)" in _cond(res, "PoolsResolved")[2]


def test_a_disabled_stack_is_not_composed() -> None:
    res = _compose(_cluster(servingStack={"enabled": False}))
    assert "serving-stack" not in res.desired
    assert _cond(res, "ServingStackReady")[:2] == ("True", "Disabled")


def test_the_components_a_cluster_runs_reach_its_stack_once_each_in_order() -> None:
    present = ["EnvoyGateway", "CertManager", "EnvoyGateway"]
    res = _compose(_cluster(servingStack={"present": present}))
    stack = res.desired["serving-stack"].resource
    assert stack["spec"]["present"] == ["CertManager", "EnvoyGateway"]
    assert "present" not in _compose(_cluster()).desired["serving-stack"].resource["spec"]


def test_a_pool_whose_class_provisions_on_another_cloud_holds() -> None:
    xr = _cluster(pools=[{"name": "a100", "className": "a100-gke", "nodeCount": 1}])
    res = _compose(xr, klass=A100_GKE)
    status, reason, message = _cond(res, "PoolsResolved")
    assert (status, reason) == ("False", "NotProvisionable")
    assert "spec.pools[0].className" in message and "for EKS" in message
    assert res.desired == {}


def test_an_eks_cluster_without_zones_holds_naming_the_field() -> None:
    res = _compose(_cluster(eks={"region": "us-east-1"}))
    status, reason, message = _cond(res, "PoolsResolved")
    assert (status, reason) == ("False", "NotProvisionable")
    assert message.startswith("spec.eks")
    assert "zones" in message


def test_gke_storage_pins_the_network_and_kai_installs_when_asked() -> None:
    xr = _cluster(
        source="GKE",
        gke={"project": "p", "region": "europe-west4", "zones": ["europe-west4-a"]},
        pools=[{"name": "a100", "className": "a100-gke", "nodeCount": 1}],
        storage={"csiDrivers": ["SharedFilesystem"]},
        scheduling={"schedulerName": "kai-scheduler", "install": True},
    )
    del xr["spec"]["eks"]
    observed = {"infrastructure": {"status": {"network": "us-east-network"}}}
    res = _compose(xr, observed, klass=A100_GKE)
    gke = res.desired["infrastructure"].resource
    assert gke["kind"] == "GKECluster" and gke["spec"]["csiDrivers"] == ["SharedFilesystem"]
    stack = res.desired["serving-stack"].resource["spec"]
    assert stack["storage"] == {"csiDrivers": ["SharedFilesystem"], "network": "us-east-network"}
    assert stack["gpuScheduler"] == "KAI"
    assert stack["cloud"] == "GKE"


def test_install_asks_the_stack_for_the_scheduler_kueue_and_their_queues() -> None:
    scheduling = {
        "schedulerName": "volcano",
        "install": True,
        "defaultAnnotations": {"scheduling.volcano.sh/queue-name": "{{ .Namespace }}"},
        "defaultLabels": {"kueue.x-k8s.io/queue-name": "{{ .Namespace }}-gpus"},
        "priorityClasses": [{"name": "serving", "value": 1000}],
    }
    stack = _compose(_cluster(scheduling=scheduling)).desired["serving-stack"].resource["spec"]
    assert (stack["gpuScheduler"], stack["kueue"]) == ("Volcano", True)
    assert stack["queues"] == [
        {"system": "Volcano", "template": "{{ .Namespace }}"},
        {"system": "Kueue", "template": "{{ .Namespace }}-gpus"},
    ]
    assert stack["priorityClasses"] == [{"name": "serving", "value": 1000}]
    # install: false (installed by the platform team): no scheduler, no queues;
    # the declared PriorityClasses are still created.
    stack = (
        _compose(_cluster(scheduling={**scheduling, "install": False}))
        .desired["serving-stack"]
        .resource["spec"]
    )
    assert "gpuScheduler" not in stack and "queues" not in stack and not stack["kueue"]
    assert stack["priorityClasses"] == [{"name": "serving", "value": 1000}]


GATEWAY_ADDRESSES = [
    # (spec.gateway.address, what the Gateway reports) → (gatewayAddress, observedGatewayAddress)
    ("llm.example.com", "203.0.113.7", "llm.example.com", "203.0.113.7"),
    ("llm.example.com", None, "llm.example.com", None),
    (None, "203.0.113.7", "203.0.113.7", "203.0.113.7"),
    (None, None, None, None),
]


@pytest.mark.parametrize(("given", "reported", "effective", "observed"), GATEWAY_ADDRESSES)
def test_a_given_gateway_address_wins_and_the_reported_one_is_shown_beside_it(
    given: str | None, reported: str | None, effective: str | None, observed: str | None
) -> None:
    xr = _cluster(**({"gateway": {"address": given}} if given else {}))
    stack = {"status": {"gatewayAddress": reported} if reported else {}}
    res = _compose(xr, {"serving-stack": stack})
    assert res.status.get("gatewayAddress") == effective
    assert res.status.get("observedGatewayAddress") == observed
