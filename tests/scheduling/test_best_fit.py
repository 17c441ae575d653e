"""Best fit (issue 27): across deployments the fleet packs, within one deployment
replicas still spread.

Where the scores tie — every cluster, for a deployment's first replica — the
replica goes to the cluster, and within it the pool, whose landing node is
already the fullest (the ledger's BinPack rule, fleet-wide); `SpreadByLoad`
still decides first, so a deployment's own replicas stay apart. Every case is
a table of hand-written expected placements.
"""

from __future__ import annotations

from typing import Any

import pytest
from schedfleet import H100, L4, cluster, deployment, placements, replica, request, resolved

from modelplane.scheduling import schedule
from modelplane.scheduling.ledger import PoolLedger


def _held(dep: str, cluster_name: str, pool: str, gpus: int, index: int = 0) -> dict[str, Any]:
    """A Ready replica of another team's deployment holding `gpus` H100s of `pool`."""
    return replica(
        dep,
        cluster_name,
        index,
        pool,
        [resolved("gpu", gpus, cel=H100)],
        namespace="team-b",
        ready=True,
    )


def _fleet(packing: str, nodes: int = 1, names: str = "abc") -> list[dict[str, Any]]:
    return [cluster(n, {"h100": ("h100-8x", nodes)}, packing=packing) for n in names]


@pytest.mark.parametrize(
    ("packing", "nodes", "held", "gpus", "expected"),
    [
        # Nothing held anywhere: every landing is a whole node, the first name wins.
        ("BinPack", 1, [], 1, [("a", 0, "h100")]),
        # c's node is in use: the small replica joins it rather than opening a's.
        ("BinPack", 1, [("x", "c", 1)], 1, [("c", 0, "h100")]),
        # The fullest node that fits: b (6 of 8 used) before c (1 of 8).
        ("BinPack", 1, [("x", "b", 6), ("y", "c", 1)], 2, [("b", 0, "h100")]),
        # ...and one that does not fit is not chosen: 4 GPUs go beside c's 1.
        ("BinPack", 1, [("x", "b", 6), ("y", "c", 1)], 4, [("c", 0, "h100")]),
        # An 8-GPU replica needs a whole node: the first name among those with one.
        ("BinPack", 1, [("x", "a", 1)], 8, [("b", 0, "h100")]),
        # Spread with one node per pool: the landing node is c's, in use.
        ("Spread", 1, [("x", "c", 1)], 1, [("c", 0, "h100")]),
        # Spread with two nodes: c's cluster would put it on its empty node (worst
        # fit), a whole node either way; c keeps fewer whole nodes (none) than a
        # would (one), so c takes it (issue 46: a pool in use loses its last
        # whole nodes before an untouched one loses its first).
        ("Spread", 2, [("x", "c", 1)], 1, [("c", 0, "h100")]),
        # Spread, both of c's nodes in use: it lands beside one of them.
        ("Spread", 2, [("x", "c", 1), ("y", "c", 1)], 1, [("c", 0, "h100")]),
    ],
)
def test_a_new_deployment_goes_where_the_fleet_packs_tightest(
    packing: str, nodes: int, held: list[tuple[str, str, int]], gpus: int, expected: list
) -> None:
    observed = [_held(dep, cl, "h100", n) for dep, cl, n in held]
    result = schedule(
        deployment(1, [request("gpu", H100, count=gpus)]), _fleet(packing, nodes), observed
    )
    assert placements(result) == expected


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        # One replica per cluster before any cluster takes a second, even though b
        # (in use) is the best fit each time: spread first.
        (3, [("a", 0, "h100"), ("b", 0, "h100"), ("c", 0, "h100")]),
        # The fourth, with every cluster holding one, goes to the fullest node:
        # b's, which also holds the other team's replica.
        (4, [("a", 0, "h100"), ("b", 0, "h100"), ("b", 1, "h100"), ("c", 0, "h100")]),
    ],
)
def test_one_deployments_replicas_still_spread(replicas: int, expected: list) -> None:
    observed = [_held("x", "b", "h100", 1)]
    dep = deployment(replicas, [request("gpu", H100, count=1)])
    result = schedule(dep, _fleet("BinPack"), observed)
    assert placements(result) == expected


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        # Nothing held: pool-name order.
        ([], [("a", 0, "p1")]),
        # p2 holds a small replica: the new one joins it, p1 stays whole.
        ([("x", "p2", 2)], [("a", 0, "p2")]),
        # p2 is full: p1.
        ([("x", "p2", 8)], [("a", 0, "p1")]),
    ],
)
def test_within_a_cluster_the_best_fitting_pool_takes_it(
    held: list[tuple[str, str, int]], expected: list
) -> None:
    fleet = [cluster("a", {"p1": ("h100-8x", 1), "p2": ("h100-8x", 1)}, packing="BinPack")]
    observed = [_held(dep, "a", pool, n) for dep, pool, n in held]
    result = schedule(deployment(1, [request("gpu", H100, count=1)]), fleet, observed)
    assert placements(result) == expected


def test_a_stream_of_small_deployments_fills_one_node_before_opening_another() -> None:
    # Four 2-GPU deployments, one at a time, each seeing the ones before it:
    # before best fit each went to the first name, a, whatever the others held;
    # now, with b already in use, they fill b's node (2 + 4 × 2 = 10 > 8: the
    # fourth opens a's).
    fleet = _fleet("BinPack", names="ab")
    observed = [_held("x", "b", "h100", 2)]
    chosen = []
    for i in range(4):
        dep = deployment(1, [request("gpu", H100, count=2)], name=f"d{i}")
        (placed,) = schedule(dep, fleet, observed).replicas
        chosen.append(placed.cluster)
        observed.append(
            replica(f"d{i}", placed.cluster, 0, "h100", [resolved("gpu", 2, cel=H100)], ready=True)
        )
    assert chosen == ["b", "b", "b", "a"]


@pytest.mark.parametrize(
    ("spread", "placed", "charges", "expected"),
    [
        # An empty pool: a whole node, fullness 0, one worker.
        (False, [], [(((1,),), 1, 1)], (0.0, 1)),
        # BinPack lands beside the 4 GPUs already used (half full)...
        (False, [4], [(((1,),), 1, 1)], (0.5, 1)),
        # ...Spread on the other, whole node.
        (True, [4], [(((1,),), 1, 1)], (0.0, 1)),
        # Two workers: the first beside the 4 used (0.5), the second beside 4 + 2 (0.75).
        (False, [4], [(((2,),), 1, 2)], (1.25, 2)),
        # Alternatives: 8 does not fit the used node, a whole node takes it.
        (False, [4], [(((8,), (4,)), 1, 1)], (0.5, 1)),
        # A two-node worker takes both whole nodes: 0.
        (False, [], [(((8,),), 2, 1)], (0.0, 1)),
        # Not enough whole nodes, or room nowhere: None.
        (False, [1], [(((8,),), 2, 1)], None),
        (False, [8, 8], [(((1,),), 1, 1)], None),
    ],
)
def test_ledger_fullness_of_the_landing_nodes(
    spread: bool, placed: list[int], charges: list, expected: tuple[float, int] | None
) -> None:
    led = PoolLedger((8,), 2, spread=spread)
    for n in placed:
        assert led.place(((n,),), 1, 1, force=False)
    before = led.snapshot()
    assert led.fullness(charges) == expected
    assert led.snapshot() == before  # the ledger is left as it was


@pytest.mark.parametrize("packing", ["Spread", "BinPack"])
@pytest.mark.parametrize(
    ("pools", "held", "expected"),
    [
        # A one-GPU replica, a free one-GPU node and a free eight-GPU node: it takes
        # the one-GPU node (nothing left free on it), whatever the pools' names
        # and however many whole nodes each keeps; the eight-GPU node stays whole
        # for a replica only it can take.
        ({"big": ("l4-8x", 1), "small": ("l4-1x", 4)}, [], "small"),
        ({"a-small": ("l4-1x", 4), "b-big": ("l4-8x", 1)}, [], "a-small"),
        # Two of the small pool's nodes held: still a small node.
        ({"big": ("l4-8x", 1), "small": ("l4-1x", 4)}, [("x", "small", 2)], "small"),
        # The small pool full: the big node.
        ({"big": ("l4-8x", 1), "small": ("l4-1x", 4)}, [("x", "small", 4)], "big"),
    ],
)
def test_a_small_replica_takes_a_node_of_its_size_before_a_larger_one(
    packing: str, pools: dict[str, tuple[str, int]], held: list, expected: str
) -> None:
    fleet = [cluster("a", pools, packing=packing)]
    observed = [
        replica(dep, "a", i, pool, [resolved("gpu", 1, cel=L4)], namespace="team-b", ready=True)
        for dep, pool, n in held
        for i in range(n)
    ]
    result = schedule(deployment(1, [request("gpu", L4, count=1)]), fleet, observed)
    assert placements(result) == [("a", 0, expected)]
