"""InferenceCluster ← the inventory agent's ConfigMap: observation, drift, unschedulable replicas.

The composer composes an Observe-only Object of the ConfigMap once the cluster
is reachable and reads its summary: HardwareDrift from the device shapes,
`status.unschedulableReplicas` from its list; anything missing or malformed
leaves HardwareDrift Unknown with the field named.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from modelplane.api.inventory_summary import summarize
from modelplane.api.readers import read_inference_cluster, read_unschedulable
from modelplane.compose.clusters import inference_cluster
from modelplane.compose.types import ComposeInput, ComposeResult

GPU = {
    "name": "gpu",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 2,
    "capacity": {"memory": {"value": "80Gi"}},
}
CLASS = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "h100"},
    "spec": {"devices": [GPU]},
}
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "kc", "namespace": "fleet"},
    "data": {"config": "eA=="},
}
REQUIRED = {"class-h100": [CLASS], "kubeconfig-secret": [SECRET]}

# Written by hand: what the composer must ask provider-kubernetes to observe.
OBSERVATION = {
    "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
    "kind": "Object",
    "metadata": {
        "name": "east-inventory",
        "namespace": "modelplane-system",
        "labels": {
            "modelplane.ai/cluster": "east",
            "modelplane.ai/component": "inventory",
            "app.kubernetes.io/managed-by": "modelplane",
        },
        "annotations": {"crossplane.io/external-name": "east-inventory"},
        "finalizers": ["finalizer.managedresource.crossplane.io"],
    },
    "spec": {
        "managementPolicies": ["Observe"],
        "forProvider": {
            "manifest": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "modelplane-inventory", "namespace": "modelplane-system"},
            }
        },
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "modelplane-east"},
        # Watched: the agent's reports reach the cluster as they are written, not
        # at provider-kubernetes' next poll (10 minutes by default).
        "watch": True,
        # Never met on the cluster: provider-kubernetes re-observes a not-Ready
        # Object every 30 s, which makes this Object the reachability probe.
        "readiness": {"policy": "DeriveFromCelQuery", "celQuery": "false"},
    },
}


def _cluster(**spec: Any) -> dict[str, Any]:
    body = {
        "source": "Existing",
        "existing": {"kubeconfigSecretRef": {"namespace": "fleet", "name": "kc", "key": "config"}},
        "pools": [{"name": "h100", "className": "h100", "nodeCount": 2}],
        **spec,
    }
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "east"},
        "spec": body,
    }


def _observed(data: Any) -> dict[str, Any]:
    """The observation as provider-kubernetes reports it, with the ConfigMap's `data`."""
    obj = copy.deepcopy(OBSERVATION)
    live = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
    if data is not None:
        live["data"] = data
    obj["status"] = {"atProvider": {"manifest": live}}
    return obj


def _node(name: str, ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"modelplane.ai/pool": "h100"}},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def _slice(node: str, memory: str) -> dict[str, Any]:
    devices = [{"name": f"g{i}", "capacity": {"memory": {"value": memory}}} for i in range(2)]
    return {"spec": {"driver": "gpu.nvidia.com", "nodeName": node, "devices": devices}}


STUCK_POD = {
    "metadata": {"labels": {"modelplane.ai/replica": "chat-1a2b3c4d"}},
    "spec": {"nodeSelector": {"modelplane.ai/pool": "h100"}},
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 cannot allocate all claims",
                "lastTransitionTime": "2026-03-01T11:00:00Z",
            }
        ],
    },
}


def _data(memory: str = "80Gi", pods: list[dict[str, Any]] | None = None) -> dict[str, str]:
    nodes = [_node("n1"), _node("n2", "False")]
    slices = [_slice("n1", memory), _slice("n2", memory)]
    return summarize(nodes, slices, pods or [], "2026-03-01T12:00:00Z", 300).to_data()


def _compose(xr: dict[str, Any], observed: dict[str, Any] | None = None) -> ComposeResult:
    return inference_cluster.compose(ComposeInput(xr, observed or {}, REQUIRED))


def _cond(res: ComposeResult, type_: str) -> tuple[str, str, str]:
    (cond,) = [x for x in res.conditions if x.type == type_]
    return cond.status, str(cond.reason), cond.message


def test_a_reachable_cluster_observes_the_agents_configmap() -> None:
    res = _compose(_cluster())
    assert res.desired["inventory"].resource == OBSERVATION
    assert res.desired["inventory"].ready == "False"  # not observed yet
    assert _cond(res, "HardwareDrift") == (
        "Unknown",
        "NotObserved",
        "ConfigMap modelplane-system/modelplane-inventory is not observed yet",
    )
    # Observing is read-only: no required resources list the cluster's nodes.
    assert set(res.requirements) == {"class-h100", "kubeconfig-secret"}


def test_an_unreachable_cluster_is_not_observed() -> None:
    xr = _cluster()
    res = inference_cluster.compose(ComposeInput(xr, {}, {**REQUIRED, "kubeconfig-secret": []}))
    assert "inventory" not in res.desired
    assert _cond(res, "HardwareDrift") == (
        "Unknown",
        "NotObserved",
        "waiting for the cluster to be reachable",
    )


def test_no_drift_and_no_unschedulable_replicas() -> None:
    res = _compose(_cluster(), {"inventory": _observed(_data())})
    assert res.desired["inventory"].ready == "True"
    assert _cond(res, "HardwareDrift") == (
        "False",
        "NoDrift",
        "the published ResourceSlices match every pool's class",
    )
    assert "unschedulableReplicas" not in res.status


def test_drift_names_pool_device_capacity_and_both_values() -> None:
    res = _compose(_cluster(), {"inventory": _observed(_data("40Gi"))})
    assert _cond(res, "HardwareDrift") == (
        "True",
        "Drifted",
        "pool 'h100' device 'gpu': capacity memory is 40Gi on 2 node(s), the class declares 80Gi",
    )
    assert [(e.severity, e.reason) for e in res.events] == [("Warning", "Drifted")]
    # Placement keeps the class: the published pool is unchanged.
    observed = read_inference_cluster({**_cluster(), "status": res.status})
    assert observed is not None
    pool = observed.pool("h100")
    assert pool is not None and pool.devices[0]["capacity"] == {"memory": {"value": "80Gi"}}


def test_unschedulable_replicas_reach_the_status_in_the_shape_the_scheduler_reads() -> None:
    res = _compose(_cluster(), {"inventory": _observed(_data(pods=[STUCK_POD]))})
    assert res.status["unschedulableReplicas"] == [
        {
            "replica": "chat-1a2b3c4d",
            "pool": "h100",
            "pods": 1,
            "since": "2026-03-01T11:00:00Z",
            "message": "0/2 nodes are available: 2 cannot allocate all claims",
        }
    ]
    stuck = read_unschedulable(res.status)["chat-1a2b3c4d"]
    assert (stuck.pool, stuck.pods, stuck.since) == ("h100", 1, "2026-03-01T11:00:00Z")


@pytest.mark.parametrize(
    ("data", "reason", "message"),
    [
        (
            None,
            "NotObserved",
            "ConfigMap modelplane-system/modelplane-inventory data[inventory.json]: missing",
        ),
        (
            {"other": "x"},
            "NotObserved",
            "ConfigMap modelplane-system/modelplane-inventory data[inventory.json]: missing",
        ),
        (
            {"inventory.json": "{"},
            "InventoryInvalid",
            "ConfigMap modelplane-system/modelplane-inventory data[inventory.json]: not JSON: "
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (
            {"inventory.json": json.dumps({"observedAt": "t", "pools": [{"name": "h100"}]})},
            "InventoryInvalid",
            "ConfigMap modelplane-system/modelplane-inventory "
            "data[inventory.json].pools[0].nodes: Field required; "
            "data[inventory.json].pools[0].readyNodes: Field required",
        ),
    ],
)
def test_a_missing_or_malformed_inventory_is_unknown_naming_the_field(
    data: Any, reason: str, message: str
) -> None:
    res = _compose(_cluster(), {"inventory": _observed(data)})
    assert _cond(res, "HardwareDrift") == ("Unknown", reason, message)
    assert "unschedulableReplicas" not in res.status
    assert res.fatal is None and "inventory" in res.desired  # kept: it only observes
    if reason == "InventoryInvalid":
        assert [(e.severity, e.reason) for e in res.events] == [("Warning", "InventoryInvalid")]


@pytest.mark.parametrize(
    "stack",
    [
        {"inventory": {"enabled": False}},
        {"enabled": False},  # the platform team's stack: no agent unless it says so
    ],
)
def test_no_agent_no_observation(stack: dict[str, Any]) -> None:
    res = _compose(_cluster(servingStack=stack))
    assert "inventory" not in res.desired
    status, reason, message = _cond(res, "HardwareDrift")
    assert (status, reason) == ("Unknown", "NotObserved")
    assert "spec.servingStack.inventory.enabled is false" in message


def test_a_platform_run_agent_is_observed_without_the_stack() -> None:
    res = _compose(_cluster(servingStack={"enabled": False, "inventory": {"enabled": True}}))
    assert res.desired["inventory"].resource == OBSERVATION
    assert "serving-stack" not in res.desired


def test_the_stack_gets_the_inventory_settings() -> None:
    res = _compose(_cluster(servingStack={"inventory": {"unschedulableAfter": "10m"}}))
    stack = res.desired["serving-stack"].resource
    assert stack["spec"]["inventory"] == {
        "enabled": True,
        "unschedulableAfter": "10m",
        "interval": "60s",
        "engineMetrics": False,
    }
