"""The simulated inventory agent: each cluster's observed ConfigMap, by the shared summarizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api.readers import read_unschedulable
from modelplane.compose.inventory import observed_inventory
from modelplane.compose.model_replica import replica_label
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


def test_an_unschedulable_fixture_reports_every_replica_of_the_deployment_on_that_pool(
    rendered: RenderResult,
) -> None:
    replicas = [
        r
        for r in rendered.store.list(c.API_VERSION, "ModelReplica")
        if r["spec"]["deploymentName"] == "qwen-small" and r["spec"]["clusterName"] == "us-east-l4"
    ]
    assert replicas, "the quickstart places qwen-small on us-east-l4"
    status = _cluster(rendered, "us-east-l4")["status"]
    stuck = read_unschedulable(status)
    # The pods' label value: the ModelReplica's name as a DNS label (here: the name).
    want = {replica_label(r["metadata"]["name"]) for r in replicas}
    assert set(stuck) == want
    assert want == {r["metadata"]["name"] for r in replicas}
    for entry in stuck.values():
        assert (entry.pool, entry.pods, entry.since, entry.message) == (
            "l4",
            1,
            "2026-01-01T00:00:00Z",
            MESSAGE,
        )
    assert "unschedulableReplicas" not in _cluster(rendered, "eu-west-h100")["status"]
