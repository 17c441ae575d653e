"""The autoscaler's arithmetic: a pure function from reported signals to a replica count.

No clock: "now" is the newest report time among the deployment's replicas'
signals, and the stabilisation windows are measured in report times (the
recommendations are kept in `status.autoscaling.recommendations`).

Kubernetes' HPA algorithm, applied to the fleet-wide sum rather than to one
cluster's pods:

1. A replica's signal is *fresh* when its engine answered and its report is at
   most `staleAfterSeconds` older than the newest one. Anything else (not
   reported, unreachable, stale) is *missing*.
2. Per target, the measure per replica is the fleet-wide sum over fresh
   signals divided by the current replicas (missing ones count as zero, which
   only errs toward not scaling up), e.g. requests waiting; for the time to
   first token, the request-weighted mean of the replicas' p90. The ratio to
   the target within `1 ± tolerance` proposes the current count; otherwise
   `ceil(current × ratio)` (for sums: `ceil(sum / target)`).
3. The proposal is the largest over the targets. While any signal is missing
   it never goes below the current count (missing never scales down); with no
   signal at all the count is held.
4. Stabilisation, as the HPA's behaviour: the count rises only to the lowest
   proposal of the scale-up window and falls only to the highest proposal of
   the scale-down window (both windows include this proposal).
5. The result is clamped to `[minReplicas, maxReplicas]`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from modelplane.api.autoscaling import (
    MAX_MISSING_NAMES,
    MAX_RECOMMENDATIONS,
    TARGET_QUEUE_DEPTH,
    TARGET_TTFT,
    Autoscaling,
    Recommendation,
    ReplicaSignals,
    TargetProposal,
)
from modelplane.api.inventory_summary import epoch_seconds
from modelplane.api.readers import not_scraping_text
from modelplane.api.reasons import AutoscalingReason

# Sums of floats: 24 / 4.8 must be 5, not 5.000000000000001 rounded up to 6.
_EPSILON = 1e-9


@dataclass(frozen=True)
class Decision:
    """What the autoscaler decided and why."""

    desired: int
    current: int
    proposal: int | None
    reason: AutoscalingReason
    message: str
    signals_at: str | None = None
    reporting: int = 0
    missing: tuple[str, ...] = ()
    missing_count: int = 0
    targets: tuple[TargetProposal, ...] = ()
    recommendations: tuple[Recommendation, ...] = field(default_factory=tuple)
    # Clusters of the counted replicas whose agents scrape no engine metrics.
    unscraped: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Fresh:
    """The signals the decision uses, the replicas it misses and its 'now'."""

    used: tuple[ReplicaSignals, ...]
    missing: tuple[str, ...]
    now: int | None
    now_text: str | None


def _fresh(
    replicas: Sequence[str], signals: Mapping[str, ReplicaSignals | None], stale_after: int
) -> _Fresh:
    reported = {n: s for n in replicas if (s := signals.get(n)) is not None}
    times = {n: epoch_seconds(s.scraped_at) for n, s in reported.items()}
    known = [(t, reported[n].scraped_at) for n, t in times.items() if t is not None]
    if not known:
        return _Fresh((), tuple(replicas), None, None)
    now, now_text = max(known)
    used, missing = [], []
    for name in replicas:
        s, at = reported.get(name), times.get(name)
        if s is not None and s.reachable and at is not None and now - at <= stale_after:
            used.append(s)
        else:
            missing.append(name)
    return _Fresh(tuple(used), tuple(missing), now, now_text)


def _ceil(x: float) -> int:
    return max(0, math.ceil(x - _EPSILON))


def _propose(current: int, value: float, goal: float, tolerance: float) -> int:
    """The HPA step: `ceil(current × value / goal)`, or current within the tolerance."""
    if current == 0:
        return _ceil(value / goal) if value > 0 else 0
    ratio = value / goal
    if abs(ratio - 1.0) <= tolerance:
        return current
    return _ceil(current * ratio)


def _measure(target: str, used: Sequence[ReplicaSignals], current: int) -> float | None:
    """The fleet-wide measure per replica of one target, or None without a signal for it."""
    if target == TARGET_TTFT:
        pairs = [(s.ttft_p90_seconds, s.ttft_requests or 0) for s in used]
        known = [(v, w) for v, w in pairs if v is not None]
        if not known:
            return None
        weight = sum(w for _, w in known)
        if weight == 0:
            return sum(v for v, _ in known) / len(known)
        return sum(v * w for v, w in known) / weight
    values = [
        s.requests_waiting if target == TARGET_QUEUE_DEPTH else s.kv_cache_utilization for s in used
    ]
    present = [v for v in values if v is not None]
    if not present:
        return None
    # Missing replicas count as zero: the sum is spread over every current replica.
    return sum(present) / max(1, current)


def _targets(spec: Autoscaling, fresh: _Fresh, current: int) -> tuple[TargetProposal, ...]:
    out = []
    for target, goal in spec.targets.named().items():
        value = _measure(target, fresh.used, current)
        replicas = None if value is None else _propose(current, value, goal, spec.tolerance)
        shown = None if value is None else round(value, 4)
        out.append(TargetProposal(target=target, value=shown, goal=goal, replicas=replicas))
    return tuple(out)


def _history(
    previous: Sequence[Recommendation], fresh: _Fresh, proposal: int, keep_seconds: int
) -> tuple[Recommendation, ...]:
    """Earlier proposals still inside the longer window, plus this one (one per report time)."""
    assert fresh.now is not None and fresh.now_text is not None
    now = fresh.now
    kept = []
    for r in previous:
        at = epoch_seconds(r.at)
        if at is not None and now - keep_seconds <= at < now:
            kept.append(r)
    kept.append(Recommendation(at=fresh.now_text, replicas=proposal))
    return tuple(kept[-MAX_RECOMMENDATIONS:])


def _stabilise(spec: Autoscaling, history: Sequence[Recommendation], now: int, current: int) -> int:
    """The HPA's behaviour: up to the window's lowest proposal, down to its highest."""

    def within(window: int) -> list[int]:
        return [r.replicas for r in history if now - (epoch_seconds(r.at) or 0) <= window]

    up = min(within(spec.scale_up_stabilization_seconds))
    down = max(within(spec.scale_down_stabilization_seconds))
    if current < up:
        return up
    if current > down:
        return down
    return current


def decide(
    spec: Autoscaling,
    replicas: Sequence[str],
    signals: Mapping[str, ReplicaSignals | None],
    current: int,
    previous: Sequence[Recommendation] = (),
    unscraped: Sequence[str] = (),
) -> Decision:
    """The desired replica count from the replicas' signals, the current count and history.

    `replicas` names the deployment's counted replicas; `signals` maps each to
    what its cluster reports (None: nothing); `previous` holds the earlier
    proposals (`status.autoscaling.recommendations`); `unscraped` names the
    clusters among theirs whose agents scrape no engine metrics (the message
    says so).
    """
    fresh = _fresh(replicas, signals, spec.stale_after_seconds)
    targets = _targets(spec, fresh, current)
    proposals = [t.replicas for t in targets if t.replicas is not None]
    base = Decision(
        desired=current,
        current=current,
        proposal=None,
        reason=AutoscalingReason.SIGNALS_MISSING,
        message="",
        signals_at=fresh.now_text,
        reporting=len(fresh.used),
        missing=fresh.missing[:MAX_MISSING_NAMES],
        missing_count=len(fresh.missing),
        targets=targets,
        recommendations=tuple(previous),
        unscraped=tuple(unscraped),
    )
    if not proposals or fresh.now is None:
        return _bounded(spec, base)
    proposal = raw = max(proposals)
    if fresh.missing and proposal < current:
        proposal = current  # missing or stale signals never scale down
    keep = max(spec.scale_up_stabilization_seconds, spec.scale_down_stabilization_seconds)
    history = _history(previous, fresh, proposal, keep)
    desired = _stabilise(spec, history, fresh.now, current)
    reason = _reason(current, proposal, desired)
    if raw < current and proposal == current:
        reason = AutoscalingReason.SIGNALS_MISSING
    decided = replace(
        base, desired=desired, proposal=max(proposals), reason=reason, recommendations=history
    )
    return _bounded(spec, decided)


def _reason(current: int, proposal: int, desired: int) -> AutoscalingReason:
    if desired > current:
        return AutoscalingReason.SCALED_UP
    if desired < current:
        return AutoscalingReason.SCALED_DOWN
    if proposal != current:
        return AutoscalingReason.STABILIZING
    return AutoscalingReason.STEADY


def _bounded(spec: Autoscaling, d: Decision) -> Decision:
    """Clamp to [minReplicas, maxReplicas] and write the message."""
    desired = min(spec.max_replicas, max(spec.min_replicas, d.desired))
    holding = d.reason in (AutoscalingReason.SIGNALS_MISSING, AutoscalingReason.STEADY)
    limited = desired != d.desired or (desired != d.current and holding)
    out = replace(d, desired=desired, reason=AutoscalingReason.LIMITED if limited else d.reason)
    return replace(out, message=message(spec, out))


def _target_text(t: TargetProposal) -> str:
    if t.value is None:
        return f"{t.target}: no signal"
    return f"{t.target} {t.value:g} per replica (target {t.goal:g}) proposes {t.replicas}"


_WHY = {
    AutoscalingReason.SCALED_UP: "scaled up",
    AutoscalingReason.SCALED_DOWN: "scaled down",
    AutoscalingReason.STEADY: "steady",
    AutoscalingReason.STABILIZING: "held by the stabilisation window",
    AutoscalingReason.LIMITED: "limited to [minReplicas, maxReplicas]",
    AutoscalingReason.SIGNALS_MISSING: "held: signals missing",
}


def message(spec: Autoscaling, d: Decision) -> str:
    """The decision in words: from, to, why, each target's measure and who is missing."""
    parts = [f"{d.current} → {d.desired} replicas ({_WHY.get(d.reason, str(d.reason))})"]
    if d.proposal is not None:
        parts.append("; ".join(_target_text(t) for t in d.targets) + f"; largest {d.proposal}")
    counted = d.reporting + d.missing_count
    at = f" at {d.signals_at}" if d.signals_at else ""
    parts.append(f"{d.reporting} of {counted} replicas reporting{at}")
    if d.unscraped:
        # Before the names of the missing: the actionable part survives truncation.
        parts.append(not_scraping_text(d.unscraped))
    if d.missing:
        extra = d.missing_count - len(d.missing)
        more = f" and {extra} more" if extra > 0 else ""
        parts.append(
            f"no fresh signal from {', '.join(d.missing)}{more}"
            " (never scales down while one is missing)"
        )
    if d.reason == AutoscalingReason.STABILIZING:
        window = (
            spec.scale_down_stabilization_seconds
            if (d.proposal or 0) < d.current
            else spec.scale_up_stabilization_seconds
        )
        parts.append(f"stabilisation window {window}s")
    return "; ".join(parts)
