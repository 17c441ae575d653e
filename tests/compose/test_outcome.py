"""The one early-stop helper: what each way out keeps, sets and reports."""

from __future__ import annotations

import pytest

from modelplane.api import constants as c
from modelplane.api.reasons import REASONS, ClusterResolvedReason, ScheduledReason
from modelplane.compose import outcome
from modelplane.compose.types import ComposeInput, ComposeResult

OBSERVED = {
    "b": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "b", "uid": "u1", "finalizers": ["x"], "labels": {"k": "v"}},
        "data": {"x": "1"},
        "status": {"ready": True},
    },
    "a": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "status": {}},
}


def _inp() -> ComposeInput:
    return ComposeInput(composite={"metadata": {"name": "x"}}, observed=OBSERVED)


def _ready(obj: dict) -> bool:
    return bool((obj.get("status") or {}).get("ready"))


def test_hold_sets_condition_event_not_ready_and_keeps_everything() -> None:
    res = outcome.hold(
        _inp(),
        ComposeResult(),
        c.CONDITION_SCHEDULED,
        ScheduledReason.INVALID_SPEC,
        "spec.replicas: must be an integer",
        readiness=_ready,
    )
    assert [(x.type, x.status, x.reason, x.message) for x in res.conditions] == [
        ("Scheduled", "False", "InvalidSpec", "spec.replicas: must be an integer")
    ]
    assert [(e.severity, e.reason, e.message) for e in res.events] == [
        ("Warning", "InvalidSpec", "spec.replicas: must be an integer")
    ]
    assert res.ready == "False"
    assert sorted(res.desired) == ["a", "b"]
    # Server-owned metadata and status are not echoed back.
    assert res.desired["b"].resource == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "b", "labels": {"k": "v"}},
        "data": {"x": "1"},
    }
    assert (res.desired["a"].ready, res.desired["b"].ready) == ("False", "True")


def test_hold_refuses_a_reason_of_another_condition() -> None:
    with pytest.raises(ValueError, match="not a reason of condition 'Scheduled'"):
        outcome.hold(
            _inp(),
            ComposeResult(),
            c.CONDITION_SCHEDULED,
            ClusterResolvedReason.CLUSTER_NOT_FOUND,
            "m",
        )


@pytest.mark.parametrize(
    ("observed", "readiness", "expected"),
    [
        (OBSERVED, _ready, "False"),  # one kept resource is not ready
        ({"b": OBSERVED["b"]}, _ready, "True"),  # a serving replica stays Ready
        ({"b": OBSERVED["b"]}, None, "False"),  # no rule: not ready
        ({}, _ready, "False"),  # nothing observed: nothing is ready
    ],
)
def test_wait_keeps_everything_and_derives_readiness(observed, readiness, expected) -> None:
    inp = ComposeInput(composite={}, observed=observed)
    res = outcome.wait(inp, ComposeResult(), readiness=readiness)
    assert res.ready == expected
    assert sorted(res.desired) == sorted(observed)
    assert res.conditions == [] and res.events == []


def test_fatal_carries_only_the_message() -> None:
    res = outcome.fatal("boom")
    assert (res.fatal, res.desired, res.conditions) == ("boom", {}, [])


def test_every_condition_type_has_camelcase_reasons() -> None:
    assert REASONS
    for enum in REASONS.values():
        assert list(enum), enum
        for reason in enum:
            assert reason.value[:1].isupper() and " " not in reason.value


def test_wait_may_say_what_it_waits_for_without_an_event() -> None:
    res = outcome.wait(
        _inp(),
        ComposeResult(),
        readiness=_ready,
        condition=c.CONDITION_CLUSTER_RESOLVED,
        reason=ClusterResolvedReason.WAITING_FOR_RESOURCES,
        message="waiting for InferenceCluster 'east'",
    )
    assert [(x.type, x.status, x.reason, x.message) for x in res.conditions] == [
        ("ClusterResolved", "Unknown", "WaitingForResources", "waiting for InferenceCluster 'east'")
    ]
    assert res.events == []
    assert sorted(res.desired) == ["a", "b"] and res.ready == "False"


def test_wait_refuses_a_reason_of_another_condition() -> None:
    with pytest.raises(ValueError, match="not a reason of condition 'ClusterResolved'"):
        outcome.wait(
            _inp(),
            ComposeResult(),
            condition=c.CONDITION_CLUSTER_RESOLVED,
            reason=ScheduledReason.WAITING_FOR_RESOURCES,
        )


def test_a_mismatched_reason_names_the_reasons_the_condition_takes() -> None:
    with pytest.raises(ValueError) as err:
        outcome.hold(
            _inp(), ComposeResult(), c.CONDITION_ROUTE_ACCEPTED, ScheduledReason.PARTIAL, "m"
        )
    assert str(err.value) == (
        "reason <ScheduledReason.PARTIAL: 'Partial'> is not a reason of condition "
        "'RouteAccepted' (one of Accepted, RouteNotAccepted)"
    )
    with pytest.raises(ValueError) as err:
        outcome.hold(_inp(), ComposeResult(), "NoSuchCondition", ScheduledReason.PARTIAL, "m")
    assert str(err.value).endswith(
        "is not a reason of condition 'NoSuchCondition' (unknown condition type)"
    )


def test_wait_sets_an_unknown_condition_only_with_both_condition_and_reason() -> None:
    res = outcome.wait(
        _inp(),
        ComposeResult(),
        condition=c.CONDITION_CLUSTER_RESOLVED,
        reason=ClusterResolvedReason.WAITING_FOR_RESOURCES,
    )
    assert [(x.type, x.status, x.reason, x.message) for x in res.conditions] == [
        ("ClusterResolved", "Unknown", "WaitingForResources", "")
    ]
    assert res.events == []
    only_condition = outcome.wait(_inp(), ComposeResult(), condition=c.CONDITION_CLUSTER_RESOLVED)
    only_reason = outcome.wait(
        _inp(), ComposeResult(), reason=ClusterResolvedReason.WAITING_FOR_RESOURCES
    )
    assert only_condition.conditions == [] and only_reason.conditions == []
