"""A spreading pool replays its Ready replicas by age: an older replica turning Ready
late changes where the younger ones are thought to run (the Hypothesis find of
`test_several_deployments_with_stuck_replicas_never_oversubscribe`).

Minimized by hand from the stored example. Its steps 9 → 10: cluster c3 spreads
over two 8-GPU nodes and holds a Ready 4-GPU replica of d2, d2's second 4-GPU
replica, older than d1's but not Ready (c3 reports it unschedulable), and Ready
1-GPU workers of d1. In the order the cluster admits them now (Ready first) the
4-GPU nodes are left at 4 and 4 free, so d3's 4-GPU replacement fitted beside
d2's pending one; then both turned Ready in the same step. Replayed by age, as
every replay (the ledger's, `nodepack`'s) takes Ready replicas, d2's two replicas
take a node each first, d1's workers alternate over them (2 and 2 left), and
d3's replica no longer fits: a pool of Ready replicas, oversubscribed for good.

Here the d1 replicas are one replica of four 1-GPU workers, and a spare cluster
(one whole 8-GPU node) takes what c3 cannot safely take.
"""

from __future__ import annotations

from typing import Any

import pytest
from nodepack import oversubscribed, pending
from schedfleet import (
    ANY_GPU,
    cluster,
    deployment,
    materialize,
    placements,
    replica,
    report_unschedulable,
    request,
    resolved,
    workers,
)

from modelplane.scheduling import replica_name, schedule
from modelplane.scheduling.ledger import PoolLedger

Obj = dict[str, Any]
POOL = "p0-h100-8x"
T = "2026-01-01T00:00:00.{:06d}Z"


def _fleet(*, reported: bool) -> tuple[list[Obj], list[Obj]]:
    spread = cluster("c3", {POOL: ("h100-8x", 2)}, packing="Spread")
    spare = cluster("c9", {POOL: ("h100-8x", 1)}, packing="BinPack")
    four = [resolved("gpu", 4)]
    held = [
        replica("d2", "c3", 0, POOL, four, namespace="team-0", ready=True, created=T.format(3)),
        # Older than d1's replica (d2 created it first), not Ready yet.
        replica("d2", "c3", 1, POOL, four, namespace="team-0", created=T.format(3)),
        replica(
            "d1",
            "c3",
            0,
            POOL,
            [resolved("gpu", 1)],
            namespace="team-1",
            ready=True,
            created=T.format(8),
            work=workers(count=4),
        ),
    ]
    if reported:
        # The stored example: c3 reports d2's pending replica unschedulable; d2 keeps
        # it (nowhere else to go), so it stays charged on c3.
        spread = report_unschedulable(spread, held[1], POOL)
    return [spread, spare], held


def _d3() -> Obj:
    return deployment(1, [request("gpu", ANY_GPU, count=4)], name="d3", namespace="team-1")


def _all_ready(fleet: list[Obj]) -> list[Obj]:
    return [{**r, "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for r in fleet]


def test_the_hazard_is_real_for_the_oracle() -> None:
    # Independent of the scheduler: with d3's replica on c3, the cluster admits
    # everything while d2's replica is pending, and cannot once it runs too. The
    # oracle counts the pool oversubscribed already: it answers for either order.
    clusters, held = _fleet(reported=False)
    d3 = replica(
        "d3", "c3", 0, POOL, [resolved("gpu", 4)], namespace="team-1", created=T.format(10)
    )
    assert not any(pending(clusters, [*held, d3]).values())
    assert pending(clusters, [*held, d3], aged=True)[("c3", POOL)] == {d3["metadata"]["name"]}
    assert oversubscribed(clusters, [*held, d3]) == {("c3", POOL)}
    assert oversubscribed(clusters, _all_ready([*held, d3])) == {("c3", POOL)}


@pytest.mark.parametrize("reported", [False, True])
def test_a_new_replica_is_not_placed_where_an_older_pending_one_turning_ready_strands_it(
    reported: bool,
) -> None:
    clusters, held = _fleet(reported=reported)
    dep = _d3()
    result = schedule(dep, clusters, held)
    # c3 would land it on a half-used node (the best fit), but only in today's
    # order; the spare's whole node takes it.
    assert placements(result) == [("c9", 0, POOL)]
    fleet = [*held, *materialize(dep, result, [], 10)]
    assert oversubscribed(clusters, fleet) == set()
    assert oversubscribed(clusters, _all_ready(fleet)) == set()


def test_controls_where_the_order_cannot_change() -> None:
    # With d2's second replica Ready already there is one replay, by age: d2's
    # replicas take a node each, d1's workers alternate (2 and 2 left): c3 is full.
    clusters, held = _fleet(reported=False)
    assert placements(schedule(_d3(), clusters, _all_ready(held))) == [("c9", 0, POOL)]
    # Without it, c3 has 4 + 4 free in every order and its half-used node is the
    # best fit: the refusal above is about the order changing, nothing more.
    result = schedule(_d3(), clusters, [held[0], held[2]])
    assert placements(result) == [("c3", 0, POOL)]


def test_a_placed_replica_loses_the_pool_in_the_settled_replay() -> None:
    # A stale view placed d3's replica on c3 already: it is not Ready, and once
    # d2's older replica runs it cannot. It loses the pool (every deployment
    # computes the same verdict), is withdrawn and replaced on the spare.
    clusters, held = _fleet(reported=False)
    dep = _d3()
    name = replica_name("team-1", "d3", "c3", 0)
    stale = replica(
        "d3", "c3", 0, POOL, [resolved("gpu", 4)], namespace="team-1", created=T.format(10)
    )
    result = schedule(dep, clusters, [*held, stale])
    assert [w.name for w in result.withdrawn] == [name]
    assert placements(result) == [("c9", 0, POOL)]
    # d2's pending replica, older, keeps its place: it fits in both replays.
    d2 = deployment(2, [request("gpu", ANY_GPU, count=4)], name="d2", namespace="team-0")
    kept = schedule(d2, clusters, [*held, stale])
    assert kept.withdrawn == ()
    assert placements(kept) == [("c3", 0, POOL), ("c3", 1, POOL)]


def test_a_ledger_with_a_settled_replay_takes_only_what_fits_both() -> None:
    # One 8-GPU class over two nodes. Today: a 4-GPU holder, four 1-GPU workers
    # spread onto the emptier node, then the pending 4-GPU one: 4 and 4 free...
    today = PoolLedger((8,), 2, spread=True)
    for demand, workers_ in (((4,), 1), ((1,), 4)):
        today.place((demand,), 1, workers_, force=True)
    assert today.free == {(4,): 2}
    # ...by age, the two 4-GPU holders first: the 1-GPU workers alternate, 2 and 2.
    aged = PoolLedger((8,), 2, spread=True)
    for demand, workers_ in (((4,), 2), ((1,), 4)):
        aged.place((demand,), 1, workers_, force=True)
    assert aged.free == {(2,): 2}
    today.settled = aged
    assert today.free_for(((4,),), 1) == 0
    assert today.fullness([(((4,),), 1, 1)]) is None
    saved = today.snapshot()
    assert not today.place(((4,),), 1, 1, force=False)
    today.restore(saved)
    assert (today.free, aged.free) == ({(4,): 2}, {(2,): 2})
    # Two GPUs fit both replays; restoring undoes both.
    assert today.place(((2,),), 1, 1, force=False)
    assert (today.free, aged.free) == ({(2,): 1, (4,): 1}, {(0,): 1, (2,): 1})
    today.restore(saved)
    assert (today.free, aged.free) == ({(4,): 2}, {(2,): 2})
