"""The what-if step: the smallest pool growth that would place the missing replicas.

Runs after fill, only when some replica could not be placed. For every
cluster that passed the filters (selected, tolerated, Ready) and has a pool
matching each role, every combination of matched pools (one per role) is
tried: the roles that land on one pool are replayed, replica by replica, on a
copy of that pool's ledger grown by `k` fresh nodes, and `k` is the smallest
number that takes every missing replica (a binary search between 0 and the
nodes the replicas would need on empty nodes). Where one role of one demand
vector lands on a pool the same answer is counted instead (each node takes
as many workers as fit on it, in any order), so the cost does not grow with
the number of missing replicas. Either way the answer is exact with respect to
the device-granular ledger: small replicas share a fresh node, a node partly
used by others counts only for what still fits on it. A spreading pool
(`packing: Spread`) that holds replicas is always searched, its ledger rebuilt
over the grown pool from everything it was charged: the next cycle's ledger
spreads those replicas onto the fresh nodes too, so a fresh node is not simply
a whole free one there. The combination adding the fewest
nodes wins (ties: pool-name order). A pool whose cloud reports a stock-out
(its published `capacityNote`) is never grown: adding nodes the cloud cannot
provide is no answer, so a combination that needs it is ruled out and the pool
is reported in `stocked_out` instead, and the next-best pool or cluster is the
answer. A pool with a `maxNodeCount` already publishes that many nodes, so
every node added to it is past that ceiling: the addition carries the ceiling
(`PoolAddition.ceiling`) and the text says to raise it, never growing a pool
past its limit unsaid. Codes and numbers only; `words` writes the text.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from modelplane.scheduling.fill import candidates
from modelplane.scheduling.ledger import PoolLedger, Vector
from modelplane.scheduling.matching import RoleDef, RoleMatch
from modelplane.scheduling.state import Charge, CycleState, PoolKey, PoolOptions
from modelplane.scheduling.types import PoolAddition, StockedOutPool, WhatIf

WHAT_IF = "WhatIf"  # this step's key in the cycle's rule states

# The roles of one replica that land on one pool, in the order they are charged.
PoolLoad = tuple[tuple[RoleDef, RoleMatch], ...]


def _spread_charges(state: CycleState, key: PoolKey) -> list[Charge]:
    """What a spreading pool was charged (empty for a bin-packing or untouched one)."""
    if state.inp.clusters[key[0]].packing != "Spread":
        return []
    return state.charges(key)


def _grown(state: CycleState, key: PoolKey, extra: int) -> PoolLedger:
    """A copy of the pool's ledger as it stands after fill, with `extra` fresh nodes.

    A spreading pool's charges are replayed over the grown pool instead, as the
    next cycle's ledger will: its small replicas spread onto the fresh nodes too,
    so adding a node does not simply add a whole free one.
    """
    shape = state.pool_shapes[key]
    spread = state.inp.clusters[key[0]].packing == "Spread"
    charged = _spread_charges(state, key)
    if extra and charged:
        sim = PoolLedger(shape.cap, state.pool_nodes[key] + extra, spread)
        for ch in charged:
            sim.place(ch.demands, ch.nodes_per_worker, ch.workers, force=True)
        return sim
    base = state.ledgers.get(key)
    sim = PoolLedger(shape.cap, 0, spread)
    if base is None:
        sim.free = {shape.cap: state.pool_nodes[key]} if state.pool_nodes[key] else {}
    else:
        sim.free = dict(base.free)
    if extra:
        sim.free[shape.cap] = sim.free.get(shape.cap, 0) + extra
    return sim


def _takes(state: CycleState, key: PoolKey, load: PoolLoad, replicas: int, extra: int) -> bool:
    """Whether the pool grown by `extra` nodes takes `replicas` more of this load."""
    sim = _grown(state, key, extra)
    return all(
        sim.place(match.demands, role.nodes_per_worker, role.workers, force=False)
        for _ in range(replicas)
        for role, match in load
    )


def _fits_count(v: Vector, d: Vector) -> int:
    """How many workers of demand `d` one node with `v` remaining takes."""
    return max(0, min(r // x for r, x in zip(v, d, strict=True) if x > 0))


def counted_growth(state: CycleState, key: PoolKey, load: PoolLoad, replicas: int) -> int | None:
    """`pool_growth` by counting, for one role of one demand; None when counting cannot tell.

    Workers of one demand vector do not compete for a node's devices with
    anything but each other, so a node takes as many as fit on it whatever the
    order the ledger places them in: the pool takes `Σ fits(node)` more, each
    fresh node `fits(cap)`. A multi-node worker takes whole untouched nodes.
    """
    if len(load) != 1 or _spread_charges(state, key):
        return None  # several roles, or a replay (`_grown`) decides
    role, match = load[0]
    led = _grown(state, key, 0)
    cap = state.pool_shapes[key].cap
    if role.nodes_per_worker > 1:
        return max(0, replicas * role.nodes - led.free.get(cap, 0))
    if len(match.demands) != 1 or not any(match.demands[0]):
        return None
    demand = match.demands[0]
    per_node = _fits_count(cap, demand)
    if per_node <= 0:
        return None
    have = sum(n * _fits_count(v, demand) for v, n in led.free.items())
    short = replicas * role.workers - have
    return max(0, -(-short // per_node))


def searched_growth(state: CycleState, key: PoolKey, load: PoolLoad, replicas: int) -> int | None:
    """`pool_growth` by replaying the ledger: a binary search over the nodes added."""
    # Enough fresh nodes for the load, plus one per charged single-node worker a
    # spreading pool may move onto a fresh node.
    high = replicas * sum(role.nodes for role, _ in load) + sum(
        ch.workers for ch in _spread_charges(state, key) if ch.nodes_per_worker <= 1
    )
    if not _takes(state, key, load, replicas, high):
        return None
    low = 0
    while low < high:
        mid = (low + high) // 2
        if _takes(state, key, load, replicas, mid):
            high = mid
        else:
            low = mid + 1
    return low


def pool_growth(state: CycleState, key: PoolKey, load: PoolLoad, replicas: int) -> int | None:
    """The fewest nodes to add to a pool so it takes `replicas` more of `load`.

    Counted where one role of one demand lands on the pool (the common case,
    cheap for any number of replicas), else searched by replaying the ledger.
    None when even empty nodes would not do (matching already rules that out).
    """
    counted = counted_growth(state, key, load, replicas)
    return counted if counted is not None else searched_growth(state, key, load, replicas)


def _by_pool(
    roles: Sequence[RoleDef], combo: Sequence[tuple[str, RoleMatch]]
) -> dict[str, PoolLoad]:
    loads: dict[str, list[tuple[RoleDef, RoleMatch]]] = defaultdict(list)
    for role, (pool, match) in zip(roles, combo, strict=True):
        loads[pool].append((role, match))
    return {pool: tuple(load) for pool, load in sorted(loads.items())}


def stockout_note(state: CycleState, cluster: str, pool: str) -> str | None:
    """The cluster's note on a pool its cloud cannot grow (a stock-out), else None."""
    observed = state.inp.clusters[cluster].pool(pool)
    return observed.note if observed is not None and observed.note else None


def _combo_change(
    state: CycleState,
    cluster: str,
    combo: Sequence[tuple[str, RoleMatch]],
    replicas: int,
    blocked: set[str],
) -> tuple[PoolAddition, ...] | None:
    """The nodes each pool of one combination needs, or None when it cannot work.

    A combination that would grow a stocked-out pool cannot work; that pool is
    added to `blocked`.
    """
    observed = state.inp.clusters[cluster]
    classes = {p.name: p.class_name for p in observed.pools}
    additions = []
    for pool, load in _by_pool(state.roles, combo).items():
        grow = pool_growth(state, (cluster, pool), load, replicas)
        if grow is None:
            return None
        if grow and stockout_note(state, cluster, pool) is not None:
            blocked.add(pool)
            return None
        if grow:
            roles = tuple(role.role for role, _ in load)
            ceiling = observed.ceilings.get(pool)
            additions.append(PoolAddition(pool, classes.get(pool, ""), roles, grow, ceiling))
    return tuple(additions) if additions else None


def _signature(state: CycleState, cluster: str, per_role: PoolOptions) -> Any:
    """Equal for clusters whose answer must be equal, else None.

    The answer depends on the matched pools (name, shape, nodes, maxNodeCount), on what they
    already hold and on how the cluster packs (worst-fit strands devices that
    best-fit would use, so a grown Spread pool may need more nodes). A cluster
    whose pools hold anything gets no signature: its ledger is its own.
    """
    if any((cluster, p.name) in state.ledgers for p in state.inp.clusters[cluster].pools):
        return None
    pools = tuple(
        tuple(
            (
                pool,
                id(match),
                state.pool_nodes[(cluster, pool)],
                stockout_note(state, cluster, pool) is not None,
                state.inp.clusters[cluster].ceilings.get(pool),
            )
            for pool, match in options
        )
        for options in per_role
    )
    return state.inp.clusters[cluster].packing, pools


Found = tuple[tuple[PoolAddition, ...] | None, frozenset[str]]


def _search(state: CycleState, cluster: str, per_role: PoolOptions, replicas: int) -> Found:
    """The cheapest combination's additions, and the stocked-out pools it ruled out."""
    found: tuple[PoolAddition, ...] | None = None
    blocked: set[str] = set()
    for combo in itertools.product(*per_role):
        change = _combo_change(state, cluster, combo, replicas, blocked)
        if change is not None and (
            found is None or sum(a.nodes for a in change) < sum(a.nodes for a in found)
        ):
            found = change
    return found, frozenset(blocked)


def cluster_change(
    state: CycleState, cluster: str, per_role: PoolOptions, replicas: int
) -> tuple[WhatIf | None, tuple[StockedOutPool, ...]]:
    """The smallest growth of one cluster's matched pools that places `replicas` more,
    and the stocked-out pools no answer may grow."""
    memo: dict[Any, Found] = state.rules.get(WHAT_IF, dict)
    sig = _signature(state, cluster, per_role)
    if sig is not None and (sig, replicas) in memo:
        found, blocked = memo[(sig, replicas)]
    else:
        found, blocked = _search(state, cluster, per_role, replicas)
        if sig is not None:
            memo[(sig, replicas)] = (found, blocked)
    stocked = tuple(
        StockedOutPool(cluster, pool, stockout_note(state, cluster, pool) or "")
        for pool in sorted(blocked)
    )
    return (None if found is None else WhatIf(cluster, replicas, found)), stocked


def what_if(state: CycleState) -> tuple[tuple[WhatIf, ...], tuple[StockedOutPool, ...]]:
    """Per eligible cluster, the smallest pool growth placing every missing replica there,
    and the stocked-out pools no answer grows.

    Empty when nothing is missing, or when nothing new may be placed at all
    (a selector that does not compile, a ModelCache not found).
    """
    missing = state.inp.spec.replicas - len(state.slots)
    if missing <= 0 or state.invalid or state.inp.missing_caches:
        return (), ()
    found: list[WhatIf] = []
    stocked: list[StockedOutPool] = []
    for cluster in sorted(state.schedulable):
        per_role = (
            state.options[cluster] if cluster in state.options else candidates(state, cluster)
        )
        if per_role is None:
            continue
        change, blocked = cluster_change(state, cluster, per_role, missing)
        stocked.extend(blocked)
        if change is not None:
            found.append(change)
    return tuple(sorted(found, key=lambda w: (w.nodes, w.cluster))), tuple(stocked)
