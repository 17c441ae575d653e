"""Make-before-break (SPEC §3.3, issue 17): a leaving Ready replica drains while its
replacement is placed within `rollout.maxSurge`, and is dropped once that one is Ready.

Each case is a small fleet stepped by hand: schedule, apply the result, mark some
replicas Ready, schedule again. Expected placements are written out in full.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.scheduling import ScheduleResult, schedule
from tests.scheduling.schedfleet import (
    H100,
    IMMEDIATE,
    L4,
    cluster,
    deployment,
    materialize,
    replica,
    request,
    resolved,
)

Obj = dict[str, Any]
DRAIN = [{"key": "maintenance", "effect": "NoExecute"}]


def _state(result: ScheduleResult) -> list[tuple[str, int, str, str]]:
    """(cluster, index, pool, kept|new|draining) of every planned replica."""
    return [
        (p.cluster, p.index, p.roles[0].pool, p.drain_reason or ("kept" if p.retained else "new"))
        for p in result.replicas
    ]


def _ready(objs: list[Obj], *clusters: str) -> list[Obj]:
    """The replicas with those on `clusters` marked Ready."""
    return [
        {**r, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        if r["spec"]["clusterName"] in clusters
        else r
        for r in objs
    ]


def _ready_pair(dep: str = "llm") -> list[Obj]:
    return [replica(dep, "a", i, "l4", [resolved("gpu", cel=L4)], ready=True) for i in range(2)]


def test_noexecute_drain_moves_one_replica_at_a_time() -> None:
    a = cluster("a", {"l4": ("l4-1x", 2)}, taints=DRAIN)
    b = cluster("b", {"l4": ("l4-1x", 2)})
    dep = deployment(2, [request("gpu", L4)])
    fleet = _ready_pair()

    # 1. Both replicas on a drain; maxSurge 1 admits one replacement on b.
    result = schedule(dep, [a, b], fleet)
    assert _state(result) == [
        ("a", 0, "l4", "NoExecuteTaint"),
        ("a", 1, "l4", "NoExecuteTaint"),
        ("b", 0, "l4", "new"),
    ]
    assert (result.placed, result.surge, result.replaced) == (1, 1, ())
    fleet = materialize(dep, result, fleet, 1)

    # 2. Not Ready yet: nothing changes (the replacement is now an existing replica).
    assert _state(schedule(dep, [a, b], fleet)) == [
        ("a", 0, "l4", "NoExecuteTaint"),
        ("a", 1, "l4", "NoExecuteTaint"),
        ("b", 0, "l4", "kept"),
    ]

    # 3. The replacement is Ready: one old replica goes, the next replacement comes.
    fleet = _ready(fleet, "b")
    result = schedule(dep, [a, b], fleet)
    assert _state(result) == [
        ("a", 0, "l4", "NoExecuteTaint"),
        ("b", 0, "l4", "kept"),
        ("b", 1, "l4", "new"),
    ]
    assert [name for name, _ in result.replaced] == [fleet[1]["metadata"]["name"]]
    # The one dropped was draining and served until now: the composer routes it out.
    assert [(p.cluster, p.index, p.drain_reason, p.ready) for p in result.superseded] == [
        ("a", 1, "NoExecuteTaint", True)
    ]
    fleet = _ready(materialize(dep, result, fleet, 2), "b")

    # 4. Both replacements Ready: the drain is complete.
    result = schedule(dep, [a, b], fleet)
    assert _state(result) == [("b", 0, "l4", "kept"), ("b", 1, "l4", "kept")]
    assert [name for name, _ in result.replaced] == [fleet[0]["metadata"]["name"]]
    assert [p.name for p in result.superseded] == [fleet[0]["metadata"]["name"]]


def test_without_room_for_a_replacement_the_old_replicas_keep_serving() -> None:
    a = cluster("a", {"l4": ("l4-1x", 2)}, taints=DRAIN)
    b = cluster("b", {"h100": ("h100-8x", 1)})  # no pool matches
    result = schedule(deployment(2, [request("gpu", L4)]), [a, b], _ready_pair())
    assert _state(result) == [
        ("a", 0, "l4", "NoExecuteTaint"),
        ("a", 1, "l4", "NoExecuteTaint"),
    ]
    assert (result.placed, result.missing, result.replaced) == (0, 2, ())
    assert {v.cluster: v.reason for v in result.clusters} == {
        "a": "Tainted",
        "b": "NoMatchingPool",
    }


def test_immediate_replaces_at_once() -> None:
    a = cluster("a", {"l4": ("l4-1x", 2)}, taints=DRAIN)
    b = cluster("b", {"l4": ("l4-1x", 2)})
    dep = deployment(2, [request("gpu", L4)], rollout=IMMEDIATE)
    result = schedule(dep, [a, b], _ready_pair())
    assert _state(result) == [("b", 0, "l4", "new"), ("b", 1, "l4", "new")]
    assert len(result.replaced) == 2 and result.surge == 0
    assert result.superseded == ()  # dropped at once, never draining


@pytest.mark.parametrize(
    ("surge", "new"),
    [(1, 1), (2, 2), (3, 3), ("25%", 1), ("50%", 2), ("100%", 4)],
)
def test_max_surge_bounds_the_replacements_in_flight(surge: int | str, new: int) -> None:
    a = cluster("a", {"l4": ("l4-1x", 4)}, taints=DRAIN)
    b = cluster("b", {"l4": ("l4-1x", 8)})
    fleet = [replica("llm", "a", i, "l4", [resolved("gpu", cel=L4)], ready=True) for i in range(4)]
    dep = deployment(4, [request("gpu", L4)], rollout={"maxSurge": surge})
    result = schedule(dep, [a, b], fleet)
    assert [s for s in _state(result) if s[0] == "b"] == [("b", i, "l4", "new") for i in range(new)]
    assert len(result.draining) == 4 and result.surge == new


def test_a_replica_not_ready_yet_is_not_worth_draining() -> None:
    a = cluster("a", {"l4": ("l4-1x", 2)}, taints=DRAIN)
    b = cluster("b", {"l4": ("l4-1x", 2)})
    fleet = [
        replica("llm", "a", 0, "l4", [resolved("gpu", cel=L4)], ready=True),
        replica("llm", "a", 1, "l4", [resolved("gpu", cel=L4)], ready=False),
    ]
    result = schedule(deployment(2, [request("gpu", L4)]), [a, b], fleet)
    # The not-Ready one goes at once; the Ready one drains; one surge slot plus the
    # freed place give two new replicas.
    assert _state(result) == [
        ("a", 0, "l4", "NoExecuteTaint"),
        ("b", 0, "l4", "new"),
        ("b", 1, "l4", "new"),
    ]
    assert [n for n, _ in result.replaced] == [fleet[1]["metadata"]["name"]]


def test_a_gone_cluster_breaks_first() -> None:
    b = cluster("b", {"l4": ("l4-1x", 2)})
    result = schedule(deployment(2, [request("gpu", L4)]), [b], _ready_pair())
    assert _state(result) == [("b", 0, "l4", "new"), ("b", 1, "l4", "new")]
    assert result.draining == ()


def test_edited_node_selector_rolls_within_max_surge_on_the_same_cluster() -> None:
    a = cluster("a", {"l4": ("l4-1x", 2), "h100": ("h100-8x", 2)})
    dep = deployment(2, [request("gpu", H100)])
    result = schedule(dep, [a], _ready_pair())
    assert _state(result) == [
        ("a", 0, "l4", "PoolMismatch"),
        ("a", 1, "l4", "PoolMismatch"),
        ("a", 2, "h100", "new"),
    ]


def test_deselected_cluster_drains_and_scaling_to_zero_drops_draining_ones() -> None:
    a = cluster("a", {"l4": ("l4-1x", 2)}, labels={"tier": "old"})
    b = cluster("b", {"l4": ("l4-1x", 2)}, labels={"tier": "new"})
    selector = {"matchLabels": {"tier": "new"}}
    result = schedule(deployment(2, [request("gpu", L4)], selector=selector), [a, b], _ready_pair())
    assert [s[3] for s in _state(result)] == ["Deselected", "Deselected", "new"]
    result = schedule(deployment(0, [request("gpu", L4)], selector=selector), [a, b], _ready_pair())
    assert result.replicas == () and len(result.replaced) == 2


def test_surge_replicas_are_charged_so_two_draining_deployments_share_a_pool() -> None:
    # Both deployments drain a; b has room for exactly one more L4 replica.
    a = cluster("a", {"l4": ("l4-1x", 2)}, taints=DRAIN)
    b = cluster("b", {"l4": ("l4-1x", 1)})
    one = [replica("one", "a", 0, "l4", [resolved("gpu", cel=L4)], ready=True)]
    two = [replica("two", "a", 0, "l4", [resolved("gpu", cel=L4)], ready=True)]
    first = schedule(deployment(1, [request("gpu", L4)], name="one"), [a, b], one + two)
    fleet = materialize(deployment(1, name="one"), first, one, 1) + two
    second = schedule(deployment(1, [request("gpu", L4)], name="two"), [a, b], fleet)
    assert _state(first) == [("a", 0, "l4", "NoExecuteTaint"), ("b", 0, "l4", "new")]
    # The second sees the first's surge replica charged: it keeps draining, no room.
    assert _state(second) == [("a", 0, "l4", "NoExecuteTaint")]
    assert {v.cluster: v.reason for v in second.clusters}["b"] == "InsufficientCapacity"
