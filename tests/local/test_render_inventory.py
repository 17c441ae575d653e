"""The simulated inventory agent: each cluster's observed ConfigMap, by the shared summarizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api.objects import replica_base
from modelplane.api.readers import read_unschedulable
from modelplane.compose.clusters.inventory import observed_inventory
from modelplane.local import ControlPlane, RenderResult, load_paths

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "unschedulable"
MESSAGE = "0/4 nodes are available: 4 cannot allocate all claims."


@pytest.fixture(scope="module")
def rendered() -> RenderResult:
    return ControlPlane(load_paths([ROOT / "examples" / "quickstart", FIXTURE])).run(50)


def _cluster(rendered: RenderResult, name: str) -> dict[str, Any]:
    obj = rendered.get(c.API_VERSION, "InferenceCluster", name)
    assert obj is not None
    return obj


def _cond(obj: dict[str, Any], type_: str) -> tuple[str, str]:
    cond = next(x for x in obj["status"]["conditions"] if x["type"] == type_)
    return cond["status"], cond["reason"]


def test_an_existing_clusters_declared_pools_are_what_its_agent_reports(
    rendered: RenderResult,
) -> None:
    obj = rendered.get(
        c.PROVIDER_KUBERNETES_API_VERSION, "Object", "eu-west-h100-inventory", "modelplane-system"
    )
    summary, problem = observed_inventory(obj)
    assert summary is not None, problem
    counts = {p.name: (p.nodes, p.ready_nodes) for p in summary.pools}
    assert counts == {"h100": (2, 2), "l4": (2, 2)}
    h100 = summary.pool("h100")
    assert h100 is not None
    assert [(s.driver, s.devices_per_node, s.nodes) for s in h100.shapes[:1]] == [
        (
            "gpu.nvidia.com",
            8,
            2,
        )
    ]
    for name in ("us-east-l4", "eu-west-h100"):
        assert _cond(_cluster(rendered, name), "HardwareDrift") == ("False", "NoDrift")


def test_the_inventory_object_reads_as_provider_kubernetes_reports_it(
    rendered: RenderResult,
) -> None:
    # Its readiness query never holds (it is the cluster's reachability probe),
    # so the real provider reports it Synced and not Ready; the render must too,
    # and the cluster is Ready all the same.
    obj = rendered.get(
        c.PROVIDER_KUBERNETES_API_VERSION, "Object", "eu-west-h100-inventory", "modelplane-system"
    )
    assert obj is not None and obj["spec"]["watch"] is True
    assert (_cond(obj, "Synced"), _cond(obj, "Ready")) == (
        ("True", "ReconcileSuccess"),
        ("False", "Unavailable"),
    )
    assert _cond(_cluster(rendered, "eu-west-h100"), "Ready")[0] == "True"
    assert _cond(_cluster(rendered, "eu-west-h100"), "Reachable") == ("True", "Reachable")


def test_reported_replicas_move_off_the_pool_and_the_report_clears(rendered: RenderResult) -> None:
    # The simulated agent reported qwen-small's replicas on us-east-l4's l4 pool;
    # the scheduler placed replacements elsewhere and withdrew them, so at the
    # fixed point no pod of theirs is left for the agent to report.
    qwen = rendered.get(c.API_VERSION, "ModelDeployment", "qwen-small", "ml-team")
    assert qwen is not None
    assert {p["cluster"] for p in qwen["status"]["placements"]} == {"eu-west-h100"}
    assert "unschedulableReplicas" not in _cluster(rendered, "us-east-l4")["status"]


def test_a_reported_replica_with_nowhere_to_go_is_kept_and_its_cluster_reports_it() -> None:
    objects = load_paths([ROOT / "examples" / "operations" / "unschedulable"])
    (west,) = [
        o for o in objects if o["kind"] == "InferenceCluster" and o["metadata"]["name"] == "west"
    ]
    west["spec"]["pools"][0]["nodeCount"] = 1  # west/0 fills it: nowhere else to go
    rendered = ControlPlane(objects).run(50)
    replicas = [
        r
        for r in rendered.store.list(c.API_VERSION, "ModelReplica")
        if r["spec"]["clusterName"] == "east"
    ]
    assert len(replicas) == 1
    stuck = read_unschedulable(_cluster(rendered, "east")["status"])
    # The pods' label value: the ModelReplica's name as a DNS label.
    assert set(stuck) == {replica_base(replicas[0]["metadata"]["name"])}
    (entry,) = stuck.values()
    assert (entry.pool, entry.pods, entry.since) == ("l4", 1, "2026-11-01T00:05:00Z")
    assert entry.message.startswith("0/2 nodes are available")
    chat = rendered.get(c.API_VERSION, "ModelDeployment", "chat", "ml-team")
    assert chat is not None
    kept = [p for p in chat["status"]["placements"] if p["cluster"] == "east"]
    assert [p.get("unschedulable") for p in kept] == [True]
    assert _cond(chat, "Scheduled") == ("False", "ReplicaUnschedulable")
