"""Steps that place new replicas: the ledger and the fill (SPEC §3.5, §3.6)."""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import attrgetter, itemgetter
from typing import cast

from modelplane.api.frozen import ReadOnlyDict
from modelplane.api.readers import ObservedModelReplica, ReplayOrder
from modelplane.dra.quantity import QuantityError, parse_quantity
from modelplane.scheduling import cost, quota
from modelplane.scheduling.framework import ScheduleInput
from modelplane.scheduling.ledger import PoolLedger, RoleCharge, Snapshot, Vector, replayed
from modelplane.scheduling.matching import (
    Evaluator,
    RoleMatch,
    Shape,
    Shapes,
    cluster_pools,
    observed_demand,
)
from modelplane.scheduling.names import replica_name
from modelplane.scheduling.scores import weighted
from modelplane.scheduling.state import (
    Charge,
    CycleState,
    Load,
    PoolKey,
    PoolOptions,
    Slot,
    by_age,
    candidates,
    charged_slots,
)
from modelplane.scheduling.types import RoleAssignment, RuleScore, ScoreCard

Run = list[tuple[ReplayOrder, Charge]]  # one pool's charges in replay order


def build_ledger(state: CycleState) -> None:
    """Charge every pool with what other deployments and our kept replicas hold.

    Other deployments' replicas are charged from their observed requests (losers
    of contention included, until their owner withdraws them); this deployment's
    dropped and withdrawn replicas are not charged. Charges are replayed in
    contention order (Ready first, then oldest). Replicas set aside as
    unschedulable are charged while the fill runs: their replacements are
    placed without counting on the place they hold (make before break). A
    spreading pool is also replayed by age alone where that differs
    (`settle_spread`). A pool charged as a call before charged it is not
    replayed again (`ledger.replayed`); one this deployment holds nothing on is
    charged as the fleet's run of it was the first time (`PoolRun.ledger`).
    """
    for key, (run, fleet) in _runs(state).items():
        if fleet is None:
            state.ledgers[key] = _replay(state, key, run)
            state.charged[key] = [ch for _, ch in run]
        else:
            state.ledgers[key] = fleet.ledger(partial(_replay, state, key, run))
            state.charged[key] = fleet.charged


def _replay(state: CycleState, key: PoolKey, run: Run) -> PoolLedger:
    """The pool's ledger charged with `run`, settled where it spreads (`settle_spread`)."""
    led = replayed(
        state.pool_shapes[key].cap,
        state.pool_nodes[key],
        state.inp.clusters[key[0]].packing == "Spread",
        _role_charges(run),
    )
    settle_spread(led, run)
    return led


def _role_charges(run: Run) -> list[RoleCharge]:
    return [(ch.demands, ch.nodes_per_worker, ch.workers) for _, ch in run]


def _runs(state: CycleState) -> dict[PoolKey, tuple[Run, PoolRun | None]]:
    """Every charge on the known pools of the clusters that matter, pool by pool, in
    replay order: the fleet's (`fleet_runs`) but this deployment's own replicas, and
    the slots this cycle keeps; with the fleet's run where it is that run unchanged."""
    fleet = _FLEET_RUNS.get(state)
    mine: dict[PoolKey, Run] = {}
    for s in charged_slots(state):
        for ch in s.charges:
            mine.setdefault((s.cluster, ch.pool), []).append((s.order, ch))
    own = {id(r) for r in state.own}
    own_clusters = {r.cluster for r in state.own}
    runs: dict[PoolKey, tuple[Run, PoolRun | None]] = {}
    for key, held in fleet.items():
        if key[0] not in state.known_pools:
            continue  # not a cluster that matters: its pools are not charged
        if key[0] not in own_clusters or own.isdisjoint(map(id, held.holders)):
            runs[key] = held.run, held
            continue
        run = [e for e, r in zip(held.run, held.holders, strict=True) if id(r) not in own]
        if run:
            runs[key] = run, None
    for key, run in mine.items():
        if key in state.pool_shapes:
            # Stable: a replica's roles keep their order.
            runs[key] = sorted([*runs.get(key, ((), None))[0], *run], key=itemgetter(0)), None
    return runs


class PoolRun:
    """One pool's charges by the fleet's replicas, in replay order, with each one's holder.

    It is the fleet's (`fleet_runs`), shared by every cycle that sees the same
    fleet, so the pool's ledger charged with it is remembered too (`ledger`).
    """

    __slots__ = ("_ledger", "charged", "holders", "run")

    def __init__(self, run: Run, holders: tuple[ObservedModelReplica, ...]) -> None:
        """The run and its holders, in the same order."""
        self.run = run
        self.holders = holders
        self.charged = [ch for _, ch in run]  # the run's charges alone (shared: never changed)
        self._ledger: tuple[Vector, int, bool, bool, Snapshot] | None = None

    def ledger(self, replay: Callable[[], PoolLedger]) -> PoolLedger:
        """A new ledger charged with the run: `replay()` the first time, a copy of its
        state later (a ledger is the caller's to change)."""
        if self._ledger is None:
            led = replay()
            self._ledger = led.cap, led.nodes, led.spread, led.settled is not None, led.snapshot()
            return led
        cap, nodes, spread, settled, snap = self._ledger
        led = PoolLedger(cap, nodes, spread)
        if settled:
            led.settled = PoolLedger(cap, nodes, True)
        led.restore(snap)
        return led


def fleet_runs(inp: ScheduleInput, shapes: Shapes, ev: Evaluator) -> Mapping[PoolKey, PoolRun]:
    """Every known pool's charges by every replica of the fleet no one preempts, in
    replay order (Ready first, then oldest): a function of the observed fleet alone.

    A preempted replica's devices belong to its preemptor.
    """
    everyone = sorted(
        (r for r in inp.replicas if not inp.preempted or inp.preemptor(r) is None),
        key=attrgetter("order"),
    )
    runs: dict[PoolKey, tuple[Run, list[ObservedModelReplica]]] = {}
    for r in everyone:
        cl = inp.clusters.get(r.cluster)
        if cl is None:
            continue
        for ch in replica_charges(r, cluster_pools(cl, shapes).shapes, ev):
            run, holders = runs.setdefault((r.cluster, ch.pool), ([], []))
            run.append((r.order, ch))
            holders.append(r)
    # Read-only: the last fleet's runs are shared by every call (`_FLEET_RUNS`).
    return ReadOnlyDict({k: PoolRun(run, tuple(holders)) for k, (run, holders) in runs.items()})


class _LastRuns:
    """The fleet's runs (`fleet_runs`) of the last fleet seen, kept while it arrives again.

    They depend on the replicas, the cluster table, who preempts whom (and
    at which priorities) and the shared interner and evaluator alone. Replica lists and
    tables of unchanged fleets arrive as the very same objects (`framework`'s
    `LastRead`); they are immutable, so holding them cannot go stale.
    """

    def __init__(self) -> None:
        self._key: tuple[object, ...] = ()
        self._preemption: tuple[object, ...] = ()
        self._runs: Mapping[PoolKey, PoolRun] = {}

    def get(self, state: CycleState) -> Mapping[PoolKey, PoolRun]:
        """The fleet's runs, computed only for a fleet not seen last."""
        inp = state.inp
        key = (inp.replicas, inp.clusters, state.shapes, state.ev)
        same = len(key) == len(self._key) and all(map(operator.is_, key, self._key))
        preemption = (inp.preempted, inp.priorities)  # who preempts whom: by value
        if not same or preemption != self._preemption:
            self._runs = fleet_runs(inp, state.shapes, state.ev)
            self._key, self._preemption = key, preemption
        return self._runs


_FLEET_RUNS = _LastRuns()


def observed_charges(state: CycleState, r: ObservedModelReplica) -> tuple[Charge, ...]:
    """What another deployment's replica holds on its cluster's known pools, role by role
    (none when its cluster's pools are not among the cycle's)."""
    return replica_charges(r, state.pool_shapes.table(r.cluster), state.ev)


def replica_charges(
    r: ObservedModelReplica, table: Mapping[str, Shape] | None, ev: Evaluator
) -> tuple[Charge, ...]:
    """What a replica holds on the pools of `table` (its cluster's interned shapes).

    It depends on the reading and that table alone, so it is remembered on the
    reading (`derived`) while the table is the same.
    """
    found = r.derived.get("scheduling.charges")
    if found is not None and found[0] is table and found[1] is ev:
        return cast(tuple[Charge, ...], found[2])
    charges = []
    for role in r.roles:
        shape = None if table is None else table.get(role.pool)
        if shape is not None:
            demand = observed_demand(shape, role.request_key, ev)
            charges.append(Charge(role.pool, demand, role.nodes_per_worker, role.workers))
    out = tuple(charges)
    r.derived["scheduling.charges"] = (table, ev, out)
    return out


def settle_spread(led: PoolLedger, replay: Run) -> None:
    """Give a spreading pool whose replay changes once its holders are Ready a
    `settled` ledger: the same charges replayed by age alone (`ledger`'s docstring).

    A replica that is not Ready yet replays after every Ready one; once it runs
    it replays by its age, ahead of younger Ready ones, and under Spread where
    those are thought to run moves. A new replica (the youngest) placed on the
    pool must fit in that replay too, or the pool ends up holding Ready replicas
    it cannot run. `replay` is the pool's charges in replay order.
    """
    if not led.spread or len({o.not_ready for o, _ in replay}) < 2:
        return  # holders all Ready (or none): the replay is already by age
    aged = sorted(replay, key=lambda t: by_age(t[0]))  # stable: roles keep their order
    if [o for o, _ in aged] != [o for o, _ in replay]:
        led.settled = replayed(led.cap, led.nodes, True, _role_charges(aged))


def _load(
    state: CycleState, cluster: str, combo: Sequence[tuple[str, RoleMatch]]
) -> dict[PoolKey, Load]:
    """What one replica charges each pool of a combination."""
    load: dict[PoolKey, list[Charge]] = defaultdict(list)
    for role, (pool, match) in zip(state.roles, combo, strict=True):
        charge = Charge(pool, match.demands, role.nodes_per_worker, role.workers)
        load[(cluster, pool)].append(charge)
    return {k: tuple(v) for k, v in load.items()}


def _runs_last(state: CycleState, key: PoolKey, name: str, load: Load) -> bool:
    """Whether replica `name` runs after every new replica on the pool that charges
    something else: among replicas of its own load, where it runs changes nothing."""
    groups = state.placed.get(key, {})
    return all(names[-1] < name for other, names in groups.items() if other != load)


def _charge_pool(state: CycleState, key: PoolKey, name: str, load: Load) -> bool:
    """Charge a new replica's roles on one pool in the order the cluster runs them.

    The new replicas of one cycle are created together, so the cluster (and the
    next cycle's ledger, `ReplayOrder`) runs them by name, not in the order the
    fill placed them. Where a worker lands depends on what came before it (under
    Spread a small worker takes a whole node while one is left), so a replica
    that runs before one of another load already placed here cannot simply be
    charged on top: the pool is replayed from before the fill, every new replica
    by name, and must take them all. Partial charges are left for the caller to
    restore.
    """
    led = state.ledger(key)
    if led is None:
        return False
    todo = load
    if not _runs_last(state, key, name, load):
        led.restore(state.unfilled[key])
        todo = tuple(ch for _, run in sorted([*state.new_runs(key), (name, load)]) for ch in run)
    return all(led.place(ch.demands, ch.nodes_per_worker, ch.workers, force=False) for ch in todo)


def _try_combo(
    state: CycleState, cluster: str, combo: tuple[tuple[str, RoleMatch], ...], name: str
) -> bool:
    """Charge one pool combination for replica `name`; on failure roll every touched ledger back."""
    load = _load(state, cluster, combo)
    ledgers = {k: state.ledger(k) for k in sorted(load)}
    saved = {k: led.snapshot() for k, led in ledgers.items() if led is not None}
    for k, snap in saved.items():
        state.unfilled.setdefault(k, snap)  # the first touch comes before any new replica
    for k in sorted(load):
        if not _charge_pool(state, k, name, load[k]):
            for k2, snap in saved.items():
                restored = ledgers[k2]
                assert restored is not None
                restored.restore(snap)
            return False
    return True


NO_FIT = -1.0  # the fullness of a pool combination that cannot take the replica
# The best fit as the fill ranks it, higher first (`combo_rank`): minus the
# device memory a replica takes, how full its landing nodes are, minus the
# devices its landing nodes keep free, minus the whole free nodes its pools keep.
Fit = tuple[float, float, float, float]
FRESH: Fit = (-math.inf, 0.0, -math.inf, -math.inf)  # a cluster none of whose pools is charged yet
NO_FIT_RANK: Fit = (-math.inf, NO_FIT, -math.inf, -math.inf)


def combo_rank(state: CycleState, cluster: str, combo: Sequence[tuple[str, RoleMatch]]) -> Fit:
    """Best fit of one more replica on one pool combination, higher first.

    First the least device memory it takes (`memory_taken`): a replica that
    several kinds of device serve takes the smallest, and the larger stay for
    the deployments only they serve. Then how full the nodes its workers land
    on already are, the mean over its workers from 0 (whole free nodes) to
    under 1 (`PoolLedger.fullness`). Then the fewest devices its landing nodes
    keep free after it, then the fewest whole free nodes its pools keep once it
    landed (`PoolLedger.landing`). `NO_FIT_RANK` when it does not fit.
    """
    total, count, spare, whole = 0.0, 0, 0, 0
    for pool, charges in _pool_charges(state, combo).items():
        led = state.ledger((cluster, pool))
        got = None if led is None else led.landing(charges)
        if got is None:
            return NO_FIT_RANK
        total, count, whole, spare = (
            total + got[0],
            count + got[1],
            whole + got[2],
            spare + got[3],
        )
    shapes = state.pool_shapes.table(cluster) or {}
    taken = 0
    for pool, match in combo:
        taken += memory_taken(shapes[pool], match)
    return -float(taken), (total / count if count else 0.0), -float(spare), -float(whole)


def _pool_charges(
    state: CycleState, combo: Sequence[tuple[str, RoleMatch]]
) -> dict[str, list[RoleCharge]]:
    """What one replica charges each pool of a combination, as the ledger takes it
    (`_load` without its `Charge`s: the fill ranks every combination of every
    cluster it looks at, and builds a replica's `Charge`s only where it lands)."""
    out: dict[str, list[RoleCharge]] = {}
    for role, (pool, match) in zip(state.roles, combo, strict=True):
        out.setdefault(pool, []).append((match.demands, role.nodes_per_worker, role.workers))
    return out


def _quantity_bytes(text: object) -> int:
    """A capacity's value in bytes; 0 when it does not parse (no preference)."""
    try:
        got = parse_quantity(text) if isinstance(text, str) else None
    except QuantityError:
        return 0
    value = None if got is None else got.as_int64()
    return value if value is not None else 0


def memory_taken(shape: Shape, match: RoleMatch) -> int:
    """The device memory one worker of `match` claims on a node of `shape`: each DRA
    device's published `memory` capacity (0 when absent or malformed) times the
    devices of it the worker claims."""
    per_slot = shape.slot_memory
    if per_slot is None:
        per_slot = shape.slot_memory = _slot_memory(shape)
    return sum(map(operator.mul, match.demand, per_slot))


def _slot_memory(shape: Shape) -> tuple[int, ...]:
    """The device memory of each structure slot of `shape`, in bytes (the sum over
    the slot's devices; a device without a readable capacity adds 0)."""
    structure = shape.structure
    if structure is None:
        return ()
    out = [0] * (max(structure.slot, default=-1) + 1)
    for i, device in enumerate(shape.devices):
        slot = structure.slot[i]
        if slot < 0:
            continue
        capacity = device.get("capacity") if isinstance(device, Mapping) else None
        memory = capacity.get("memory") if isinstance(capacity, Mapping) else None
        value = memory.get("value") if isinstance(memory, Mapping) else None
        out[slot] += _quantity_bytes(value)
    return tuple(out)


def options(state: CycleState, cluster: str) -> PoolOptions | None:
    """The cluster's matched pools per role (`candidates`), matched when first asked."""
    if cluster not in state.options:
        state.options[cluster] = candidates(state, cluster)
    return state.options[cluster]


def rank_fit(state: CycleState, cluster: str) -> Fit:
    """Best fit of one more replica on the cluster: its best pool combination's
    `combo_rank`; `FRESH` for a cluster holding nothing yet, or where nothing fits.

    A cluster none of whose pools is charged yet ranks after every cluster in
    use that fits (the fleet opens a new cluster last), known without matching
    its pools, so a call still matches only the clusters holding something or
    that the fill reaches.
    """
    if not state.ledgers.holds(cluster):  # only known pools get a ledger
        return FRESH
    per_role = options(state, cluster)
    if per_role is None:
        return FRESH
    ranks = [combo_rank(state, cluster, combo) for combo in itertools.product(*per_role)]
    state.combo_ranks[cluster] = ranks
    return max(FRESH, max(ranks, default=FRESH))


def try_place(
    state: CycleState,
    cluster: str,
    per_role: PoolOptions,
    name: str,
    ranks: Sequence[Fit] | None = None,
) -> list[tuple[str, RoleMatch]] | None:
    """Charge one new replica named `name` on `cluster` (both roles there); None when
    it does not fit.

    Pool combinations are tried best fit first (`combo_rank`; `ranks` when the
    caller holds them for the cluster's ledgers as they are, in
    `itertools.product` order), equal fits in pool-name order (`sorted` is
    stable); under LowestCost the cheapest first (`cost.combo_price`), then
    best fit. One past the namespace's FleetQuota is skipped; a failed try is
    rolled back.
    """
    combos = list(itertools.product(*per_role))
    if ranks is None or len(ranks) != len(combos):
        ranks = [combo_rank(state, cluster, combo) for combo in combos]
    order = sorted(
        (cost.combo_price(state, cluster, combo), -taken, -full, -spare, -whole, i)
        for i, (combo, (taken, full, spare, whole)) in enumerate(zip(combos, ranks, strict=True))
    )
    for *_, i in order:
        combo = combos[i]
        if quota.admits(state, cluster, combo) and _try_combo(state, cluster, combo, name):
            return list(combo)
    return None


def used_indices(state: CycleState) -> dict[str, set[int]]:
    """Each cluster's replica indices taken: every observed replica's of this
    deployment (withdrawn ones too, still composed this cycle) and every new one's."""
    used: dict[str, set[int]] = defaultdict(set)
    for r in state.own:
        used[r.cluster].add(r.index)
    for s in state.slots:
        used[s.cluster].add(s.index)
    return used


def lowest_free(used: set[int]) -> int:
    """The index a new replica takes on a cluster: the lowest one not taken."""
    return next(i for i in itertools.count() if i not in used)


def new_name(state: CycleState, cluster: str, index: int) -> str:
    """The name of this deployment's replica `index` on `cluster`."""
    return replica_name(state.inp.namespace, state.inp.name, cluster, index)


def _key(state: CycleState, cluster: str) -> tuple[float, float, float, float, float, str]:
    """The fill's order (a min-heap): the highest weighted score first, then the best
    fit (`rank_fit`), then the first name.

    The scores keep a deployment's own replicas apart (`SpreadByLoad`); where they
    tie — every cluster, for a deployment's first replica — the best fit wins
    (the least device memory, the fullest landing, the fewest devices left on the
    landing nodes, the fewest whole nodes kept),
    so across deployments the fleet packs as the ledger does within a pool.
    """
    taken, full, spare, whole = rank_fit(state, cluster)
    return -weighted(state.scores, state.rules, cluster), -taken, -full, -spare, -whole, cluster


def prepare_scores(state: CycleState) -> None:
    """Prepare the score rules and count the kept replicas on them, once per cycle."""
    if state.scored:
        return
    state.scored = True
    for rule in state.scores:
        rule.prepare(state.rules, state.inp)
    for s in state.slots:
        for rule in state.scores:
            rule.placed(state.rules, s.cluster)


def rank(state: CycleState, limit: int = 2) -> tuple[ScoreCard, ...]:
    """The first `limit` eligible clusters in the fill's order for one more replica.

    Eligible is the explain step's verdict (a trial placement fits), so run it
    first; each card carries every rule's score as the fill weighs it now.
    """
    prepare_scores(state)
    eligible = [k for k, v in state.verdicts.items() if v.eligible]
    best = sorted(_key(state, k) for k in eligible)[:limit]
    return tuple(
        ScoreCard(
            cluster,
            tuple(
                RuleScore(rule.name, rule.score(state.rules, cluster), rule.weight)
                for rule in state.scores
            ),
        )
        for *_, cluster in best
    )


def _place(
    state: CycleState, cluster: str, combo: list[tuple[str, RoleMatch]], index: int, name: str
) -> None:
    roles = tuple(
        RoleAssignment(role.role, pool, match.resolved, role.nodes)
        for role, (pool, match) in zip(state.roles, combo, strict=True)
    )
    state.slots.append(Slot(cluster, index, name, roles, (), False))
    for key, load in _load(state, cluster, combo).items():
        bisect.insort(state.placed.setdefault(key, {}).setdefault(load, []), name)
    for rule in state.scores:
        rule.placed(state.rules, cluster)


def surge(state: CycleState) -> int:
    """`rollout.maxSurge` in replicas (0 under Immediate: nothing ever drains)."""
    rollout = state.inp.spec.rollout
    if rollout.strategy == "Immediate":
        return 0
    return rollout.surge(state.inp.spec.replicas)


def surge_room(state: CycleState) -> int:
    """How many more replicas fit under `spec.replicas + maxSurge`, draining and
    set-aside unschedulable ones counted.

    With nothing draining this never limits the fill (counted replicas never
    exceed `spec.replicas` after scale-down), so the bound applies to surges only.
    """
    held = len(state.slots) + len(state.draining) + len(state.stuck)
    return state.inp.spec.replicas + max(surge(state), 0) - held


def shortfall(state: CycleState) -> tuple[int, int]:
    """What the fill places: (plain, swaps) — the missing replicas within the surge
    room, then one replacement per set-aside unschedulable replica.

    A replacement is a swap, not a surge: `settle_stuck` withdraws the replica it
    replaces in the same cycle, so it needs no room over `spec.replicas` (else a
    stuck replacement of a draining replica could never move). The plain ones come
    first: a stuck replica is withdrawn only for a placement beyond them.
    """
    missing = state.inp.spec.replicas - len(state.slots)
    swaps = min(len(state.stuck), max(0, missing))
    return max(0, min(missing - swaps, surge_room(state))), swaps


def fill(state: CycleState) -> None:
    """Place the shortfall one replica at a time on the best-scored cluster that fits.

    New replicas are identical and the ledger only shrinks during fill, so a
    cluster that cannot take one cannot take a later one either: it leaves the
    heap for good. Ties on score go to the best fit, then to the cluster first
    by name (`_key`); only the cluster that took a replica changes its key.
    """
    state.plain, swaps = shortfall(state)
    wanted = state.plain + swaps
    if wanted <= 0 or state.invalid:
        return
    prepare_scores(state)
    used = used_indices(state)
    # A cluster's pools are matched when it first comes up or when its fit is
    # asked of pools already charged, not before: a cluster holding nothing is
    # never matched once every replica is placed.
    heap = [_key(state, cluster) for cluster in state.schedulable]
    heapq.heapify(heap)
    while wanted > 0 and heap:
        *_, cluster = heapq.heappop(heap)
        per_role = options(state, cluster)
        if per_role is None:
            continue
        index = lowest_free(used[cluster])
        name = new_name(state, cluster, index)
        combo = try_place(state, cluster, per_role, name, state.combo_ranks.pop(cluster, None))
        if combo is None:
            state.full.add(cluster)
            continue
        used[cluster].add(index)
        _place(state, cluster, combo, index, name)
        wanted -= 1
        heapq.heappush(heap, _key(state, cluster))
