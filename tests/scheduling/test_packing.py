"""Packing (issue 17): the ledger charges single-node workers as the cluster's own
scheduler places them — best-fit under BinPack, worst-fit under Spread — with
`spec.scheduling.packing` defaulting from `schedulerName`.

Every case is a table of hand-written expected placements.
"""

from __future__ import annotations

import pytest
from nodepack import oversubscribed
from schedfleet import (
    ANY_GPU,
    H100,
    cluster,
    deployment,
    materialize,
    placements,
    replica,
    request,
    resolved,
    workers,
)

from modelplane.api.readers import read_inference_cluster
from modelplane.scheduling import replica_name, schedule
from modelplane.scheduling.ledger import PoolLedger


def _small(index: int) -> dict:
    return replica("small", "a", index, "h100", [resolved("gpu", 1, cel=H100)], ready=True)


@pytest.mark.parametrize(
    ("packing", "smalls", "expected"),
    [
        # Two 8-GPU nodes, one 1-GPU replica of another deployment.
        # BinPack: it shares a node; the other node stays whole for the 8-GPU replica.
        ("BinPack", 1, [("a", 0, "h100")]),
        # Spread: the 1-GPU replica holds a node of its own; the other is still whole.
        ("Spread", 1, [("a", 0, "h100")]),
        # Two small replicas: BinPack stacks them on one node; Spread puts one on
        # each node, and no node is whole for an 8-GPU replica.
        ("BinPack", 2, [("a", 0, "h100")]),
        ("Spread", 2, []),
    ],
)
def test_an_eight_gpu_replica_after_small_ones(packing: str, smalls: int, expected: list) -> None:
    fleet = [cluster("a", {"h100": ("h100-8x", 2)}, packing=packing)]
    observed = [_small(i) for i in range(smalls)]
    result = schedule(deployment(1, [request("gpu", H100, count=8)]), fleet, observed)
    assert placements(result) == expected


@pytest.mark.parametrize(
    ("packing", "expected"),
    [
        # Four 1-GPU replicas then room counted per node: BinPack fills node one
        # (4 of 8 used), Spread alternates (2 and 2 used).
        ("BinPack", {(4, 0): 1, (8, 0): 1}),
        ("Spread", {(6, 0): 2}),
    ],
)
def test_ledger_remaining_vectors(packing: str, expected: dict) -> None:
    led = PoolLedger((8, 0), 2, spread=packing == "Spread")
    for _ in range(4):
        assert led.place(((1, 0),), 1, 1, force=False)
    assert led.free == expected


@pytest.mark.parametrize(
    ("scheduling", "packing"),
    [
        (None, "Spread"),  # the default kube-scheduler spreads
        ({"schedulerName": "default-scheduler"}, "Spread"),
        ({"schedulerName": "kai-scheduler"}, "BinPack"),
        ({"schedulerName": "volcano"}, "BinPack"),
        ({"schedulerName": "kai-scheduler", "packing": "Spread"}, "Spread"),
        ({"packing": "BinPack"}, "BinPack"),
    ],
)
def test_packing_defaults_from_the_scheduler(scheduling: dict | None, packing: str) -> None:
    obj = cluster("a", {"h100": ("h100-8x", 1)})
    if scheduling is not None:
        obj["spec"]["scheduling"] = scheduling
    cl = read_inference_cluster(obj)
    assert cl is not None and cl.packing == packing


def test_spread_places_a_deployment_of_small_replicas_one_per_node_in_the_ledger() -> None:
    # Three 1-GPU replicas of our own deployment then an 8-GPU one of another:
    # under Spread the three took three of the four nodes, one is whole.
    fleet = [cluster("a", {"h100": ("h100-8x", 4)}, packing="Spread")]
    observed = [_small(i) for i in range(3)]
    big = schedule(deployment(2, [request("gpu", H100, count=8)], name="big"), fleet, observed)
    assert placements(big) == [("a", 0, "h100")]
    assert big.missing == 1


# ── new replicas run in name order, not in the order the fill placed them ───

# A disaggregated replica: prefill is two 1-GPU workers, decode one worker over two
# whole nodes (pipeline 2). Cluster c2 (a100-4x: 4 GPUs and 2 NICs a node) has a
# 4-node pool p0 and a 2-node pool p1.
DISAGGREGATED = deployment(
    2,
    prefill=([request("gpu", ANY_GPU)], workers(2)),
    decode=([request("gpu", ANY_GPU)], workers(1, pipeline=2)),
)
P0, P1 = "p0-a100-4x", "p1-a100-4x"


@pytest.mark.parametrize(
    ("packing", "expected"),
    [
        # The fill places replica 0 first: prefill on two nodes of p0, decode on the
        # other two. Both replicas are created in this cycle, so the cluster runs
        # replica 1 first (its name sorts first). Under Spread replica 1's prefill
        # takes two whole p0 nodes wherever its decode goes (p0 or p1), leaving
        # replica 0's decode no two whole nodes; p1 alone cannot hold replica 1
        # (its prefill spreads over both nodes before its decode). So replica 1 is
        # refused; charging it after replica 0 placed it on (p0, p1) and oversubscribed
        # p0 (a property-test find, the decode's pipeline 2 taking whole nodes).
        ("Spread", [("c2", 0, P0, P0)]),
        # BinPack stacks replica 1's prefill on one p0 node, replica 0's prefill on
        # the same node, and three whole nodes remain for replica 0's decode.
        ("BinPack", [("c2", 0, P0, P0), ("c2", 1, P0, P1)]),
    ],
)
def test_new_replicas_are_charged_in_the_order_the_cluster_runs_them(
    packing: str, expected: list
) -> None:
    # The order the cluster runs them in: both are created together, so by name.
    assert replica_name("team-a", "llm", "c2", 1) < replica_name("team-a", "llm", "c2", 0)
    fleet = [cluster("c2", {P0: ("a100-4x", 4), P1: ("a100-4x", 2)}, packing=packing)]
    result = schedule(DISAGGREGATED, fleet, [])
    assert placements(result) == expected
    assert result.missing == 2 - len(expected)
    composed = materialize(DISAGGREGATED, result, [], 1)
    assert oversubscribed(fleet, composed) == set()
    # The next cycle withdraws nothing, and under Spread places replica 1 now that
    # replica 0 is older (it runs first).
    after = schedule(DISAGGREGATED, fleet, composed)
    assert after.withdrawn == ()
    assert placements(after) == [("c2", 0, P0, P0), ("c2", 1, P0, P1)]
    assert oversubscribed(fleet, materialize(DISAGGREGATED, after, composed, 2)) == set()
