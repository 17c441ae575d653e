"""The explain step: why each cluster can (not) take another replica (SPEC §3.8)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from modelplane.scheduling import words
from modelplane.scheduling.fill import candidates, lowest_free, new_name, try_place, used_indices
from modelplane.scheduling.framework import Rejection
from modelplane.scheduling.ledger import Vector
from modelplane.scheduling.matching import RoleDef, RoleMatch, Shape
from modelplane.scheduling.state import CycleState, PoolKey, PoolOptions
from modelplane.scheduling.types import ClusterReason, ClusterVerdict, PoolVerdict

EXPLAIN = "Explain"  # this step's key in the cycle's rule states


@dataclass
class _Memo:
    """What the explain step caches across clusters of one cycle."""

    fresh_fits: dict[Any, bool] = field(default_factory=dict)
    texts: dict[tuple[int, str], str] = field(default_factory=dict)
    used: dict[str, set[int]] | None = None  # replica indices taken per cluster (fill's)


def _demand_text(shape: Shape, demand: Vector) -> str:
    dra = [i for i, is_dra in enumerate(shape.dra) if is_dra]
    parts = [f"{shape.names[d]}×{demand[shape.slot[d]]}" for d in dra if demand[shape.slot[d]]]
    return ", ".join(parts) or "no devices"


def _fits_one_more(state: CycleState, name: str, per_role: PoolOptions) -> bool:
    """Whether one more replica fits on a cluster, leaving the ledger untouched."""
    memo = state.rules.get(EXPLAIN, _Memo)
    keys = [(name, p.name) for p in state.inp.clusters[name].pools]
    touched = [k for k in keys if k in state.ledgers]
    signature = None
    if not touched:
        # Untouched clusters with equal pools give equal answers: ask once.
        signature = tuple(
            tuple((pool, id(match), state.pool_nodes[(name, pool)]) for pool, match in pools)
            for pools in per_role
        )
        hit = memo.fresh_fits.get(signature)
        if hit is not None:
            return hit
    saved = {k: state.ledgers[k].snapshot() for k in touched}
    if memo.used is None:
        memo.used = used_indices(state)
    # One more replica is the one the fill would place next: its name decides
    # where it runs among the new replicas (`try_place`).
    replica = new_name(state, name, lowest_free(memo.used[name]))
    fits = try_place(state, name, per_role, replica) is not None
    for k in keys:
        if k in saved:
            state.ledgers[k].restore(saved[k])
        else:
            state.ledgers.pop(k, None)
    if signature is not None:
        memo.fresh_fits[signature] = fits
    return fits


def _free_nodes(state: CycleState, key: PoolKey, match: RoleMatch, role: RoleDef) -> int:
    """Nodes of a pool that could take one more worker of this role."""
    led = state.ledgers.get(key)
    if led is not None:
        return led.free_for(match.demands, role.nodes_per_worker)
    return state.pool_nodes[key]  # an untouched pool: every node is free


def _needs_text(state: CycleState, key: PoolKey, match: RoleMatch, role: RoleDef) -> str:
    memo = state.rules.get(EXPLAIN, _Memo)
    shape = state.pool_shapes[key]
    cache_key = (id(shape), role.role)
    text = memo.texts.get(cache_key)
    if text is None:
        devices = _demand_text(shape, match.demand)
        text = memo.texts[cache_key] = words.needs_nodes(role.nodes, role.nodes_per_worker, devices)
    return text


def _role_pools(state: CycleState, name: str, role: RoleDef) -> tuple[list[PoolVerdict], list[str]]:
    """Verdicts of every pool of a cluster for one role, and each matched pool's free nodes."""
    pools: list[PoolVerdict] = []
    frees: list[str] = []
    for pool, match in state.pool_matches(name, role):
        free, message = 0, match.message
        if match.matched:
            free = _free_nodes(state, (name, pool), match, role)
            message = _needs_text(state, (name, pool), match, role) + f"; {free} free"
            if free < role.nodes:
                message += _capacity_note(state, name, pool)
            frees.append(f"{pool} {free}")
        pools.append(
            PoolVerdict(
                pool,
                role.role,
                match.matched,
                match.requests,
                role.nodes,
                free,
                message,
                match.refused,
            )
        )
    return pools, frees


def _capacity_note(state: CycleState, cluster: str, pool: str) -> str:
    """Why a short pool is short, when its cluster says (a cloud stock-out)."""
    observed = state.inp.clusters[cluster].pool(pool)
    return f" ({observed.note})" if observed is not None and observed.note else ""


def _unknown_pools(state: CycleState, name: str, role: RoleDef) -> list[PoolVerdict]:
    """Verdicts of a cluster's unknown pools: nothing new is matched against them."""
    return [
        PoolVerdict(
            p.name,
            role.role,
            False,
            (),
            role.nodes,
            0,
            words.unknown_pool(p.unknown.reason, p.unknown.message),
        )
        for p in state.inp.clusters[name].pools
        if p.unknown is not None
    ]


def _no_match_reason(state: CycleState, name: str) -> ClusterReason:
    """`NoMatchingPool`, unless a pool filter refused a matching pool of every role short of one."""
    refused = None
    for role in state.roles:
        ms = state.pool_matches(name, role)
        if any(m.matched for _, m in ms):
            continue
        refused = next((m.refused for _, m in ms if m.refused is not None), None)
        if refused is None:
            return "NoMatchingPool"
    return cast(ClusterReason, refused or "NoMatchingPool")


def _no_match_text(state: CycleState, name: str) -> str:
    failing = []
    for role in state.roles:
        ms = state.pool_matches(name, role)
        if not any(m.matched for _, m in ms):
            # A refused pool says more than a pool whose devices do not match.
            refused = next(((p, m.message) for p, m in ms if m.refused is not None), None)
            if refused is not None:
                failing.append(words.no_pool_may_take(role.path, refused))
                continue
            first = next(((p, m.message) for p, m in ms), None)
            failing.append(words.no_pool_matches(role.path, first))
    return "; ".join(failing)


def _reason(state: CycleState, name: str) -> ClusterReason | None:
    """Why a cluster cannot take one more replica (None: it can), without the details."""
    per_role = state.options[name] if name in state.options else candidates(state, name)
    if per_role is None:
        return _no_match_reason(state, name)
    if name in state.full or not _fits_one_more(state, name, per_role):
        return "InsufficientCapacity"
    return None


def _verdict(state: CycleState, name: str, reason: ClusterReason | None) -> ClusterVerdict:
    """A cluster's verdict pool by pool: every pool's match and free nodes, in words."""
    pools: list[PoolVerdict] = []
    short: list[str] = []
    unknown = state.inp.clusters[name].has_unknown_pools
    for role in state.roles:
        role_pools, frees = _role_pools(state, name, role)
        pools.extend(role_pools)
        if unknown:
            pools.extend(_unknown_pools(state, name, role))
        if frees:
            short.append(words.role_short(role.role, role.nodes, frees))
    if reason == "InsufficientCapacity":
        return ClusterVerdict(name, False, reason, "; ".join(short), tuple(pools))
    if reason is not None:  # no pool matches, or a pool filter refused the ones that do
        return ClusterVerdict(name, False, reason, _no_match_text(state, name), tuple(pools))
    return ClusterVerdict(name, True, None, "", tuple(pools))


def _invalid(state: CycleState, name: str) -> ClusterVerdict:
    paths = tuple(p for p, _ in state.invalid)
    why = words.rejection_text(Rejection("InvalidNodeSelector", paths))
    return ClusterVerdict(name, False, "InvalidNodeSelector", why)


def _listed(verdict: ClusterVerdict) -> bool:
    """Whether status lists this verdict before every label mismatch (words.rejections)."""
    return not verdict.eligible and verdict.reason != "NotSelected"


def explain(state: CycleState, limit: int | None = None) -> None:
    """A verdict for every InferenceCluster: why it can (not) take another replica.

    Every cluster gets its reason (what the summary counts). With `limit`, only
    the first `limit` rejections in the order status lists them (by name, label
    mismatches last) are spelled out pool by pool; the rest carry their reason
    alone, so the words computed stay bounded however large the fleet.
    """
    listed = 0
    for name in state.inp.clusters:  # by name
        verdict = state.verdicts.get(name)
        if verdict is None:
            if state.invalid:
                verdict = _invalid(state, name)
            else:
                reason = _reason(state, name)
                detailed = limit is None or (reason is not None and listed < limit)
                verdict = (
                    _verdict(state, name, reason)
                    if detailed
                    else ClusterVerdict(name, reason is None, reason, "")
                )
            state.verdicts[name] = verdict
        listed += _listed(verdict)
