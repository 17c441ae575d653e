"""The fleet scheduler, structured like kube-scheduler's framework.

`schedule()` builds one `CycleState` from observed state and runs named steps
over it, each a separate function:

    filter_clusters → check_selectors → match_pools → resolve_contention →
    retain → scale_down → build_ledger → fill → explain → bind

Everything is keyed and iterated in sorted order, so the answer does not depend
on the order of the input lists. Work whose answer cannot change between
replicas (device matching, selector evaluation) is done once per call.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from modelplane.api.common import Toleration
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.api.objects import label_value
from modelplane.api.readers import ObservedInferenceCluster as ObservedCluster
from modelplane.api.readers import ObservedModelReplica as ObservedReplica
from modelplane.api.readers import (
    ObservedRole,
    read_inference_cluster,
    read_model_replica,
)
from modelplane.scheduling.filters import describe_taint, selector_matches, untolerated
from modelplane.scheduling.ledger import PoolLedger, Vector
from modelplane.scheduling.matching import (
    Evaluator,
    Request,
    RoleDef,
    RoleMatch,
    Shape,
    Shapes,
    match_role,
    observed_demand,
)
from modelplane.scheduling.names import replica_name
from modelplane.scheduling.types import (
    ClusterVerdict,
    PlannedReplica,
    PoolVerdict,
    RoleAssignment,
    ScheduleResult,
    Withdrawal,
)

PoolKey = tuple[str, str]  # (cluster, pool)


@dataclass(frozen=True)
class Charge:
    """What one role of one replica holds in a pool."""

    pool: str
    demands: tuple[Vector, ...]
    nodes_per_worker: int
    workers: int


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
    order: tuple[int, int, str, str, str] = (1, 1, "", "", "")


@dataclass
class CycleState:
    """Everything one scheduling cycle reads and writes."""

    namespace: str
    name: str
    desired: int
    roles: tuple[RoleDef, ...]
    tolerations: list[Toleration]
    clusters: dict[str, ObservedCluster]  # by name, sorted
    own: list[ObservedReplica]
    others: list[ObservedReplica]
    shapes: Shapes = field(default_factory=Shapes)
    ev: Evaluator = field(default_factory=Evaluator)
    verdicts: dict[str, ClusterVerdict] = field(default_factory=dict)  # filter rejections
    selected: set[str] = field(default_factory=set)
    evicting: dict[str, str] = field(default_factory=dict)  # cluster -> NoExecute taint
    schedulable: list[str] = field(default_factory=list)  # may take new replicas
    invalid: list[tuple[str, str]] = field(default_factory=list)
    pool_shapes: dict[PoolKey, Shape] = field(default_factory=dict)
    pool_nodes: dict[PoolKey, int] = field(default_factory=dict)
    matches: dict[tuple[str, str], list[tuple[str, RoleMatch]]] = field(default_factory=dict)
    losers: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, name) -> pool
    slots: list[Slot] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    withdrawn: list[Withdrawal] = field(default_factory=list)
    scaled_down: list[str] = field(default_factory=list)
    ledgers: dict[PoolKey, PoolLedger] = field(default_factory=dict)
    full: set[str] = field(default_factory=set)  # clusters that cannot take one more
    # Matched pools per role of each schedulable cluster (None: some role has none).
    options: dict[str, list[list[tuple[str, RoleMatch]]] | None] = field(default_factory=dict)
    fresh_fits: dict[Any, bool] = field(default_factory=dict)
    texts: dict[tuple[int, str], str] = field(default_factory=dict)

    def ledger(self, key: PoolKey) -> PoolLedger | None:
        """The pool's ledger, created on first use; None for an unpublished pool."""
        led = self.ledgers.get(key)
        if led is None:
            shape = self.pool_shapes.get(key)
            if shape is None:
                return None
            led = self.ledgers[key] = PoolLedger(shape.cap, self.pool_nodes[key])
        return led


def _role_defs(spec: ModelDeploymentSpec) -> tuple[RoleDef, ...]:
    roles = []
    for role, rs in spec.roles().items():
        roles.append(
            RoleDef(
                role=role,
                path=rs.node_selector_path,
                requests=tuple(
                    Request(d.name, d.count, tuple(s.cel for s in d.selectors))
                    for d in rs.node_selector.devices
                ),
                nodes_per_worker=rs.workers.topology.nodes_per_worker,
                workers=rs.workers.count,
            )
        )
    return tuple(roles)


def read_state(
    deployment: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    replicas: Sequence[Mapping[str, Any]],
) -> CycleState:
    """Parse the inputs into a CycleState (clusters and replicas in canonical order)."""
    meta = deployment.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    spec = ModelDeploymentSpec.model_validate(dict(deployment.get("spec") or {}))
    parsed: dict[str, ObservedCluster] = {}
    for obj in clusters:
        cl = read_inference_cluster(obj)
        # Names are unique in a real fleet; keep a deterministic one if not.
        if cl is not None and (cl.name not in parsed or repr(cl) < repr(parsed[cl.name])):
            parsed[cl.name] = cl
    by_label = {label_value(k): k for k in sorted(parsed, reverse=True)}
    unique: dict[tuple[str, str], ObservedReplica] = {}
    for obj in replicas:
        r = read_model_replica(obj, by_label)
        if r is None:
            continue
        key = (r.namespace, r.name)
        # Object names are unique in a real fleet; keep a deterministic one if not.
        if key not in unique or repr(r) < repr(unique[key]):
            unique[key] = r
    own: list[ObservedReplica] = []
    others: list[ObservedReplica] = []
    for r in unique.values():
        (own if r.belongs_to(namespace, name) else others).append(r)
    own.sort(key=lambda r: (r.cluster, r.index, r.order))
    others.sort(key=lambda r: r.order)
    state = CycleState(
        namespace=namespace,
        name=name,
        desired=spec.replicas,
        roles=_role_defs(spec),
        tolerations=spec.tolerations or [],
        clusters={k: parsed[k] for k in sorted(parsed)},
        own=own,
        others=others,
    )
    state.selected = {
        k for k, cl in state.clusters.items() if selector_matches(spec.cluster_selector, cl.labels)
    }
    return state


# ── Filter ──────────────────────────────────────────────────────────────────


def filter_clusters(state: CycleState) -> None:
    """Reject clusters by labels, taints and readiness; note NoExecute evictions."""
    for name, cl in state.clusters.items():
        if name not in state.selected:
            state.verdicts[name] = ClusterVerdict(
                name, False, "NotSelected", "labels do not match spec.clusterSelector"
            )
            continue
        taints = untolerated(cl.taints, state.tolerations)
        drain = next((t for t in taints if t.effect == "NoExecute"), None)
        if drain is not None:
            state.evicting[name] = describe_taint(drain)
        if taints:
            state.verdicts[name] = ClusterVerdict(
                name,
                False,
                "Tainted",
                "untolerated taint " + ", ".join(describe_taint(t) for t in taints),
            )
        elif not cl.ready:
            state.verdicts[name] = ClusterVerdict(name, False, "NotReady", "cluster is not Ready")
        elif not cl.published:
            state.verdicts[name] = ClusterVerdict(
                name, False, "NotReady", "cluster publishes no GPU pools (status.gpuPools)"
            )
        else:
            state.schedulable.append(name)


def check_selectors(state: CycleState) -> None:
    """Compile every selector; a compile error is the user's, with its field path."""
    for role in state.roles:
        for i, req in enumerate(role.requests):
            for j, expr in enumerate(req.selectors):
                error = state.ev.compile_error(expr)
                if error is not None:
                    state.invalid.append((f"{role.path}.devices[{i}].selectors[{j}].cel", error))


# ── Match pools ─────────────────────────────────────────────────────────────


def match_pools(state: CycleState) -> None:
    """Match every role against every pool of the clusters that matter, once per shape.

    Those are the schedulable clusters and the selected ones holding replicas
    (retention and the ledger need their pools); a tainted or not-Ready cluster
    holding none is explained by its filter verdict alone.
    """
    held = {r.cluster for r in state.own} | {r.cluster for r in state.others}
    wanted = sorted(set(state.schedulable) | (held & state.selected))
    intern = state.shapes.intern
    for name in wanted:
        for pool in state.clusters[name].pools:
            if not pool.known:
                continue
            key = (name, pool.name)
            state.pool_shapes[key] = intern(pool.class_name, pool.devices)
            state.pool_nodes[key] = pool.nodes
    if state.invalid:
        return
    for role in state.roles:
        for name in wanted:
            state.matches[(name, role.role)] = [
                (pool.name, match_role(role, state.pool_shapes[(name, pool.name)], state.ev))
                for pool in state.clusters[name].pools
                if pool.known
            ]


# ── Contention ──────────────────────────────────────────────────────────────


def _holders(
    state: CycleState, replicas: Sequence[ObservedReplica]
) -> dict[PoolKey, list[tuple[ObservedReplica, list[ObservedRole]]]]:
    by_pool: dict[PoolKey, list[tuple[ObservedReplica, list[ObservedRole]]]] = defaultdict(list)
    for r in replicas:
        if r.cluster not in state.selected:
            continue
        grouped: dict[str, list[ObservedRole]] = defaultdict(list)
        for role in r.roles:
            grouped[role.pool].append(role)
        for pool, roles in grouped.items():
            if (r.cluster, pool) in state.pool_shapes:
                by_pool[(r.cluster, pool)].append((r, roles))
    return by_pool


def resolve_contention(state: CycleState) -> None:
    """Decide, from observed state alone, which replicas lose an oversubscribed pool.

    Holders are charged in a fleet-wide order (Ready first, then oldest, then
    namespace/name); a not-yet-Ready holder that no longer fits loses. Every
    deployment computes the same verdict from the same state; only the owner acts
    on it. Ready holders are always charged and never lose.
    """
    everyone = sorted([*state.own, *state.others], key=lambda r: r.order)
    for key, holders in sorted(_holders(state, everyone).items()):
        shape = state.pool_shapes[key]
        led = PoolLedger(shape.cap, state.pool_nodes[key])
        for r, roles in holders:
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
                state.losers.setdefault((r.namespace, r.name), key[1])


# ── Retain ──────────────────────────────────────────────────────────────────


def _observed_roles(
    state: CycleState, r: ObservedReplica
) -> tuple[tuple[RoleAssignment, ...], tuple[Charge, ...]]:
    """Roles of a replica kept without re-matching (invalid selectors, no pools)."""
    nodes = {role.role: role.nodes for role in state.roles}
    roles, charges = [], []
    for obs in r.roles:
        role_name = obs.role
        resolved = []
        for raw in obs.raw_requests:
            try:
                resolved.append(ResolvedDeviceRequest.model_validate(raw))
            except ValidationError:
                continue
        roles.append(
            RoleAssignment(
                role_name,
                obs.pool,
                tuple(resolved),
                nodes.get(role_name, obs.nodes_per_worker * obs.workers),
            )
        )
        shape = state.pool_shapes.get((r.cluster, obs.pool))
        if shape is not None:
            charges.append(
                Charge(
                    obs.pool,
                    observed_demand(shape, obs.request_key, state.ev),
                    obs.nodes_per_worker,
                    obs.workers,
                )
            )
    return tuple(roles), tuple(charges)


def _replace_reason(state: CycleState, r: ObservedReplica) -> str | None:
    """Why an existing replica must be replaced, or None to keep it."""
    cl = state.clusters.get(r.cluster)
    if cl is None:
        return f"cluster {r.cluster} no longer exists"
    if r.cluster not in state.selected:
        return f"cluster {r.cluster} no longer matches spec.clusterSelector"
    if r.cluster in state.evicting:
        return f"cluster {r.cluster} has untolerated taint {state.evicting[r.cluster]}"
    if r.index < 0:
        return "replica has no index"
    if not r.roles:
        return "replica names no node pool"
    if state.invalid or not cl.published:
        # Nothing to judge the pinned pool by: keep it (never tear down on doubt).
        return None
    observed = {x.role: x for x in r.roles}
    if set(observed) != {role.role for role in state.roles}:
        return "the deployment changed between unified and disaggregated serving"
    for role in state.roles:
        pool = observed[role.role].pool
        shape = state.pool_shapes.get((r.cluster, pool))
        if shape is None:
            return f"pool {pool} is no longer published by cluster {r.cluster}"
        match = match_role(role, shape, state.ev)
        if not match.matched:
            return f"pool {pool} no longer matches {role.path}: {match.message}"
    return None


def retain(state: CycleState) -> None:
    """Keep every existing replica where it is unless a replacement rule applies."""
    seen: set[tuple[str, int]] = set()
    for r in state.own:
        reason = _replace_reason(state, r)
        if reason is None and (r.cluster, r.index) in seen:
            reason = f"duplicate of replica ({r.cluster}, {r.index})"
        if reason is not None:
            state.replaced.append((r.name, reason))
            continue
        seen.add((r.cluster, r.index))
        lost = state.losers.get((r.namespace, r.name))
        if lost is not None and not r.ready:
            state.withdrawn.append(
                Withdrawal(
                    r.cluster,
                    r.index,
                    lost,
                    f"pool {lost} on cluster {r.cluster} is oversubscribed and older or "
                    "Ready replicas keep their place",
                    name=r.name,
                )
            )
            continue
        if state.invalid or not state.clusters[r.cluster].published:
            roles, charges = _observed_roles(state, r)
        else:
            observed = {x.role: x for x in r.roles}
            assignments, charge_list = [], []
            for role in state.roles:
                pool = observed[role.role].pool
                match = match_role(role, state.pool_shapes[(r.cluster, pool)], state.ev)
                assignments.append(RoleAssignment(role.role, pool, match.resolved, role.nodes))
                charge_list.append(Charge(pool, match.demands, role.nodes_per_worker, role.workers))
            roles, charges = tuple(assignments), tuple(charge_list)
        state.slots.append(Slot(r.cluster, r.index, r.name, roles, charges, True, r.ready, r.order))


# ── Scale down ──────────────────────────────────────────────────────────────


def scale_down(state: CycleState) -> None:
    """Drop the highest-index replica on the most-loaded cluster until at `desired`.

    Taking from the most-loaded cluster never empties a cluster holding a sole
    replica while another holds several. Ties go to the cluster last by name,
    the mirror of fill's first-by-name.
    """
    excess = len(state.slots) - state.desired
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


# ── Ledger ──────────────────────────────────────────────────────────────────


def build_ledger(state: CycleState) -> None:
    """Charge every pool with what other deployments and our kept replicas hold.

    Other deployments' replicas are charged from their observed requests (losers
    of contention included, until their owner withdraws them); this deployment's
    dropped and withdrawn replicas are not charged.
    """
    charges: list[tuple[tuple[int, int, str, str, str], str, Charge]] = []
    for r in state.others:
        if r.cluster not in state.selected:
            continue
        for role in r.roles:
            shape = state.pool_shapes.get((r.cluster, role.pool))
            if shape is not None:
                demand = observed_demand(shape, role.request_key, state.ev)
                charges.append(
                    (
                        r.order,
                        r.cluster,
                        Charge(role.pool, demand, role.nodes_per_worker, role.workers),
                    )
                )
    for s in state.slots:
        charges.extend((s.order, s.cluster, ch) for ch in s.charges)
    charges.sort(key=lambda t: t[0])
    for _, cluster, ch in charges:
        led = state.ledger((cluster, ch.pool))
        if led is not None:
            led.place(ch.demands, ch.nodes_per_worker, ch.workers, force=True)


# ── Fill ────────────────────────────────────────────────────────────────────


def _candidates(state: CycleState, cluster: str) -> list[list[tuple[str, RoleMatch]]] | None:
    """Matched pools per role on a cluster, or None when some role has none."""
    per_role = []
    for role in state.roles:
        pools = [(p, m) for p, m in state.matches.get((cluster, role.role), ()) if m.matched]
        if not pools:
            return None
        per_role.append(pools)
    return per_role


def try_place(
    state: CycleState, cluster: str, per_role: list[list[tuple[str, RoleMatch]]]
) -> list[tuple[str, RoleMatch]] | None:
    """Charge one new replica on `cluster` (both roles there); None when it does not fit.

    Pool combinations are tried in pool-name order; a failed try is rolled back.
    """
    for combo in itertools.product(*per_role):
        keys = sorted({(cluster, pool) for pool, _ in combo})
        ledgers = {k: state.ledger(k) for k in keys}
        saved = {k: led.snapshot() for k, led in ledgers.items() if led is not None}
        ok = True
        for role, (pool, match) in zip(state.roles, combo, strict=True):
            led = ledgers[(cluster, pool)]
            if led is None or not led.place(
                match.demands, role.nodes_per_worker, role.workers, force=False
            ):
                ok = False
                break
        if ok:
            return list(combo)
        for k, snap in saved.items():
            led = ledgers[k]
            assert led is not None
            led.restore(snap)
    return None


def fill(state: CycleState) -> None:
    """Place the shortfall one replica at a time on the least-loaded cluster that fits.

    New replicas are identical and the ledger only shrinks during fill, so a
    cluster that cannot take one cannot take a later one either: it leaves the
    heap for good. Ties on load go to the cluster first by name.
    """
    shortfall = state.desired - len(state.slots)
    if shortfall <= 0 or state.invalid:
        return
    load: dict[str, int] = defaultdict(int)
    for s in state.slots:
        load[s.cluster] += 1
    used: dict[str, set[int]] = defaultdict(set)
    for r in state.own:
        used[r.cluster].add(r.index)
    heap = []
    for cluster in state.schedulable:
        per_role = state.options[cluster] = _candidates(state, cluster)
        if per_role is not None:
            heap.append((load[cluster], cluster))
    heapq.heapify(heap)
    while shortfall > 0 and heap:
        count, cluster = heapq.heappop(heap)
        per_role = state.options[cluster]
        assert per_role is not None
        combo = try_place(state, cluster, per_role)
        if combo is None:
            state.full.add(cluster)
            continue
        index = 0
        while index in used[cluster]:
            index += 1
        used[cluster].add(index)
        roles = tuple(
            RoleAssignment(role.role, pool, match.resolved, role.nodes)
            for role, (pool, match) in zip(state.roles, combo, strict=True)
        )
        state.slots.append(
            Slot(
                cluster,
                index,
                replica_name(state.namespace, state.name, cluster, index),
                roles,
                (),
                False,
            )
        )
        shortfall -= 1
        heapq.heappush(heap, (count + 1, cluster))


# ── Explain ─────────────────────────────────────────────────────────────────


def _demand_text(shape: Shape, demand: Vector) -> str:
    dra = [i for i, is_dra in enumerate(shape.dra) if is_dra]
    parts = [f"{shape.names[d]}×{demand[shape.slot[d]]}" for d in dra if demand[shape.slot[d]]]
    return ", ".join(parts) or "no devices"


def _fits_one_more(
    state: CycleState, name: str, per_role: list[list[tuple[str, RoleMatch]]]
) -> bool:
    """Whether one more replica fits on a cluster, leaving the ledger untouched."""
    keys = [(name, p.name) for p in state.clusters[name].pools]
    touched = [k for k in keys if k in state.ledgers]
    signature = None
    if not touched:
        # Untouched clusters with equal pools give equal answers: ask once.
        signature = tuple(
            tuple((pool, id(match), state.pool_nodes[(name, pool)]) for pool, match in pools)
            for pools in per_role
        )
        hit = state.fresh_fits.get(signature)
        if hit is not None:
            return hit
    saved = {k: state.ledgers[k].snapshot() for k in touched}
    fits = try_place(state, name, per_role) is not None
    for k in keys:
        if k in saved:
            state.ledgers[k].restore(saved[k])
        else:
            state.ledgers.pop(k, None)
    if signature is not None:
        state.fresh_fits[signature] = fits
    return fits


def _free_nodes(state: CycleState, key: PoolKey, match: RoleMatch, role: RoleDef) -> int:
    """Nodes of a pool that could take one more worker of this role."""
    led = state.ledgers.get(key)
    if led is not None:
        return led.free_for(match.demands, role.nodes_per_worker)
    return state.pool_nodes[key]  # an untouched pool: every node is free


def _needs_text(state: CycleState, key: PoolKey, match: RoleMatch, role: RoleDef) -> str:
    shape = state.pool_shapes[key]
    cache_key = (id(shape), role.role)
    text = state.texts.get(cache_key)
    if text is None:
        if role.nodes_per_worker > 1:
            # A multi-node worker takes whole nodes.
            text = f"needs {role.nodes} whole node(s)"
        else:
            text = (
                f"needs {role.nodes} node(s) with {_demand_text(shape, match.demand)} free on each"
            )
        state.texts[cache_key] = text
    return text


def explain(state: CycleState) -> None:
    """A verdict for every InferenceCluster: why it can (not) take another replica."""
    for name in state.clusters:
        if name in state.verdicts:
            continue
        if state.invalid:
            state.verdicts[name] = ClusterVerdict(
                name,
                False,
                "InvalidNodeSelector",
                "the node selector does not compile: " + "; ".join(p for p, _ in state.invalid),
            )
            continue
        pools: list[PoolVerdict] = []
        per_role = state.options[name] if name in state.options else _candidates(state, name)
        fits = False
        if per_role is not None and name not in state.full:
            fits = _fits_one_more(state, name, per_role)
        short: list[str] = []
        for role in state.roles:
            frees = []
            for pool, match in state.matches.get((name, role.role), ()):
                free = 0
                message = match.message
                if match.matched:
                    free = _free_nodes(state, (name, pool), match, role)
                    message = _needs_text(state, (name, pool), match, role) + f"; {free} free"
                    frees.append(f"{pool} {free}")
                pools.append(
                    PoolVerdict(
                        pool, role.role, match.matched, match.requests, role.nodes, free, message
                    )
                )
            if frees:
                short.append(f"{role.role} needs {role.nodes} node(s); free: {', '.join(frees)}")
        if per_role is None:
            failing = []
            for role in state.roles:
                ms = state.matches.get((name, role.role), [])
                if not any(m.matched for _, m in ms):
                    first = next(((p, m) for p, m in ms), None)
                    detail = f": pool {first[0]}: {first[1].message}" if first else ""
                    failing.append(f"no pool matches {role.path}{detail}")
            state.verdicts[name] = ClusterVerdict(
                name, False, "NoMatchingPool", "; ".join(failing), tuple(pools)
            )
        elif not fits:
            state.verdicts[name] = ClusterVerdict(
                name, False, "InsufficientCapacity", "; ".join(short), tuple(pools)
            )
        else:
            state.verdicts[name] = ClusterVerdict(name, True, None, "", tuple(pools))


# ── Bind ────────────────────────────────────────────────────────────────────


def bind(state: CycleState) -> ScheduleResult:
    """Turn the cycle's slots into the immutable result."""
    replicas = tuple(
        PlannedReplica(s.cluster, s.index, s.roles, s.retained, s.name, ready=s.ready)
        for s in sorted(state.slots, key=lambda s: (s.cluster, s.index))
    )
    return ScheduleResult(
        replicas=replicas,
        desired=state.desired,
        invalid_selectors=tuple(state.invalid),
        clusters=tuple(state.verdicts[k] for k in sorted(state.verdicts)),
        withdrawn=tuple(sorted(state.withdrawn, key=lambda w: (w.cluster, w.index))),
        replaced=tuple(sorted(state.replaced)),
        scaled_down=tuple(sorted(state.scaled_down)),
    )


def schedule(
    deployment: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    replicas: Sequence[Mapping[str, Any]],
) -> ScheduleResult:
    """Compute the desired replicas of `deployment` and why any are missing.

    `deployment` is the ModelDeployment object (already validated), `clusters` every
    InferenceCluster, `replicas` every ModelReplica in the fleet. Pure and
    deterministic: the same objects in any order give the same result.
    """
    state = read_state(deployment, clusters, replicas)
    filter_clusters(state)
    check_selectors(state)
    match_pools(state)
    resolve_contention(state)
    retain(state)
    scale_down(state)
    build_ledger(state)
    fill(state)
    explain(state)
    return bind(state)
