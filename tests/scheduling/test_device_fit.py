"""Which pool a replica that several kinds of GPU can serve takes (issue 46).

A deployment selecting "any GPU with enough memory" matches H100 and L4 pools
alike; one selecting Hopper matches the H100s alone. The fill gives the first
the pool whose devices have the least memory that serves it, so the H100s stay
for the deployments nothing else can serve. Among pools of equal memory it
keeps the best fit (the fullest landing node), then takes the pool keeping the
fewest whole free nodes, and opens a cluster holding nothing last. Every case
is a table of hand-written expected placements.
"""

from __future__ import annotations

from typing import Any

import pytest
from schedfleet import (
    ANY_GPU,
    H100,
    cluster,
    deployment,
    placements,
    replica,
    request,
    resolved,
)

from modelplane.scheduling import schedule
from modelplane.scheduling.fill import _quantity_bytes


def _held(dep: str, cluster_name: str, pool: str, gpus: int, cel: str = H100) -> dict[str, Any]:
    """A Ready replica of another team holding `gpus` GPUs of `pool`."""
    return replica(
        dep,
        cluster_name,
        0,
        pool,
        [resolved("gpu", gpus, cel=cel)],
        namespace="team-b",
        ready=True,
    )


def _place(fleet: list[dict[str, Any]], held: list[dict[str, Any]], cel: str, gpus: int) -> list:
    return placements(schedule(deployment(1, [request("gpu", cel, count=gpus)]), fleet, held))


MIXED = {"h100": ("h100-8x", 2), "l4": ("l4-1x", 2)}


@pytest.mark.parametrize(
    ("cel", "expected"),
    [
        # Any GPU: the L4 (24Gi) serves it; the H100 (80Gi) stays free although
        # its name sorts first.
        (ANY_GPU, [("a", 0, "l4")]),
        # Hopper only: the H100 pool, the one that matches.
        (H100, [("a", 0, "h100")]),
    ],
)
def test_within_a_cluster_the_least_memory_that_serves_it(cel: str, expected: list) -> None:
    assert _place([cluster("a", MIXED, packing="BinPack")], [], cel, 1) == expected


def test_least_memory_comes_before_the_fullest_landing() -> None:
    # a's H100 node is in use (the fuller landing), b's L4s are in use too: an
    # any-GPU replica takes b's free L4 rather than a share of a's H100 node.
    fleet = [
        cluster("a", {"h100": ("h100-8x", 1)}, packing="BinPack"),
        cluster("b", {"l4": ("l4-1x", 2)}, packing="BinPack"),
    ]
    held = [_held("x", "a", "h100", 2), _held("y", "b", "l4", 1, cel=ANY_GPU)]
    assert _place(fleet, held, ANY_GPU, 1) == [("b", 0, "l4")]


@pytest.mark.parametrize(
    ("held", "gpus", "expected"),
    [
        # Spread, 3 nodes each: a holds one node, b two. A small replica lands
        # on a whole node either way; b keeps one whole node after it, a two.
        ([("a", 1), ("b", 1), ("b", 1)], 1, [("b", 0, "h100")]),
        # An 8-GPU replica takes a whole node where the fewest are left: b.
        ([("a", 1), ("b", 1), ("b", 1)], 8, [("b", 0, "h100")]),
        # b's nodes all in use: the fullest landing (b's) still decides first.
        ([("a", 1), ("b", 1), ("b", 1), ("b", 1)], 1, [("b", 0, "h100")]),
        # The 8-GPU replica then needs a's whole nodes.
        ([("a", 1), ("b", 1), ("b", 1), ("b", 1)], 8, [("a", 0, "h100")]),
    ],
)
def test_equal_landings_go_where_the_fewest_whole_nodes_are_kept(
    held: list[tuple[str, int]], gpus: int, expected: list
) -> None:
    fleet = [cluster(n, {"h100": ("h100-8x", 3)}, packing="Spread") for n in "abc"]
    observed = [_held(f"x{i}", cl, "h100", n) for i, (cl, n) in enumerate(held)]
    assert _place(fleet, observed, H100, gpus) == expected


def test_a_cluster_in_use_before_one_holding_nothing() -> None:
    # Spread, two nodes: c's cluster puts a 1-GPU worker on its second, whole
    # node, as a's would: c's pool is in use, so c takes it and a stays whole.
    fleet = [cluster(n, {"h100": ("h100-8x", 2)}, packing="Spread") for n in "ac"]
    assert _place(fleet, [_held("x", "c", "h100", 1)], H100, 1) == [("c", 0, "h100")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("24Gi", 24 * 2**30), ("81559Mi", 81559 * 2**20), ("1k", 1000), ("lots", 0), (None, 0)],
)
def test_a_memory_capacity_reads_as_bytes_or_no_preference(text: object, expected: int) -> None:
    assert _quantity_bytes(text) == expected
