"""The deployment composer under make-before-break (issue 17): a draining replica is
composed exactly as observed, shown in status.placements, counted as serving, and
the `Scheduled` condition says whether replacements are on their way or cannot be
placed. Expected outputs are written out by hand; the scheduler's answer is scripted.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.types import ComposeInput, ConditionOut, EventOut
from modelplane.scheduling.types import ClusterVerdict, ScheduleResult
from tests.compose.test_model_deployment_composer import (
    FETCHED,
    Scripted,
    deployment,
    observed_replica,
    placement,
    planned,
)

WHY = "cluster a has untolerated taint drain=true:NoExecute"


def _draining(cluster: str, index: int) -> Any:
    return replace(
        planned(cluster, index, retained=True),
        ready=True,
        drain_reason="NoExecuteTaint",
        drain_message=WHY,
    )


def _input(observed: dict[str, Any]) -> ComposeInput:
    return ComposeInput(deployment(replicas=1), observed=observed, required=FETCHED)


def test_a_draining_replica_is_kept_as_observed_and_marked() -> None:
    old = observed_replica("a", 0, ready=True)
    # The spec the replica was composed from differs from today's: kept as it is.
    old["spec"]["workers"] = {**old["spec"]["workers"], "count": 7}
    old["metadata"]["annotations"] = {"crossplane.io/composition-resource-name": "replica-a-0"}
    plan = ScheduleResult(replicas=(_draining("a", 0), planned("b", 0)), desired=1, surge=1)
    got = md.compose_with(_input({"replica-a-0": old}), Scripted(plan))
    expected_old = copy.deepcopy(old)
    for key in ("uid", "resourceVersion", "annotations"):
        expected_old["metadata"].pop(key)
    expected_old.pop("status")
    assert got.desired["replica-a-0"].resource == expected_old
    assert got.desired["replica-a-0"].ready == "True"
    assert got.status["placements"] == [
        # It runs the old template (count 7): its own revision, not the spec's.
        {
            **placement("a", 0, True, revision="6f520af501"),
            "draining": True,
            "drainReason": "NoExecuteTaint",
        },
        placement("b", 0, False),
    ]
    assert (got.status["replicas"], got.status["readyReplicas"]) == (1, 0)
    assert got.status["drainingReplicas"] == 1
    message = (
        "placed 1 of 1 replicas; 1 draining replica(s) keep serving until their "
        f"replacements are Ready: a/0 ({WHY})"
    )
    assert got.conditions[0] == ConditionOut("Scheduled", "True", "Draining", message)
    # The draining replica still serves: the deployment is not short of Ready replicas.
    assert got.conditions[1] == ConditionOut(
        "ReplicasReady", "True", "AllReplicasReady", "1 of 1 replicas ready"
    )


def test_replacements_held_back_by_max_surge_are_on_their_way() -> None:
    old = {f"replica-a-{i}": observed_replica("a", i, ready=True) for i in range(2)}
    plan = ScheduleResult(
        replicas=(_draining("a", 0), _draining("a", 1), planned("b", 0)), desired=2, surge=1
    )
    got = md.compose_with(
        ComposeInput(deployment(replicas=2), observed=old, required=FETCHED), Scripted(plan)
    )
    message = (
        "placed 1 of 2 replicas; 2 draining replica(s) keep serving until their replacements "
        f"are Ready (at most 1 over spec.replicas at once, rollout.maxSurge): a/0 ({WHY}); "
        f"a/1 ({WHY})"
    )
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "Draining", message)
    assert got.events == []


def test_a_replacement_that_fits_nowhere_keeps_the_old_replica_and_says_why() -> None:
    old = {"replica-a-0": observed_replica("a", 0, ready=True)}
    plan = ScheduleResult(
        replicas=(_draining("a", 0),),
        desired=1,
        surge=1,
        clusters=(
            ClusterVerdict("a", False, "Tainted", "untolerated taint drain=true:NoExecute"),
            ClusterVerdict("b", False, "InsufficientCapacity", "pool l4: needs 1 nodes, 0 free"),
        ),
    )
    got = md.compose_with(_input(old), Scripted(plan))
    message = (
        "placed 0 of 1 replicas: no replacement can be placed for 1 draining replica(s), "
        f"which keep serving: a/0 ({WHY}); Tainted on a; InsufficientCapacity on b "
        "(see status.unschedulable)"
    )
    assert got.conditions[0] == ConditionOut(
        "Scheduled", "False", "ReplacementUnschedulable", message
    )
    assert got.events == [EventOut("Warning", "ReplacementUnschedulable", message)]
    assert [u["cluster"] for u in got.status["unschedulable"]] == ["a", "b"]
    assert list(got.desired) == ["replica-a-0"]
