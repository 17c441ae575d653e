"""FleetQuota as a filter rule: no placement past the namespace's device limits.

A limit counts devices, in DRA device units, that the namespace's replicas hold
on the pools it selects: every request of a replica's role counts `count` per
node times the role's nodes (nodes per worker × workers), when the request's
DeviceClass, its pool's InferenceClass and its device satisfy the limit's
`deviceClassName`, `inferenceClasses` and `selector` (each only when set).
Every replica counts — other deployments' of the namespace as observed,
draining, set-aside and surge ones of this deployment included — because each
holds devices. The check is kube-scheduler's Reserve shape: the fill asks
`admits` before it charges a new replica; after the fill, `refuse` marks the
pools one more replica would overrun, so the explanation and status name the
quota and the numbers. A limit already overrun deletes nothing Ready; replicas
of the namespace placed at the same moment past a limit are charged in the
fleet's order and the not-Ready ones past it withdrawn (`contention`). A
selector that cannot judge a device counts it: a limit fails closed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelplane.api.fleet_quota import ObservedQuota, QuotaLimit
from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling import words
from modelplane.scheduling.framework import Rejection
from modelplane.scheduling.matching import Evaluator, RoleMatch, device_key
from modelplane.scheduling.state import CycleState, Slot, charged_slots
from modelplane.scheduling.types import QuotaUse

QUOTA = "Quota"  # this rule's key in the cycle's rule states


@dataclass(frozen=True)
class Held:
    """Devices of one DRA request of one role: where, of which DeviceClass, how many."""

    cluster: str
    pool: str
    device_class: str
    devices: int  # count per node × the role's nodes


def _pool_devices(
    clusters: Mapping[str, ObservedInferenceCluster], cluster: str, pool: str
) -> tuple[str, Sequence[Mapping[str, Any]]]:
    cl = clusters.get(cluster)
    found = cl.pool(pool) if cl is not None else None
    return ("", ()) if found is None else (found.class_name, found.devices)


def selects(
    limit: QuotaLimit,
    held: Held,
    clusters: Mapping[str, ObservedInferenceCluster],
    ev: Evaluator,
) -> bool:
    """Whether `limit` counts `held`: each of its set criteria holds."""
    if limit.device_class_name and held.device_class != limit.device_class_name:
        return False
    class_name, devices = _pool_devices(clusters, held.cluster, held.pool)
    if limit.inference_classes is not None and class_name not in limit.inference_classes:
        return False
    if limit.selector:
        # The request's device is the pool's device of its DeviceClass. A selector that
        # cannot be evaluated on it (compile or run-time error, the cost budget) counts
        # it: a limit that cannot say fails closed. A device not published is not counted.
        for d in devices:
            if d.get("deviceClassName") != held.device_class:
                continue
            value, error = ev.evaluate(limit.selector, device_key(d), d)
            if value is True or error is not None:
                return True
        return False
    return True


def selector_errors(
    quota: ObservedQuota, clusters: Mapping[str, ObservedInferenceCluster], ev: Evaluator
) -> list[str]:
    """Each limit whose selector cannot be evaluated — it does not compile, or it fails on
    a device some cluster publishes — as `spec.limits[i].selector: why`."""
    out = []
    for i, lim in enumerate(quota.limits):
        if not lim.selector:
            continue
        error = ev.compile_error(lim.selector)
        if error is None:
            error = next(
                (
                    err
                    for cl in clusters.values()
                    for pool in cl.pools
                    for d in pool.devices
                    if (err := ev.evaluate(lim.selector, device_key(d), d)[1]) is not None
                ),
                None,
            )
        if error is not None:
            out.append(f"spec.limits[{i}].selector: {error}")
    return out


def observed_held(r: ObservedModelReplica) -> list[Held]:
    """The devices an observed replica holds, request by request."""
    return [
        Held(
            r.cluster,
            role.pool,
            req.device_class_name,
            req.count * role.nodes_per_worker * role.workers,
        )
        for role in r.roles
        for req in role.requests
    ]


def slot_held(s: Slot) -> list[Held]:
    """The devices one of this deployment's replicas (kept or new) holds."""
    return [
        Held(s.cluster, ra.pool, req.device_class_name, req.count * ra.nodes)
        for ra in s.roles
        for req in ra.device_requests
    ]


def count(
    limit: QuotaLimit,
    held: Iterable[Held],
    clusters: Mapping[str, ObservedInferenceCluster],
    ev: Evaluator,
) -> int:
    """Devices `limit` counts among `held`."""
    return sum(h.devices for h in held if selects(limit, h, clusters, ev))


def namespace_use(
    quota: ObservedQuota,
    replicas: Iterable[ObservedModelReplica],
    namespace: str,
    clusters: Mapping[str, ObservedInferenceCluster],
    ev: Evaluator,
) -> tuple[QuotaUse, ...]:
    """Each limit's use by the namespace's observed replicas (the FleetQuota's status)."""
    held = [h for r in replicas if r.namespace == namespace for h in observed_held(r)]
    return tuple(
        QuotaUse(quota.owner(i), lim.name, count(lim, held, clusters, ev), lim.devices)
        for i, lim in enumerate(quota.limits)
    )


@dataclass
class _Base:
    """Devices the namespace's other deployments hold, per limit (fixed for the cycle)."""

    others: list[int] = field(default_factory=list)  # per limit, in the quota's order
    ready: bool = False
    # Per-limit devices of each of this deployment's replicas, by name: a replica's
    # devices never change within the cycle, and the fill asks once per try.
    slots: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _base(state: CycleState) -> list[int]:
    base = state.rules.get(QUOTA, _Base)
    if not base.ready:
        quota = state.inp.quota
        assert quota is not None
        held = [
            h for r in state.others if r.namespace == state.inp.namespace for h in observed_held(r)
        ]
        base.others = [count(lim, held, state.inp.clusters, state.ev) for lim in quota.limits]
        base.ready = True
    return base.others


def use(state: CycleState) -> tuple[QuotaUse, ...]:
    """Each limit's use now: the namespace's other deployments plus every replica this
    cycle keeps or places (draining and set-aside ones included)."""
    quota = state.inp.quota
    if quota is None:
        return ()
    base = _base(state)
    memo = state.rules.get(QUOTA, _Base).slots
    totals = list(base)
    for s in charged_slots(state):
        per = memo.get(s.name)
        if per is None:
            held = slot_held(s)
            per = memo[s.name] = tuple(
                count(lim, held, state.inp.clusters, state.ev) for lim in quota.limits
            )
        totals = [t + n for t, n in zip(totals, per, strict=True)]
    return tuple(
        QuotaUse(quota.owner(i), lim.name, t, lim.devices)
        for i, (lim, t) in enumerate(zip(quota.limits, totals, strict=True))
    )


def _new_held(
    state: CycleState, cluster: str, combo: Sequence[tuple[str, RoleMatch]]
) -> list[Held]:
    return [
        Held(cluster, pool, req.device_class_name, req.count * role.nodes)
        for role, (pool, match) in zip(state.roles, combo, strict=True)
        for req in match.resolved
    ]


def overrun(
    state: CycleState, cluster: str, combo: Sequence[tuple[str, RoleMatch]]
) -> Rejection | None:
    """The first limit one more replica on `combo` would overrun, as a refusal; None if none."""
    return _overrun(state, _new_held(state, cluster, combo))


def _overrun(state: CycleState, new: Sequence[Held]) -> Rejection | None:
    quota = state.inp.quota
    if quota is None:
        return None
    for u, lim in zip(use(state), quota.limits, strict=True):
        add = count(lim, new, state.inp.clusters, state.ev)
        if add and u.used + add > u.hard:
            return Rejection(
                "QuotaExceeded", (u.quota, u.limit, str(u.used), str(u.hard), str(add))
            )
    return None


def admits(state: CycleState, cluster: str, combo: Sequence[tuple[str, RoleMatch]]) -> bool:
    """Whether one more replica on `combo` stays within every limit (the fill's Reserve check)."""
    return state.inp.quota is None or overrun(state, cluster, combo) is None


def refuse(state: CycleState) -> None:
    """After the fill: refuse every matched pool one more replica would overrun a limit on.

    The pools are marked in `state.refused` with the limit and the numbers, and
    the cached matches are dropped, so the explanation re-matches and names the
    quota rather than capacity. Runs only under a quota; it matches every role
    of each schedulable cluster (the explanation does so anyway).
    """
    if state.inp.quota is None or state.invalid:
        return
    found = False
    for cluster in state.schedulable:
        for role in state.roles:
            for pool, match in state.pool_matches(cluster, role):
                key = (cluster, pool)
                if not match.matched or key in state.refused:
                    continue
                held = [
                    Held(cluster, pool, req.device_class_name, req.count * role.nodes)
                    for req in match.resolved
                ]
                rejection = _overrun(state, held)
                if rejection is not None:
                    state.refused[key] = rejection
                    found = True
    if found:
        state.matches.clear()
        state.options.clear()


def contention(state: CycleState) -> None:
    """The namespace's not-Ready replicas that overrun a limit, in the fleet's order.

    Two deployments reconciled at the same moment each see the other's devices
    as they were and may both place, together past a limit. Like pool contention,
    every replica of the namespace is charged in one fleet-wide order (Ready
    first, then oldest, then namespace/name; a preempted replica or a pool's
    loser is leaving and charges nothing); a not-Ready one that would take a
    limit past its `hard` loses and is withdrawn by its own deployment. A Ready
    replica is always charged and never loses, so a limit lowered below use
    still deletes nothing. Every deployment of the namespace computes the same
    verdict from the same replicas; only the owner acts on it.
    """
    inp = state.inp
    namespace_quota = inp.quota
    if namespace_quota is None:
        return
    everyone = sorted(
        (
            r
            for r in inp.replicas
            if r.namespace == inp.namespace
            and inp.preemptor(r) is None
            and (r.namespace, r.name) not in state.losers
        ),
        key=lambda r: r.order,
    )
    totals = [0] * len(namespace_quota.limits)
    for r in everyone:
        held = observed_held(r)
        adds = [count(lim, held, inp.clusters, state.ev) for lim in namespace_quota.limits]
        over = next(
            (
                i
                for i, (t, n) in enumerate(zip(totals, adds, strict=True))
                if n and t + n > namespace_quota.limits[i].devices
            ),
            None,
        )
        if over is not None and not r.ready:
            use = QuotaUse(
                namespace_quota.owner(over),
                namespace_quota.limits[over].name,
                totals[over],
                namespace_quota.limits[over].devices,
            )
            state.quota_losers[(r.namespace, r.name)] = words.quota_contention_text(use, adds[over])
            continue
        totals = [t + n for t, n in zip(totals, adds, strict=True)]
