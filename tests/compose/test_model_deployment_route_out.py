"""The deployment composer routing a replaced replica out before it is deleted (issue 42).

Make-before-break: once a replacement serves, the old replica is not deleted
at once (its cluster's route would name a Service that is gone until the
ModelService's next call, and Envoy answers those requests with errors). It is
kept as observed with its ModelEndpoint `draining`, listed as draining with
`drainingSince`, and deleted once every ModelService shows it at weight 0 and
`spec.rollout.drainTimeoutSeconds` passed (no engine reports here: a cluster
that scrapes no engine metrics). Expected outputs are written out by hand; the
scheduler's answer is scripted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

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
OLD = replace(planned("b", 0, retained=True), ready=True, drain_reason="RevisionChanged")
WHY = "chat-b0: its template changed (revision 1111111111 → 469a0495c4)"
PLAN = ScheduleResult(
    replicas=(replace(planned("a", 0, retained=True), ready=True),),
    desired=1,
    replaced=(("chat-b0", WHY.split(": ", 1)[1]),),
    superseded=(OLD,),
)
ENDPOINT_URL = "https://b.example.com/team-a/chat-b0"


# chat-b0 as the last status listed it: draining while its replacement started.
OLD_PLACEMENT = {
    "cluster": "b",
    "index": 0,
    "replicaName": "chat-b0",
    "pools": [{"role": "unified", "pool": "l4"}],
    "ready": True,
    "draining": True,
    "drainReason": "RevisionChanged",
}


def _composite(since: str | None, rollout: dict[str, Any] | None = None) -> dict[str, Any]:
    """One replica wanted; chat-b0 was draining (its replacement starting), and has been
    leaving the routes since `since` when given."""
    obj = deployment(replicas=1, **({"rollout": rollout} if rollout else {}))
    old = dict(OLD_PLACEMENT)
    if since is not None:
        old["drainingSince"] = since
    obj["status"] = {"placements": [old]}
    return obj


def _cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {},
        "status": {"providerConfigName": f"modelplane-{name}", "gatewayAddress": "203.0.113.10"},
    }


def _endpoint(draining: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": ENDPOINT_URL}
    if draining:
        spec["draining"] = True
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "chat-b0", "namespace": "team-a"},
        "spec": spec,
    }


def _service(weight: int) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": "chat", "namespace": "team-a"},
        "status": {"endpoints": [{"name": "chat-b0", "weight": weight, "ready": True}]},
    }


def _input(
    composite: dict[str, Any],
    now: str | None,
    *,
    weight: int | None,
    draining: bool,
) -> ComposeInput:
    """`weight`: the service's weight for chat-b0; None: the services were not read."""
    old = observed_replica("b", 0, ready=True)
    old["status"]["endpoint"] = ENDPOINT_URL  # served behind cluster b's gateway
    observed = {
        "replica-a-0": observed_replica("a", 0, ready=True),
        "replica-b-0": old,
        "endpoint-replica-b-0": _endpoint(draining),
    }
    required = {**FETCHED, "inference-clusters": [_cluster("a"), _cluster("b")]}
    if weight is not None:
        required[md.SERVICES_REQUIREMENT] = [_service(weight)]
    return ComposeInput(composite, observed=observed, required=required, now=now)


def _old(got: Any) -> dict[str, Any]:
    (found,) = [p for p in got.status["placements"] if p["replicaName"] == "chat-b0"]
    return dict(found)


def _by_reason(events: list[EventOut], *reasons: str) -> list[EventOut]:
    return [e for e in events if e.reason in reasons]


def test_the_replaced_replica_leaves_the_routes_first() -> None:
    inp = _input(_composite(None), SINCE, weight=500, draining=False)
    got = md.compose_with(inp, Scripted(PLAN))
    # Kept exactly as observed, its endpoint now at weight 0 (draining).
    assert got.desired["replica-b-0"].resource["spec"] == inp.observed["replica-b-0"]["spec"]
    assert got.desired["endpoint-replica-b-0"].resource["spec"]["draining"] is True
    assert _old(got) == {
        **OLD_PLACEMENT,
        "drainingSince": SINCE,
        "drainMessage": "waiting for weight 0 in every ModelService",
        "revision": "469a0495c4",
    }
    assert got.status["drainingReplicas"] == 1 and got.status["replicas"] == 1
    assert _by_reason(got.events, "ReplicaLeaving", "ReplicaReplaced", "ReplicaRemoved") == [
        EventOut(
            "Normal",
            "ReplicaLeaving",
            "replica chat-b0 on b leaves, its replacement serving: its endpoint goes to "
            "weight 0 in every ModelService, then it waits up to 30s for its requests in "
            "flight before it is deleted",
        ),
        EventOut("Normal", "ReplicaReplaced", WHY),
    ]


def test_unread_services_are_asked_for_and_hold_it() -> None:
    inp = _input(_composite(SINCE), "2026-11-01T01:05:00Z", weight=None, draining=True)
    got = md.compose_with(inp, Scripted(PLAN))
    assert md.SERVICES_REQUIREMENT in got.requirements
    assert "replica-b-0" in got.desired and "endpoint-replica-b-0" in got.desired


def test_within_the_timeout_it_stays_and_says_nothing_new() -> None:
    inp = _input(_composite(SINCE), "2026-11-01T01:00:29Z", weight=0, draining=True)
    got = md.compose_with(inp, Scripted(PLAN))
    assert "replica-b-0" in got.desired
    assert _old(got)["drainingSince"] == SINCE
    assert _old(got)["drainMessage"] == (
        "waiting at most 30s from 2026-11-01T01:00:00Z: in flight not known (no engine report)"
    )
    assert _by_reason(got.events, "ReplicaLeaving", "ReplicaReplaced", "ReplicaRemoved") == []


def test_once_the_timeout_passed_it_goes_with_a_warning() -> None:
    inp = _input(_composite(SINCE), "2026-11-01T01:00:30Z", weight=0, draining=True)
    got = md.compose_with(inp, Scripted(PLAN))
    assert "replica-b-0" not in got.desired and "endpoint-replica-b-0" not in got.desired
    assert [p["replicaName"] for p in got.status["placements"]] == ["chat-a0"]
    assert "drainingReplicas" not in got.status
    assert _by_reason(got.events, "ReplicaLeaving", "ReplicaReplaced", "ReplicaRemoved") == [
        EventOut(
            "Warning",
            "ReplicaRemoved",
            "replica chat-b0 on b deleted (weight 0 in every ModelService; drain timeout 30s "
            "passed with in flight not known (no engine report))",
        )
    ]


def test_still_routed_it_stays_past_the_timeout() -> None:
    inp = _input(_composite(SINCE), "2026-11-01T02:00:00Z", weight=300, draining=True)
    got = md.compose_with(inp, Scripted(PLAN))
    assert "replica-b-0" in got.desired
    assert _old(got)["drainMessage"] == "waiting for weight 0 in every ModelService"


def test_the_timeout_is_the_rollouts() -> None:
    composite = _composite(SINCE, {"drainTimeoutSeconds": 120})
    within = _input(composite, "2026-11-01T01:01:59Z", weight=0, draining=True)
    assert "replica-b-0" in md.compose_with(within, Scripted(PLAN)).desired
    past = _input(composite, "2026-11-01T01:02:00Z", weight=0, draining=True)
    assert "replica-b-0" not in md.compose_with(past, Scripted(PLAN)).desired


def test_immediate_deletes_it_at_once() -> None:
    composite = _composite(None, {"strategy": "Immediate"})
    got = md.compose_with(_input(composite, SINCE, weight=500, draining=False), Scripted(PLAN))
    assert "replica-b-0" not in got.desired and "endpoint-replica-b-0" not in got.desired
    assert _by_reason(got.events, "ReplicaLeaving", "ReplicaRemoved") == []


def test_the_services_are_read_while_a_replica_drains() -> None:
    draining = md.requirements("team-a", None, (), md.lists_draining(_composite(None)))
    assert md.SERVICES_REQUIREMENT in draining
    plain = deployment(replicas=1)
    assert md.SERVICES_REQUIREMENT not in md.requirements("team-a", None, (), False)
    assert not md.lists_draining(plain)
