"""set_condition: Kubernetes' transition rules, and a condition already so is left alone."""

from __future__ import annotations

from typing import Any

from modelplane.api.frozen import FrozenDict, FrozenList, frozen, thaw
from modelplane.local.conditions import Clock, set_condition


def obj(generation: Any = 3, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "generation": generation}, "status": status}


def test_a_new_condition_is_appended_in_the_conventional_order() -> None:
    o = obj()
    clock = Clock()
    set_condition(o, "Ready", "False", "Creating", "waiting", clock)
    assert o["status"]["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "observedGeneration": 3,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "Creating",
            "message": "waiting",
        }
    ]
    assert list(o["status"]["conditions"][0]) == [
        "type",
        "status",
        "observedGeneration",
        "lastTransitionTime",
        "reason",
        "message",
    ]


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    o = obj()
    clock = Clock()
    set_condition(o, "Ready", "False", "Creating", "", clock)
    clock.tick()
    set_condition(o, "Ready", "False", "Still", "", clock)
    assert o["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert o["status"]["conditions"][0]["reason"] == "Still"
    set_condition(o, "Ready", "True", "Available", "", clock)
    assert o["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:01Z"


def test_a_condition_already_so_leaves_a_read_only_status_shared() -> None:
    clock = Clock()
    o = obj()
    set_condition(o, "Ready", "True", "Available", "", clock)
    o["status"] = frozen(o["status"])
    shared = o["status"]
    clock.tick()
    set_condition(o, "Ready", "True", "Available", "", clock)
    assert o["status"] is shared and type(shared["conditions"]) is FrozenList


def test_anything_else_is_written_anew_without_changing_the_shared_status() -> None:
    clock = Clock()
    before = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Available",
    }
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        # A different generation, in type only (True == 1 to Python).
        ({**before, "observedGeneration": True}, {"observedGeneration": 1}),
        # Keys out of the conventional order are put in it.
        ({"reason": "Available", **before, "observedGeneration": 1}, {}),
        # A stale message goes.
        ({**before, "observedGeneration": 1, "message": "old"}, {}),
    ]
    for old, expect in cases:
        o = obj(generation=1, conditions=[old])
        o["status"] = frozen(o["status"])
        shared = o["status"]
        set_condition(o, "Ready", "True", "Available", "", clock)
        cond = o["status"]["conditions"][0]
        want = {**before, "observedGeneration": 1, **expect}
        assert type(o["status"]) is dict and type(cond) is dict
        assert list(cond.items()) == [(k, want[k]) for k in cond] and cond == want
        assert [type(v) for v in cond.values()] == [type(want[k]) for k in cond]
        assert list(cond)[:3] == ["type", "status", "observedGeneration"]
        assert type(shared) is FrozenDict and thaw(shared) == {"conditions": [old]}
