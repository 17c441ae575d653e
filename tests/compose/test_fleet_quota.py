"""The FleetQuota composer: request → status (used / hard per limit) and WithinQuota,
against hand-counted devices."""

from __future__ import annotations

from typing import Any

from modelplane.compose.deployments import fleet_quota
from modelplane.compose.types import ComposeInput, ComposeResult

API = "modelplane.ai/v1alpha1"
H100 = {
    "name": "gpu",
    "claim": "DRA",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 8,
    "capacity": {"memory": {"value": "80Gi"}},
}


def _quota(name: str, h100: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "FleetQuota",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"limits": [{"name": "h100", "inferenceClasses": ["h100-8x"], "devices": h100}]},
    }


CLUSTER = {
    "apiVersion": API,
    "kind": "InferenceCluster",
    "metadata": {"name": "east"},
    "status": {
        "gpuPools": [{"name": "h100", "className": "h100-8x", "nodes": 4, "devices": [H100]}]
    },
}


def _replica(name: str, count: int, pipeline: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {
            "deploymentName": name,
            "clusterName": "east",
            "index": 0,
            "nodePoolName": "h100",
            "deviceRequests": [
                {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": count,
                 "selectors": [{"cel": "true"}]}
            ],
            "workers": {"count": 1, "topology": {"pipeline": pipeline}},
        },
    }  # fmt: skip


def _run(xr: dict[str, Any], *others: dict[str, Any], fetched: bool = True) -> ComposeResult:
    required = (
        {
            "inference-clusters": [CLUSTER],
            # 8 + 2 nodes × 4 = 16 devices
            "model-replicas": [_replica("a", 8), _replica("b", 4, pipeline=2)],
            "fleet-quotas": [xr, *others],
        }
        if fetched
        else {}
    )
    return fleet_quota.compose(ComposeInput(composite=xr, required=required))


def _cond(result: ComposeResult, type_: str) -> tuple[Any, ...]:
    found = [c for c in result.conditions if c.type == type_]
    assert len(found) == 1
    return found[0].status, found[0].reason, found[0].message


def test_first_call_asks_for_the_namespaces_replicas_and_the_clusters() -> None:
    result = _run(_quota("q", 16), fetched=False)
    assert {k: (r.kind, r.namespace) for k, r in result.requirements.items()} == {
        "inference-clusters": ("InferenceCluster", None),
        "model-replicas": ("ModelReplica", "team-a"),
    }
    assert result.status in (None, {})


def test_within_limits() -> None:
    result = _run(_quota("q", 16))
    assert result.status == {"used": [{"name": "h100", "used": 16, "hard": 16}]}
    assert _cond(result, "WithinQuota") == (
        "True",
        "WithinLimits",
        "FleetQuota q limit h100: 16/16 devices",
    )
    assert result.ready == "True"


def test_a_limit_below_use_says_nothing_is_deleted() -> None:
    result = _run(_quota("q", 10))
    assert result.status == {"used": [{"name": "h100", "used": 16, "hard": 10}]}
    status, reason, message = _cond(result, "WithinQuota")
    assert (status, reason) == ("False", "OverLimit")
    assert message.startswith("FleetQuota q limit h100: 16/10 devices: nothing is deleted")


def test_a_second_quota_in_the_namespace_reports_its_own_limits() -> None:
    # Every FleetQuota counts (issue 40): a second one is not silenced.
    result = _run(_quota("b", 10), _quota("a", 16))
    assert result.status == {"used": [{"name": "h100", "used": 16, "hard": 10}]}
    assert _cond(result, "WithinQuota")[:2] == ("False", "OverLimit")
