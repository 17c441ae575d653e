"""Which replicas leave on scale-down, when they are drained, and one owner of the count."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.objects import replica_base
from modelplane.api.readers import ObservedInferenceCluster, read_inference_cluster
from modelplane.compose.deployments.scaling import (
    choose_removals,
    drained,
    plan_scaling,
    routed,
    scheduler_ask,
)
from modelplane.scheduling.types import PlannedReplica, RoleAssignment

AT = "2026-11-01T01:00:00Z"


def cluster(name: str, loads: dict[str, float | None]) -> ObservedInferenceCluster:
    """A cluster reporting `loads` (waiting + running split 1:0; None: unreachable)."""
    signals = [
        {"replica": replica_base(r), "reachable": True, "scrapedAt": AT, "windowSeconds": 60,
         "requestsWaiting": load, "requestsRunning": 0}
        if load is not None
        else {"replica": replica_base(r), "reachable": False, "error": "refused",
              "scrapedAt": AT, "windowSeconds": 0}
        for r, load in loads.items()
    ]  # fmt: skip
    obj = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {},
        "status": {"replicaSignals": signals},
    }
    read = read_inference_cluster(obj)
    assert read is not None
    return read


def planned(cluster: str, index: int, *, ready: bool = True) -> PlannedReplica:
    role = RoleAssignment(role="unified", pool="l4", device_requests=(), nodes=1)
    return PlannedReplica(
        cluster=cluster,
        index=index,
        roles=(role,),
        retained=True,
        name=f"chat-{cluster}-{index}",
        ready=ready,
    )


def names(replicas: list[PlannedReplica]) -> list[str]:
    return [p.name for p in replicas]


def test_not_ready_first_then_least_loaded() -> None:
    plan = [planned("east", 0), planned("east", 1), planned("west", 0, ready=False)]
    clusters = {
        "east": cluster("east", {"chat-east-0": 9, "chat-east-1": 2}),
        "west": cluster("west", {}),
    }
    kept, removed = choose_removals(plan, 1, frozenset(), clusters, "ml")
    assert names(removed) == ["chat-west-0", "chat-east-1"]
    assert names(kept) == ["chat-east-0"]


def test_unknown_load_is_not_taken_for_idle() -> None:
    plan = [planned("east", 0), planned("east", 1)]
    clusters = {"east": cluster("east", {"chat-east-0": None, "chat-east-1": 7})}
    _, removed = choose_removals(plan, 1, frozenset(), clusters, "ml")
    assert names(removed) == ["chat-east-1"]


def test_replicas_already_leaving_keep_leaving() -> None:
    plan = [planned("east", 0), planned("east", 1)]
    clusters = {"east": cluster("east", {"chat-east-0": 9, "chat-east-1": 1})}
    _, removed = choose_removals(plan, 1, frozenset({"chat-east-0"}), clusters, "ml")
    assert names(removed) == ["chat-east-0"]


def test_never_the_last_ready_replica() -> None:
    plan = [planned("east", 0), planned("west", 0, ready=False)]
    clusters = {"east": cluster("east", {"chat-east-0": 0})}
    kept, removed = choose_removals(plan, 0, frozenset(), clusters, "ml")
    assert (names(kept), names(removed)) == (["chat-east-0"], ["chat-west-0"])


def test_nothing_leaves_at_or_under_the_count() -> None:
    plan = [planned("east", 0), planned("east", 1)]
    assert choose_removals(plan, 2, frozenset(), {}, "ml") == (plan, [])


def endpoint(draining: bool | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": "https://east.example.com/ml-team/chat-east-0"}
    if draining is not None:
        spec["draining"] = draining
    return {"kind": "ModelEndpoint", "metadata": {"name": "chat-east-0"}, "spec": spec}


def service(weight: int) -> dict[str, Any]:
    return {
        "kind": "ModelService",
        "status": {"endpoints": [{"name": "chat-east-0", "weight": weight, "ready": True}]},
    }


def test_drained_only_once_every_service_routes_nothing_to_it() -> None:
    assert drained(None, [service(0)], "chat-east-0")  # no endpoint: no traffic
    # ... unless a service still lists it: it has not seen the endpoint go yet.
    assert not drained(None, [service(500)], "chat-east-0")
    assert drained(None, [{"kind": "ModelService", "status": {"endpoints": "x"}}], "chat-east-0")
    assert not drained(endpoint(None), [], "chat-east-0")  # not yet marked draining
    assert not drained(endpoint(True), None, "chat-east-0")  # services not read: may route
    assert drained(None, None, "chat-east-0")  # never had an endpoint
    assert not drained(endpoint(True), [service(0), service(500)], "chat-east-0")
    assert drained(
        endpoint(True), [service(0), {"kind": "ModelService", "status": {}}], "chat-east-0"
    )


def test_routed_whatever_its_own_condition_says() -> None:
    assert routed(None, [service(500)], "chat-east-0")
    assert not routed(None, [service(0)], "chat-east-0")
    assert not routed(endpoint(True), [service(0)], "chat-east-0")
    assert routed(endpoint(True), None, "chat-east-0")  # services not read: it may be
    assert not routed(None, None, "chat-east-0")  # never had an endpoint
    unreadable = {"kind": "ModelService", "status": {"endpoints": "x"}}
    assert routed(endpoint(True), [service(0), unreadable], "chat-east-0")
    assert not routed(None, [unreadable], "chat-east-0")


def deployment_spec(replicas: int) -> Any:
    from modelplane.api.model_deployment import ModelDeploymentSpec

    return ModelDeploymentSpec.model_validate(
        {
            "replicas": replicas,
            "autoscaling": {"maxReplicas": 4, "targets": {"queueDepthPerReplica": 5}},
            "nodeSelector": {"devices": [{"name": "gpu", "selectors": [{"cel": "true"}]}]},
            "workers": {"template": {"spec": {"containers": [{"name": "engine"}]}}},
        }
    )


def test_an_external_scaler_is_refused() -> None:
    status = {"autoscaling": {"desiredReplicas": 3, "currentReplicas": 3, "reason": "Steady",
                              "message": "", "specReplicas": 2}}  # fmt: skip
    scaling = plan_scaling(deployment_spec(2), status, {}, {})
    assert scaling is not None and scaling.external is None
    # Something wrote spec.replicas = 7 through the scale subresource: refused, ignored.
    scaling = plan_scaling(deployment_spec(7), status, {}, {})
    assert scaling is not None and scaling.external is not None
    assert scaling.external.startswith("spec.replicas was changed from 2 to 7")
    assert scaling.decision.desired == 3  # held: no signal; spec.replicas not taken


def test_first_decision_starts_from_spec_replicas() -> None:
    scaling = plan_scaling(deployment_spec(3), {}, {}, {})
    assert scaling is not None
    assert (scaling.decision.current, scaling.decision.desired, scaling.spec_replicas) == (3, 3, 3)


# (desired, leaving, counted at the last call) -> asked; by hand. The scheduler
# must be asked for every replica that exists, or it drops the excess undrained.
ASKS = [
    (1, 0, 4, 4),  # 4 -> 1: all 4 kept, choose_removals drains 3
    (1, 1, 3, 4),  # 3 -> 1 while one still drains from 4 -> 3: 4 exist
    (1, 2, 2, 4),  # 2 -> 1 while two drain from 4 -> 2
    (4, 1, 3, 5),  # up to 4 while one drains: one new placed, the leaving one goes on
    (3, 0, 2, 3),  # up: one new
    (2, 0, 2, 2),
]


@pytest.mark.parametrize(("desired", "leaving", "counted", "asked"), ASKS)
def test_the_scheduler_is_asked_for_every_replica_that_exists(
    desired: int, leaving: int, counted: int, asked: int
) -> None:
    assert scheduler_ask(desired, leaving, counted) == asked
