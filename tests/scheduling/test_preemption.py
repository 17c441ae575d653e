"""Preemption choices, by hand: the fewest victims, the lowest priority, on one pool, never
for equal priority; and the victim's side (withdrawn at once, re-placed if it fits)."""

from __future__ import annotations

import pytest
from schedfleet import H100, cluster, deployment, replica, request, resolved, workers
from tenancy import priority_class, quota, run, with_priority

from modelplane.scheduling.names import replica_name

PRIORITIES = [
    priority_class("critical", 1000),
    priority_class("high", 500),
    priority_class("mid", 50),
    priority_class("low", 10),
]
H = lambda n: [resolved("gpu", n, cel=H100)]  # noqa: E731 - a table's shorthand


def other(dep: str, cl: str, index: int, pool: str, n: int, prio: str | None, **kw: object) -> dict:
    """A replica of another deployment (namespace team-b) holding `n` H100s."""
    return with_priority(replica(dep, cl, index, pool, H(n), namespace="team-b", **kw), prio)


def preemptor(count: int = 8, prio: str | None = "critical", **spec: object) -> dict:
    dep = deployment(1, [request("gpu", H100, count=count)], name="serve")
    dep["spec"].update(spec)
    return with_priority(dep, prio)


def victims(result) -> list[tuple[str, str, str, list[str]]]:  # type: ignore[no-untyped-def]
    return [
        (p.cluster, p.pool, p.replica.split("-")[0], [v.deployment for v in p.victims])
        for p in result.preemptions
    ]


def test_fewest_victims_win() -> None:
    # east's node holds two 4-GPU replicas; west's one 8-GPU replica, all the same priority.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)}), cluster("west", {"h100": ("h100-8x", 1)})]
    held = [
        other("a", "east", 0, "h100", 4, "low"),
        other("b", "east", 0, "h100", 4, "low"),
        other("c", "west", 0, "h100", 8, "low"),
    ]
    result = run(preemptor(), fleet, held, priorities=PRIORITIES)
    assert victims(result) == [("west", "h100", "serve", ["c"])]
    [placed] = result.replicas
    assert placed.cluster == "west" and placed.preempts == (
        ("team-b", held[2]["metadata"]["name"]),
    )


def test_the_lowest_priority_goes_first() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)}), cluster("west", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "mid"), other("b", "west", 0, "h100", 8, "low")]
    assert victims(run(preemptor(), fleet, held, priorities=PRIORITIES)) == [
        ("west", "h100", "serve", ["b"])
    ]


def test_never_more_than_needed_lowest_first_within_the_pool() -> None:
    # Four 2-GPU replicas on one 8-GPU node; 4 GPUs are needed: the two lowest go.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [
        other("d", "east", 0, "h100", 2, "high"),
        other("c", "east", 0, "h100", 2, "mid"),
        other("a", "east", 0, "h100", 2, None),
        other("b", "east", 0, "h100", 2, "low"),
    ]
    result = run(preemptor(count=4), fleet, held, priorities=PRIORITIES)
    assert victims(result) == [("east", "h100", "serve", ["a", "b"])]
    assert [v.priority for v in result.preemptions[0].victims] == [0, 10]


def test_a_spared_victim_is_given_back() -> None:
    # Lowest first takes the 2-GPU replica (low) and then the 6-GPU one (mid); the 6 alone
    # would not do (2 + 6 = 8 needed), so both stay victims; with a 4-GPU need, the 6-GPU
    # (mid) one alone suffices after the 2 is added first and then given back.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("small", "east", 0, "h100", 2, "low"), other("big", "east", 0, "h100", 6, "mid")]
    both = run(preemptor(count=8), fleet, held, priorities=PRIORITIES)
    assert victims(both) == [("east", "h100", "serve", ["small", "big"])]
    one = run(preemptor(count=4), fleet, held, priorities=PRIORITIES)
    assert victims(one) == [("east", "h100", "serve", ["big"])]


def test_never_for_equal_or_higher_priority() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "critical")]
    result = run(preemptor(), fleet, held, priorities=PRIORITIES)
    assert result.preemptions == () and result.placed == 0


def test_preemption_policy_never_and_no_priority_never_preempt() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    never = run(preemptor(preemptionPolicy="Never"), fleet, held, priorities=PRIORITIES)
    assert never.preemptions == () and never.placed == 0
    unnamed = run(preemptor(prio=None), fleet, held, priorities=PRIORITIES)
    assert unnamed.preemptions == ()


def test_no_preemption_when_a_replica_fits_anyway() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 2)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    result = run(preemptor(), fleet, held, priorities=PRIORITIES)
    assert result.preemptions == () and result.placed == 1


def test_the_victim_leaves_at_once_and_is_replaced_where_it_fits() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)}), cluster("west", {"h100": ("h100-8x", 1)})]
    victim = with_priority(replica("batch", "east", 0, "h100", H(8), ready=True), "low")
    name = victim["metadata"]["name"]
    serving = with_priority(
        replica("serve", "east", 0, "h100", H(8), namespace="team-b"),
        "critical",
        [("team-a", name)],
    )
    dep = with_priority(deployment(1, [request("gpu", H100, count=8)], name="batch"), "low")
    result = run(dep, fleet, [victim, serving], priorities=PRIORITIES)
    # Ready, yet not drained: a preemption does not make before it breaks.
    assert [(r.cluster, r.retained, r.draining) for r in result.replicas] == [
        ("west", False, False)
    ]
    [(gone, why)] = result.preempted
    assert gone == name
    assert "priority 1000 > 10" in why and "make-before-break does not apply" in why


def test_a_preemptor_of_equal_priority_is_ignored_by_the_victim() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    victim = with_priority(replica("batch", "east", 0, "h100", H(8), ready=True), "low")
    name = victim["metadata"]["name"]
    claimant = with_priority(
        replica("x", "east", 0, "h100", H(8), namespace="team-b"), "low", [("team-a", name)]
    )
    dep = with_priority(deployment(1, [request("gpu", H100, count=8)], name="batch"), "low")
    result = run(dep, fleet, [victim, claimant], priorities=PRIORITIES)
    assert [(r.name, r.retained) for r in result.replicas] == [(name, True)]
    assert result.preempted == ()


def test_no_preemption_where_every_lower_victim_still_leaves_no_room() -> None:
    # The node's other half is held at the preemptor's own priority: withdrawing the
    # low replica frees 4 of the 8 GPUs needed, so nothing is taken and nothing placed.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 4, "low"), other("b", "east", 0, "h100", 4, "critical")]
    result = run(preemptor(), fleet, held, priorities=PRIORITIES)
    assert result.preemptions == () and result.placed == 0
    # The same node with the other half free: the low replica alone makes room.
    freed = run(preemptor(), fleet, held[:1], priorities=PRIORITIES)
    assert victims(freed) == [("east", "h100", "serve", ["a"])]


def test_no_preemption_onto_a_pool_the_namespaces_quota_refuses() -> None:
    # The preemptor's namespace (team-a) may hold no H100 at all: the low replica of
    # team-b stays, even though withdrawing it would make room.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    refused = run(
        preemptor(), fleet, held, [quota("team-a", h100={"devices": 0})], priorities=PRIORITIES
    )
    assert refused.preemptions == () and refused.placed == 0
    allowed = run(
        preemptor(), fleet, held, [quota("team-a", h100={"devices": 8})], priorities=PRIORITIES
    )
    assert victims(allowed) == [("east", "h100", "serve", ["a"])]


def test_the_explanation_counts_the_preemptor_on_its_pool() -> None:
    # A two-node worker (pipeline 2) on a two-node pool: the low replica holds one node,
    # the other is free. The first replica takes both nodes; for the second, the
    # explanation counts it there: no node free, not the one it took beside the victim.
    fleet = [cluster("east", {"h100": ("h100-8x", 2)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    result = run(
        preemptor(replicas=2, workers=workers(pipeline=2)), fleet, held, priorities=PRIORITIES
    )
    assert victims(result) == [("east", "h100", "serve", ["a"])]
    [east] = result.clusters
    assert (east.reason, east.message) == (
        "InsufficientCapacity",
        "unified needs 2 node(s); free: h100 0",
    )
    assert [p.free_nodes for p in east.pools] == [0]


def test_priority_zero_or_below_never_preempts_even_lower_priorities() -> None:
    # A PriorityClass may be negative: a deployment without one (0) still takes nothing.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    classes = [*PRIORITIES, priority_class("scavenger", -5), priority_class("zero", 0)]
    held = [other("a", "east", 0, "h100", 8, "scavenger")]
    for prio in (None, "zero"):
        result = run(preemptor(prio=prio), fleet, held, priorities=classes)
        assert result.preemptions == () and result.placed == 0, prio
    above = run(preemptor(prio="low"), fleet, held, priorities=classes)
    assert victims(above) == [("east", "h100", "serve", ["a"])]


def test_without_surge_room_to_spare_the_missing_replica_still_preempts() -> None:
    # Immediate: no surge, so the one missing replica is exactly the room there is.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    result = run(preemptor(rollout={"strategy": "Immediate"}), fleet, held, priorities=PRIORITIES)
    assert result.surge == 0
    assert victims(result) == [("east", "h100", "serve", ["a"])]


def test_the_preemptor_is_named_as_the_fill_names_a_new_replica() -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    result = run(preemptor(), fleet, held, priorities=PRIORITIES)
    name = replica_name("team-a", "serve", "east", 0)
    assert [r.name for r in result.replicas] == [name]
    assert [p.replica for p in result.preemptions] == [name]


def test_a_disaggregated_deployment_never_preempts() -> None:
    # Its two roles would need room on two pools at once: the low replica stays.
    fleet = [cluster("east", {"h100": ("h100-8x", 1)})]
    held = [other("a", "east", 0, "h100", 8, "low")]
    dep = deployment(
        1,
        name="serve",
        prefill=([request("gpu", H100, count=4)], workers()),
        decode=([request("gpu", H100, count=4)], workers()),
    )
    result = run(with_priority(dep, "critical"), fleet, held, priorities=PRIORITIES)
    assert result.preemptions == () and result.placed == 0


@pytest.mark.parametrize(
    ("pool", "on_pool"),
    [
        ("h100", "on pool h100 of cluster east"),
        # A preemptor that names no pool (its role is not read): the pool is left blank.
        (None, "on pool  of cluster east"),
    ],
)
def test_the_victim_reads_the_preemptors_pool(pool: str | None, on_pool: str) -> None:
    fleet = [cluster("east", {"h100": ("h100-8x", 1)}), cluster("west", {"h100": ("h100-8x", 1)})]
    victim = with_priority(replica("batch", "east", 0, "h100", H(8), ready=True), "low")
    name = victim["metadata"]["name"]
    serving = with_priority(
        replica("serve", "east", 0, "h100", H(8), namespace="team-b"),
        "critical",
        [("team-a", name)],
    )
    if pool is None:
        del serving["spec"]["nodePoolName"]
    by = serving["metadata"]["name"]
    dep = with_priority(deployment(1, [request("gpu", H100, count=8)], name="batch"), "low")
    result = run(dep, fleet, [victim, serving], priorities=PRIORITIES)
    assert result.preempted == (
        (
            name,
            f"preempted by ModelReplica {by} of team-b/serve (priority 1000 > 10) {on_pool}; "
            "make-before-break does not apply to a preemption",
        ),
    )
