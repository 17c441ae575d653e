"""The deployment composer for replicas their clusters report unschedulable (issue 17,
item 4): the `Scheduled` condition's `ReplicaUnschedulable` reason names the cluster,
the pool, since when and the cluster scheduler's words, and what was done; a kept
one is marked in status.placements and not counted. Expected outputs are written
out by hand; the scheduler's answer is scripted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from modelplane.api.objects import replica_base
from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.types import ComposeInput, ConditionOut, EventOut
from modelplane.scheduling.types import (
    ClusterVerdict,
    PoolAddition,
    ScheduleResult,
    StuckPlacement,
    WhatIf,
)
from tests.compose.replicas import cluster as replica_cluster
from tests.compose.replicas import manifest, run
from tests.compose.replicas import replica as replica_xr
from tests.compose.test_model_deployment_composer import (
    FETCHED,
    Scripted,
    deployment,
    observed_replica,
    placement,
    planned,
)

SINCE = "2026-11-23T10:00:00Z"
SAID = "0/2 nodes are available: 2 cannot allocate all claims"


def _stuck(outcome: Any, moved_to: tuple[str, int] | None = None) -> StuckPlacement:
    return StuckPlacement("chat-a1", "a", 1, "l4", SINCE, SAID, outcome, moved_to)


def _observed() -> dict[str, Any]:
    return {
        "replica-a-0": observed_replica("a", 0, ready=True),
        "replica-a-1": observed_replica("a", 1, ready=False),
    }


def test_a_moved_replica_is_reported_with_where_it_went() -> None:
    plan = ScheduleResult(
        replicas=(replace(planned("a", 0, retained=True), ready=True), planned("b", 0)),
        desired=2,
        surge=1,
        replaced=(("chat-a1", "cluster a reports its pods unschedulable on pool l4"),),
        stuck=(_stuck("Moved", ("b", 0)),),
    )
    got = md.compose_with(ComposeInput(deployment(), _observed(), FETCHED), Scripted(plan))
    assert list(got.desired) == ["replica-a-0", "replica-b-0"]
    message = (
        "placed 2 of 2 replicas; replica chat-a1 on cluster a, pool l4, since "
        f"{SINCE} ({SAID}): moved to b/0"
    )
    assert got.conditions[0] == ConditionOut("Scheduled", "True", "ReplicaUnschedulable", message)
    assert got.events == [
        EventOut(
            "Normal",
            "ReplicaReplaced",
            "chat-a1: cluster a reports its pods unschedulable on pool l4",
        )
    ]


def test_a_kept_replica_is_marked_not_counted_and_explained() -> None:
    kept = replace(planned("a", 1, retained=True), unschedulable_since=SINCE)
    plan = ScheduleResult(
        replicas=(replace(planned("a", 0, retained=True), ready=True), kept),
        desired=2,
        surge=1,
        clusters=(
            ClusterVerdict("a", False, "ReplicaUnschedulable", "no pool may take it"),
            ClusterVerdict("b", False, "InsufficientCapacity", "pool l4: needs 1 nodes, 0 free"),
        ),
        what_if=(WhatIf("b", 1, (PoolAddition("l4", "l4-1x", ("unified",), 1),)),),
        stuck=(_stuck("Kept"),),
    )
    got = md.compose_with(ComposeInput(deployment(), _observed(), FETCHED), Scripted(plan))
    # Still composed: the cluster may yet schedule it.
    assert list(got.desired) == ["replica-a-0", "replica-a-1"]
    assert got.status["placements"] == [
        placement("a", 0, True),
        {**placement("a", 1, False), "unschedulable": True, "unschedulableSince": SINCE},
    ]
    assert (got.status["replicas"], got.status["readyReplicas"]) == (1, 1)
    assert "drainingReplicas" not in got.status
    assert [u["cluster"] for u in got.status["unschedulable"]] == ["a", "b"]
    message = (
        "placed 1 of 2 replicas; replica chat-a1 on cluster a, pool l4, since "
        f"{SINCE} ({SAID}): kept, no other cluster or pool can take it yet: "
        "add 1 node to pool l4 on cluster b to place 1 more replica; ReplicaUnschedulable on a; "
        "InsufficientCapacity on b (see status.unschedulable)"
    )
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "ReplicaUnschedulable", message)
    assert got.events == [EventOut("Warning", "ReplicaUnschedulable", message)]


def test_withdrawn_under_immediate_without_a_replacement() -> None:
    plan = ScheduleResult(
        replicas=(replace(planned("a", 0, retained=True), ready=True),),
        desired=2,
        clusters=(ClusterVerdict("b", False, "InsufficientCapacity", "full"),),
        replaced=(("chat-a1", "cluster a reports its pods unschedulable on pool l4"),),
        stuck=(_stuck("Withdrawn"),),
    )
    got = md.compose_with(ComposeInput(deployment(), _observed(), FETCHED), Scripted(plan))
    assert list(got.desired) == ["replica-a-0"]
    cond = got.conditions[0]
    assert (cond.status, cond.reason) == ("False", "ReplicaUnschedulable")
    assert cond.message == (
        "placed 1 of 2 replicas; replica chat-a1 on cluster a, pool l4, since "
        f"{SINCE} ({SAID}): withdrawn (rollout Immediate), no other cluster or pool can "
        "take it: InsufficientCapacity on b (see status.unschedulable)"
    )


def test_the_workload_pods_carry_the_label_the_scheduler_looks_reports_up_by() -> None:
    # The inventory agent reports a replica by its pods' `modelplane.ai/replica`
    # label; the scheduler maps a ModelReplica name to it with `replica_base`.
    xr = replica_xr()
    xr["metadata"]["name"] = "a-deployment-with-a-rather-long-name-c5d2c34458"
    res = run(xr, replica_cluster())
    pods = manifest(res, "unified-deployment")["spec"]["template"]["metadata"]["labels"]
    assert pods["modelplane.ai/replica"] == "a-deployment-with-a-rather-long-6db91dcc"
    assert replica_base(xr["metadata"]["name"]) == pods["modelplane.ai/replica"]


def test_moved_but_still_short_says_why_the_rest_has_no_place() -> None:
    plan = ScheduleResult(
        replicas=(replace(planned("a", 0, retained=True), ready=True), planned("b", 0)),
        desired=3,
        clusters=(ClusterVerdict("b", False, "InsufficientCapacity", "full"),),
        replaced=(("chat-a1", "cluster a reports its pods unschedulable on pool l4"),),
        stuck=(_stuck("Moved", ("b", 0)),),
    )
    got = md.compose_with(
        ComposeInput(deployment(replicas=3), _observed(), FETCHED), Scripted(plan)
    )
    message = (
        "placed 2 of 3 replicas; replica chat-a1 on cluster a, pool l4, since "
        f"{SINCE} ({SAID}): moved to b/0: InsufficientCapacity on b (see status.unschedulable)"
    )
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "ReplicaUnschedulable", message)
    assert EventOut("Warning", "ReplicaUnschedulable", message) in got.events
