"""The per-node oracle of the properties (`nodepack`), by hand-written tables."""

from __future__ import annotations

import pytest
from nodepack import Role, admit, admitted, oversubscribed, packable, packing
from schedfleet import cluster, replica, resolved, workers

T, F = True, False


def one(gpus: int, count: int = 1, nodes: int = 1) -> tuple[Role, ...]:
    """A replica of one role: `count` workers of `gpus` GPUs on each of `nodes` nodes."""
    return (Role((gpus,), count, nodes),)


@pytest.mark.parametrize(
    ("nodes", "entries", "expected"),
    [
        # 1 then 8 GPUs on two 8-GPU nodes: the small one holds one node, one is whole.
        (2, [one(1), one(8)], [T, T]),
        # Two small ones take a node each: 10 of 16 GPUs by count, but no node is whole.
        (2, [one(1), one(1), one(8)], [T, T, F]),
        # Arrival order matters: the large one first leaves the other node to share.
        (2, [one(8), one(1), one(1)], [T, T, T]),
        # Least allocated, ties to the lowest node: 4,4,4 on three nodes, then a fourth
        # shares node 0; an 8 finds no whole node, a 4 still fits on node 1.
        (3, [one(4), one(4), one(4), one(4), one(8), one(4)], [T, T, T, T, F, T]),
        # A multi-node worker takes whole nodes: after a 1-GPU replica only one is empty.
        (2, [one(1), one(1, nodes=2)], [T, F]),
        (2, [one(1, nodes=2), one(1)], [T, F]),
        # A role runs entirely or not at all: two 6-GPU workers do not fit one node,
        # and the one that could does not hold it from the next replica.
        (1, [one(6, count=2), one(8)], [F, T]),
        # Two roles of one replica in one pool, the second does not fit: nothing is held.
        (1, [(Role((4,), 1), Role((8,), 1)), one(8)], [F, T]),
    ],
)
def test_spread(nodes: int, entries: list, expected: list[bool]) -> None:
    assert admit("Spread", nodes, (8,), entries) == expected


@pytest.mark.parametrize(
    ("nodes", "entries", "expected"),
    [
        # The small ones share a node; the other stays whole for the 8.
        (2, [one(1), one(1), one(8)], [T, T, T]),
        # 15 of 16 GPUs by count, but three 5-GPU workers need three nodes.
        (2, [one(5), one(5), one(5)], [T, T, F]),
        # Exact, not best-fit in arrival order (which stacks 3+3 and strands both 5s).
        (2, [one(3), one(3), one(5), one(5)], [T, T, T, T]),
        (2, [one(1), one(1, nodes=2)], [T, F]),
        (3, [one(1, count=2, nodes=1), one(1, nodes=2)], [T, T]),
        (1, [one(6, count=2), one(8)], [F, T]),
    ],
)
def test_binpack(nodes: int, entries: list, expected: list[bool]) -> None:
    assert admit("BinPack", nodes, (8,), entries) == expected


@pytest.mark.parametrize(
    ("nodes", "cap", "roles", "expected"),
    [
        (0, (8,), [], True),
        (0, (8,), [Role((1,), 1)], False),
        (2, (4, 2), [Role((4, 1), 2), Role((0, 1), 2)], True),
        (2, (4, 2), [Role((4, 1), 2), Role((0, 2), 1)], False),  # no node has 2 NICs left
        (4, (8,), [Role((8,), 1, 2), Role((4,), 4)], True),
        (4, (8,), [Role((8,), 1, 2), Role((4,), 5)], False),
    ],
)
def test_packable(nodes: int, cap: tuple, roles: list[Role], expected: bool) -> None:
    assert packable(nodes, cap, roles) is expected


def _gpu(index: int, gpus: int, *, ready: bool = False, created: str = "") -> dict:
    r = replica("d", "a", index, "h100", [resolved("gpu", gpus)], ready=ready, name=f"r{index}")
    r["metadata"]["creationTimestamp"] = created or f"2026-01-01T00:00:0{index}Z"
    return r


@pytest.mark.parametrize(
    ("mode", "fleet", "stuck"),
    [
        # Two 1-GPU replicas then an 8-GPU one on two 8-GPU nodes.
        ("Spread", [_gpu(0, 1), _gpu(1, 1), _gpu(2, 8)], {"r2"}),
        ("BinPack", [_gpu(0, 1), _gpu(1, 1), _gpu(2, 8)], set()),
        # The 8-GPU replica is Ready (running): it came first, whatever its age.
        ("Spread", [_gpu(0, 1), _gpu(1, 1), _gpu(2, 8, ready=True)], set()),
        # Too much by any count.
        ("BinPack", [_gpu(0, 8), _gpu(1, 8), _gpu(2, 1)], {"r2"}),
    ],
)
def test_fleet_objects(mode: str, fleet: list[dict], stuck: set[str]) -> None:
    clusters = [cluster("a", {"h100": ("h100-8x", 2)}, packing=mode)]
    assert admitted(clusters, fleet) == {"r0", "r1", "r2"} - stuck
    assert oversubscribed(clusters, fleet) == ({("a", "h100")} if stuck else set())


def test_multi_node_and_unknown_pools() -> None:
    clusters = [cluster("a", {"h100": ("h100-8x", 2)}, packing="Spread")]
    wide = replica("d", "a", 0, "h100", [resolved("gpu", 1)], work=workers(pipeline=2), name="w")
    lost = replica("d", "a", 1, "gone", [resolved("gpu", 8)], name="lost")
    small = _gpu(2, 1)
    assert admitted(clusters, [wide, lost, small]) == {"w", "lost"}


@pytest.mark.parametrize(
    ("scheduling", "expected"),
    [
        (None, "Spread"),
        ({"schedulerName": "kai-scheduler"}, "BinPack"),
        ({"schedulerName": "volcano"}, "BinPack"),
        ({"schedulerName": "volcano", "packing": "Spread"}, "Spread"),
        ({"packing": "BinPack"}, "BinPack"),
    ],
)
def test_packing(scheduling: dict | None, expected: str) -> None:
    obj = cluster("a", {})
    if scheduling is not None:
        obj["spec"]["scheduling"] = scheduling
    assert packing(obj) == expected
