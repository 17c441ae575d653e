"""Unit tables for the pool ledger: best fit, whole nodes, forced charges, snapshots, clamping.

A ledger's state is a multiset of per-node *remaining* device vectors
(`PoolLedger.free`: vector → number of nodes in that state); every expected
value below is worked out by hand from the rules in ledger.py's docstring.
"""

from __future__ import annotations

import pytest
from schedfleet import cluster, deployment, placements, replica, request, resolved

from modelplane.scheduling import schedule
from modelplane.scheduling.ledger import PoolLedger, fits

ONE, TWO, THREE, FOUR, SIX, EIGHT = ((1,),), ((2,),), ((3,),), ((4,),), ((6,),), ((8,),)


# ── fits ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("remaining", "demand", "expected"),
    [
        ((8,), (8,), True),  # exactly full
        ((7,), (8,), False),
        ((1, 0), (1, 0), True),
        ((1, 0), (0, 1), False),  # every device type must fit
        ((0, 0), (0, 0), True),
        ((-1, 2), (0, 1), False),  # an oversubscribed device fits nothing
    ],
)
def test_fits(remaining, demand, expected):
    assert fits(remaining, demand) is expected


def test_fits_refuses_vectors_of_different_lengths():
    # Vectors of one pool always have one entry per DRA device; a mismatch is a bug
    # that must not pass as a fit by ignoring the devices it leaves out.
    with pytest.raises(ValueError):
        fits((8, 1), (1,))
    with pytest.raises(ValueError):
        fits((8,), (1, 1))


# ── construction and clamping ───────────────────────────────────────────────


@pytest.mark.parametrize(
    ("nodes", "expected_nodes", "expected_free"),
    [
        (3, 3, {(8,): 3}),
        (0, 0, {}),
        (-2, 0, {}),  # a negative published count is no nodes, not negative capacity
    ],
)
def test_new_ledger_is_every_node_whole(nodes, expected_nodes, expected_free):
    led = PoolLedger((8,), nodes)
    assert led.nodes == expected_nodes
    assert led.free == expected_free
    assert led.oversubscribed is False


def test_negative_nodes_take_nothing_and_report_nothing_free():
    led = PoolLedger((8,), -5)
    assert led.free_for(ONE, 1) == 0
    assert led.free_for(EIGHT, 2) == 0
    assert led.place(ONE, 1, 1, force=False) is False
    assert led.free == {}


def test_negative_published_nodes_make_the_pool_unknown():
    # A negative node count cannot be a capacity: the reader publishes the pool as
    # unknown (issue 10), so nothing new goes there and what is there stays.
    fleet = [cluster("a", {"l4": ("l4-1x", -2)})]
    gpu = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
    result = schedule(deployment(1, [request("gpu", gpu)]), fleet, [])
    assert placements(result) == []
    [verdict] = result.clusters
    assert verdict.reason == "NoMatchingPool"
    assert [(p.pool, p.matched, p.free_nodes) for p in verdict.pools] == [("l4", False, 0)]
    assert "pool is unknown (Unreadable)" in verdict.pools[0].message
    # An existing replica there is kept: observed replicas hold what they hold.
    held = replica("llm", "a", 0, "l4", [resolved("gpu")], ready=True)
    kept = schedule(deployment(1, [request("gpu", gpu)]), fleet, [held])
    assert [(p.cluster, p.index, p.retained) for p in kept.replicas] == [("a", 0, True)]


# ── single-node workers: best fit ───────────────────────────────────────────


def test_best_fit_takes_the_fullest_node_that_still_fits():
    led = PoolLedger((8,), 3)
    steps = [
        (THREE, {(8,): 2, (5,): 1}),  # all nodes whole: one of them
        (FOUR, {(8,): 2, (1,): 1}),  # 5 left is the fullest that fits 4
        (TWO, {(8,): 1, (6,): 1, (1,): 1}),  # 1 left does not fit 2: a whole node
        (SIX, {(8,): 1, (0,): 1, (1,): 1}),  # 6 left, not a whole 8
        (ONE, {(8,): 1, (0,): 2}),  # the 1 left, not a whole node
    ]
    for demand, expected in steps:
        assert led.place(demand, 1, 1, force=False) is True
        assert led.free == expected
    assert led.oversubscribed is False


def test_best_fit_tries_each_node_with_the_first_demand_that_fits_it():
    # Two single devices per node; a worker may take either (two demand vectors).
    either = ((1, 0), (0, 1))
    led = PoolLedger((1, 1), 2)
    assert led.place(((1, 0),), 1, 1, force=False)
    assert led.free == {(1, 1): 1, (0, 1): 1}
    # The half-used node is fuller and fits through the second demand.
    assert led.place(either, 1, 1, force=False)
    assert led.free == {(1, 1): 1, (0, 0): 1}
    # On a whole node the first demand that fits wins.
    assert led.place(either, 1, 1, force=False)
    assert led.free == {(0, 1): 1, (0, 0): 1}


def test_several_workers_share_a_node_when_its_devices_allow():
    led = PoolLedger((8,), 2)
    assert led.place(TWO, 1, 4, force=False)  # four 2-GPU workers: one node
    assert led.free == {(0,): 1, (8,): 1}
    assert led.place(SIX, 1, 2, force=False) is False  # the second 6 finds no node
    # A failed charge leaves what it took (callers snapshot/restore): one 6 landed.
    assert led.free == {(0,): 1, (2,): 1}


# ── multi-node workers: whole nodes ─────────────────────────────────────────


def test_multi_node_workers_take_whole_nodes_only():
    led = PoolLedger((8,), 3)
    assert led.place(ONE, 1, 1, force=False)
    assert led.free == {(8,): 2, (7,): 1}
    assert led.place(EIGHT, 2, 1, force=False)  # 2 nodes per worker, 1 worker
    assert led.free == {(7,): 1}
    # The partly used node is no whole node.
    assert led.place(EIGHT, 2, 1, force=False) is False
    assert led.free_for(EIGHT, 2) == 0


def test_multi_node_count_is_nodes_per_worker_times_workers():
    led = PoolLedger((4,), 7)
    assert led.place(FOUR, 3, 2, force=False)
    assert led.free == {(4,): 1}


# ── forced charges (observed replicas hold what they hold) ──────────────────


def test_forced_single_node_charge_overdraws_the_roomiest_node():
    led = PoolLedger((2,), 2)
    assert led.place(TWO, 1, 1, force=False)
    assert led.place(ONE, 1, 1, force=False)
    assert led.free == {(0,): 1, (1,): 1}
    assert led.place(TWO, 1, 1, force=True) is True
    assert led.oversubscribed is True
    assert led.free == {(0,): 1, (-1,): 1}


def test_forced_charge_overdraws_the_node_with_most_devices_left_in_total():
    # (3, 0) is first in tuple order but (2, 2) has more devices left: it is the
    # roomiest.
    led = PoolLedger((3, 3), 2)
    assert led.place(((0, 3),), 1, 1, force=False)
    assert led.place(((1, 1),), 1, 1, force=False)  # does not fit (3, 0)
    assert led.free == {(3, 0): 1, (2, 2): 1}
    assert led.place(((4, 4),), 1, 1, force=True)
    assert led.free == {(3, 0): 1, (-2, -2): 1}


def test_forced_multi_node_charge_overdraws_the_roomiest_nodes():
    led = PoolLedger((8,), 2)
    assert led.place(ONE, 1, 1, force=False)
    assert led.place(EIGHT, 3, 1, force=True) is True
    # One whole node taken; then, for each of the other two, the roomiest node left
    # (7, then -1) is overdrawn by a whole node's worth.
    assert led.free == {(-9,): 1}
    assert led.oversubscribed is True


def test_forced_charge_on_a_pool_without_nodes_only_marks_it():
    led = PoolLedger((8,), 0)
    assert led.place(ONE, 1, 2, force=True) is True
    assert led.place(EIGHT, 2, 1, force=True) is True
    assert led.free == {}
    assert led.oversubscribed is True


def test_unforced_charge_that_fits_never_marks_oversubscribed():
    led = PoolLedger((8,), 1)
    assert led.place(EIGHT, 1, 1, force=True)
    assert led.free == {(0,): 1}
    assert led.oversubscribed is False


# ── free capacity ───────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("demands", "nodes_per_worker", "expected"),
    [
        (ONE, 1, 3),  # 1, 2 and 4 left all fit one
        (TWO, 1, 2),
        (THREE, 1, 1),
        (((5,),), 1, 0),
        (((3,), (1,)), 1, 3),  # any of the alternatives counts
        (FOUR, 2, 1),  # multi-node: only untouched nodes count...
        (ONE, 2, 1),  # ...however little of a node each of its nodes needs
        (ONE, 3, 1),
    ],
)
def test_free_for_counts_nodes_that_take_one_more_worker(demands, nodes_per_worker, expected):
    led = PoolLedger((4,), 3)
    led.place(THREE, 1, 1, force=False)
    led.place(TWO, 1, 1, force=False)
    assert led.free == {(1,): 1, (2,): 1, (4,): 1}
    assert led.free_for(demands, nodes_per_worker) == expected


def test_free_for_ignores_overdrawn_nodes():
    led = PoolLedger((2,), 1)
    led.place(((3,),), 1, 1, force=True)
    assert led.free == {(-1,): 1}
    assert led.free_for(((0,),), 1) == 0
    assert led.free_for(TWO, 2) == 0


# ── snapshot / restore ──────────────────────────────────────────────────────


def test_restore_undoes_partial_charges_and_the_oversubscribed_mark():
    led = PoolLedger((4,), 2)
    led.place(THREE, 1, 1, force=False)
    saved = led.snapshot()
    assert led.place(FOUR, 1, 2, force=False) is False  # one worker landed first
    assert led.free == {(1,): 1, (0,): 1}
    led.restore(saved)
    assert led.free == {(1,): 1, (4,): 1}
    led.place(EIGHT, 2, 1, force=True)
    assert led.oversubscribed is True
    led.restore(saved)
    assert led.free == {(1,): 1, (4,): 1}
    assert led.oversubscribed is False


def test_a_snapshot_survives_the_changes_it_is_restored_over():
    led = PoolLedger((4,), 2)
    saved = led.snapshot()
    for _ in range(2):
        led.place(ONE, 1, 3, force=False)
        led.place(FOUR, 2, 1, force=True)
        led.restore(saved)
        assert led.free == {(4,): 2}
        assert led.oversubscribed is False
    # Restoring hands out a copy: charging after it leaves the snapshot intact.
    led.place(FOUR, 1, 1, force=False)
    led.restore(saved)
    assert led.free == {(4,): 2}
