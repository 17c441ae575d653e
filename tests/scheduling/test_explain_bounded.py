"""The explanation of a large fleet is bounded: in words computed, in status, in the condition.

Every cluster gets its reason (the summary counts them); only the rejections
status lists (`MAX_UNSCHEDULABLE_ENTRIES`, by name, label mismatches last) are
spelled out pool by pool. `modelplane explain` (explain_all) spells out all.
"""

from __future__ import annotations

import pytest
from schedfleet import ANY_GPU, cluster, deployment, request

from modelplane.api.model_deployment import MAX_UNSCHEDULABLE_ENTRIES, ModelDeploymentStatus
from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.types import ComposeInput
from modelplane.scheduling import explain as explain_module
from modelplane.scheduling import schedule
from modelplane.scheduling.types import ClusterVerdict

TAINT = {"key": "maintenance", "effect": "NoSchedule"}
GPU = [request("gpu", ANY_GPU)]


def small(name: str) -> dict[str, object]:
    """A cluster with one single-node L4 pool: one replica fits."""
    return cluster(name, {"l4": ("l4-1x", 1)})


def detailed(v: ClusterVerdict) -> bool:
    return bool(v.pools or v.message)


@pytest.mark.parametrize(
    ("fleet", "replicas", "spelled_out", "reasons"),
    [
        # 40 full clusters, 41 replicas: the first 32 by name say why pool by pool.
        (
            [small(f"c{i:02d}") for i in range(40)],
            41,
            {f"c{i:02d}" for i in range(32)},
            {"InsufficientCapacity": 40},
        ),
        # Filter rejections (spelled out by their filter) take their place in the order.
        (
            [cluster(f"c{i:02d}", {"l4": ("l4-1x", 1)}, taints=[TAINT]) for i in range(10)]
            + [small(f"d{i:02d}") for i in range(30)],
            31,
            {f"c{i:02d}" for i in range(10)} | {f"d{i:02d}" for i in range(22)},
            {"Tainted": 10, "InsufficientCapacity": 30},
        ),
        # Label mismatches are listed last: they never use up the bound.
        (
            [cluster(f"a{i:02d}", {"l4": ("l4-1x", 1)}, labels={"tier": "x"}) for i in range(5)]
            + [small(f"b{i:02d}") for i in range(35)],
            36,
            {f"a{i:02d}" for i in range(5)} | {f"b{i:02d}" for i in range(32)},
            {"NotSelected": 5, "InsufficientCapacity": 35},
        ),
        # A fleet within the bound is explained in full, as before.
        (
            [small("a"), cluster("b", {"h100": ("h100-8x", 1)}), small("c")],
            11,  # 1 + 8 + 1 fit
            {"a", "b", "c"},
            {"InsufficientCapacity": 3},
        ),
    ],
    ids=["capacity", "tainted-first", "not-selected-last", "small-fleet"],
)
def test_only_the_listed_rejections_are_spelled_out(
    fleet: list[dict[str, object]], replicas: int, spelled_out: set[str], reasons: dict[str, int]
) -> None:
    selector = {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}
    dep = deployment(replicas, GPU, selector=selector)
    lean = schedule(dep, fleet, [], explain_all=False)
    full = schedule(dep, fleet, [])
    assert lean.replicas == full.replicas
    # Every cluster keeps its reason; the counts are what the condition sums up.
    assert [(v.cluster, v.reason) for v in lean.clusters] == [
        (v.cluster, v.reason) for v in full.clusters
    ]
    counted: dict[str, int] = {}
    for v in lean.clusters:
        if not v.eligible:
            counted[v.reason or ""] = counted.get(v.reason or "", 0) + 1
    assert counted == reasons
    assert {v.cluster for v in lean.clusters if detailed(v)} == spelled_out
    by_name = {v.cluster: v for v in full.clusters}
    for v in lean.clusters:
        if v.cluster in spelled_out:
            assert v == by_name[v.cluster]  # word for word what explain says
    assert all(detailed(v) for v in full.clusters if not v.eligible)


def test_every_placed_replica_skips_the_explanation(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int | None] = []
    real = explain_module.explain

    def spy(state: object, limit: int | None = None) -> None:
        calls.append(limit)
        real(state, limit)  # type: ignore[arg-type]

    monkeypatch.setattr("modelplane.scheduling.scheduler.explain", spy)
    fleet = [small(f"c{i:02d}") for i in range(40)]
    schedule(deployment(40, GPU), fleet, [], explain_all=False)
    assert calls == []
    schedule(deployment(41, GPU), fleet, [], explain_all=False)
    assert calls == [MAX_UNSCHEDULABLE_ENTRIES]
    schedule(deployment(40, GPU), fleet, [])
    assert calls == [MAX_UNSCHEDULABLE_ENTRIES, None]


def test_a_thousand_tainted_clusters_are_one_aggregated_line() -> None:
    fleet = [cluster(f"c{i:04d}", {"l4": ("l4-1x", 1)}, taints=[TAINT]) for i in range(1000)]
    dep = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "llm", "namespace": "team-a"},
        **{k: v for k, v in deployment(2, GPU).items() if k == "spec"},
    }
    got = md.compose(
        ComposeInput(
            dep,
            required={
                "inference-clusters": fleet,
                "model-replicas": [],
                "fleet-quotas": [],
                "priority-classes": [],
            },
        )
    )
    scheduled = next(x for x in got.conditions if x.type == "Scheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "NoClusters")
    assert scheduled.message == (
        "placed 0 of 2 replicas: no Ready, selected cluster tolerates this deployment: "
        "Tainted on c0000, c0001, c0002 and 997 more (see status.unschedulable)"
    )
    entries = got.status["unschedulable"]
    assert [e["cluster"] for e in entries] == [f"c{i:04d}" for i in range(32)]
    assert {e["reason"] for e in entries} == {"Tainted"}
    assert got.status["unschedulableOmitted"] == 968
    ModelDeploymentStatus.model_validate(got.status)
