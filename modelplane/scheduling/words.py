"""Words for the scheduler's verdicts: the one place codes and numbers become text.

The scheduler's steps and rules decide with reason codes and numbers
(`framework.Rejection`, `framework.Eviction`, `types.Unverifiable`, the
verdict dataclasses). This module turns them into the text of conditions,
events, `status.unschedulable` and the CLI, so a verdict reads the same
wherever it is shown. Two registers exist on purpose: a short one for
one-line summaries (`device_summary`: `gpu: selectors[1] is false`) and a
full one for explanations (`device_message`: the selector's expression).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from modelplane.api.backends import enabling_setting
from modelplane.api.constants import DISAGGREGATED
from modelplane.api.readers import GPU_POOLS_PATH, INFERENCE_POOL_SETTING
from modelplane.api.roles import role_label
from modelplane.scheduling.framework import Eviction, Rejection
from modelplane.scheduling.types import (
    ClusterVerdict,
    DeviceVerdict,
    PlannedReplica,
    PoolAddition,
    PoolVerdict,
    Preemption,
    QuotaUse,
    RequestVerdict,
    StockedOutPool,
    StuckPlacement,
    Unverifiable,
    WhatIf,
    Withdrawal,
)

ELLIPSIS = "…"


def truncate(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ELLIPSIS))] + ELLIPSIS


# ── Filters ─────────────────────────────────────────────────────────────────


def _backend_unsupported(backend: str, why: str) -> str:
    if backend == DISAGGREGATED:
        return _disaggregation_unsupported(why)
    if why == "unreadable":
        return f"spec.backend {backend}: the cluster's spec.servingStack cannot be read"
    setting = enabling_setting(backend)
    because = f" ({setting} is not true)" if setting else ""
    return f"spec.backend {backend}: the cluster does not run it{because}"


def _disaggregation_unsupported(why: str) -> str:
    if why == "unreadable":
        return "disaggregated serving: the cluster's spec.servingStack cannot be read"
    return (
        "disaggregated serving routes through an InferencePool, which the cluster does not "
        f"serve ({INFERENCE_POOL_SETTING} is false)"
    )


def _backend_gone(cluster: str, backend: str) -> str:
    if backend == DISAGGREGATED:
        return f"cluster {cluster} no longer serves InferencePools ({INFERENCE_POOL_SETTING})"
    return f"cluster {cluster} no longer runs spec.backend {backend}"


_REJECTIONS = {
    "NotSelected": lambda d: "labels do not match spec.clusterSelector",
    "Tainted": lambda d: "untolerated taint " + ", ".join(d),
    "NotReady": lambda d: (
        f"cluster publishes no GPU pools ({GPU_POOLS_PATH})"
        if d == ("no-pools",)
        else "cluster is not Ready"
    ),
    "WaitingForCache": lambda d: (
        f"spec.caches: ModelCache {', '.join(d)} not found; new replicas are held until it exists"
    ),
    "CacheNotOnCluster": lambda d: (
        f"spec.caches: ModelCache {d[0]} stages no copy on this cluster "
        "(its clusterSelector, or the cluster is not Ready for it)"
    ),
    "InvalidNodeSelector": lambda d: "the node selector does not compile: " + "; ".join(d),
    "BackendUnsupported": lambda d: _backend_unsupported(d[0], d[1]),
    "PriorityClassMissing": lambda d: (
        f"PriorityClass {d[0]} ({d[1]}) does not exist on the cluster: its serving stack "
        "does not create it (spec.scheduling.priorityClasses) and it is not listed in "
        "spec.scheduling.existingPriorityClasses, so the pods would be rejected"
    ),
    "PodSecurityForbidden": lambda d: (
        f"the cluster's Pod Security level {d[0]} (spec.podSecurity) forbids {d[1]}"
    ),
    "ReplicaUnschedulable": lambda d: (
        f"the cluster reports replica {d[0]} of this deployment unschedulable on this pool "
        f"since {d[1] or 'an unknown time'}; no new replica goes here while it does"
    ),
    "QuotaExceeded": lambda d: (
        f"FleetQuota {d[0]} limit {d[1]}: {d[2]} of {d[3]} devices used and a replica here "
        f"needs {d[4]} more; no new replica goes here until the namespace holds fewer "
        "or the limit is raised"
    ),
    "SpotNotAllowed": lambda d: (
        f"pool {d[0]} is Spot capacity and spec.placement.allowSpot is not true"
    ),
}


def rejection_text(r: Rejection) -> str:
    """Why a filter refused a cluster, in one line."""
    render = _REJECTIONS.get(r.reason)
    return render(r.detail) if render is not None else r.reason


_EVICTIONS = {
    "ClusterGone": lambda d: f"cluster {d[0]} no longer exists",
    "Deselected": lambda d: f"cluster {d[0]} no longer matches spec.clusterSelector",
    "NoExecuteTaint": lambda d: f"cluster {d[0]} has untolerated taint {d[1]}",
    "NoIndex": lambda d: "replica has no index",
    "NoPool": lambda d: "replica names no node pool",
    "FormChanged": lambda d: "the deployment changed between unified and disaggregated serving",
    "PoolGone": lambda d: f"pool {d[0]} is no longer published by cluster {d[1]}",
    "PoolMismatch": lambda d: f"pool {d[0]} no longer matches {d[1]}: {d[2]}",
    "Duplicate": lambda d: f"duplicate of replica ({d[0]}, {d[1]})",
    "BackendUnsupported": lambda d: _backend_gone(d[0], d[1]),
    "Unschedulable": lambda d: (
        f"cluster {d[0]} reports its pods unschedulable on pool {d[1]} "
        f"since {d[2] or 'an unknown time'}" + (f": {d[3]}" if d[3] else "")
    ),
    "Preempted": lambda d: (
        f"preempted by ModelReplica {d[0]} of {d[1]} (priority {d[2]} > {d[3]}) on pool {d[4]} "
        f"of cluster {d[5]}; make-before-break does not apply to a preemption"
    ),
    "SpotNotAllowed": lambda d: (
        f"pool {d[0]} of cluster {d[1]} is Spot capacity and spec.placement.allowSpot is not true"
    ),
    "RevisionChanged": lambda d: f"the rollout replaces it with a replica of revision {d[0]}",
}


def eviction_text(e: Eviction) -> str:
    """Why an existing replica must leave its place, in one line."""
    return _EVICTIONS[e.reason](e.detail)


def quota_contention_text(use: QuotaUse, needs: int) -> str:
    """Why a not-yet-Ready replica is withdrawn: placed at the same moment as others of its
    namespace, it would take a FleetQuota limit past its hard limit."""
    return (
        f"{quota_text(use)} held by older or Ready replicas of the namespace and it needs "
        f"{needs} more: replicas placed at the same moment overran the limit"
    )


def withdrawal_text(cluster: str, pool: str) -> str:
    """Why a not-yet-Ready replica is withdrawn from an oversubscribed pool."""
    return (
        f"pool {pool} on cluster {cluster} is oversubscribed and older or "
        "Ready replicas keep their place"
    )


_CAUSES = {
    "ClusterNotReady": "cluster {cluster} is not Ready",
    "PoolUnknown": "pool {pool} is published as unknown",
    "DevicesUnparsable": "a device of pool {pool} does not parse",
    "PoolsUnreadable": "pool {pool} is not listed and some published pools could not be read",
}


def unverifiable_text(u: Unverifiable) -> str:
    """Why an existing replica is kept without verification, naming cluster, pool and class."""
    klass = f" (class {u.class_name})" if u.class_name else ""
    why = _CAUSES[u.cause].format(cluster=u.cluster, pool=u.pool)
    detail = f": {u.detail}" if u.detail else ""
    return (
        f"replica {u.name} on cluster {u.cluster}, pool {u.pool}{klass}: kept, its placement "
        f"cannot be verified ({why}{detail}); no new replica goes there"
    )


# ── Device matching (short register, for summaries) ─────────────────────────


def device_summary(v: DeviceVerdict) -> str:
    """One device's outcome for a request, short: `gpu: selectors[1] is false`."""
    for i, s in enumerate(v.selectors):
        if s.error is not None:
            return f"{v.device}: selectors[{i}] errored: {s.error}"
        if s.value is not True:
            return f"{v.device}: selectors[{i}] is false"
    if v.insufficient_count is not None:
        need, have = v.insufficient_count
        return f"{v.device}: needs {need}, {have} unconsumed"
    return f"{v.device}: matches"


def no_selector_match(devices: Sequence[DeviceVerdict]) -> str:
    """A request no device of the pool satisfies."""
    return "no device satisfies every selector (" + "; ".join(map(device_summary, devices)) + ")"


def not_enough_devices(devices: Sequence[DeviceVerdict]) -> str:
    """A request whose matching devices ran out of count."""
    short = [device_summary(v) for v in devices if v.insufficient_count is not None]
    return "not enough devices (" + "; ".join(short) + ")"


def request_failed(request: str, message: str) -> str:
    """Prefix a request's failure with its name."""
    return f"request {request}: {message}"


SYNTHETIC_ONLY = "resolves to Synthetic devices only; a pool must provide at least one DRA device"
NO_ASSIGNMENT = "no assignment of devices satisfies every request"


def unknown_pool(reason: str, message: str) -> str:
    """A published pool that cannot be matched against."""
    return f"pool is unknown ({reason}): {message}"


def no_pool_matches(path: str, first: tuple[str, str] | None) -> str:
    """No pool of a cluster matches a role, with the first pool's reason."""
    detail = f": pool {first[0]}: {first[1]}" if first else ""
    return f"no pool matches {path}{detail}"


def no_pool_may_take(path: str, refused: tuple[str, str]) -> str:
    """No pool of a cluster may take a role: a pool filter refused one that matches."""
    return f"no pool may take {path}: pool {refused[0]}: {refused[1]}"


def needs_nodes(nodes: int, nodes_per_worker: int, devices: str) -> str:
    """What one replica's role needs of a pool."""
    if nodes_per_worker > 1:
        # A multi-node worker takes whole nodes.
        return f"needs {nodes} whole node(s)"
    return f"needs {nodes} node(s) with {devices} free on each"


def role_short(role: str, nodes: int, frees: Sequence[str]) -> str:
    """A role's need against each matching pool's free nodes."""
    return f"{role} needs {nodes} node(s); free: {', '.join(frees)}"


# ── Verdicts (full register, for status and the CLI) ────────────────────────


def device_message(d: DeviceVerdict) -> str:
    """Why one device did not satisfy a request ("" when it did)."""
    if d.matched:
        return ""
    for s in d.selectors:
        if s.error is not None:
            return f"device {d.device}: selector {s.expression!r} errored: {s.error}"
        if s.value is False:
            return f"device {d.device}: selector {s.expression!r} is false"
    if d.insufficient_count is not None:
        needed, available = d.insufficient_count
        return f"device {d.device}: needs {needed}, only {available} unconsumed"
    return f"device {d.device}: does not match"


def device_rank(d: DeviceVerdict) -> int:
    """The closest miss first: short of count, then a false selector, then an error."""
    # A device short of count passed every selector; a false selector is a real
    # mismatch; an error is usually a selector written for another driver's device.
    if d.insufficient_count is not None:
        return 0
    if any(s.value is False for s in d.selectors):
        return 1
    return 2


def could_match(r: RequestVerdict) -> bool:
    """Whether a request reported unmatched only because the pool failed on another one."""
    return not r.message and any(d.matched for d in r.devices)


def request_message(r: RequestVerdict) -> str:
    """Why one device request did not resolve in a pool, by its closest miss ("" if it did)."""
    if r.matched or could_match(r):
        return ""
    misses = sorted((d for d in r.devices if not d.matched), key=device_rank)
    if misses:
        return f"request {r.request}: {device_message(misses[0])}"
    return f"request {r.request}: {r.message or 'no device matches'}"


def pool_message(p: PoolVerdict) -> str:
    """Why one pool cannot take the role ("" when it can)."""
    if p.matched and p.free_nodes >= p.needed_nodes:
        return ""
    if not p.matched:
        failing = [m for m in (request_message(r) for r in p.requests) if m]
        if failing:
            return "; ".join(failing)
    return p.message or (
        "devices do not match"
        if not p.matched
        else f"needs {p.needed_nodes} nodes, {p.free_nodes} free"
    )


def _pool_parts(v: ClusterVerdict, unmatched_only: bool) -> list[str]:
    parts = []
    for p in v.pools:
        if unmatched_only and p.matched:
            continue
        m = pool_message(p)
        if m:
            parts.append(f"pool {p.pool}{role_label(p.role)}: {m}")
    return parts


def cluster_message(v: ClusterVerdict) -> str:
    """One line saying why a cluster could not take a replica.

    A device mismatch is spelled out from the verdicts (request, device and
    the selector expression that was false or errored); otherwise the
    scheduler's own message says it best.
    """
    if v.reason == "NoMatchingPool" and v.pools:
        parts = _pool_parts(v, unmatched_only=True)
        if parts:
            return "; ".join(parts)
    if v.message:
        return v.message
    return "; ".join(_pool_parts(v, unmatched_only=False)) or (v.reason or "rejected")


# ── The deployment's condition and events ───────────────────────────────────


def names(items: Sequence[str], first: int = 3) -> str:
    """A short list: the first few names, then how many more."""
    if len(items) > first:
        return f"{', '.join(items[:first])} and {len(items) - first} more"
    return ", ".join(items)


def rejections(verdicts: Iterable[ClusterVerdict]) -> list[ClusterVerdict]:
    """Rejecting clusters, the informative ones first: label mismatches say least."""
    rejected = [v for v in verdicts if not v.eligible]
    return sorted(rejected, key=lambda v: (v.reason == "NotSelected", v.cluster))


def rejection_summary(verdicts: Iterable[ClusterVerdict]) -> str:
    """Which clusters rejected the deployment, grouped by reason; details are in status."""
    by_reason: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for v in rejections(verdicts):
        by_reason.setdefault(v.reason or "Rejected", []).append(v.cluster)
        first.setdefault(v.reason or "Rejected", v.message)
    groups = [
        f"{reason} on {names(found)}"
        # A tenant's own template is at fault: the condition names the field itself.
        + (f" ({first[reason]})" if reason == "PodSecurityForbidden" else "")
        for reason, found in by_reason.items()
    ]
    return "; ".join(groups) + " (see status.unschedulable)"


def cache_not_found(missing: Sequence[str], namespace: str) -> str:
    """`CacheResolved=False`: the ModelCaches of spec.caches that do not exist."""
    return (
        f"spec.caches: ModelCache {', '.join(missing)} not found in namespace "
        f"{namespace}; new replicas are held until it exists, existing ones are kept"
    )


def caches_found(found: Sequence[str]) -> str:
    """`CacheResolved=True`."""
    return f"ModelCache {', '.join(found)} found"


def placed_summary(placed: int, desired: int) -> str:
    """How many of the desired replicas have a place."""
    return f"placed {placed} of {desired} replicas"


def invalid_selectors(invalid: Sequence[tuple[str, str]], summary: str) -> str:
    """Selectors that do not compile, by field path, and what is kept."""
    listed = "; ".join(f"{path}: {err}" for path, err in invalid)
    return f"{listed} (existing replicas are kept; {summary})"


def cache_hold(summary: str, held: int, caches: Sequence[str]) -> str:
    """New replicas held until the named ModelCaches exist."""
    return f"{summary}: {held} new replica(s) held until ModelCache {', '.join(caches)} exists"


def unverifiable_summary(summary: str, kept: Sequence[Unverifiable]) -> str:
    """Replicas kept where their placement cannot be verified (each has its own event)."""
    where = names([f"{u.cluster}/{u.pool}" for u in kept])
    return (
        f"{summary}; {len(kept)} kept where placement cannot be verified "
        f"({where}): no new replica goes there until it can be"
    )


NO_CLUSTER_EXISTS = "no InferenceCluster exists"
NO_CLUSTER_SELECTED = "no InferenceCluster matches spec.clusterSelector"


def no_usable_cluster(verdicts: Iterable[ClusterVerdict]) -> str:
    """Every candidate was refused before its pools were looked at."""
    return "no Ready, selected cluster tolerates this deployment: " + rejection_summary(verdicts)


def _drain_list(draining: Sequence[PlannedReplica]) -> str:
    shown = [f"{r.cluster}/{r.index} ({r.drain_message})" for r in draining[:4]]
    more = f" and {len(draining) - 4} more" if len(draining) > 4 else ""
    return "; ".join(shown) + more


def draining(summary: str, replicas: Sequence[PlannedReplica], surge: int | None = None) -> str:
    """Replicas drain make-before-break and keep serving until replacements are Ready."""
    within = f" (at most {surge} over spec.replicas at once, rollout.maxSurge)" if surge else ""
    return (
        f"{summary}; {len(replicas)} draining replica(s) keep serving until their "
        f"replacements are Ready{within}: {_drain_list(replicas)}"
    )


def replacement_unschedulable(summary: str, replicas: Sequence[PlannedReplica], why: str) -> str:
    """Replicas must leave but no replacement fits: they keep serving, and why."""
    return (
        f"{summary}: no replacement can be placed for {len(replicas)} draining replica(s), "
        f"which keep serving: {_drain_list(replicas)}; {why}"
    )


def _stuck_where(s: StuckPlacement) -> str:
    since = s.since or "an unknown time"
    said = f" ({s.message})" if s.message else ""
    return f"replica {s.name} on cluster {s.cluster}, pool {s.pool}, since {since}{said}"


def _stuck_list(stuck: Sequence[StuckPlacement], what: str) -> str:
    shown = [what.format(where=_stuck_where(s), to=_moved_to(s)) for s in stuck[:3]]
    more = f"; and {len(stuck) - 3} more" if len(stuck) > 3 else ""
    return "; ".join(shown) + more


def _moved_to(s: StuckPlacement) -> str:
    return f"{s.moved_to[0]}/{s.moved_to[1]}" if s.moved_to is not None else ""


_STUCK_OUTCOMES = {
    "Moved": "moved to {to}, the stuck one withdrawn",
    "Kept": "kept: no other cluster or pool can take it (see the verdicts below)",
    "Withdrawn": "withdrawn (rollout Immediate): no other cluster or pool can take it",
}


def stuck_text(s: StuckPlacement) -> str:
    """One unschedulable replica and what the scheduler did, for `modelplane explain`."""
    return f"unschedulable: {_stuck_where(s)}: " + _STUCK_OUTCOMES[s.outcome].format(
        to=_moved_to(s)
    )


def replica_unschedulable(summary: str, stuck: Sequence[StuckPlacement], why: str = "") -> str:
    """The `ReplicaUnschedulable` message: which replicas their clusters cannot schedule
    (cluster, pool, since when, the cluster scheduler's words) and what was done.

    `why`, when replicas are left without a place, is the explanation of the
    clusters that rejected them.
    """
    moved = [s for s in stuck if s.outcome == "Moved"]
    gone = [s for s in stuck if s.outcome == "Withdrawn"]
    kept = [s for s in stuck if s.outcome == "Kept"]
    parts = [summary]
    if moved:
        parts.append(_stuck_list(moved, "{where}: moved to {to}"))
    if gone:
        what = "{where}: withdrawn (rollout Immediate), no other cluster or pool can take it"
        parts.append(_stuck_list(gone, what))
    if kept:
        parts.append(_stuck_list(kept, "{where}: kept, no other cluster or pool can take it yet"))
    text = "; ".join(parts)
    # The clusters' reasons last: they explain the replicas left without a place.
    return f"{text}: {why}" if why else text


def shortfall(summary: str, why: str) -> str:
    """Replicas are missing, and why."""
    return f"{summary}: {why}"


def replaced_event(name: str, why: str) -> str:
    """An existing replica is replaced."""
    return f"{name}: {why}"


def withdrawn_event(w: Withdrawal) -> str:
    """A not-yet-Ready replica is withdrawn from an oversubscribed pool."""
    return f"replica {w.cluster}/{w.index} withdrawn from pool {w.pool}: {w.message}"


# ── What-if capacity ────────────────────────────────────────────────────────


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _replicas(n: int) -> str:
    return f"{n} more replica" if n == 1 else f"{n} more replicas"


def pool_addition(a: PoolAddition, disaggregated: bool = False) -> str:
    """Nodes to add to one pool: `2 nodes to pool h100` (with its roles when disaggregated),
    and the maxNodeCount they pass: `(past its maxNodeCount 4: raise it to 6)`."""
    roles = f" ({' and '.join(a.roles)})" if disaggregated else ""
    return f"{_nodes(a.nodes)} to pool {a.pool}{roles}{ceiling_raise(a)}"


def ceiling_raise(a: PoolAddition) -> str:
    """` (past its maxNodeCount 4: raise it to 6)` for a pool with a ceiling, else ``."""
    if a.ceiling is None:
        return ""
    return f" (past its maxNodeCount {a.ceiling}: raise it to {a.raised_ceiling})"


def _additions(w: WhatIf) -> str:
    split = any(r not in ("", "unified") for a in w.additions for r in a.roles)
    return " and ".join(pool_addition(a, split) for a in w.additions)


def what_if_change(w: WhatIf) -> str:
    """The change without its cluster: `add 2 nodes to pool h100 to place 2 more replicas`."""
    return f"add {_additions(w)} to place {_replicas(w.replicas)}"


def what_if_text(w: WhatIf) -> str:
    """One what-if answer, e.g. `add 2 nodes to pool h100 on cluster a to place 2 more replicas`."""
    return f"add {_additions(w)} on cluster {w.cluster} to place {_replicas(w.replicas)}"


def stocked_out_text(s: StockedOutPool) -> str:
    """A pool no what-if grows: `pool h100 on cluster a cannot grow (cloud stock-out: ...)`."""
    return f"pool {s.pool} on cluster {s.cluster} cannot grow ({s.note})"


def cluster_growth(w: WhatIf | None, stocked: Sequence[StockedOutPool]) -> str | None:
    """One cluster's what-if without its cluster: the change, after any pool it must not grow."""
    held = "; ".join(f"pool {s.pool} cannot grow ({s.note})" for s in stocked)
    if w is None:
        return f"{held}: adding nodes cannot help until the cloud has capacity" if held else None
    return f"{held}; instead {what_if_change(w)}" if held else what_if_change(w)


def what_if_summary(found: Sequence[WhatIf], stocked: Sequence[StockedOutPool] = ()) -> str:
    """The smallest change of all and how many other clusters have one, after the
    stocked-out pools no change grows (the next-best answer follows them)."""
    held = ""
    if stocked:
        held = stocked_out_text(stocked[0])
        if len(stocked) > 1:
            held += f" (and {len(stocked) - 1} other stocked-out pool(s))"
    if not found:
        return f"{held}; no other pool can be grown to place them"
    text = what_if_text(found[0])
    others = len(found) - 1
    if others:
        text += f" ({others} other cluster(s) could be grown instead)"
    return f"{held}; instead {text}" if held else text


NO_POOL_TO_GROW = "no pool of this cluster matches; adding nodes to its pools cannot help"


def preempting_text(p: Preemption) -> str:
    """What one preemption did, from the preemptor's side (condition, event, explain)."""
    victims = ", ".join(
        f"{v.namespace}/{v.name} ({v.deployment}, priority {v.priority})" for v in p.victims
    )
    return (
        f"replica {p.replica} placed on pool {p.pool} of cluster {p.cluster} by preempting "
        f"{len(p.victims)} lower-priority replica(s) (priority {p.priority} > theirs): {victims}; "
        "their deployments re-place them elsewhere if they fit"
    )


def quota_text(use: QuotaUse) -> str:
    """One FleetQuota limit's use, in words."""
    return f"FleetQuota {use.quota} limit {use.limit}: {use.used}/{use.hard} devices"
