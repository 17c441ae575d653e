"""The device-granular pool ledger on its own: best fit, rollback, free capacity, bounds."""

from __future__ import annotations

import pytest

from modelplane.scheduling.ledger import PoolLedger, fits, replayed


@pytest.mark.parametrize(
    ("remaining", "demand", "expected"),
    [((2, 1), (2, 1), True), ((2, 1), (1, 0), True), ((2, 1), (3, 0), False), ((0,), (1,), False)],
)
def test_fits(remaining: tuple[int, ...], demand: tuple[int, ...], expected: bool) -> None:
    assert fits(remaining, demand) is expected


def test_negative_published_nodes_are_clamped_to_zero() -> None:
    led = PoolLedger((8,), -3)
    assert (led.nodes, led.free) == (0, {})
    assert not led.place(((1,),), 1, 1, force=False)


def test_single_node_workers_share_a_node_best_fit_first() -> None:
    led = PoolLedger((4,), 2)
    assert led.place(((1,),), 1, 1, force=False)
    # Best fit: the partly used node (3 left) before the whole one.
    assert led.place(((2,),), 1, 1, force=False)
    assert led.free == {(1,): 1, (4,): 1}


def test_an_alternative_demand_is_used_when_the_first_does_not_fit() -> None:
    led = PoolLedger((1, 1), 1)
    assert led.place(((1, 0),), 1, 1, force=False)
    assert led.place(((1, 0), (0, 1)), 1, 1, force=False)
    assert led.free == {(0, 0): 1}


def test_snapshot_and_restore_undo_a_failed_placement() -> None:
    led = PoolLedger((2,), 2)
    saved = led.snapshot()
    assert not led.place(((2,),), 1, 3, force=False)  # two fit, the third does not
    led.restore(saved)
    assert (led.free, led.oversubscribed) == ({(2,): 2}, False)


@pytest.mark.parametrize(
    ("charges", "demands", "nodes_per_worker", "free"),
    [
        ([], ((1,),), 1, 3),
        ([((1,), 1, 1)], ((1,),), 1, 3),  # 3 left on the used node: still fits one more
        ([((4,), 1, 1)], ((1,),), 1, 2),
        ([((4,), 2, 1)], ((4,),), 2, 1),  # a two-node worker took two whole nodes
        ([((1,), 1, 1)], ((4,),), 2, 2),  # multi-node workers need whole nodes
    ],
)
def test_free_for(
    charges: list[tuple[tuple[int, ...], int, int]],
    demands: tuple[tuple[int, ...], ...],
    nodes_per_worker: int,
    free: int,
) -> None:
    led = PoolLedger((4,), 3)
    for demand, npw, workers in charges:
        assert led.place((demand,), npw, workers, force=False)
    assert led.free_for(demands, nodes_per_worker) == free


def test_forced_charges_oversubscribe_and_leave_nothing_free() -> None:
    led = PoolLedger((8,), 2)
    assert led.place(((8,),), 1, 3, force=True)
    assert led.oversubscribed and led.free_for(((1,),), 1) == 0


def test_forced_whole_node_charges_are_bounded_by_the_pool_size() -> None:
    # 10^12 nodes asked of a 3-node pool: the two whole nodes are taken, then at
    # most `nodes` (3) forced charges land on what is left, so the work does not
    # grow with the observed request.
    led = PoolLedger((8,), 3)
    assert led.place(((1,),), 1, 1, force=False)
    assert led.place(((8,),), 10**6, 10**6, force=True)
    assert led.oversubscribed
    assert led.free == {(7 - 3 * 8,): 1}
    assert led.free_for(((1,),), 1) == 0


def test_a_replay_shared_by_content_hands_out_a_fresh_ledger_each_time() -> None:
    # A 1-GPU worker then a 4-GPU worker on two 8-GPU nodes, under Spread: each takes
    # a node of its own (worst fit), so the nodes have 7 and 4 left.
    charges = [(((1,),), 1, 1), (((4,),), 1, 1)]
    first = replayed((8,), 2, True, charges)
    assert first.free == {(7,): 1, (4,): 1}
    assert not first.oversubscribed
    # What a fill does to the ledger it got is not what the next call replays.
    assert first.place(((4,),), 1, 1, force=False)
    again = replayed((8,), 2, True, charges)
    assert again.free == {(7,): 1, (4,): 1}
    # The same charges on a pool that packs (BinPack) are another replay.
    assert replayed((8,), 2, False, charges).free == {(3,): 1, (8,): 1}
