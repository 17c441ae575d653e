"""Replicas their clusters report unschedulable (issue 17, item 4): a replica whose pods
stay Unschedulable past the grace period is moved make-before-break — a replacement is
placed elsewhere (never on the reported pool) and the stuck one is withdrawn — or, with
nowhere else to go, kept and reported.

Each case is a small fleet written out by hand; expected placements are listed in
full. The inventory agent's report is `status.unschedulableReplicas` on the
InferenceCluster (`schedfleet.report_unschedulable`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from modelplane.api.readers import read_inference_cluster, read_model_replica
from modelplane.scheduling import ScheduleResult, schedule
from modelplane.scheduling.framework import Eviction, Rejection, read_input
from modelplane.scheduling.rules import UNSCHEDULABLE
from modelplane.scheduling.types import StuckPlacement
from tests.scheduling.schedfleet import (
    H100,
    IMMEDIATE,
    L4,
    SINCE,
    STUCK_MESSAGE,
    cluster,
    deployment,
    materialize,
    replica,
    report_unschedulable,
    request,
    resolved,
    workers,
)

Obj = dict[str, Any]
DRAIN = [{"key": "maintenance", "effect": "NoExecute"}]


def _state(result: ScheduleResult) -> list[tuple[str, int, tuple[str, ...], str]]:
    """(cluster, index, pools, kept|new|unschedulable|<drain reason>) of every replica."""

    def mark(p: Any) -> str:
        if p.unschedulable:
            return "unschedulable"
        return p.drain_reason or ("kept" if p.retained else "new")

    return [(p.cluster, p.index, tuple(r.pool for r in p.roles), mark(p)) for p in result.replicas]


def _l4(dep: str, cluster_name: str, index: int, pool: str = "l4", **kw: Any) -> Obj:
    return replica(dep, cluster_name, index, pool, [resolved("gpu", cel=L4)], **kw)


def _moved(name: str, cluster: str, index: int, to: tuple[str, int], pool: str = "l4") -> Any:
    return StuckPlacement(name, cluster, index, pool, SINCE, STUCK_MESSAGE, "Moved", to)


def test_a_stuck_replica_moves_to_another_cluster_and_is_withdrawn_on_placement() -> None:
    fleet = [_l4("llm", "a", 0, ready=True), _l4("llm", "a", 1)]
    a = report_unschedulable(cluster("a", {"l4": ("l4-1x", 2)}), fleet[1], "l4")
    b = cluster("b", {"l4": ("l4-1x", 2)})
    dep = deployment(2, [request("gpu", L4)])
    result = schedule(dep, [a, b], fleet)
    assert _state(result) == [("a", 0, ("l4",), "kept"), ("b", 0, ("l4",), "new")]
    stuck = fleet[1]["metadata"]["name"]
    assert result.stuck == (_moved(stuck, "a", 1, ("b", 0)),)
    assert result.replaced == (
        (
            stuck,
            f"cluster a reports its pods unschedulable on pool l4 since {SINCE}: {STUCK_MESSAGE}",
        ),
    )
    assert (result.placed, result.missing) == (2, 0)
    # The replacement does not count on the stuck one's devices: with one node
    # only on b it still fits, and the ledger charged it.
    b1 = cluster("b", {"l4": ("l4-1x", 1)})
    assert _state(schedule(dep, [a, b1], fleet)) == _state(result)

    # Next reconcile: the stuck replica is gone (Crossplane deleted it); nothing moves.
    fleet = materialize(dep, result, fleet, 1)
    again = schedule(dep, [a, b], fleet)
    assert _state(again) == [("a", 0, ("l4",), "kept"), ("b", 0, ("l4",), "kept")]
    assert again.stuck == () and again.replaced == ()


def test_the_replacement_avoids_the_reported_pool_but_may_use_another_on_the_cluster() -> None:
    fleet = [_l4("llm", "a", 0)]
    # Pool l4 has a free node as far as the ledger knows; the cluster says otherwise.
    a = cluster("a", {"l4": ("l4-1x", 4), "spare": ("l4-1x", 1)})
    a = report_unschedulable(a, fleet[0], "l4")
    result = schedule(deployment(1, [request("gpu", L4)]), [a], fleet)
    assert _state(result) == [("a", 1, ("spare",), "new")]
    assert [s.outcome for s in result.stuck] == ["Moved"]
    assert result.stuck[0].moved_to == ("a", 1)


def test_a_report_without_a_pool_holds_against_the_replicas_pool() -> None:
    fleet = [_l4("llm", "a", 0)]
    a = cluster("a", {"l4": ("l4-1x", 4), "spare": ("l4-1x", 1)})
    dep = deployment(1, [request("gpu", L4)])
    result = schedule(dep, [report_unschedulable(a, fleet[0])], fleet)
    assert _state(result) == [("a", 1, ("spare",), "new")]
    assert result.stuck[0].pool == "l4"


def test_a_report_naming_a_pool_the_replica_does_not_hold_holds_against_its_own_pool() -> None:
    """A report is about the replica, whatever pool it names: a pool the replica does
    not hold (a stale or garbled report) is no evidence against that pool. The
    refusal lands on the pool the replica holds, and the replacement goes to the
    named one."""
    fleet = [_l4("llm", "a", 0)]
    a = cluster("a", {"l4": ("l4-1x", 4), "spare": ("l4-1x", 1)})
    reported = report_unschedulable(a, fleet[0], "spare")
    inp = read_input(deployment(1, [request("gpu", L4)]), [reported], fleet)
    assert dict(UNSCHEDULABLE.refusals(inp)) == {
        ("a", "l4"): Rejection("ReplicaUnschedulable", (fleet[0]["metadata"]["name"], SINCE))
    }
    result = schedule(deployment(1, [request("gpu", L4)]), [reported], fleet)
    assert _state(result) == [("a", 1, ("spare",), "new")]
    assert result.stuck[0].pool == "l4"


def test_with_nowhere_else_to_go_the_stuck_replica_is_kept_and_says_why() -> None:
    fleet = [_l4("llm", "a", 0, ready=True), _l4("llm", "a", 1)]
    a = report_unschedulable(cluster("a", {"l4": ("l4-1x", 4)}), fleet[1], "l4")
    b = cluster("b", {"l4": ("l4-1x", 1)})
    other = [_l4("other", "b", 0, ready=True)]  # b's only node is taken
    result = schedule(deployment(2, [request("gpu", L4)]), [a, b], fleet + other)
    assert _state(result) == [("a", 0, ("l4",), "kept"), ("a", 1, ("l4",), "unschedulable")]
    stuck = fleet[1]["metadata"]["name"]
    assert result.stuck == (
        StuckPlacement(stuck, "a", 1, "l4", SINCE, STUCK_MESSAGE, "Kept", None),
    )
    assert result.replicas[1].unschedulable_since == SINCE
    # Not counted: one replica is missing, explained per cluster.
    assert (result.placed, result.missing, result.replaced) == (1, 1, ())
    verdicts = {v.cluster: (v.reason, v.message) for v in result.clusters}
    assert verdicts["a"] == (
        "ReplicaUnschedulable",
        f"no pool may take spec.nodeSelector: pool l4: the cluster reports replica {stuck} "
        f"of this deployment unschedulable on this pool since {SINCE}; no new replica goes "
        "here while it does",
    )
    assert verdicts["b"][0] == "InsufficientCapacity"
    pool = next(p for v in result.clusters if v.cluster == "a" for p in v.pools)
    assert (pool.pool, pool.matched, pool.refused) == ("l4", False, "ReplicaUnschedulable")


def test_immediate_withdraws_at_once_and_re_places() -> None:
    fleet = [_l4("llm", "a", 0)]
    a = report_unschedulable(cluster("a", {"l4": ("l4-1x", 2)}), fleet[0], "l4")
    b = cluster("b", {"l4": ("l4-1x", 1)})
    dep = deployment(1, [request("gpu", L4)], rollout=IMMEDIATE)
    result = schedule(dep, [a, b], fleet)
    assert _state(result) == [("b", 0, ("l4",), "new")]
    assert result.stuck == (_moved(fleet[0]["metadata"]["name"], "a", 0, ("b", 0)),)
    # Nowhere to go: under Immediate it is withdrawn all the same.
    result = schedule(dep, [a], fleet)
    assert _state(result) == []
    assert [(s.outcome, s.moved_to) for s in result.stuck] == [("Withdrawn", None)]
    assert (result.missing, len(result.replaced)) == (1, 1)


def test_a_disaggregated_replica_moves_whole_and_keeps_off_the_reported_pool() -> None:
    dep = deployment(
        1,
        prefill=([request("gpu", H100, count=8)], workers()),
        decode=([request("gpu", L4)], workers()),
    )
    # Both L4 pools keep as many whole nodes after the first decode worker, so
    # the pool-name order decides where it lands (l4).
    pools = {"h100": ("h100-8x", 2), "l4": ("l4-1x", 2), "l4-spare": ("l4-1x", 2)}
    a = cluster("a", pools)
    first = schedule(dep, [a], [])
    assert _state(first) == [("a", 0, ("h100", "l4"), "new")]
    fleet = materialize(dep, first, [], 1)

    # The decode pods are the stuck ones: the replacement keeps both roles on one
    # cluster, its decode off pool l4; prefill may reuse pool h100.
    result = schedule(dep, [report_unschedulable(a, fleet[0], "l4")], fleet)
    assert _state(result) == [("a", 1, ("h100", "l4-spare"), "new")]
    assert result.stuck[0].pool == "l4"

    # Reported without a pool: every pool the replica holds is refused, so only
    # another cluster can take it.
    b = cluster("b", {"h100": ("h100-8x", 1), "l4": ("l4-1x", 1)})
    result = schedule(dep, [report_unschedulable(a, fleet[0]), b], fleet)
    assert _state(result) == [("b", 0, ("h100", "l4"), "new")]
    assert result.stuck[0].pool == "h100, l4"


def test_two_deployments_stuck_on_one_pool_never_overcommit_the_target() -> None:
    one, two = _l4("one", "a", 0), _l4("two", "a", 0)
    a = cluster("a", {"l4": ("l4-1x", 2)})
    a = report_unschedulable(report_unschedulable(a, one, "l4"), two, "l4")
    b = cluster("b", {"l4": ("l4-1x", 1)})  # room for exactly one of them
    dep_one = deployment(1, [request("gpu", L4)], name="one")
    dep_two = deployment(1, [request("gpu", L4)], name="two")
    first = schedule(dep_one, [a, b], [one, two])
    assert _state(first) == [("b", 0, ("l4",), "new")]
    fleet = [*materialize(dep_one, first, [one], 1), two]
    second = schedule(dep_two, [a, b], fleet)
    # The first's replacement is charged on b: the second stays where it is, stuck.
    assert _state(second) == [("a", 0, ("l4",), "unschedulable")]
    assert {v.cluster: v.reason for v in second.clusters} == {
        "a": "ReplicaUnschedulable",
        "b": "InsufficientCapacity",
    }


def test_a_stuck_replacement_of_a_draining_replica_moves_at_the_surge_bound() -> None:
    # a drains (NoExecute); its replacement b/0 is stuck. Draining a/0 and stuck b/0
    # fill spec.replicas + maxSurge, yet swapping b/0 for c/0 adds nothing over it.
    old = _l4("llm", "a", 0, ready=True)
    new = _l4("llm", "b", 0, created="2026-01-02T00:00:00Z")
    a = cluster("a", {"l4": ("l4-1x", 1)}, taints=DRAIN)
    b = report_unschedulable(cluster("b", {"l4": ("l4-1x", 1)}), new, "l4")
    c = cluster("c", {"l4": ("l4-1x", 1)})
    result = schedule(deployment(1, [request("gpu", L4)]), [a, b, c], [old, new])
    assert _state(result) == [("a", 0, ("l4",), "NoExecuteTaint"), ("c", 0, ("l4",), "new")]
    assert len(result.replicas) <= 1 + result.surge
    assert [s.outcome for s in result.stuck] == ["Moved"]


def test_replacements_are_swaps_so_every_stuck_replica_moves_at_once() -> None:
    # Three of four stuck: each replacement is a swap, so all three move at once.
    fleet = [_l4("llm", "a", i, ready=i == 0) for i in range(4)]
    a = cluster("a", {"l4": ("l4-1x", 4)})
    for r in fleet[1:]:
        a = report_unschedulable(a, r, "l4")
    b = cluster("b", {"l4": ("l4-1x", 8)})
    result = schedule(deployment(4, [request("gpu", L4)]), [a, b], fleet)
    assert _state(result) == [
        ("a", 0, ("l4",), "kept"),
        ("b", 0, ("l4",), "new"),
        ("b", 1, ("l4",), "new"),
        ("b", 2, ("l4",), "new"),
    ]
    assert len(result.replaced) == 3


def test_scale_down_takes_stuck_replicas_first() -> None:
    fleet = [_l4("llm", "a", 0, ready=True), _l4("llm", "a", 1, ready=True), _l4("llm", "a", 2)]
    a = report_unschedulable(cluster("a", {"l4": ("l4-1x", 3)}), fleet[2], "l4")
    result = schedule(deployment(2, [request("gpu", L4)]), [a], fleet)
    assert _state(result) == [("a", 0, ("l4",), "kept"), ("a", 1, ("l4",), "kept")]
    assert result.scaled_down == (fleet[2]["metadata"]["name"],)
    assert result.stuck == ()


def test_a_ready_replica_is_not_moved_by_a_stale_report() -> None:
    fleet = [_l4("llm", "a", 0, ready=True)]
    a = report_unschedulable(cluster("a", {"l4": ("l4-1x", 2)}), fleet[0], "l4")
    b = cluster("b", {"l4": ("l4-1x", 2)})
    result = schedule(deployment(2, [request("gpu", L4)]), [a, b], fleet)
    # Kept; the report does not refuse the pool either (a serving replica is no evidence).
    assert _state(result) == [("a", 0, ("l4",), "kept"), ("b", 0, ("l4",), "new")]
    assert result.stuck == ()


def test_another_deployments_report_does_not_refuse_the_pool() -> None:
    other = _l4("other", "a", 0)
    a = report_unschedulable(cluster("a", {"l4": ("l4-1x", 2)}), other, "l4")
    result = schedule(deployment(1, [request("gpu", L4)]), [a], [other])
    assert _state(result) == [("a", 0, ("l4",), "new")]


def test_the_report_names_the_replica_by_its_pods_label_not_its_object_name() -> None:
    # A long deployment name: the ModelReplica's name is cut to the 40-character
    # workload base name its pods carry in `modelplane.ai/replica`.
    dep_name = "a-deployment-with-a-rather-long-name"
    stuck = _l4(dep_name, "a", 1)
    assert stuck["metadata"]["name"] == "a-deployment-with-a-rather-long-name-c5d2c34458"
    label = "a-deployment-with-a-rather-long-6db91dcc"
    pools = {"l4": ("l4-1x", 2), "spare": ("l4-1x", 1)}
    dep = deployment(1, [request("gpu", L4)], name=dep_name)

    def reported(replica_label: str) -> Obj:
        a = cluster("a", pools)
        entry = {"replica": replica_label, "pool": "l4", "since": SINCE}
        return {**a, "status": {**a["status"], "unschedulableReplicas": [entry]}}

    moved = schedule(dep, [reported(label)], [stuck])
    assert _state(moved) == [("a", 0, ("spare",), "new")]
    unknown = schedule(dep, [reported(stuck["metadata"]["name"])], [stuck])
    assert _state(unknown) == [("a", 1, ("l4",), "kept")]


def test_the_filter_evicts_reported_replicas_and_refuses_their_pools() -> None:
    stuck, ready = _l4("llm", "a", 0), _l4("llm", "a", 1, pool="big", ready=True)
    cl = cluster("a", {"l4": ("l4-1x", 1), "big": ("l4-1x", 1)})
    cl = report_unschedulable(report_unschedulable(cl, stuck), ready)
    inp = read_input(deployment(2, [request("gpu", L4)]), [cl], [stuck, ready])
    observed = read_inference_cluster(cl)
    assert observed is not None
    r0, r1 = (read_model_replica(x) for x in (stuck, ready))
    assert r0 is not None and r1 is not None
    assert UNSCHEDULABLE.admit(inp, observed) is None
    assert UNSCHEDULABLE.evict(inp, observed, r0) == Eviction(
        "Unschedulable", ("a", "l4", SINCE, STUCK_MESSAGE)
    )
    assert UNSCHEDULABLE.evict(inp, observed, r1) is None
    assert dict(UNSCHEDULABLE.refusals(inp)) == {
        ("a", "l4"): Rejection("ReplicaUnschedulable", (stuck["metadata"]["name"], SINCE))
    }


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "operations" / "unschedulable"


def _example() -> tuple[Obj, list[Obj], dict[str, str]]:
    """The example's deployment, replica snapshot and fixture (its files, as written)."""
    docs = [
        d
        for name in ("deployment.yaml", "replicas.yaml", "fixtures.yaml")
        for d in yaml.safe_load_all((EXAMPLE / name).read_text(encoding="utf-8"))
        if d
    ]
    (dep,) = [d for d in docs if d["kind"] == "ModelDeployment"]
    (fixture,) = [d for d in docs if d["kind"] == "ConfigMap"]
    return dep, [d for d in docs if d["kind"] == "ModelReplica"], fixture["data"]


def test_the_operations_example_moves_the_stuck_replica_to_west() -> None:
    # What examples/operations/unschedulable shows once the render simulates its
    # fixture: east reports chat's replicas on pool l4 (west/0 serves elsewhere).
    dep, replicas, fixture = _example()
    (east_0,) = [r for r in replicas if r["spec"]["clusterName"] == "east"]
    east = report_unschedulable(
        cluster("east", {"l4": ("l4-1x", 2)}),
        east_0,
        fixture["pool"],
        since=fixture["since"],
        message=fixture["message"],
    )
    result = schedule(dep, [east, cluster("west", {"l4": ("l4-1x", 2)})], replicas)
    assert _state(result) == [("west", 0, ("l4",), "kept"), ("west", 1, ("l4",), "new")]
    assert [(s.name, s.outcome, s.moved_to) for s in result.stuck] == [
        ("chat-f80ab129e8", "Moved", ("west", 1))
    ]
    # With west full, the stuck replica stays, and the what-if says what to add.
    result = schedule(dep, [east, cluster("west", {"l4": ("l4-1x", 1)})], replicas)
    assert _state(result) == [("east", 0, ("l4",), "unschedulable"), ("west", 0, ("l4",), "kept")]
    assert [(w.cluster, w.nodes) for w in result.what_if] == [("west", 1)]


def test_an_eviction_of_a_replica_holding_no_pool_names_the_pool_unknown() -> None:
    # A mutation survivor (issue 24): the "?" for a replica whose roles name no pool.
    stuck = _l4("llm", "a", 0)
    cl = report_unschedulable(cluster("a", {"l4": ("l4-1x", 1)}), stuck)
    inp = read_input(deployment(1, [request("gpu", L4)]), [cl], [stuck])
    observed, r0 = read_inference_cluster(cl), read_model_replica(stuck)
    assert observed is not None and r0 is not None
    poolless = dataclasses.replace(r0, roles=())
    assert UNSCHEDULABLE.evict(inp, observed, poolless) == Eviction(
        "Unschedulable", ("a", "?", SINCE, STUCK_MESSAGE)
    )


def test_another_deployments_replica_listed_first_does_not_hide_this_ones_report() -> None:
    # A mutation survivor (issue 24): skipping another deployment's replica must not
    # end the scan; the deployment's own stuck replica, listed after it, still refuses.
    theirs, stuck = _l4("aaa", "a", 0), _l4("llm", "a", 0)
    cl = report_unschedulable(cluster("a", {"l4": ("l4-1x", 2)}), stuck)
    inp = read_input(deployment(1, [request("gpu", L4)]), [cl], [theirs, stuck])
    assert [r.name for r in inp.replicas] == [theirs["metadata"]["name"], stuck["metadata"]["name"]]
    assert dict(UNSCHEDULABLE.refusals(inp)) == {
        ("a", "l4"): Rejection("ReplicaUnschedulable", (stuck["metadata"]["name"], SINCE))
    }
