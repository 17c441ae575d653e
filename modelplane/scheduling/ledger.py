"""The device-granular capacity ledger of one pool.

A pool holds `nodes` identical nodes, each with the class's DRA device counts
(a vector, one entry per DRA device of the class). The ledger keeps a multiset
of per-node *remaining* vectors rather than one entry per node, so a pool of
10,000 nodes costs as much as a pool of one until replicas land on it.

A single-node worker consumes its resolved device vector on one node, so several
small workers share a node when its devices allow; a multi-node worker takes
whole nodes. Which node a single-node worker lands on follows the cluster's
packing (`InferenceCluster.spec.scheduling.packing`), because the ledger must
predict what the cluster's own scheduler will do:

- **BinPack** (KAI, Volcano): best-fit, the fullest node that still fits,
  which keeps whole nodes free for large replicas.
- **Spread** (the default kube-scheduler, least-allocated scoring): worst-fit,
  the emptiest node that fits. Until every node holds something, each small
  worker takes a whole free node away from larger requests — a 1-GPU replica
  may hold an 8-GPU node of its own as far as an 8-GPU replica is concerned.

Ties go to the smallest remaining vector, so either rule is deterministic
whatever the order the multiset was built in. Multi-node workers take whole
nodes under both.

Under Spread the answer depends on the order replicas arrived in, which the
ledger replays as Ready first, then oldest. A replica that turns Ready late
moves ahead of younger Ready ones in that replay, and where they are thought
to run changes. A spreading pool whose replay would change so carries a
second ledger, `settled`: its charges replayed by age alone, as they will be
once every holder is Ready. A new replica must fit both.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import starmap
from operator import ge, sub

from modelplane.api.memo import Memo

Vector = tuple[int, ...]
# One role's charge as the ledger takes it: (demand alternatives, nodes per worker, workers).
RoleCharge = tuple[tuple[Vector, ...], int, int]
_State = tuple[dict[Vector, int], bool]
Snapshot = tuple[_State, _State | None]  # what `PoolLedger.restore` takes back (and settled's)


# The checks below run in C (no Python frame per device): the fill asks them for
# every node state of every pool it ranks. A pool's vectors all have its class's
# length; a mismatch is a bug, refused (ValueError) rather than read as a fit.


def fits(remaining: Vector, demand: Vector) -> bool:
    """Whether a node with `remaining` devices can take `demand`."""
    return all(starmap(ge, zip(remaining, demand, strict=True)))


def _minus(a: Vector, b: Vector) -> Vector:
    return tuple(starmap(sub, zip(a, b, strict=True)))


def _move(free: dict[Vector, int], v: Vector, to: Vector) -> None:
    """One node of `free` goes from remaining `v` to remaining `to`."""
    free[v] -= 1
    if not free[v]:
        del free[v]
    free[to] = free.get(to, 0) + 1


class PoolLedger:
    """Free capacity of one (cluster, pool)."""

    __slots__ = ("cap", "free", "nodes", "oversubscribed", "settled", "spread")

    def __init__(self, cap: Vector, nodes: int, spread: bool = False) -> None:
        self.cap = cap
        self.spread = spread  # worst-fit (Spread) rather than best-fit (BinPack)
        self.nodes = max(0, nodes)
        # remaining vector -> number of nodes in that state
        self.free: dict[Vector, int] = {cap: self.nodes} if self.nodes else {}
        self.oversubscribed = False
        # The same charges replayed by age alone (module docstring); None when
        # that replay is this one.
        self.settled: PoolLedger | None = None

    def snapshot(self) -> Snapshot:
        """State to hand back to `restore` when a tentative placement fails."""
        twin = self.settled
        return (dict(self.free), self.oversubscribed), None if twin is None else twin.snapshot()[0]

    def restore(self, state: Snapshot) -> None:
        """Undo everything since `snapshot`."""
        (free, self.oversubscribed), twin = state
        self.free = dict(free)
        if self.settled is not None and twin is not None:
            self.settled.restore((twin, None))

    def _take(self, v: Vector) -> None:
        n = self.free[v] - 1
        if n:
            self.free[v] = n
        else:
            del self.free[v]

    def _put(self, v: Vector) -> None:
        self.free[v] = self.free.get(v, 0) + 1

    def _best_fit(
        self, demands: tuple[Vector, ...], free: dict[Vector, int] | None = None
    ) -> tuple[Vector, Vector] | None:
        """The node a worker lands on: fullest (BinPack) or emptiest (Spread) that fits."""
        sign = -1 if self.spread else 1
        best: tuple[int, Vector, Vector] | None = None
        for v in self.free if free is None else free:
            for d in demands:
                if all(starmap(ge, zip(v, d, strict=True))):  # `fits`, inline
                    if best is None or (sign * sum(v), v) < best[:2]:
                        best = (sign * sum(v), v, d)
                    break
        return None if best is None else (best[1], best[2])

    def _roomiest(self) -> Vector | None:
        return max(self.free, key=lambda v: (sum(v), v)) if self.free else None

    def place(
        self, demands: tuple[Vector, ...], nodes_per_worker: int, workers: int, force: bool
    ) -> bool:
        """Charge one role: `workers` workers of `nodes_per_worker` nodes each.

        `demands` are the per-node device vectors a single-node worker may consume
        (equivalent assignments of its requests; the first preferred). Returns
        False (leaving partial charges; callers snapshot/restore) when it does not
        fit. With `force` it always charges, driving nodes negative and marking
        the pool oversubscribed: observed replicas hold what they hold. Where
        the pool has a `settled` replay, the role must fit there too.
        """
        if not self._place_here(demands, nodes_per_worker, workers, force):
            return False
        twin = self.settled
        return twin is None or twin.place(demands, nodes_per_worker, workers, force)

    def _place_here(
        self, demands: tuple[Vector, ...], nodes_per_worker: int, workers: int, force: bool
    ) -> bool:
        if nodes_per_worker <= 1:
            return all(self._place_one(demands, force) for _ in range(workers))
        return self._place_whole(nodes_per_worker * workers, force)

    def _place_one(self, demands: tuple[Vector, ...], force: bool) -> bool:
        """One single-node worker on the best-fitting node (forced: the roomiest)."""
        hit = self._best_fit(demands)
        if hit is None:
            if not force:
                return False
            self.oversubscribed = True
            v = self._roomiest()
            if v is None:
                return True
            hit = (v, demands[0])
        v, d = hit
        self._take(v)
        self._put(_minus(v, d))
        return True

    def _place_whole(self, need: int, force: bool) -> bool:
        """`need` whole nodes; the work is bounded by the pool's size, not by `need`."""
        whole = min(need, self.free.get(self.cap, 0))
        if whole < need and not force:
            return False
        if whole:
            self.free[self.cap] -= whole
            if not self.free[self.cap]:
                del self.free[self.cap]
        if whole == need:
            return True
        self.oversubscribed = True
        # Every node a forced whole-node charge lands on ends at or below zero on
        # every device and can take nothing more; charging a node twice changes
        # no answer, so at most `nodes` charges are made.
        for _ in range(min(need - whole, self.nodes)):
            v = self._roomiest()
            if v is None:
                break
            self._take(v)
            self._put(_minus(v, self.cap))
        return True

    def fullness(self, charges: Sequence[RoleCharge]) -> tuple[float, int] | None:
        """How full the nodes a replica's workers land on already are, before it lands.

        Returns the sum over its workers (each from 0, a whole free node, to just
        under 1) and the number of workers; None when the charges do not fit.
        The ledger is left as it was. The fill prefers the fullest landing (best
        fit across pools and clusters), as BinPack does across one pool's nodes:
        a small worker on a node already in use keeps whole nodes free for large
        ones. A multi-node worker takes whole nodes, which were empty: it adds 0.
        The charges must fit the `settled` replay too (where they land there
        does not count).
        """
        got = self.landing(charges)
        return None if got is None else (got[0], got[1])

    def landing(self, charges: Sequence[RoleCharge]) -> tuple[float, int, int, int] | None:
        """`fullness`, the whole free nodes the pool keeps once the charges landed, and
        the devices its landing nodes still have free after them.

        Where landings are equally full, the fill takes the pool whose landing
        nodes keep the fewest devices free after them (best fit across pools of
        different node sizes: a one-GPU replica takes a free one-GPU node, not a
        free eight-GPU node). Then the pool keeping the fewest whole nodes:
        under Spread a small worker takes a whole node while the pool has one,
        so a pool already in use should lose its last whole nodes before an
        untouched pool loses its first, and a whole-node worker should take
        them from there too.
        """
        if self.settled is not None and self.settled.fullness(charges) is None:
            return None
        free = dict(self.free)
        total, count, spare = 0.0, 0, 0
        for demands, nodes_per_worker, workers in charges:
            for _ in range(workers):
                landed = self._land(free, demands, nodes_per_worker)
                if landed is None:
                    return None
                total += landed[0]
                spare += landed[1]
                count += 1
        return total, count, free.get(self.cap, 0), spare

    def _land(
        self, free: dict[Vector, int], demands: tuple[Vector, ...], nodes_per_worker: int
    ) -> tuple[float, int] | None:
        """One worker onto `free` (changed in place): how full its node was and the
        devices it has free after; None if none fits."""
        if nodes_per_worker > 1:
            left = free.get(self.cap, 0) - nodes_per_worker
            if left < 0:
                return None
            if left:
                free[self.cap] = left
            else:
                free.pop(self.cap, None)
            return 0.0, 0
        hit = self._best_fit(demands, free)
        if hit is None:
            return None
        v, d = hit
        after = _minus(v, d)
        _move(free, v, after)
        return 1.0 - sum(v) / (sum(self.cap) or 1), sum(after)  # it fits: none below 0

    def free_for(self, demands: tuple[Vector, ...], nodes_per_worker: int) -> int:
        """Nodes that could each take one more worker of this shape (in every replay)."""
        if nodes_per_worker > 1:
            here = self.free.get(self.cap, 0)
        else:
            here = sum(n for v, n in self.free.items() if any(fits(v, d) for d in demands))
        if self.settled is None:
            return here
        return min(here, self.settled.free_for(demands, nodes_per_worker))


# A forced replay's answer depends on nothing but the pool and its charges, so
# it is shared by content between calls: the fleet's other deployments charge
# most pools the same way for every deployment that is scheduled. Bounded; an
# entry dropped only costs its replay.
_REPLAYS: Memo[Snapshot] = Memo("scheduling.ledger._REPLAYS")
MAX_REPLAYS = 8192


def replayed(cap: Vector, nodes: int, spread: bool, charges: Sequence[RoleCharge]) -> PoolLedger:
    """A new ledger of the pool (`cap`, `nodes`, packing) charged with `charges`, in
    order, each forced: what the pool's observed holders hold."""
    led = PoolLedger(cap, nodes, spread)
    key = (cap, led.nodes, spread, tuple(charges))
    hit = _REPLAYS.get(key)
    if hit is not None:
        led.restore(hit)
        return led
    for demands, nodes_per_worker, workers in charges:
        led.place(demands, nodes_per_worker, workers, force=True)
    if len(_REPLAYS) >= MAX_REPLAYS:
        del _REPLAYS[next(iter(_REPLAYS))]
    _REPLAYS[key] = led.snapshot()
    return led
