"""The simulated agent's summary, remembered per set of pool plans: as if built per cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelplane.api.inventory_summary import summarize
from modelplane.local import simulate_cloud as sc

H100: dict[str, Any] = {
    "name": "gpu",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "claim": "DRA",
    "count": 8,
    "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}},
    "capacity": {"memory": {"value": "81559Mi"}},
}
L4: dict[str, Any] = {**H100, "count": 2, "attributes": {"productName": {"string": "NVIDIA L4"}}}
NIC: dict[str, Any] = {**H100, "name": "nic", "driver": "rdma.example.com", "count": 1}
DRIFT = ("any", "h100", "gpu", "capacity", "memory", "40Gi")

PLANS: list[list[Any]] = [
    [["h100", 2, None, [H100, NIC], []]],
    [["h100", 3, "us-east-1a", [H100], [list(DRIFT)]], ["l4", 1, None, [L4], []]],
    [["Pool_A", 2, None, [L4], []], ["pool-a", 2, None, [L4], []], ["p-1", 11, None, [L4], []]],
    [["empty", 0, None, [H100], []], ["no-devices", 2, None, [], []]],
]
CLUSTERS = ["c", "cluster-0001", "x" * 60, "Odd_Cluster.Name", "9-starts-with-a-digit"]
PODS: list[dict[str, Any]] = [
    {
        "metadata": {"name": "r-0", "labels": {"modelplane.ai/replica": "r"}},
        "spec": {"nodeSelector": {"modelplane.ai/pool": "h100"}},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/2 nodes are available",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }
]


def _built_for(cluster: str, plans: list[list[Any]], pods: list[Any], now: str) -> str:
    """The summary as the simulated agent of `cluster` would list it: every node by its own name."""
    nodes: list[Any] = []
    slices: list[Any] = []
    for plan in plans:
        more = sc._pool_world(cluster, tuple(plan))
        nodes, slices = nodes + more[0], slices + more[1]
    summary = summarize(nodes, slices, pods, now, 0)
    return json.dumps(summary.model_copy(update={"replicas": None}).to_data())


@pytest.mark.parametrize("plans", PLANS)
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_remembered_summary_is_the_one_built_for_the_cluster(
    plans: list[list[Any]], cluster: str
) -> None:
    for pods, now in (([], "2026-01-01T00:08:00Z"), (PODS, "2026-01-01T01:00:00Z")):
        key = json.dumps([cluster, plans, pods, now, []], sort_keys=True)
        assert sc._summary_text(key) == _built_for(cluster, plans, pods, now)


def test_alike_clusters_build_their_nodes_once() -> None:
    sc._pools_summary.cache_clear()
    plans = PLANS[1]
    for cluster in CLUSTERS:
        key = json.dumps([cluster, plans, [], "2026-01-01T00:00:00Z", []], sort_keys=True)
        sc._summary_text(key)
    info = sc._pools_summary.cache_info()
    assert (info.misses, info.hits) == (1, len(CLUSTERS) - 1)


def test_the_summaries_of_different_plans_differ() -> None:
    texts = {
        sc._summary_text(json.dumps(["c", plans, [], "2026-01-01T00:00:00Z", []], sort_keys=True))
        for plans in PLANS
    }
    assert len(texts) == len(PLANS)
