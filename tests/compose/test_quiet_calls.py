"""A call on an input that has not changed writes nothing new and records no event again.

On the real control plane every status field that changes from one call to
the next is a status write, and that write is a watch event that reconciles
the composite again; every result is an event recorded again (an API write).
These pin the churn cut: what a composite shows stays the same while what it
reads does, and an event is recorded once per condition it explains.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.compose.types import ComposeResult, DesiredResource
from modelplane.crossplane.servicer import FunctionRunner
from tests.compose.test_cluster_inventory import REQUIRED, _cluster, _observed
from tests.security.test_inventory_agent_trust import _signals_data

# The report's observedAt is 12:00:00; 60 s interval: stale after 720 s.
FRESH_TIMES = ("2026-03-01T12:00:05Z", "2026-03-01T12:04:47Z", "2026-03-01T12:12:00Z")
STALE_TIMES = ("2026-03-01T12:12:01Z", "2026-03-01T12:30:00Z", "2026-03-01T14:00:00Z")


def _shown(xr: dict[str, Any], result: ComposeResult) -> dict[str, Any]:
    """The composite as Crossplane leaves it after `result`: its conditions shown."""
    out = copy.deepcopy(xr)
    out["status"] = {
        "conditions": [
            {"type": c.type, "status": c.status, "reason": str(c.reason), "message": c.message}
            for c in result.conditions
        ]
    }
    return out


def _conditions(result: ComposeResult) -> list[tuple[str, str, str, str]]:
    return sorted((c.type, c.status, str(c.reason), c.message) for c in result.conditions)


def _compose(xr: dict[str, Any], now: str) -> ComposeResult:
    """One call as the served function makes it: the request in, what it answers out."""
    runner = FunctionRunner(log_errors=False, clock=lambda: _time(now), record_once=True)
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.update(xr)
    req.observed.resources["inventory"].resource.update(_observed(_signals_data(False)))
    for name, objs in REQUIRED.items():
        for obj in objs:
            req.required_resources[name].items.add().resource.update(obj)
    rsp = runner.run(req)
    assert not [r for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL], rsp.results
    result = ComposeResult()
    for cond in rsp.conditions:
        status = {fnv1.STATUS_CONDITION_TRUE: True, fnv1.STATUS_CONDITION_FALSE: False}
        result.condition(cond.type, status.get(cond.status), cond.reason, cond.message)
    for r in rsp.results:
        (result.warn if r.severity == fnv1.SEVERITY_WARNING else result.normal)(r.reason, r.message)
    return result


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_an_unchanged_report_reads_the_same_at_every_call() -> None:
    # InventoryFresh once said how many seconds ago the agent reported: a new
    # message, so a status write, at every call between two reports.
    for times in (FRESH_TIMES, STALE_TIMES):
        shown = {tuple(_conditions(_compose(_cluster(), now))) for now in times}
        assert len(shown) == 1, shown


def test_a_stale_report_is_an_event_once_then_only_the_condition() -> None:
    xr = _cluster()
    first = _compose(xr, STALE_TIMES[0])
    # The fixture's report also drifts from the declared pools: two problems.
    assert sorted(e.reason for e in first.events) == ["Drifted", "Stale"]
    # The next calls see the composite as the first left it: the condition
    # stands, so nothing is recorded again.
    for now in STALE_TIMES[1:]:
        again = _compose(_shown(xr, first), now)
        assert [e.reason for e in again.events] == []
        assert _conditions(again) == _conditions(first)
    # Fresh again, then stale again: a new episode is a new event.
    fresh = _compose(_shown(xr, first), FRESH_TIMES[0])
    assert not fresh.events
    stale = _compose(_shown(xr, fresh), STALE_TIMES[0])
    assert [e.reason for e in stale.events] == ["Stale"]


def test_an_event_no_condition_states_is_kept() -> None:
    result = ComposeResult()
    result.condition("Scheduled", False, "Unschedulable", "no cluster has 8 free GPUs")
    result.warn("Unschedulable", "no cluster has 8 free GPUs")
    result.warn("Preempted", "replica x preempted by y")
    shown = {
        "status": {
            "conditions": [
                {
                    "type": "Scheduled",
                    "reason": "Unschedulable",
                    "message": "no cluster has 8 free GPUs",
                },
                # Same reason, another message: another problem, recorded.
                {"type": "Other", "reason": "Preempted", "message": "replica z preempted by y"},
            ]
        }
    }
    assert [e.reason for e in result.unrepeated(shown).events] == ["Preempted"]
    # A status that does not read leaves every event as it is.
    bad: dict[str, Any]
    for bad in ({}, {"status": []}, {"status": {"conditions": {}}}):
        assert result.unrepeated(bad) is result


def _cluster_response(record_once: bool) -> fnv1.RunFunctionResponse:
    """An InferenceCluster's first call, its composed resources not created yet."""
    runner = FunctionRunner(
        log_errors=False, clock=lambda: _time(FRESH_TIMES[0]), record_once=record_once
    )
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.update(_cluster())
    for name, objs in REQUIRED.items():
        for obj in objs:
            req.required_resources[name].items.add().resource.update(obj)
    return runner.run(req)


def test_composed_readiness_is_no_event_per_resource_once_the_composite_states_its_own() -> None:
    # Crossplane records "Composed resource X is not yet ready" for every resource
    # the function does not call ready, at every reconcile; the composite's own
    # readiness (stated by the composer) is all that readiness would decide.
    embedded = _cluster_response(record_once=False)
    served = _cluster_response(record_once=True)
    assert embedded.desired.composite.ready == fnv1.READY_FALSE
    assert served.desired.composite.ready == fnv1.READY_FALSE
    unready = {n for n, r in embedded.desired.resources.items() if r.ready != fnv1.READY_TRUE}
    assert unready, "the fixture must compose something not ready yet"
    assert set(served.desired.resources) == set(embedded.desired.resources)
    assert {n: r.ready for n, r in served.desired.resources.items()} == {
        n: fnv1.READY_TRUE for n in embedded.desired.resources
    }
    # Everything else about the resources is the same.
    for name, entry in served.desired.resources.items():
        assert entry.resource == embedded.desired.resources[name].resource


def test_a_composite_whose_readiness_crossplane_decides_keeps_each_resources() -> None:
    result = ComposeResult(
        desired={
            "a": DesiredResource({"kind": "A"}, "False"),
            "b": DesiredResource({"kind": "B"}),
            "c": DesiredResource({"kind": "C"}, "True"),
        }
    )
    assert result.readiness_stated_once() is result
    result.ready = "False"
    stated = result.readiness_stated_once()
    assert {n: d.ready for n, d in stated.desired.items()} == dict.fromkeys("abc", "True")
    assert {n: d.resource for n, d in stated.desired.items()} == {
        n: d.resource for n, d in result.desired.items()
    }
    # The composer's own result is not changed: the embedded control plane
    # shows each resource's readiness.
    assert [d.ready for d in result.desired.values()] == ["False", "Unspecified", "True"]
