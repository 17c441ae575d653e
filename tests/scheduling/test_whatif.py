"""What-if capacity: hand-written fleets and the smallest pool growth placing what is missing."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from schedfleet import ANY_GPU, cluster, deployment, replica, request, resolved, workers
from test_schedule_properties import apply, contenders

from modelplane.scheduling import schedule, scheduler
from modelplane.scheduling.framework import read_input
from modelplane.scheduling.ledger import PoolLedger
from modelplane.scheduling.matching import RoleDef, RoleMatch
from modelplane.scheduling.types import PoolAddition, WhatIf
from modelplane.scheduling.whatif import counted_growth, searched_growth, what_if
from modelplane.scheduling.words import what_if_summary, what_if_text

NOEXEC = [{"key": "maint", "value": "x", "effect": "NoExecute"}]
GPUS = lambda n: [request("gpu", ANY_GPU, count=n)]  # noqa: E731


def other(cluster_name: str, pool: str, gpus: int, index: int = 0, **kw: object) -> dict:
    """Another deployment's replica holding `gpus` GPUs of one node."""
    return replica("other", cluster_name, index, pool, [resolved("gpu", gpus)], **kw)  # type: ignore[arg-type]


def add(pool: str, klass: str, nodes: int, *roles: str) -> PoolAddition:
    return PoolAddition(pool, klass, roles or ("unified",), nodes)


CASES = {
    # 3 × 8 GPUs, one free 8-GPU node: 2 replicas missing, 2 nodes. Cluster b has
    # only 1-GPU nodes (no pool matches: nothing to grow), c is tainted, d not Ready.
    "whole nodes": (
        [
            cluster("a", {"h100": ("h100-8x", 1)}),
            cluster("b", {"l4": ("l4-1x", 9)}),
            cluster("c", {"h100": ("h100-8x", 0)}, taints=NOEXEC),
            cluster("d", {"h100": ("h100-8x", 0)}, ready=False),
        ],
        deployment(3, GPUS(8)),
        [],
        [WhatIf("a", 2, (add("h100", "h100-8x", 2),))],
    ),
    # Device-granular: a node with 3 of 8 GPUs free takes no 4-GPU replica, and
    # one fresh 8-GPU node takes both (whole-node thinking would say 2).
    "small replicas share a fresh node": (
        [cluster("a", {"h100": ("h100-8x", 1)})],
        deployment(2, GPUS(4)),
        [other("a", "h100", 5)],
        [WhatIf("a", 2, (add("h100", "h100-8x", 1),))],
    ),
    # 21 GPUs are free on the cluster (4 × 4 on a100, 5 on h100), none on one node
    # with 6. Nodes of the smaller a100-4x class would not help, whatever their
    # number: the answer is one more h100 node.
    "a smaller class would not help": (
        [cluster("a", {"a100": ("a100-4x", 4), "h100": ("h100-8x", 1)})],
        deployment(1, GPUS(6)),
        [other("a", "h100", 3)],
        [WhatIf("a", 1, (add("h100", "h100-8x", 1),))],
    ),
    # A two-node worker (pipeline 2) takes whole nodes: one free node, one more.
    "multi-node worker": (
        [cluster("a", {"h100": ("h100-8x", 1)})],
        deployment(1, GPUS(8), work=workers(pipeline=2)),
        [],
        [WhatIf("a", 1, (add("h100", "h100-8x", 1),))],
    ),
    # The fewest nodes win across clusters, then the cluster name: a two-node worker
    # needs 2 nodes on an empty pool, 1 beside b's free node (which alone cannot take it).
    "ordered by nodes": (
        [
            cluster("c", {"h100": ("h100-8x", 0)}),
            cluster("b", {"h100": ("h100-8x", 1)}),
            cluster("a", {"h100": ("h100-8x", 0)}),
        ],
        deployment(1, GPUS(8), work=workers(pipeline=2)),
        [],
        [
            WhatIf("b", 1, (add("h100", "h100-8x", 1),)),
            WhatIf("a", 1, (add("h100", "h100-8x", 2),)),
            WhatIf("c", 1, (add("h100", "h100-8x", 2),)),
        ],
    ),
    # Disaggregated, both roles together: prefill needs 8 GPUs (only h100), decode 4
    # (a100 or h100). Both pools are full; one node each (the pool-name-first
    # combination among the cheapest).
    "disaggregated, two pools": (
        [cluster("a", {"a100": ("a100-4x", 1), "h100": ("h100-8x", 1)})],
        deployment(1, prefill=(GPUS(8), workers()), decode=(GPUS(4), workers())),
        [other("a", "h100", 8), other("a", "a100", 4, index=1)],
        [
            WhatIf(
                "a",
                1,
                (add("a100", "a100-4x", 1, "decode"), add("h100", "h100-8x", 1, "prefill")),
            )
        ],
    ),
    # Disaggregated on one pool: 4 GPUs free on the only node; prefill (4) takes
    # them and decode (4) needs one more node. Two replicas: prefill and decode of
    # the second share one fresh node too, so 2 nodes, not 3.
    "disaggregated, one pool": (
        [cluster("a", {"h100": ("h100-8x", 1)})],
        deployment(2, prefill=(GPUS(4), workers()), decode=(GPUS(4), workers())),
        [other("a", "h100", 4)],
        [WhatIf("a", 2, (add("h100", "h100-8x", 2, "prefill", "decode"),))],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_what_if(case: str) -> None:
    fleet, dep, others, expected = CASES[case]
    assert list(schedule(dep, fleet, others).what_if) == expected


NOTE = "cloud stock-out: pool 'h100': the cloud has no nvidia-h100 capacity in zone z1"


def _stocked_out(obj: dict, pool: str) -> dict:
    """The cluster as its composer publishes a stocked-out pool: with its capacity note."""
    for entry in obj["status"]["gpuPools"]:
        if entry["name"] == pool:
            entry["capacityNote"] = NOTE
    return obj


def test_a_stocked_out_pool_is_never_grown_the_next_best_pool_is() -> None:
    """Cluster a's h100 pool would need the fewest nodes, but its cloud has none:
    the answer grows a's other matching pool, and the stock-out is named."""
    fleet = [
        _stocked_out(cluster("a", {"h100": ("h100-8x", 0), "zz": ("h100-8x", 0)}), "h100"),
    ]
    result = schedule(deployment(1, GPUS(8)), fleet, [])
    assert list(result.what_if) == [WhatIf("a", 1, (add("zz", "h100-8x", 1),))]
    assert [(s.cluster, s.pool, s.note) for s in result.stocked_out] == [("a", "h100", NOTE)]
    text = what_if_summary(result.what_if, result.stocked_out)
    assert text == (
        f"pool h100 on cluster a cannot grow ({NOTE}); "
        "instead add 1 node to pool zz on cluster a to place 1 more replica"
    )


def test_a_stocked_out_cluster_leaves_the_answer_to_another_cluster() -> None:
    fleet = [
        _stocked_out(cluster("a", {"h100": ("h100-8x", 0)}), "h100"),
        cluster("b", {"h100": ("h100-8x", 0)}),
    ]
    result = schedule(deployment(2, GPUS(8)), fleet, [])
    assert list(result.what_if) == [WhatIf("b", 2, (add("h100", "h100-8x", 2),))]
    assert [(s.cluster, s.pool) for s in result.stocked_out] == [("a", "h100")]


def test_only_stocked_out_pools_means_no_growth_is_suggested() -> None:
    fleet = [_stocked_out(cluster("a", {"h100": ("h100-8x", 0)}), "h100")]
    result = schedule(deployment(1, GPUS(8)), fleet, [])
    assert result.what_if == ()
    text = what_if_summary(result.what_if, result.stocked_out)
    assert (
        text
        == f"pool h100 on cluster a cannot grow ({NOTE}); no other pool can be grown to place them"
    )
    assert "add " not in text


def test_nothing_missing_means_no_what_if() -> None:
    result = schedule(deployment(1, GPUS(8)), [cluster("a", {"h100": ("h100-8x", 1)})], [])
    assert len(result.replicas) == 1
    assert result.what_if == ()


def test_the_answer_places_the_replicas() -> None:
    """Growing the pool as suggested, the scheduler places every replica there."""
    others = [other("a", "h100", 5)]
    before = schedule(deployment(2, GPUS(4)), [cluster("a", {"h100": ("h100-8x", 1)})], others)
    grow = before.what_if[0].additions[0].nodes
    grown = [cluster("a", {"h100": ("h100-8x", 1 + grow)})]
    assert len(schedule(deployment(2, GPUS(4)), grown, others).replicas) == 2
    short = [cluster("a", {"h100": ("h100-8x", grow)})]
    assert len(schedule(deployment(2, GPUS(4)), short, others).replicas) < 2


@pytest.mark.parametrize(
    ("packing", "smalls", "expected"),
    [
        # Two 8-GPU nodes, 1-GPU replicas of another deployment, one 8-GPU replica
        # missing. BinPack stacks the small ones: one fresh node is whole.
        ("BinPack", 9, 1),
        # Spread: the ledger replays the small ones over the grown pool too, one per
        # node, so only nodes beyond the small ones stay whole: 3 → 4 nodes, 9 → 10.
        ("Spread", 2, 1),
        ("Spread", 3, 2),
        ("Spread", 9, 8),
    ],
)
def test_what_if_under_each_packing(packing: str, smalls: int, expected: int) -> None:
    others = [other("a", "h100", 1, i, ready=True) for i in range(smalls)]
    dep = deployment(1, GPUS(8))
    before = schedule(dep, [cluster("a", {"h100": ("h100-8x", 2)}, packing=packing)], others)
    assert list(before.what_if) == [WhatIf("a", 1, (add("h100", "h100-8x", expected),))]
    # The scheduler agrees: it places the replica on the grown pool, not on one smaller.
    for grow, placed in ((expected, 1), (expected - 1, 0)):
        grown = [cluster("a", {"h100": ("h100-8x", 2 + grow)}, packing=packing)]
        assert len(schedule(dep, grown, others).replicas) == placed


@pytest.mark.parametrize(
    ("found", "text"),
    [
        (
            WhatIf("us-east-1a", 2, (add("h100", "h100-8x", 2),)),
            "add 2 nodes to pool h100 on cluster us-east-1a to place 2 more replicas",
        ),
        (
            WhatIf("a", 1, (add("a100", "a100-4x", 1, "decode"), add("h100", "h", 1, "prefill"))),
            "add 1 node to pool a100 (decode) and 1 node to pool h100 (prefill) "
            "on cluster a to place 1 more replica",
        ),
    ],
)
def test_what_if_words(found: WhatIf, text: str) -> None:
    assert what_if_text(found) == text


def test_summary_names_the_others() -> None:
    a = WhatIf("a", 1, (add("h100", "h100-8x", 1),))
    b = WhatIf("b", 1, (add("h100", "h100-8x", 3),))
    assert what_if_summary([a, b]) == (
        "add 1 node to pool h100 on cluster a to place 1 more replica "
        "(1 other cluster(s) could be grown instead)"
    )


def _state(cap: tuple[int, ...], nodes: int, used: list[tuple[int, ...]]) -> Any:
    """A cycle state with one pool ("c", "p") whose ledger holds `used` (one per node)."""
    led = PoolLedger(cap, nodes)
    for d in used:
        led.place((d,), 1, 1, force=True)
    return SimpleNamespace(
        inp=SimpleNamespace(clusters={"c": SimpleNamespace(packing="BinPack")}),
        pool_shapes={("c", "p"): SimpleNamespace(cap=cap)},
        pool_nodes={("c", "p"): nodes},
        ledgers={("c", "p"): led},
        charged={},
    )


def test_counting_agrees_with_replaying_the_ledger() -> None:
    """Over random pools, the counted growth equals the searched one (one role, one demand)."""
    rng = random.Random(17)
    for _ in range(300):
        dims = rng.randint(1, 2)
        cap = tuple(rng.choice([1, 2, 4, 8]) for _ in range(dims))
        demand = tuple(rng.randint(0, c) for c in cap)
        if not any(demand):
            continue
        used = [tuple(rng.randint(0, c) for c in cap) for _ in range(rng.randint(0, 4))]
        state = _state(cap, rng.randint(0, 4), used)
        role = RoleDef("unified", "spec.nodeSelector", (), rng.choice([1, 1, 2]), rng.randint(1, 3))
        match = RoleMatch(True, (), demand, (), "", (demand,))
        load = ((role, match),)
        replicas = rng.randint(1, 6)
        counted = counted_growth(state, ("c", "p"), load, replicas)
        assert counted == searched_growth(state, ("c", "p"), load, replicas), (
            cap,
            demand,
            used,
            role,
            replicas,
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["BinPack", "Spread"]),
    st.sampled_from(["h100-8x", "a100-4x"]),
    st.integers(0, 3),
    st.lists(contenders(), min_size=1, max_size=4),
    contenders(),
)
def test_growing_as_answered_places_every_replica(packing, klass, nodes, others, dep):
    """Over random pools of either packing, the scheduler places every replica on the
    pool grown as the what-if says, and not on one a node smaller."""
    grown = lambda k: [cluster("a", {"p": (klass, nodes + k)}, packing=packing)]  # noqa: E731
    fleet: list[dict] = []
    for i, o in enumerate(others):
        o["metadata"]["name"] = f"other-{i}"
        fleet = apply(fleet, o, schedule(o, grown(0), fleet), i)
    before = schedule(dep, grown(0), fleet)
    if not before.what_if:
        assume(False)
    (answer,) = before.what_if
    (addition,) = answer.additions
    assert len(schedule(dep, grown(addition.nodes), fleet).replicas) == dep["spec"]["replicas"]
    assert len(schedule(dep, grown(addition.nodes - 1), fleet).replicas) < dep["spec"]["replicas"]


def _what_if_before_fill(dep: dict, fleet: list[dict], others: list[dict]) -> list[WhatIf]:
    """The what-if over a cycle whose fill placed nothing: every step but the fill runs.

    That is the state a surge-limited rollout leaves (no room to place, replicas
    still missing), the one case in which clusters reach the what-if untouched
    and its memo answers for them; the fill itself would give every matched pool
    a ledger and the memo would stand aside.
    """
    state = scheduler.new_state(read_input(dep, fleet, others))
    for step in (
        scheduler.filter_clusters,
        scheduler.check_selectors,
        scheduler.match_pools,
        scheduler.filter_pools,
        scheduler.resolve_contention,
        scheduler.retain,
        scheduler.scale_down,
        scheduler.settle_drains,
        scheduler.build_ledger,
    ):
        step(state)
    return list(what_if(state)[0])


@pytest.mark.parametrize("first", ["BinPack", "Spread"])
def test_the_memo_never_answers_for_a_cluster_that_packs_otherwise(first: str) -> None:
    """Two untouched clusters with the same pools but different packing need different
    growth: 4 replicas of prefill 1 GPU + decode 3 GPUs take 2 fresh 8-GPU nodes
    packed, 3 spread (worst-fit strands a GPU per node). The memo keyed on the
    pools alone handed the first cluster's answer to the second."""
    other_packing = "Spread" if first == "BinPack" else "BinPack"
    fleet = [
        cluster("a", {"h100": ("h100-8x", 0)}, packing=first),
        cluster("b", {"h100": ("h100-8x", 0)}, packing=other_packing),
    ]
    dep = deployment(4, prefill=(GPUS(1), workers()), decode=(GPUS(3), workers()))
    nodes = {
        w.cluster: sum(a.nodes for a in w.additions) for w in _what_if_before_fill(dep, fleet, [])
    }
    expected = {"BinPack": 2, "Spread": 3}
    assert nodes == {"a": expected[first], "b": expected[other_packing]}


def test_the_memo_never_answers_for_a_cluster_others_use() -> None:
    """Same pools, one cluster partly used by another deployment: each gets its own
    answer (the used one needs more nodes), whichever comes first."""
    for used, fresh in (("a", "b"), ("b", "a")):
        fleet = [cluster(n, {"h100": ("h100-8x", 1)}) for n in ("a", "b")]
        found = _what_if_before_fill(deployment(3, GPUS(4)), fleet, [other(used, "h100", 5)])
        nodes = {w.cluster: sum(a.nodes for a in w.additions) for w in found}
        # Unused: its free node takes 2 of the 3, one more node the third. Used: 3
        # GPUs free take none, so 2 fresh nodes for 3 replicas of 4 GPUs.
        assert nodes == {fresh: 1, used: 2}


def test_the_memo_answers_an_identical_untouched_cluster_with_the_same_growth() -> None:
    """Two untouched clusters alike in every respect: the second is answered from the
    memo, and gets the same growth as the first (not none)."""
    fleet = [cluster(n, {"h100": ("h100-8x", 0)}) for n in ("a", "b")]
    found = _what_if_before_fill(deployment(3, GPUS(4)), fleet, [])
    assert {w.cluster: sum(a.nodes for a in w.additions) for w in found} == {"a": 2, "b": 2}


def test_the_memo_never_answers_for_clusters_used_differently() -> None:
    """Same pools, both used by another deployment, one more than the other: a
    used cluster gets no memo answer, each its own growth, whichever comes first."""
    for heavy, light in (("a", "b"), ("b", "a")):
        fleet = [cluster(n, {"h100": ("h100-8x", 1)}) for n in ("a", "b")]
        others = [other(heavy, "h100", 5), other(light, "h100", 1, index=1)]
        found = _what_if_before_fill(deployment(3, GPUS(4)), fleet, others)
        nodes = {w.cluster: sum(a.nodes for a in w.additions) for w in found}
        # Heavy: 3 GPUs free take none of 3 replicas of 4, so 2 fresh nodes. Light:
        # 7 free take one, one fresh node the other two.
        assert nodes == {heavy: 2, light: 1}


def test_a_grown_spreading_pool_replays_even_the_charges_that_overdraw_it() -> None:
    """A spreading pool holding more than it has (4 replicas of 7 GPUs on one 8-GPU
    node, observed): grown by one node, 2 of them fit and 2 overdraw the two nodes,
    so a 1-GPU replica fits nowhere; by two, one node keeps a GPU for it. Dropping
    the charges that do not fit would answer one node."""
    fleet = [cluster("a", {"h100": ("h100-8x", 1)}, packing="Spread")]
    others = [other("a", "h100", 7, index=i) for i in range(4)]
    found = _what_if_before_fill(deployment(1, GPUS(1)), fleet, others)
    assert [(w.cluster, [(a.pool, a.nodes) for a in w.additions]) for w in found] == [
        ("a", [("h100", 2)])
    ]


def test_a_pool_without_nodes_grows_by_the_one_node_two_roles_need() -> None:
    """Prefill and decode of one replica on an untouched pool of no node: searched
    (two roles on one pool), the answer is one node, never zero."""
    fleet = [cluster("a", {"h100": ("h100-8x", 0)})]
    dep = deployment(1, prefill=(GPUS(1), workers()), decode=(GPUS(3), workers()))
    found = _what_if_before_fill(dep, fleet, [])
    assert [(w.cluster, [(a.pool, a.nodes) for a in w.additions]) for w in found] == [
        ("a", [("h100", 1)])
    ]


def _ceiling(obj: dict, pool: str, node_count: int, max_node_count: int) -> dict:
    """The cluster as written with an autoscaling pool: its composer publishes
    `nodes` = maxNodeCount (the scheduler counts capacity up to the ceiling)."""
    obj["spec"]["pools"] = [
        {"name": pool, "className": "h100-8x", "nodeCount": node_count},
    ]
    if max_node_count is not None:
        obj["spec"]["pools"][0]["maxNodeCount"] = max_node_count
    return obj


def test_growing_a_pool_past_its_max_node_count_says_to_raise_it() -> None:
    """Pool h100 holds 2 nodes and autoscales to 4 (published: 4 nodes): 6 replicas of
    8 GPUs need 2 more than the ceiling, and the answer names the ceiling to raise."""
    fleet = [_ceiling(cluster("a", {"h100": ("h100-8x", 4)}), "h100", 2, 4)]
    result = schedule(deployment(6, GPUS(8)), fleet, [])
    assert len(result.replicas) == 4
    assert what_if_text(result.what_if[0]) == (
        "add 2 nodes to pool h100 (past its maxNodeCount 4: raise it to 6) on cluster a "
        "to place 2 more replicas"
    )
    assert list(result.what_if) == [
        WhatIf("a", 2, (PoolAddition("h100", "h100-8x", ("unified",), 2, ceiling=4),))
    ]


def test_a_pool_without_a_ceiling_grows_as_before() -> None:
    fleet = [_ceiling(cluster("a", {"h100": ("h100-8x", 4)}), "h100", 4, None)]  # type: ignore[arg-type]
    result = schedule(deployment(6, GPUS(8)), fleet, [])
    assert what_if_text(result.what_if[0]) == (
        "add 2 nodes to pool h100 on cluster a to place 2 more replicas"
    )


def test_the_memo_never_answers_for_a_cluster_whose_pool_has_another_ceiling() -> None:
    """Two untouched clusters alike but for pool h100's maxNodeCount: each answer names
    its own ceiling (the memo keys on it)."""
    fleet = [
        _ceiling(cluster("a", {"h100": ("h100-8x", 0)}), "h100", 0, 0),
        cluster("b", {"h100": ("h100-8x", 0)}),
    ]
    found = _what_if_before_fill(deployment(1, GPUS(8)), fleet, [])
    assert {w.cluster: w.additions[0].ceiling for w in found} == {"a": 0, "b": None}
