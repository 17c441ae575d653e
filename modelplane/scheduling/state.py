"""The one state a scheduling cycle reads and writes (kube-scheduler's CycleState)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, TypeVar

from modelplane.api.frozen import ReadOnlyDict
from modelplane.api.memo import memos_on
from modelplane.api.objects import label_value
from modelplane.api.readers import UNKNOWN_ORDER, ObservedModelReplica, ReplayOrder, StuckReplica
from modelplane.scheduling import words
from modelplane.scheduling.framework import (
    ClusterScore,
    Eviction,
    PoolKey,
    Rejection,
    RuleStates,
    ScheduleInput,
)
from modelplane.scheduling.ledger import PoolLedger, Snapshot, Vector
from modelplane.scheduling.matching import (
    Evaluator,
    Request,
    RoleDef,
    RoleMatch,
    Shape,
    Shapes,
    match_role,
    shared,
)
from modelplane.scheduling.rules import SCORES
from modelplane.scheduling.types import (
    ClusterVerdict,
    RoleAssignment,
    ScoreCard,
    StuckPlacement,
    Unverifiable,
    Withdrawal,
)

PoolOptions = list[list[tuple[str, RoleMatch]]]  # matched pools per role of one cluster

V = TypeVar("V")


class ByCluster(Mapping[PoolKey, V]):
    """Per-pool values by (cluster, pool), held as one table per cluster.

    A cluster's table is remembered on its reading (`matching.cluster_pools`)
    and shared here as it is, so a call adds a cluster in one step rather
    than pool by pool.
    """

    __slots__ = ("_tables",)

    def __init__(self) -> None:
        """No cluster yet."""
        self._tables: dict[str, Mapping[str, V]] = {}

    def add(self, cluster: str, table: Mapping[str, V]) -> None:
        """Every pool of `cluster` with its value (replacing what it had)."""
        self._tables[cluster] = table

    def update(self, tables: Mapping[str, Mapping[str, V]]) -> None:
        """Every pool of each cluster in `tables` with its value (as `add`, at once)."""
        self._tables.update(tables)

    def table(self, cluster: str) -> Mapping[str, V] | None:
        """Every pool of `cluster` with its value; None for a cluster not added."""
        return self._tables.get(cluster)

    def __getitem__(self, key: PoolKey) -> V:
        return self._tables[key[0]][key[1]]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        table = self._tables.get(key[0])
        return table is not None and key[1] in table

    def __iter__(self) -> Iterator[PoolKey]:
        return ((c, p) for c, table in self._tables.items() for p in table)

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())


class Ledgers(dict[PoolKey, PoolLedger]):
    """The cycle's pool ledgers by (cluster, pool), knowing which clusters hold one.

    The fill asks of every cluster whether any of its pools has a ledger yet
    (`fill.rank_fit`); counting them as ledgers come and go answers without looking
    pool by pool. Ledgers are added by key and removed by `pop` only.
    """

    __slots__ = ("_per_cluster",)

    def __init__(self) -> None:
        """No ledger yet."""
        super().__init__()
        self._per_cluster: dict[str, int] = {}

    def __setitem__(self, key: PoolKey, led: PoolLedger) -> None:
        if key not in self:
            self._per_cluster[key[0]] = self._per_cluster.get(key[0], 0) + 1
        super().__setitem__(key, led)

    def pop(self, key: PoolKey, default: Any = None) -> Any:
        """Remove the pool's ledger; `default` when it has none."""
        if key not in self:
            return default
        left = self._per_cluster[key[0]] - 1
        if left:
            self._per_cluster[key[0]] = left
        else:
            del self._per_cluster[key[0]]
        return super().pop(key)

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ledgers are added by key and removed by pop only")

    __delitem__ = update = setdefault = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]

    def holds(self, cluster: str) -> bool:
        """Whether any pool of `cluster` has a ledger."""
        return cluster in self._per_cluster


@dataclass(frozen=True)
class Charge:
    """What one role of one replica holds in a pool."""

    pool: str
    demands: tuple[Vector, ...]
    nodes_per_worker: int
    workers: int


Load = tuple[Charge, ...]  # what one replica charges one pool: its roles there, in role order


@dataclass(frozen=True)
class Stuck:
    """Why a replica is set aside: its cluster's report and the eviction it earned."""

    report: StuckReplica
    eviction: Eviction  # `Unschedulable`, naming the cluster and pool(s)

    @property
    def pool(self) -> str:
        """The pool(s) the report holds against, for messages."""
        return self.eviction.detail[1]


@dataclass
class Slot:
    """A replica of the deployment being scheduled, kept or newly placed."""

    cluster: str
    index: int
    name: str
    roles: tuple[RoleAssignment, ...]
    charges: tuple[Charge, ...]
    retained: bool
    ready: bool = False
    order: ReplayOrder = UNKNOWN_ORDER
    drain: Eviction | None = None  # why a draining replica must leave (make-before-break)
    stuck: Stuck | None = None  # its cluster reports it unschedulable (see `unschedulable`)


@dataclass
class CycleState:
    """Everything the steps share. Rules keep their own state in `rules`, not here."""

    inp: ScheduleInput
    roles: tuple[RoleDef, ...]
    own: list[ObservedModelReplica]  # this deployment's replicas, by (cluster, index)
    others: list[ObservedModelReplica]  # everyone else's, in contention order
    scores: tuple[ClusterScore, ...] = SCORES  # the score profile: rules and weights
    scored: bool = False  # the score rules are prepared and count the kept replicas
    ranking: tuple[ScoreCard, ...] = ()  # one more replica's best clusters (explain_all)
    # Shared by every call of the process: keyed by content (see `matching`).
    shapes: Shapes = field(default_factory=lambda: shared().shapes)
    ev: Evaluator = field(default_factory=lambda: shared().ev)
    rules: RuleStates = field(default_factory=RuleStates)
    verdicts: dict[str, ClusterVerdict] = field(default_factory=dict)
    schedulable: list[str] = field(default_factory=list)  # may take new replicas
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (field path, compiler error)
    pool_shapes: ByCluster[Shape] = field(default_factory=ByCluster)  # known pools only
    pool_nodes: ByCluster[int] = field(default_factory=ByCluster)
    # Known pools of the clusters that matter, by cluster (see match_pools).
    known_pools: dict[str, Sequence[str]] = field(default_factory=dict)
    matches: dict[tuple[str, str], list[tuple[str, RoleMatch]]] = field(default_factory=dict)
    losers: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, name) -> pool
    # Not-Ready replicas of the namespace past a FleetQuota limit in the fleet's order:
    # (ns, name) -> why (concurrent placements; `quota.contention`).
    quota_losers: dict[tuple[str, str], str] = field(default_factory=dict)
    slots: list[Slot] = field(default_factory=list)
    draining: list[Slot] = field(default_factory=list)  # leaving, serving until replaced
    # Draining replicas dropped because their replacements serve (`settle_drains`).
    superseded: list[Slot] = field(default_factory=list)
    # Reported unschedulable: kept (MakeBeforeBreak) until a replacement is placed, or
    # already dropped (Immediate); settled after the fill.
    stuck: list[Slot] = field(default_factory=list)
    stuck_dropped: list[Slot] = field(default_factory=list)
    stuck_report: list[StuckPlacement] = field(default_factory=list)  # what became of them
    # Being deleted (`ObservedModelReplica.deleting`): they hold their devices and their
    # index until they are gone, but are neither counted, kept nor composed.
    deleting: list[Slot] = field(default_factory=list)
    plain: int = 0  # the fill's first placements, for missing replicas; later ones are swaps
    refused: dict[PoolKey, Rejection] = field(default_factory=dict)  # by the pool filters
    evicted: list[tuple[str, Eviction]] = field(default_factory=list)
    unverifiable: list[Unverifiable] = field(default_factory=list)
    withdrawn: list[Withdrawal] = field(default_factory=list)
    scaled_down: list[str] = field(default_factory=list)
    ledgers: Ledgers = field(default_factory=Ledgers)
    # What each ledger was charged by build_ledger, in replay order (lists shared with
    # the fleet's runs: never changed); the fill's new replicas are in `placed` (see `charges`).
    charged: dict[PoolKey, list[Charge]] = field(default_factory=dict)
    # What the fill charged each pool: the new replicas' names (sorted) by their load
    # there. The cluster runs replicas created together in name order, whatever
    # order the fill placed them in; replicas of one load are interchangeable.
    placed: dict[PoolKey, dict[Load, list[str]]] = field(default_factory=dict)
    # Each pool's ledger before the fill's first new replica there: `placed` is
    # replayed from it when a new replica runs before one already placed.
    unfilled: dict[PoolKey, Snapshot] = field(default_factory=dict)
    full: set[str] = field(default_factory=set)  # clusters that cannot take one more
    options: dict[str, PoolOptions | None] = field(default_factory=dict)
    # Each cluster's pool combinations ranked (`fill.rank_fit`) when its fill key
    # was last computed; still true when the fill next takes the cluster, since
    # only a replica charged there changes its ledgers (and then its key).
    combo_ranks: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)

    def pool_matches(self, cluster: str, role: RoleDef) -> list[tuple[str, RoleMatch]]:
        """A cluster's known pools with their match for `role`, matched on first use.

        Lazily, so a call matches only the clusters it looks at: the fill stops
        once every replica is placed, and the explanation runs only when one
        is missing. Empty for a cluster that does not matter, and for every
        cluster when a selector does not compile. A pool a pool filter refused
        (`refused`) comes back unmatched, carrying the rule's reason and words.
        """
        key = (cluster, role.role)
        found = self.matches.get(key)
        if found is None:
            found = self.matches[key] = [
                (
                    pool,
                    self.refuse(
                        (cluster, pool),
                        match_role(role, self.pool_shapes[(cluster, pool)], self.ev),
                    ),
                )
                for pool in ([] if self.invalid else self.known_pools.get(cluster, []))
            ]
        return found

    def _match(self, role: RoleDef, key: PoolKey) -> RoleMatch:
        return match_role(role, self.pool_shapes[key], self.ev)

    def refuse(self, key: PoolKey, match: RoleMatch) -> RoleMatch:
        """`match`, or an unmatched copy naming the pool filter that refused the pool."""
        rejection = self.refused.get(key)
        if rejection is None or not match.matched:
            return match
        text = words.rejection_text(rejection)
        return replace(match, matched=False, message=text, refused=rejection.reason)

    def charges(self, key: PoolKey) -> list[Charge]:
        """Everything the pool is charged, in the order the next cycle's ledger replays it.

        The what-if replays it over a grown Spread pool: the fill's new replicas
        come last (they are the newest), by name.
        """
        new = (ch for _, load in self.new_runs(key) for ch in load)
        return [*self.charged.get(key, []), *new]

    def new_runs(self, key: PoolKey) -> list[tuple[str, Load]]:
        """The fill's new replicas on the pool and their loads there, by name."""
        groups = self.placed.get(key, {})
        return sorted((name, load) for load, names in groups.items() for name in names)

    def ledger(self, key: PoolKey) -> PoolLedger | None:
        """The pool's ledger, created on first use; None for a pool not matched against."""
        led = self.ledgers.get(key)
        if led is None:
            shape = self.pool_shapes.get(key)
            if shape is None:
                return None
            led = self.ledgers[key] = new_ledger(self, key)
        return led


def by_age(order: ReplayOrder) -> tuple[int, str, str, str]:
    """A replay order with readiness left out: the order once every holder is Ready."""
    return order.no_created, order.created, order.namespace, order.name


def new_ledger(state: CycleState, key: PoolKey) -> PoolLedger:
    """An empty ledger of a matched pool, packing as its cluster packs."""
    spread = state.inp.clusters[key[0]].packing == "Spread"
    return PoolLedger(state.pool_shapes[key].cap, state.pool_nodes[key], spread)


def charged_slots(state: CycleState) -> list[Slot]:
    """This deployment's replicas that hold devices this cycle: kept, draining, set aside
    unschedulable, and those still being deleted."""
    return [*state.slots, *state.draining, *state.stuck, *state.deleting]


def role_defs(inp: ScheduleInput) -> tuple[RoleDef, ...]:
    """The deployment's roles as the matcher sees them."""
    return tuple(
        RoleDef(
            role=name,
            path=role.node_selector_path,
            requests=tuple(
                Request(d.name, d.count, tuple(s.cel for s in d.selectors))
                for d in role.node_selector.devices
            ),
            nodes_per_worker=role.workers.topology.nodes_per_worker,
            workers=role.workers.count,
        )
        for name, role in inp.spec.roles().items()
    )


def new_state(inp: ScheduleInput, scores: tuple[ClusterScore, ...] = SCORES) -> CycleState:
    """The cycle's state: this deployment's replicas apart from everyone else's.

    `scores` is the profile the fill ranks clusters by (the default: `SCORES`).
    """
    fleet = _BY_ORDER.get(inp.replicas)
    own = [
        *fleet.owned.get((inp.namespace, inp.name, False), ()),
        *fleet.owned.get((inp.namespace, label_value(inp.name), True), ()),
    ]  # as `ObservedModelReplica.belongs_to` says
    mine = {id(r) for r in own}
    others = [r for r in fleet.by_order if id(r) not in mine] if mine else [*fleet.by_order]
    own.sort(key=lambda r: (r.cluster, r.index, r.order))
    return CycleState(inp=inp, roles=role_defs(inp), own=own, others=others, scores=scores)


@dataclass(frozen=True)
class FleetOrder:
    """A fleet's replicas by replay order, and by the deployment they belong to."""

    # Read-only containers: the last fleet's order is shared by every call (`_BY_ORDER`).
    by_order: tuple[ObservedModelReplica, ...]
    # (namespace, deployment, whether that is a label value) → its replicas.
    owned: Mapping[tuple[str, str, bool], tuple[ObservedModelReplica, ...]]


def fleet_order(replicas: Sequence[ObservedModelReplica]) -> FleetOrder:
    """`replicas` by `order`, and grouped by deployment (each group in that order)."""
    by_order = sorted(replicas, key=attrgetter("order"))
    owned: dict[tuple[str, str, bool], list[ObservedModelReplica]] = {}
    for r in by_order:
        owned.setdefault((r.namespace, r.deployment, r.deployment_is_label), []).append(r)
    frozen = ReadOnlyDict({k: tuple(v) for k, v in owned.items()})
    return FleetOrder(tuple(by_order), frozen)


class _LastOrder:
    """The last replica tuple seen, in order (`fleet_order`): the replicas of an
    unchanged fleet arrive as the very same tuple (`framework`'s `LastRead`)."""

    def __init__(self) -> None:
        self._replicas: tuple[ObservedModelReplica, ...] = ()
        self._order = fleet_order(())

    def get(self, replicas: Sequence[ObservedModelReplica]) -> FleetOrder:
        """The fleet's order of `replicas` (shared: callers never change it)."""
        if type(replicas) is not tuple or not memos_on():  # a list could have changed in place
            return fleet_order(replicas)
        if replicas is not self._replicas:
            # Held, so the tuple cannot be freed and another take its identity.
            self._replicas, self._order = replicas, fleet_order(replicas)
        return self._order


_BY_ORDER = _LastOrder()


def candidates(state: CycleState, cluster: str) -> PoolOptions | None:
    """Matched pools per role on a cluster, or None when some role has none.

    Here, below both, because the fill tries these pools and the cost rule
    orders them by price before it does.
    """
    per_role = []
    for role in state.roles:
        pools = [(p, m) for p, m in state.pool_matches(cluster, role) if m.matched]
        if not pools:
            return None
        per_role.append(pools)
    return per_role
