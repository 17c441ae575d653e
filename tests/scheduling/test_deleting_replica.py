"""A replica being deleted (its `metadata.deletionTimestamp` set) is on its way out.

Crossplane deletes a composed resource the function stopped asking for in the
foreground, so a ModelReplica stays listed, deletion timestamp set, until its own
composed objects are gone: tens of seconds on a real fleet. Until then it is still
this deployment's by its labels. The scheduler must neither keep it (nor let it
push out a replica that serves: the replacement that superseded it) nor forget
the devices it holds and the name (index) it still owns.
"""

from __future__ import annotations

from typing import Any

from modelplane.scheduling import ScheduleResult, schedule
from tests.scheduling.schedfleet import L4, cluster, deployment, replica, request, resolved

Obj = dict[str, Any]
GONE = "2026-01-01T00:05:00Z"


def _deleting(obj: Obj) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": GONE}}


def _r(cluster_name: str, index: int, *, ready: bool = True) -> Obj:
    return replica("llm", cluster_name, index, "l4", [resolved("gpu", cel=L4)], ready=ready)


def _state(result: ScheduleResult) -> list[tuple[str, int, str]]:
    """(cluster, index, kept|new|drain reason) of every planned replica."""
    return [
        (p.cluster, p.index, p.drain_reason or ("kept" if p.retained else "new"))
        for p in result.replicas
    ]


def test_a_replica_being_deleted_does_not_push_out_the_one_that_replaced_it() -> None:
    # The rollout's wave on a: a/0 was replaced by a/1, drained and deleted; while
    # Crossplane deletes it, a/0 is still listed. Both replicas that serve stay.
    a = cluster("a", {"l4": ("l4-1x", 4)})
    b = cluster("b", {"l4": ("l4-1x", 4)})
    fleet = [_deleting(_r("a", 0)), _r("a", 1), _r("b", 0)]
    result = schedule(deployment(2, [request("gpu", L4)]), [a, b], fleet)
    assert _state(result) == [("a", 1, "kept"), ("b", 0, "kept")]
    assert (result.placed, result.scaled_down, result.replaced) == (2, (), ())


def test_its_replacement_is_placed_at_once_under_a_name_of_its_own() -> None:
    # Deleted by hand: not counted, so a replacement comes now, and not at index 0,
    # whose name the deleting replica still holds.
    a = cluster("a", {"l4": ("l4-1x", 4)})
    fleet = [_deleting(_r("a", 0)), _r("a", 1)]
    result = schedule(deployment(2, [request("gpu", L4)]), [a], fleet)
    assert _state(result) == [("a", 1, "kept"), ("a", 2, "new")]


def test_the_devices_it_holds_stay_busy_until_it_is_gone() -> None:
    # Two one-GPU nodes: a/0 (deleting) and a/1 hold both. No room for the second
    # replica on a until a/0 is gone; b has room.
    a = cluster("a", {"l4": ("l4-1x", 2)})
    fleet = [_deleting(_r("a", 0)), _r("a", 1)]
    result = schedule(deployment(2, [request("gpu", L4)]), [a], fleet)
    assert _state(result) == [("a", 1, "kept")]
    b = cluster("b", {"l4": ("l4-1x", 2)})
    result = schedule(deployment(2, [request("gpu", L4)]), [a, b], fleet)
    assert _state(result) == [("a", 1, "kept"), ("b", 0, "new")]
    # Once it is gone, a/0 is free again, name and device.
    result = schedule(deployment(2, [request("gpu", L4)]), [a], fleet[1:])
    assert _state(result) == [("a", 0, "new"), ("a", 1, "kept")]


def test_another_deployments_replica_being_deleted_still_holds_its_devices() -> None:
    a = cluster("a", {"l4": ("l4-1x", 1)})
    other = _deleting(replica("other", "a", 0, "l4", [resolved("gpu", cel=L4)], ready=True))
    result = schedule(deployment(1, [request("gpu", L4)]), [a], [other])
    assert _state(result) == []
