"""Steps over existing replicas: contention, retain and scale down (SPEC §3.3, §3.4, §3.7),
and what becomes of replicas their clusters report unschedulable (`settle_stuck`)."""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from modelplane.api.memo import memos_on
from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica, ObservedRole
from modelplane.scheduling import quota, words
from modelplane.scheduling.framework import Eviction, ScheduleInput
from modelplane.scheduling.ledger import PoolLedger
from modelplane.scheduling.matching import (
    RoleDef,
    Shapes,
    cluster_pools,
    match_role,
    observed_demand,
    unparsable,
)
from modelplane.scheduling.rules import FILTERS
from modelplane.scheduling.rules.unschedulable import stuck_report
from modelplane.scheduling.state import Charge, CycleState, PoolKey, Slot, Stuck, by_age
from modelplane.scheduling.types import (
    MAKE_BEFORE_BREAK,
    RoleAssignment,
    StuckOutcome,
    StuckPlacement,
    Unverifiable,
    UnverifiableCause,
    Withdrawal,
)

# ── Contention ──────────────────────────────────────────────────────────────

Holder = tuple[ObservedModelReplica, list[ObservedRole]]
Holders = dict[PoolKey, list[Holder]]
Losers = tuple[tuple[PoolKey, tuple[tuple[str, str], ...]], ...]  # by pool, in pool order


def _holders(
    inp: ScheduleInput, replicas: Sequence[ObservedModelReplica], shapes: Shapes
) -> Holders:
    """Every known pool's holders, fleet-wide (the cycle keeps its candidates' pools)."""
    by_pool: Holders = defaultdict(list)
    for r in replicas:
        cl = inp.clusters.get(r.cluster)
        if cl is None:
            continue
        known = cluster_pools(cl, shapes).shapes
        grouped: dict[str, list[ObservedRole]] = defaultdict(list)
        for role in r.roles:
            grouped[role.pool].append(role)
        for pool, roles in grouped.items():
            if pool in known:
                by_pool[(r.cluster, pool)].append((r, roles))
    return by_pool


def _replay_losers(
    state: CycleState, key: PoolKey, holders: Sequence[Holder], skip: frozenset[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Charge a pool's `holders` in the order given: the not-Ready ones that no longer
    fit lose (those in `skip` are leaving already and charge nothing)."""
    pools = cluster_pools(state.inp.clusters[key[0]], state.shapes)
    shape = pools.shapes[key[1]]
    led = PoolLedger(shape.cap, pools.nodes[key[1]], state.inp.clusters[key[0]].packing == "Spread")
    lost = []
    for r, roles in holders:
        if (r.namespace, r.name) in skip:
            continue
        saved = led.snapshot()
        fits = all(
            led.place(
                observed_demand(shape, role.request_key, state.ev),
                role.nodes_per_worker,
                role.workers,
                force=r.ready,
            )
            for role in roles
        )
        if not fits:
            led.restore(saved)
            lost.append((r.namespace, r.name))
    return lost


def _fleet_losers(state: CycleState) -> Losers:
    """Per pool, the holders that lose it: a function of the observed fleet alone.

    A spreading pool is replayed twice: as it runs now (Ready first, then oldest)
    and as it will once its holders are Ready (by age alone, see `ledger`); a
    not-Ready holder that does not fit either replay loses.
    """
    inp = state.inp
    # A preempted replica is leaving: its place is its preemptor's for every deployment.
    everyone = sorted((r for r in inp.replicas if inp.preemptor(r) is None), key=lambda r: r.order)
    found = []
    for key, holders in sorted(_holders(inp, everyone, state.shapes).items()):
        lost = _pool_losers(state, key, holders)
        if lost:
            found.append((key, lost))
    return tuple(found)


def _pool_losers(
    state: CycleState, key: PoolKey, holders: list[Holder]
) -> tuple[tuple[str, str], ...]:
    """The holders that lose one pool (see `_fleet_losers`).

    They depend on the cluster's reading and the holders' readings alone, so
    they are remembered on the cluster's reading, pool by pool, while the very
    same holders arrive: a fleet that changed elsewhere replays only the pools
    whose holders changed. Readings never change, so the memo cannot go stale.
    """
    derived = state.inp.clusters[key[0]].derived
    memo = derived.setdefault("retain.losers", {}) if memos_on() else {}
    readings = tuple(r for r, _ in holders)
    held = memo.get(key[1])
    if (
        held is not None
        and held[0] is state.shapes
        and held[1] is state.ev
        and len(held[2]) == len(readings)
        and all(map(operator.is_, held[2], readings))
    ):
        return cast(tuple[tuple[str, str], ...], held[3])
    lost = _replay_losers(state, key, holders, frozenset())
    aged = sorted(holders, key=lambda h: by_age(h[0].order))
    if state.inp.clusters[key[0]].packing == "Spread" and aged != holders:
        lost += _replay_losers(state, key, aged, frozenset(lost))
    memo[key[1]] = (state.shapes, state.ev, readings, tuple(lost))
    return tuple(lost)


class _LastLosers:
    """The losers of the last fleet seen, kept while the same fleet arrives.

    Contention depends on the observed fleet alone, not on the deployment
    being scheduled, so it is replayed only when the fleet differs from the
    last call's: other clusters (readings of unchanged clusters arrive as
    the very same objects, see `framework`'s `LastRead`) or replicas that
    read differently (compared by value: a deployment's own replicas are
    merged into the listing afresh by every call). The readings are
    immutable, so holding them cannot go stale.
    """

    def __init__(self) -> None:
        self._key: tuple[Any, ...] = ()
        self._replicas: tuple[ObservedModelReplica, ...] | None = None
        self._preemption: tuple[Any, ...] = ()
        self._losers: Losers = ()

    def get(self, state: CycleState) -> Losers:
        """The fleet's losers per pool, replayed only for a fleet not seen last."""
        key = (state.inp.clusters, state.shapes, state.ev)
        same = len(key) == len(self._key) and all(map(operator.is_, key, self._key))
        # Who is preempted (by whom, at which priorities) decides who holds a pool too.
        preemption = (state.inp.preempted, state.inp.priorities)
        if (
            not memos_on()
            or not same
            or state.inp.replicas != self._replicas
            or preemption != self._preemption
        ):
            self._losers = _fleet_losers(state)
            self._key, self._replicas = key, state.inp.replicas
            self._preemption = preemption
        return self._losers


_LOSERS = _LastLosers()


def resolve_contention(state: CycleState) -> None:
    """Decide, from observed state alone, which replicas lose an oversubscribed pool.

    Holders are charged in a fleet-wide order (Ready first, then oldest, then
    namespace/name); a not-yet-Ready holder that no longer fits loses. Every
    deployment computes the same verdict from the same state; only the owner acts
    on it. Ready holders are always charged and never lose. The verdicts are
    the fleet's, so they are computed once per fleet (`_LastLosers`); a cycle
    takes those of its candidate clusters' pools.
    """
    for key, lost in _LOSERS.get(state):
        if key[0] in state.inp.candidates:
            for name in lost:
                state.losers.setdefault(name, key[1])
    quota.contention(state)


# ── Retain ──────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Judgement:
    """Whether an existing replica leaves, and whether its place could be verified."""

    eviction: Eviction | None = None
    verified: bool = False  # its pools were matched: re-resolve its requests from them
    unverifiable: tuple[Unverifiable, ...] = ()


def _unverifiable(
    r: ObservedModelReplica, pool: str, class_name: str, cause: UnverifiableCause, detail: str = ""
) -> Unverifiable:
    return Unverifiable(r.name, r.cluster, r.index, pool, class_name, cause, detail)


def _check_role(
    state: CycleState, cl: ObservedInferenceCluster, r: ObservedModelReplica, role: RoleDef
) -> Eviction | Unverifiable | None:
    """Whether one role's pinned pool verifiably matches (None), verifiably not, or unknown."""
    observed = r.role(role.role)
    assert observed is not None
    pool = cl.pool(observed.pool)
    if pool is None:
        if cl.pools_unreadable:
            return _unverifiable(r, observed.pool, "", "PoolsUnreadable")
        return Eviction("PoolGone", (observed.pool, r.cluster))
    if pool.unknown is not None:
        return _unverifiable(r, pool.name, pool.class_name, "PoolUnknown", pool.unknown.message)
    shape = state.pool_shapes[(r.cluster, pool.name)]
    bad = unparsable(shape, state.ev)
    if bad is not None:
        return _unverifiable(r, pool.name, pool.class_name, "DevicesUnparsable", bad)
    match = match_role(role, shape, state.ev)
    if not match.matched:
        return Eviction("PoolMismatch", (pool.name, role.path, match.message))
    return None


def _check_pools(
    state: CycleState, cl: ObservedInferenceCluster, r: ObservedModelReplica
) -> Judgement:
    if {x.role for x in r.roles} != {role.role for role in state.roles}:
        return Judgement(Eviction("FormChanged"))
    notes: list[Unverifiable] = []
    for role in state.roles:
        answer = _check_role(state, cl, r, role)
        if isinstance(answer, Eviction):
            return Judgement(answer)
        if answer is not None:
            notes.append(answer)
    if not notes and not cl.ready:
        pool = r.roles[0].pool
        notes.append(_unverifiable(r, pool, _class_of(cl, pool), "ClusterNotReady"))
    return Judgement(
        verified=not any(n.cause != "ClusterNotReady" for n in notes), unverifiable=tuple(notes)
    )


def _class_of(cl: ObservedInferenceCluster, pool: str) -> str:
    found = cl.pool(pool)
    return found.class_name if found is not None else ""


def judge(state: CycleState, r: ObservedModelReplica) -> Judgement:
    """Keep an existing replica unless SPEC §3.3 names a reason to replace it.

    A replica leaves only when its cluster is gone or a filter evicts it, when
    it has no identity, or when its pool verifiably no longer matches. What
    cannot be verified (an unknown pool, devices that do not parse, a NotReady
    cluster) is kept and noted.
    """
    cl = state.inp.clusters.get(r.cluster)
    if cl is None:
        return Judgement(Eviction("ClusterGone", (r.cluster,)))
    for rule in FILTERS:
        eviction = rule.evict(state.inp, cl, r)
        if eviction is not None:
            return Judgement(eviction)
    if r.index < 0:
        return Judgement(Eviction("NoIndex"))
    if not r.roles:
        return Judgement(Eviction("NoPool"))
    moving_to = state.inp.outdated.get(r.name)
    if moving_to is not None:
        return Judgement(Eviction("RevisionChanged", (moving_to,)))
    if state.invalid:
        # Nothing to judge the pinned pool by: keep it (never tear down on doubt).
        return Judgement()
    if not cl.published:
        pool = r.roles[0].pool
        return Judgement(unverifiable=(_unverifiable(r, pool, "", "PoolsUnreadable"),))
    return _check_pools(state, cl, r)


def _observed_roles(
    state: CycleState, r: ObservedModelReplica
) -> tuple[tuple[RoleAssignment, ...], tuple[Charge, ...]]:
    """Roles of a replica kept without re-matching (its place could not be verified)."""
    nodes = {role.role: role.nodes for role in state.roles}
    roles, charges = [], []
    for obs in r.roles:
        roles.append(
            RoleAssignment(
                obs.role,
                obs.pool,
                _resolved(obs),
                nodes.get(obs.role, obs.nodes_per_worker * obs.workers),
            )
        )
        shape = state.pool_shapes.get((r.cluster, obs.pool))
        if shape is not None:
            demand = observed_demand(shape, obs.request_key, state.ev)
            charges.append(Charge(obs.pool, demand, obs.nodes_per_worker, obs.workers))
    return tuple(roles), tuple(charges)


def _resolved(obs: ObservedRole) -> tuple[ResolvedDeviceRequest, ...]:
    resolved = []
    for raw in obs.raw_requests:
        try:
            resolved.append(ResolvedDeviceRequest.model_validate(raw))
        except ValidationError:
            continue
    return tuple(resolved)


def _matched_roles(
    state: CycleState, r: ObservedModelReplica
) -> tuple[tuple[RoleAssignment, ...], tuple[Charge, ...]]:
    """Roles of a replica whose pools were verified: requests resolved afresh."""
    assignments, charges = [], []
    for role in state.roles:
        observed = r.role(role.role)
        assert observed is not None
        match = match_role(role, state.pool_shapes[(r.cluster, observed.pool)], state.ev)
        assignments.append(RoleAssignment(role.role, observed.pool, match.resolved, role.nodes))
        charges.append(Charge(observed.pool, match.demands, role.nodes_per_worker, role.workers))
    return tuple(assignments), tuple(charges)


def _withdraw(state: CycleState, r: ObservedModelReplica) -> bool:
    if r.ready:
        return False
    lost = state.losers.get((r.namespace, r.name))
    if lost is not None:
        text = words.withdrawal_text(r.cluster, lost)
        state.withdrawn.append(Withdrawal(r.cluster, r.index, lost, text, name=r.name))
        return True
    over = state.quota_losers.get((r.namespace, r.name))
    if over is None:
        return False
    pool = r.roles[0].pool if r.roles else ""
    state.withdrawn.append(Withdrawal(r.cluster, r.index, pool, over, name=r.name))
    return True


def retain(state: CycleState) -> None:
    """Keep every existing replica where it is unless a replacement rule applies."""
    seen: set[tuple[str, int]] = set()
    for r in state.own:
        if r.deleting:
            # Gone soon whatever this cycle decides: never kept or counted (its
            # replacement is placed now), but its devices are busy until it is gone.
            roles, charges = _observed_roles(state, r)
            state.deleting.append(
                Slot(r.cluster, r.index, r.name, roles, charges, True, r.ready, r.order)
            )
            continue
        verdict = judge(state, r)
        eviction = verdict.eviction
        if eviction is None and (r.cluster, r.index) in seen:
            eviction = Eviction("Duplicate", (r.cluster, str(r.index)))
        if eviction is not None:
            if not _drains(state, r, eviction) and not _sets_aside(state, r, eviction):
                state.evicted.append((r.name, eviction))
            continue
        seen.add((r.cluster, r.index))
        if _withdraw(state, r):
            continue
        state.unverifiable.extend(verdict.unverifiable)
        roles, charges = (_matched_roles if verdict.verified else _observed_roles)(state, r)
        state.slots.append(Slot(r.cluster, r.index, r.name, roles, charges, True, r.ready, r.order))


def _drains(state: CycleState, r: ObservedModelReplica, eviction: Eviction) -> bool:
    """Keep a leaving Ready replica as draining (make-before-break); False: it goes now.

    Only a Ready replica serves, so only a Ready one is worth keeping; one not
    Ready yet is dropped at once and its capacity freed for the replacement.
    """
    rollout = state.inp.spec.rollout
    if rollout.strategy == "Immediate" or eviction.reason not in MAKE_BEFORE_BREAK:
        return False
    if not r.ready:
        return False
    roles, charges = _observed_roles(state, r)
    slot = Slot(r.cluster, r.index, r.name, roles, charges, True, r.ready, r.order, eviction)
    state.draining.append(slot)
    return True


def _sets_aside(state: CycleState, r: ObservedModelReplica, eviction: Eviction) -> bool:
    """Keep a replica its cluster reports unschedulable until a replacement is placed.

    Under rollout MakeBeforeBreak it is set aside: composed and charged as it
    is, not counted, so the fill places a replacement elsewhere; `settle_stuck`
    then withdraws it or, with no replacement anywhere, keeps it (the cluster may
    still schedule it). Under Immediate, or when it also lost its pool to
    contention, it goes at once (False), noted for the report.
    """
    if eviction.reason != "Unschedulable":
        return False
    report = stuck_report(state.inp.clusters[r.cluster], r)
    assert report is not None
    roles, charges = _observed_roles(state, r)
    slot = Slot(r.cluster, r.index, r.name, roles, charges, True, r.ready, r.order)
    slot.stuck = Stuck(report, eviction)
    keep = state.inp.spec.rollout.strategy != "Immediate"
    if not keep or (r.namespace, r.name) in state.losers:
        state.stuck_dropped.append(slot)
        return False
    state.stuck.append(slot)
    return True


def _stuck_order(s: Slot) -> tuple[str, str, int]:
    # The longest stuck first: the least likely to be scheduled where it is.
    assert s.stuck is not None
    return s.stuck.report.since, s.cluster, s.index


def _note_stuck(state: CycleState, s: Slot, outcome: StuckOutcome, to: Slot | None = None) -> None:
    assert s.stuck is not None
    report = s.stuck.report
    state.stuck_report.append(
        StuckPlacement(
            s.name,
            s.cluster,
            s.index,
            s.stuck.pool,
            report.since,
            report.message,
            outcome,
            None if to is None else (to.cluster, to.index),
        )
    )


def settle_stuck(state: CycleState) -> None:
    """After the fill: withdraw each set-aside replica a new placement replaces.

    A replica the cluster cannot schedule serves nothing, so it goes as soon as
    its replacement is *placed*, not once that one is Ready: keeping it longer
    would only hold its devices in the ledger and a place over `spec.replicas`.
    The fill places the missing replicas first (`fill.shortfall`), so the
    placements beyond those are the replacements; they take the longest stuck
    first. The rest are kept, not counted (no other pool could take them).
    Replicas already dropped (Immediate) are paired with the plain placements.
    """
    if not state.stuck and not state.stuck_dropped:
        return
    new = [s for s in state.slots if not s.retained]
    ordered = sorted(state.stuck, key=_stuck_order)
    swapped = min(len(ordered), max(0, len(new) - state.plain))
    moved, state.stuck = ordered[:swapped], ordered[swapped:]
    rest = len(new) - len(moved)
    for s, to in zip(moved, new[rest:], strict=True):
        assert s.stuck is not None
        state.evicted.append((s.name, s.stuck.eviction))
        _note_stuck(state, s, "Moved", to)
    for s in state.stuck:
        _note_stuck(state, s, "Kept")
    dropped = sorted(state.stuck_dropped, key=_stuck_order)
    offset = rest - len(dropped)  # the placements before those that replaced `moved`
    for i, s in enumerate(dropped):
        dest = new[offset + i] if offset + i >= 0 else None
        _note_stuck(state, s, "Withdrawn" if dest is None else "Moved", dest)


def settle_drains(state: CycleState) -> None:
    """Drop each draining replica whose replacement is Ready (make-before-break).

    A draining replica stays while the Ready replicas counted toward
    `spec.replicas` (those that serve: `ScheduleInput.serving`) fall short of
    it: with `ready` of them serving, the oldest `spec.replicas - ready`
    draining ones keep serving (ties by cluster, then
    lowest index, the mirror of scale-down), the rest are dropped as replaced.
    """
    if not state.draining:
        return
    serving = state.inp.serving
    ready = sum(1 for s in state.slots if s.ready and (serving is None or s.name in serving))
    keep = max(0, state.inp.spec.replicas - ready)
    ordered = sorted(state.draining, key=lambda s: (s.order[:3], s.cluster, s.index))
    state.draining = ordered[:keep]
    for s in ordered[keep:]:
        assert s.drain is not None
        state.evicted.append((s.name, s.drain))
        state.superseded.append(s)


# ── Scale down ──────────────────────────────────────────────────────────────


def _scale_down_stuck(state: CycleState) -> None:
    """Set-aside unschedulable replicas serve nothing: scale-down takes them first."""
    excess = len(state.slots) + len(state.stuck) - state.inp.spec.replicas
    if excess <= 0 or not state.stuck:
        return
    ordered = sorted(state.stuck, key=_stuck_order)
    state.stuck = ordered[excess:]
    state.scaled_down.extend(s.name for s in ordered[:excess])


def scale_down(state: CycleState) -> None:
    """Drop the highest-index replica on the most-loaded cluster until at `desired`.

    Taking from the most-loaded cluster never empties a cluster holding a sole
    replica while another holds several. Ties go to the cluster last by name,
    the mirror of fill's first-by-name.
    """
    _scale_down_stuck(state)
    excess = len(state.slots) - state.inp.spec.replicas
    if excess <= 0:
        return
    by_cluster: dict[str, list[Slot]] = defaultdict(list)
    for s in state.slots:
        by_cluster[s.cluster].append(s)
    for slots in by_cluster.values():
        slots.sort(key=lambda s: s.index)
    dropped: set[int] = set()
    for _ in range(excess):
        cluster = max(by_cluster, key=lambda k: (len(by_cluster[k]), k))
        slot = by_cluster[cluster].pop()
        if not by_cluster[cluster]:
            del by_cluster[cluster]
        dropped.add(id(slot))
        state.scaled_down.append(slot.name)
    state.slots = [s for s in state.slots if id(s) not in dropped]
    kept = {s.name for s in state.slots}
    state.unverifiable = [u for u in state.unverifiable if u.name in kept]
