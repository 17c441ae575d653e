"""examples/tenancy and examples/cost rendered: the quota refusal, the preemption with
both sides' words, the FleetQuota's status, and the cost-driven placement."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.local import ControlPlane, RenderResult, load_paths


@pytest.fixture(scope="module")
def tenancy() -> RenderResult:
    return ControlPlane(load_paths(["examples/tenancy"])).run(50)


@pytest.fixture(scope="module")
def cost() -> RenderResult:
    return ControlPlane(load_paths(["examples/cost"])).run(50)


def _obj(rendered: RenderResult, kind: str, namespace: str, name: str) -> dict[str, Any]:
    obj = rendered.get(c.API_VERSION, kind, name, namespace)
    assert obj is not None, (kind, namespace, name)
    return obj


def _cond(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    for cond in obj["status"]["conditions"]:
        if cond["type"] == type_:
            return cond["status"], cond["reason"], cond.get("message", "")
    raise AssertionError(type_)


def _placed(rendered: RenderResult, namespace: str) -> list[tuple[str, str, str]]:
    return sorted(
        (r["spec"]["deploymentName"], r["spec"]["clusterName"], r["spec"]["nodePoolName"])
        for r in rendered.store.list(c.API_VERSION, "ModelReplica", namespace)
    )


def test_the_lab_quota_refuses_the_second_replica_with_its_numbers(tenancy: RenderResult) -> None:
    dep = _obj(tenancy, "ModelDeployment", "lab", "experiments")
    status, reason, message = _cond(dep, "Scheduled")
    assert (status, reason) == ("False", "QuotaExceeded")
    assert "placed 1 of 2 replicas: FleetQuota lab limit h100: 8/8 devices" in message
    reasons = {u["cluster"]: u["reason"] for u in dep["status"]["unschedulable"]}
    assert reasons == {"central": "QuotaExceeded", "east": "QuotaExceeded", "west": "QuotaExceeded"}
    quota = _obj(tenancy, "FleetQuota", "lab", "lab")
    assert quota["status"]["used"] == [
        {"name": "h100", "used": 8, "hard": 8},
        {"name": "large-memory", "used": 8, "hard": 64},
    ]
    assert _cond(quota, "WithinQuota")[:2] == ("True", "WithinLimits")


def test_the_critical_deployment_preempts_and_both_sides_say_so(tenancy: RenderResult) -> None:
    assert _placed(tenancy, "team-a") == [("serve", "east", "h100"), ("serve", "west", "h100")]
    serve = _obj(tenancy, "ModelDeployment", "team-a", "serve")
    status, reason, message = _cond(serve, "Preemption")
    assert (status, reason) == ("True", "Preempting")
    assert "on pool h100 of cluster east by preempting 1 lower-priority replica(s)" in message
    assert "team-a/nightly-" in message and "(nightly, priority 0)" in message
    nightly = _obj(tenancy, "ModelDeployment", "team-a", "nightly")
    status, reason, message = _cond(nightly, "Preemption")
    assert (status, reason) == ("True", "Preempted")
    assert "of team-a/serve (priority 100000 > 0) on pool h100 of cluster east" in message
    assert "make-before-break does not apply to a preemption" in message
    assert _cond(nightly, "Scheduled")[:2] == ("False", "InsufficientCapacity")
    # The lab's replica (priority batch, 100) was not the lowest: it stays.
    assert _placed(tenancy, "lab") == [("experiments", "central", "h100")]


def test_lowest_cost_without_spot_and_the_spot_reclaim(cost: RenderResult) -> None:
    replicas = _placed(cost, "ml-team")
    chat = Counter(cl for dep, cl, _ in replicas if dep == "chat")
    assert chat == {"eu-west": 2, "us-east": 2}  # the two cheapest; ap-south never
    assert not any(pool == "l4-spot" for _, _, pool in replicas)  # reclaimed: batch moved
    # Its second replica ties with ap-south on the weighted score; the best fit takes
    # it to us-east, whose l4 keeps fewer whole nodes after it (ap-south's: three).
    assert sorted((cl, pool) for dep, cl, pool in replicas if dep == "batch") == [
        ("us-east", "l4"),
        ("us-east", "l4"),
    ]


def test_without_the_reclaim_batch_runs_on_spot() -> None:
    docs = [d for d in load_paths(["examples/cost"]) if d["kind"] != "ConfigMap"]
    rendered = ControlPlane(docs).run(50)
    batch = [p for dep, _, p in _placed(rendered, "ml-team") if dep == "batch"]
    assert batch == ["l4-spot", "l4-spot"]
