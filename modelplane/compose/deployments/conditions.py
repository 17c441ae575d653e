"""A ModelDeployment's conditions and events, each read off its plan.

`Scheduled` is a ladder: the first answer that applies, most actionable first
(invalid selectors, a missing cache, replicas their clusters report
unschedulable, draining, unverifiable placements, all placed, the namespace's
quota, then why the rest is short). `ReplicasReady`, `CacheResolved`,
`Autoscaling`, `RolledOut` and `Preemption` each answer one question; none of
them changes the plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from modelplane.api import constants as c
from modelplane.api.model_deployment import (
    MAX_UNSCHEDULABLE_ENTRIES,
    MAX_UNSCHEDULABLE_MESSAGE,
    ModelDeploymentSpec,
)
from modelplane.api.objects import condition
from modelplane.api.readers import not_scraping_text
from modelplane.api.reasons import AutoscalingReason, PreemptionReason, ScheduledReason
from modelplane.compose.deployments.revisions import Revisions
from modelplane.compose.deployments.scaling import Scaling
from modelplane.compose.types import ComposeResult, Resource
from modelplane.scheduling import words
from modelplane.scheduling.types import ScheduleResult
from modelplane.scheduling.words import truncate

# Condition messages are read by people in `kubectl describe`; bound them so a
# fleet of thousands of clusters cannot bloat the object.
MAX_CONDITION_MESSAGE = 1024

# Verdicts of clusters the scheduler tried to fit a replica on; any other
# rejection (labels, taints, readiness) is decided before capacity matters.
_CAPACITY_VERDICTS = frozenset({"NoMatchingPool", "InsufficientCapacity"})


def autoscaling_condition(result: ComposeResult, scaling: Scaling) -> None:
    d = scaling.decision
    if scaling.external is not None:
        reason = AutoscalingReason.EXTERNAL_SCALER
        result.condition(c.CONDITION_AUTOSCALING, False, str(reason), scaling.external)
        result.warn(str(reason), truncate(scaling.external, 512))
        return
    ok = None if d.reason == AutoscalingReason.SIGNALS_MISSING else True
    msg = truncate(d.message, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_AUTOSCALING, ok, str(d.reason), msg)
    if d.desired != d.current:
        result.normal(str(d.reason), truncate(d.message, 512))
    if d.unscraped:
        # A setting, not a passing gap: no signal will ever come from those clusters.
        missing = str(AutoscalingReason.SIGNALS_MISSING)
        result.warn(missing, truncate(not_scraping_text(d.unscraped), 512))


def cache_condition(
    result: ComposeResult, spec: ModelDeploymentSpec, missing: Sequence[str], namespace: str
) -> None:
    if not spec.caches:
        return
    if missing:
        msg = words.cache_not_found(missing, namespace)
        result.condition(c.CONDITION_CACHE_RESOLVED, False, c.REASON_CACHE_NOT_FOUND, msg)
        result.warn(c.REASON_CACHE_NOT_FOUND, msg)
        return
    found_msg = words.caches_found([x.name for x in spec.caches])
    result.condition(c.CONDITION_CACHE_RESOLVED, True, c.REASON_RESOLVED, found_msg)


def rolled_out(result: ComposeResult, revisions: Revisions) -> None:
    """`RolledOut` and the rollout's events (rollout Progressive only)."""
    verdict = None if revisions.rollout is None else revisions.rollout.verdict
    if verdict is None:
        return
    msg = truncate(verdict.message, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_ROLLED_OUT, verdict.status, str(verdict.reason), msg)
    for type_, reason, text in verdict.events:
        emit = result.warn if type_ == "Warning" else result.normal
        emit(reason, truncate(text, 512))


def replicas_ready(result: ComposeResult, want: int, placed: int) -> None:
    # Draining replicas still serve: they count as Ready replicas until replaced,
    # so a make-before-break move never shows the deployment short of replicas.
    serving = sum(1 for d in result.desired.values() if d.ready == "True")
    ready_count = min(want, serving)
    all_ready = serving >= want
    result.condition(
        c.CONDITION_REPLICAS_READY,
        all_ready,
        c.REASON_ALL_REPLICAS_READY if all_ready else c.REASON_REPLICAS_NOT_READY,
        f"{ready_count} of {want} replicas ready",
    )
    result.ready = "True" if all_ready else "False"


def scheduled_condition(
    result: ComposeResult, spec: ModelDeploymentSpec, plan: ScheduleResult, placed: int
) -> None:
    """The `Scheduled` condition: the first answer that applies, most actionable first."""
    summary = words.placed_summary(placed, spec.replicas)
    answers = (
        _invalid_selectors,
        _waiting_for_cache,
        _replica_unschedulable,
        _draining,
        _unverifiable,
        _all_scheduled,
        _quota_exceeded,
    )
    for answer in answers:
        out = answer(plan, summary, spec.replicas - placed)
        if out is not None:
            _set_scheduled(result, *out)
            return
    _set_scheduled(result, *_shortfall(plan, summary, placed))


# (status, reason, message, warn): a Scheduled answer.
Scheduled = tuple[bool | None, ScheduledReason, str, bool]


def _set_scheduled(
    result: ComposeResult, ok: bool | None, reason: ScheduledReason, msg: str, warn: bool
) -> None:
    msg = truncate(msg, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_SCHEDULED, ok, str(reason), msg)
    if warn:
        result.warn(str(reason), msg)


def _invalid_selectors(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    if not plan.invalid_selectors:
        return None
    msg = words.invalid_selectors(plan.invalid_selectors, summary)
    return False, ScheduledReason.INVALID_NODE_SELECTOR, msg, True


def _waiting_for_cache(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    if not plan.missing_caches or missing <= 0:
        return None
    msg = words.cache_hold(summary, missing, plan.missing_caches)
    return False, ScheduledReason.WAITING_FOR_CACHE, msg, False


def _replica_unschedulable(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    """Replicas their clusters report unschedulable: moved, or kept for want of another place.

    True once every one has moved (the replacements are placed); False, with a
    warning and the clusters' reasons, while one is kept or withdrawn unreplaced.
    """
    if not plan.stuck:
        return None
    ok = missing <= 0 and all(s.outcome == "Moved" for s in plan.stuck)
    why = ""
    if not ok:
        why = words.rejection_summary(plan.clusters)
        if plan.what_if or plan.stocked_out:
            why = f"{words.what_if_summary(plan.what_if, plan.stocked_out)}; {why}"
    msg = words.replica_unschedulable(summary, plan.stuck, why)
    return ok, ScheduledReason.REPLICA_UNSCHEDULABLE, msg, not ok


def _draining(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    """Replicas draining make-before-break: in progress, or stuck for want of capacity."""
    draining = plan.draining
    if not draining:
        return None
    if missing <= 0:
        return True, ScheduledReason.DRAINING, words.draining(summary, draining), False
    if len(plan.replicas) >= plan.desired + plan.surge:
        # The fill stopped at spec.replicas + maxSurge: replacements are on their way.
        msg = words.draining(summary, draining, plan.surge)
        return False, ScheduledReason.DRAINING, msg, False
    why = words.rejection_summary(plan.clusters)
    msg = words.replacement_unschedulable(summary, draining, why)
    return False, ScheduledReason.REPLACEMENT_UNSCHEDULABLE, msg, True


def _unverifiable(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    # Each kept replica has its own warning event (`_events`); the condition sums up.
    if not plan.unverifiable or missing > 0:
        return None
    msg = words.unverifiable_summary(summary, plan.unverifiable)
    return None, ScheduledReason.PLACEMENT_UNVERIFIABLE, msg, False


def _all_scheduled(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    if missing > 0:
        return None
    return True, ScheduledReason.ALL_REPLICAS_SCHEDULED, summary, False


def _quota_exceeded(plan: ScheduleResult, summary: str, missing: int) -> Scheduled | None:
    """Replicas missing because the namespace's FleetQuota has no room for them anywhere
    they would otherwise fit."""
    refused = [v for v in plan.clusters if v.reason == "QuotaExceeded"]
    if missing <= 0 or not refused or any(v.eligible for v in plan.clusters):
        return None
    why = "; ".join(words.quota_text(u) for u in plan.quota if u.used >= u.hard) or (
        words.rejection_summary(plan.clusters)
    )
    msg = words.shortfall(summary, f"{why}; {words.rejection_summary(plan.clusters)}")
    return False, ScheduledReason.QUOTA_EXCEEDED, msg, True


def preemption_condition(composite: Resource, result: ComposeResult, plan: ScheduleResult) -> None:
    """`Preemption`: the latest preemption this deployment took part in, either side.

    Set only once a preemption happened (deployments that never took part carry
    no such condition) and kept until a newer one replaces it.
    """
    if plan.preemptions:
        msg = "; ".join(words.preempting_text(p) for p in plan.preemptions)
        reason, text = PreemptionReason.PREEMPTING, msg
    elif plan.preempted:
        msg = "; ".join(f"replica {n} withdrawn: {why}" for n, why in plan.preempted)
        reason, text = PreemptionReason.PREEMPTED, msg
    else:
        _keep_condition(composite, result, c.CONDITION_PREEMPTION)
        return
    text = truncate(text, MAX_CONDITION_MESSAGE)
    result.condition(c.CONDITION_PREEMPTION, True, str(reason), text)
    result.warn(str(reason), text)


def _keep_condition(composite: Resource, result: ComposeResult, type_: str) -> None:
    """Carry an observed condition forward unchanged (the latest preemption is news until
    a newer one replaces it, as a preempted Pod's DisruptionTarget is)."""
    cond = condition(composite, type_)
    if cond is None:
        return
    status = {"True": True, "False": False}.get(str(cond.get("status")))
    reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
    if reason in {r.value for r in PreemptionReason}:
        result.condition(type_, status, reason, truncate(message, MAX_CONDITION_MESSAGE))


def cluster_changes(plan: ScheduleResult) -> dict[str, str]:
    """Each cluster's what-if, naming the stocked-out pools it must not grow first."""
    found = {w.cluster: w for w in plan.what_if}
    clusters = sorted(set(found) | {s.cluster for s in plan.stocked_out})
    out = {}
    for cluster in clusters:
        stocked = [s for s in plan.stocked_out if s.cluster == cluster]
        text = words.cluster_growth(found.get(cluster), stocked)
        if text is not None:
            out[cluster] = truncate(text, MAX_UNSCHEDULABLE_MESSAGE)
    return out


def _shortfall(plan: ScheduleResult, summary: str, placed: int) -> Scheduled:
    candidates = [v for v in plan.clusters if v.reason != "NotSelected"]
    if not plan.clusters:
        reason, why = ScheduledReason.NO_CLUSTERS, words.NO_CLUSTER_EXISTS
    elif not candidates:
        reason, why = ScheduledReason.NO_CLUSTERS, words.NO_CLUSTER_SELECTED
    elif not placed and not any(v.reason in _CAPACITY_VERDICTS for v in plan.clusters):
        reason, why = ScheduledReason.NO_CLUSTERS, words.no_usable_cluster(plan.clusters)
    else:
        reason = ScheduledReason.PARTIAL if placed else ScheduledReason.INSUFFICIENT_CAPACITY
        why = words.rejection_summary(plan.clusters)
        if plan.what_if or plan.stocked_out:
            # The actionable answer first: the message is truncated at its end.
            why = f"{words.what_if_summary(plan.what_if, plan.stocked_out)}; {why}"
    return False, reason, words.shortfall(summary, why), True


def events(
    result: ComposeResult, plan: ScheduleResult, reported: frozenset[str] = frozenset()
) -> None:
    """The schedule's events; `reported` names replaced replicas already reported."""
    for u in plan.unverifiable[:MAX_UNSCHEDULABLE_ENTRIES]:
        reason = str(ScheduledReason.PLACEMENT_UNVERIFIABLE)
        result.warn(reason, truncate(words.unverifiable_text(u), 512))
    replaced = [(what, why) for what, why in plan.replaced if what not in reported]
    for what, why in replaced[:MAX_UNSCHEDULABLE_ENTRIES]:
        result.normal(c.REASON_REPLICA_REPLACED, truncate(words.replaced_event(what, why), 512))
    for w in plan.withdrawn[:MAX_UNSCHEDULABLE_ENTRIES]:
        result.normal(c.REASON_REPLICA_WITHDRAWN, truncate(words.withdrawn_event(w), 512))
