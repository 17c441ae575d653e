"""The composer's scheduling explains only what is missing; shapes are interned by content."""

from __future__ import annotations

import copy

import pytest
from schedfleet import ANY_GPU, CLASSES, cluster, deployment, device, request

from modelplane.api.frozen import FrozenDict
from modelplane.scheduling import schedule
from modelplane.scheduling import state as state_module
from modelplane.scheduling.matching import (
    Evaluator,
    Request,
    RoleDef,
    RoleMatch,
    Shape,
    Shapes,
    device_key,
    match_role,
)

FLEET = [
    cluster("a", {"l4": ("l4-1x", 2)}),
    cluster("b", {"l4": ("l4-1x", 1)}),
    cluster("drained", {"l4": ("l4-1x", 4)}, ready=False),
]


def verdicts(result: object) -> dict[str, str | None]:
    return {v.cluster: v.reason for v in result.clusters}  # type: ignore[attr-defined]


def test_all_placed_only_the_filters_verdicts_are_kept() -> None:
    dep = deployment(2, [request("gpu", ANY_GPU)])
    full = schedule(dep, FLEET, [])
    lean = schedule(dep, FLEET, [], explain_all=False)
    assert lean.replicas == full.replicas
    # Every cluster has a verdict when asked for all; without, only the filtered one.
    assert set(verdicts(full)) == {"a", "b", "drained"}
    assert verdicts(lean) == {"drained": verdicts(full)["drained"]}


def test_a_missing_replica_gets_every_verdict() -> None:
    dep = deployment(5, [request("gpu", ANY_GPU)])  # 3 nodes for 5 replicas
    full = schedule(dep, FLEET, [])
    lean = schedule(dep, FLEET, [], explain_all=False)
    assert len(lean.replicas) == 3
    assert lean == full


def test_shapes_are_interned_by_content() -> None:
    table = Shapes()
    l4 = CLASSES["l4-1x"]
    first = table.intern("l4-1x", l4)
    assert table.intern("l4-1x", copy.deepcopy(l4)) is first
    edited = copy.deepcopy(l4)
    edited[0]["attributes"]["driverVersion"] = {"version": "575.0.0"}
    other = table.intern("l4-1x", edited)
    assert other is not first
    # Back to the first content after another: still the first shape, found by key.
    assert table.intern("l4-1x", copy.deepcopy(l4)) is first
    assert table.intern("l4-1x", copy.deepcopy(edited)) is other
    assert table.intern("h100-8x", copy.deepcopy(l4)) is not first  # per class


def test_shapes_differing_where_no_selector_looks_share_one_match() -> None:
    # Per-cluster driver versions: distinct device lists, equal selector outcomes.
    ev = Evaluator()
    table = Shapes()
    role = RoleDef("unified", "spec.nodeSelector", (Request("gpu", 1, (ANY_GPU,)),), 1, 1)
    shapes = []
    for version in ("570.1.0", "570.2.0"):
        edited = copy.deepcopy(CLASSES["l4-1x"])
        edited[0]["attributes"]["driverVersion"] = {"version": version}
        shapes.append(table.intern("l4-1x", edited))
    assert shapes[0] is not shapes[1]
    first, second = (match_role(role, s, ev) for s in shapes)
    assert first.matched and second is first
    # A different outcome is a different match.
    other = table.intern("l4-1x", [device("gpu", 1, driver="other.example.com")])
    assert match_role(role, other, ev).matched is False


def test_a_device_key_is_computed_once_per_decoded_version() -> None:
    frozen = FrozenDict(CLASSES["l4-1x"][0])  # a decoded, read-only device
    assert device_key(frozen) is device_key(frozen)
    assert device_key(frozen) == device_key(copy.deepcopy(CLASSES["l4-1x"][0]))


def test_only_the_clusters_the_fill_reaches_are_matched(monkeypatch: pytest.MonkeyPatch) -> None:
    matched: list[str] = []

    def spy(role: RoleDef, shape: Shape, ev: Evaluator) -> RoleMatch:
        matched.append(shape.class_names[0])
        return match_role(role, shape, ev)

    monkeypatch.setattr(state_module, "match_role", spy)
    fleet = [cluster(f"c{i}", {"l4": ("l4-1x", 2)}) for i in range(10)]
    dep = deployment(1, [request("gpu", ANY_GPU)])
    lean = schedule(dep, fleet, [], explain_all=False)
    assert [r.cluster for r in lean.replicas] == ["c0"]
    assert len(matched) == 1  # c0's one pool; nine clusters never looked at
    matched.clear()
    full = schedule(dep, fleet, [])
    assert full.replicas == lean.replicas
    assert len(matched) == 10  # `modelplane explain` wants every cluster's verdict
