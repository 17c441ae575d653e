"""The deployment composer draining a replica the autoscaler removes, on the call's time.

No agent reports an engine signal here (a cluster that scrapes no engine
metrics): the leaving replica, already at weight 0 in the only ModelService,
waits for its drain timeout, measured from `status.autoscaling.drains` to the
call's time (`ComposeInput.now`), and then goes with a warning. Expected
outputs are written out by hand; the scheduler's answer is scripted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.types import ComposeInput, EventOut
from modelplane.scheduling.types import ScheduleResult
from tests.compose.test_model_deployment_composer import (
    FETCHED,
    Scripted,
    deployment,
    observed_replica,
    planned,
)

SINCE = "2026-11-01T01:00:00Z"
AUTOSCALING = {"maxReplicas": 4, "targets": {"queueDepthPerReplica": 5}}


def _composite() -> dict[str, Any]:
    """Autoscaled, 1 replica wanted; chat-b0 started leaving at SINCE."""
    obj = deployment(replicas=2, autoscaling=AUTOSCALING)
    obj["status"] = {
        "autoscaling": {
            "desiredReplicas": 1,
            "currentReplicas": 2,
            "reason": "ScaledDown",
            "message": "",
            "specReplicas": 2,
            "draining": ["chat-b0"],
            "drains": [{"replica": "chat-b0", "since": SINCE}],
        }
    }
    return obj


def _input(now: str | None, weight: int) -> ComposeInput:
    endpoint = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "chat-b0", "namespace": "team-a"},
        "spec": {"url": "https://b.example.com/team-a/chat-b0", "draining": True},
    }
    service = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": "chat", "namespace": "team-a"},
        "status": {"endpoints": [{"name": "chat-b0", "weight": weight, "ready": True}]},
    }
    observed = {
        "replica-a-0": observed_replica("a", 0, ready=True),
        "replica-b-0": observed_replica("b", 0, ready=True),
        "endpoint-replica-b-0": endpoint,
    }
    required = {**FETCHED, md.SERVICES_REQUIREMENT: [service]}
    return ComposeInput(_composite(), observed=observed, required=required, now=now)


PLAN = ScheduleResult(
    replicas=(
        replace(planned("a", 0, retained=True), ready=True),
        replace(planned("b", 0, retained=True), ready=True),
    ),
    desired=2,
)


def _removed(events: list[EventOut]) -> list[EventOut]:
    return [e for e in events if e.reason == "ScaleDownRemoved"]


@pytest.mark.parametrize("now", ["2026-11-01T01:00:10Z", "2026-11-01T01:00:29Z"])
def test_within_the_timeout_the_leaving_replica_stays(now: str | None) -> None:
    got = md.compose_with(_input(now, 0), Scripted(PLAN))
    assert "replica-b-0" in got.desired and "replica-a-0" in got.desired
    assert not _removed(got.events)
    assert got.status["autoscaling"]["drains"] == [
        {
            "replica": "chat-b0",
            "since": SINCE,
            "message": "waiting at most 30s from 2026-11-01T01:00:00Z: in flight not known "
            "(no engine report)",
        }
    ]


def test_without_a_call_time_nothing_can_count_the_timeout() -> None:
    # The embedded control plane: no call time, and no report since it started leaving.
    # Time would move only with reports, so it goes, with a warning.
    got = md.compose_with(_input(None, 0), Scripted(PLAN))
    assert "replica-b-0" not in got.desired
    assert _removed(got.events) == [
        EventOut(
            "Warning",
            "ScaleDownRemoved",
            "replica chat-b0 on b deleted (weight 0 in every ModelService; in flight not known "
            "(no engine report); no call time to count the 30s timeout by: not waited for)",
        )
    ]


def test_once_the_timeout_passed_it_goes_with_a_warning() -> None:
    got = md.compose_with(_input("2026-11-01T01:00:30Z", 0), Scripted(PLAN))
    assert "replica-b-0" not in got.desired and "replica-a-0" in got.desired
    assert _removed(got.events) == [
        EventOut(
            "Warning",
            "ScaleDownRemoved",
            "replica chat-b0 on b deleted (weight 0 in every ModelService; drain timeout 30s "
            "passed with in flight not known (no engine report))",
        )
    ]
    assert "drains" not in got.status["autoscaling"]


def test_still_routed_it_stays_past_the_timeout() -> None:
    got = md.compose_with(_input("2026-11-01T01:05:00Z", 300), Scripted(PLAN))
    assert "replica-b-0" in got.desired
    assert not _removed(got.events)
    drains = got.status["autoscaling"]["drains"]
    assert drains == [
        {
            "replica": "chat-b0",
            "since": SINCE,
            "message": "waiting for weight 0 in every ModelService",
        }
    ]


def _not_ready(weight: int, endpoint: bool = True) -> ComposeInput:
    """chat-b0 is leaving but its own Ready condition is False; the service gives it `weight`."""
    inp = _input("2026-11-01T01:00:10Z", weight)
    observed = dict(inp.observed)
    observed["replica-b-0"] = observed_replica("b", 0, ready=False)
    if not endpoint:
        del observed["endpoint-replica-b-0"]
    return replace(inp, observed=observed)


NOT_READY = ScheduleResult(
    replicas=(replace(planned("a", 0, retained=True), ready=True), planned("b", 0, retained=True)),
    desired=2,
)


@pytest.mark.parametrize("endpoint", [True, False])
def test_a_not_ready_replica_a_service_still_routes_drains_first(endpoint: bool) -> None:
    # Its condition can go False before the service has seen it: the service still
    # sends it requests, and deleting it now would answer them with errors.
    got = md.compose_with(_not_ready(1, endpoint), Scripted(NOT_READY))
    assert "replica-b-0" in got.desired
    assert not _removed(got.events)
    assert got.status["autoscaling"]["drains"] == [
        {
            "replica": "chat-b0",
            "since": SINCE,
            "message": "waiting for weight 0 in every ModelService",
        }
    ]


def test_a_not_ready_replica_no_service_routes_goes_at_once() -> None:
    got = md.compose_with(_not_ready(0), Scripted(NOT_READY))
    assert "replica-b-0" not in got.desired and "endpoint-replica-b-0" not in got.desired
    assert _removed(got.events) == [
        EventOut("Normal", "ScaleDownRemoved", "replica chat-b0 on b deleted (not Ready)")
    ]


def test_the_scheduler_keeps_every_replica_while_one_still_drains() -> None:
    # 3 -> 2 left chat-b0 draining; now 1 is wanted. Asked for fewer than the 3 that
    # exist, the scheduler would drop one itself, undrained, while it is still routed.
    composite = _composite()
    composite["status"]["replicas"] = 2
    inp = _input("2026-11-01T01:00:10Z", 0)
    observed = {**inp.observed, "replica-c-0": observed_replica("c", 0, ready=True)}
    scheduler = Scripted(replace(PLAN, replicas=(*PLAN.replicas, planned("c", 0, retained=True))))
    md.compose_with(replace(inp, composite=composite, observed=observed), scheduler)
    assert [call.spec.replicas for call in scheduler.calls] == [3]
