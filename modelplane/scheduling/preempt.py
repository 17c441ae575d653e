"""Priority and preemption: kube-scheduler's PostFilter, across the fleet.

`spec.priority` names a PriorityClass; its `value` is the deployment's fleet
priority (0 without one, or for a class not found). When the fill leaves a
replica of a deployment unplaced and its `preemptionPolicy` is not `Never`,
`post_filter` looks for one pool where withdrawing strictly lower-priority
replicas of other deployments frees enough devices: on each pool that matches
every role, the candidates (lowest priority first, then not Ready before
Ready, then newest) are added until the replica fits, then every victim that
can be spared is given back, highest priority first, so no victim is more than
needed. The pool with the fewest victims wins, then the lowest highest-victim
priority, then the first (cluster, pool). The new replica names its victims
(`ModelReplica.spec.preempts`); every deployment reads that the same way
(`ScheduleInput.preempted`): a preempted replica is no longer charged anywhere,
and its own deployment withdraws it at once (`PreemptionFilter`, eviction
`Preempted`, no make-before-break: the capacity is needed now) and re-places
it wherever it fits. A replica is never preempted for equal or higher
priority: the victim's deployment checks the values again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.api.readers import ObservedModelReplica
from modelplane.scheduling import quota
from modelplane.scheduling.fill import (
    _place,
    candidates,
    lowest_free,
    new_name,
    surge_room,
    used_indices,
)
from modelplane.scheduling.matching import RoleMatch, observed_demand
from modelplane.scheduling.rules.preemption import preempted
from modelplane.scheduling.state import Charge, CycleState, PoolKey, charged_slots, new_ledger
from modelplane.scheduling.types import Preemption, Victim

PREEMPT = "Preempt"  # this step's key in the cycle's rule states
MAX_VICTIMS = 32  # ModelReplicaSpec.preempts' bound


@dataclass
class _Done:
    """What this cycle preempted: victims by new replica, and every victim taken."""

    by_replica: dict[str, Preemption] = field(default_factory=dict)
    taken: set[tuple[str, str]] = field(default_factory=set)
    # Other deployments' replicas by cluster, not already preempted (built on first use).
    by_cluster: dict[str, list[ObservedModelReplica]] | None = None


def _on_cluster(state: CycleState, cluster: str) -> list[ObservedModelReplica]:
    """Other deployments' replicas on `cluster` that no one preempts yet."""
    done = state.rules.get(PREEMPT, _Done)
    if done.by_cluster is None:
        done.by_cluster = {}
        for r in state.others:
            if not preempted(state.inp, r):
                done.by_cluster.setdefault(r.cluster, []).append(r)
    return done.by_cluster.get(cluster, [])


def _victims_on(state: CycleState, key: PoolKey, own: int) -> list[ObservedModelReplica]:
    """Replicas of other deployments on the pool with priority below `own`, lowest first."""
    done = state.rules.get(PREEMPT, _Done)
    found = [
        r
        for r in _on_cluster(state, key[0])
        if any(role.pool == key[1] for role in r.roles)
        and (r.namespace, r.name) not in done.taken
        and state.inp.priority(r.priority) < own
    ]
    # Lowest priority first, then one that serves nothing, then the newest (stable sorts).
    found.sort(key=lambda r: r.name)
    found.sort(key=lambda r: r.created, reverse=True)
    found.sort(key=lambda r: (state.inp.priority(r.priority), r.ready))
    return found


def _others_charges(state: CycleState, key: PoolKey, gone: set[tuple[str, str]]) -> list[Charge]:
    """What other deployments' replicas charge the pool, those in `gone` left out."""
    shape = state.pool_shapes[key]
    taken = state.rules.get(PREEMPT, _Done).taken
    out: list[Charge] = []
    for r in _on_cluster(state, key[0]):
        if (r.namespace, r.name) in gone or (r.namespace, r.name) in taken:
            continue
        out.extend(
            Charge(
                role.pool,
                observed_demand(shape, role.request_key, state.ev),
                role.nodes_per_worker,
                role.workers,
            )
            for role in r.roles
            if role.pool == key[1]
        )
    return out


def _fits_without(
    state: CycleState,
    key: PoolKey,
    match: RoleMatch,
    nodes: tuple[int, int],
    gone: set[tuple[str, str]],
) -> bool:
    """Whether one more replica fits the pool when the replicas named in `gone` leave."""
    led = new_ledger(state, key)
    own = [
        ch
        for s in charged_slots(state)
        if s.cluster == key[0]
        for ch in s.charges
        if ch.pool == key[1]
    ]
    new = [ch for _, load in state.new_runs(key) for ch in load]
    for ch in [*_others_charges(state, key, gone), *own, *new]:
        led.place(ch.demands, ch.nodes_per_worker, ch.workers, force=True)
    per_worker, workers = nodes
    return led.place(match.demands, per_worker, workers, force=False)


def _choose(
    state: CycleState, key: PoolKey, match: RoleMatch, nodes: tuple[int, int], own: int
) -> list[ObservedModelReplica] | None:
    """The fewest victims on one pool that make room, or None when none do."""
    pool = _victims_on(state, key, own)
    if not pool:
        return None
    chosen: list[ObservedModelReplica] = []
    for r in pool:
        chosen.append(r)
        if _fits_without(state, key, match, nodes, {(v.namespace, v.name) for v in chosen}):
            break
    else:
        return None
    # Give back every victim that is not needed, highest priority first.
    for r in sorted(chosen, key=lambda v: -state.inp.priority(v.priority)):
        rest = [v for v in chosen if v is not r]
        if _fits_without(state, key, match, nodes, {(v.namespace, v.name) for v in rest}):
            chosen = rest
    return chosen if 0 < len(chosen) <= MAX_VICTIMS else None


def _best(
    state: CycleState, own: int
) -> tuple[str, list[tuple[str, RoleMatch]], list[ObservedModelReplica]] | None:
    """The pool, over every schedulable cluster, that needs the fewest victims."""
    best = None
    role = state.roles[0]
    for cluster in sorted(state.schedulable):
        per_role = candidates(state, cluster)
        if per_role is None:
            continue
        for pool, match in per_role[0]:
            combo = [(pool, match)]
            if not quota.admits(state, cluster, combo):
                continue
            victims = _choose(
                state, (cluster, pool), match, (role.nodes_per_worker, role.workers), own
            )
            if victims is None:
                continue
            rank = (len(victims), max(state.inp.priority(v.priority) for v in victims))
            if best is None or rank < best[0]:
                best = (rank, cluster, combo, victims)
    return None if best is None else (best[1], best[2], best[3])


def post_filter(state: CycleState) -> None:
    """Preempt for each replica the fill left unplaced, one pool per replica.

    Only unified deployments preempt (a disaggregated replica's two roles would
    need room on two pools at once); `preemptionPolicy: Never` never does.
    """
    spec = state.inp.spec
    if spec.preemption_policy == "Never" or state.invalid or len(state.roles) != 1:
        return
    own = state.inp.priority(spec.priority)
    if own <= 0:
        return
    done = state.rules.get(PREEMPT, _Done)
    used = used_indices(state)
    while len(state.slots) < spec.replicas and surge_room(state) > 0:
        found = _best(state, own)
        if found is None:
            return
        cluster, combo, victims = found
        index = lowest_free(used[cluster])
        name = new_name(state, cluster, index)
        used[cluster].add(index)
        _place(state, cluster, combo, index, name)
        led = state.ledger((cluster, combo[0][0]))
        role = state.roles[0]
        if led is not None:  # the victims' devices are this replica's now
            led.place(combo[0][1].demands, role.nodes_per_worker, role.workers, force=True)
        done.taken.update((v.namespace, v.name) for v in victims)
        done.by_replica[name] = Preemption(
            name,
            cluster,
            combo[0][0],
            own,
            tuple(
                Victim(v.namespace, v.name, v.deployment, state.inp.priority(v.priority))
                for v in victims
            ),
        )


def preemptions(state: CycleState) -> tuple[Preemption, ...]:
    """This cycle's preemptions, by new replica."""
    done = state.rules.get(PREEMPT, _Done)
    return tuple(done.by_replica[k] for k in sorted(done.by_replica))


def victims_of(state: CycleState, name: str, retained: bool) -> tuple[tuple[str, str], ...]:
    """What a replica's `spec.preempts` says: a new replica's victims; a kept one's
    while it is not Ready and a victim still exists (then the list empties)."""
    done = state.rules.get(PREEMPT, _Done)
    if name in done.by_replica:
        return tuple(sorted((v.namespace, v.name) for v in done.by_replica[name].victims))
    if not retained:
        return ()
    own = next((r for r in state.own if r.name == name), None)
    if own is None or own.ready or not own.preempts:
        return ()
    alive = {(r.namespace, r.name) for r in state.others}
    return tuple(v for v in own.preempts if v in alive)
