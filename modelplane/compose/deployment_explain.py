"""Words for the scheduler's verdicts: one-line reasons for status, rows for the CLI.

The scheduler returns structured verdicts (`ClusterVerdict` → `PoolVerdict` →
`RequestVerdict` → `DeviceVerdict`). The ModelDeployment composer condenses
them into `status.unschedulable[]` and `modelplane explain` prints them in
full; both read them through this module so they say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api.roles import role_label
from modelplane.scheduling.types import (
    ClusterVerdict,
    DeviceVerdict,
    PoolVerdict,
    RequestVerdict,
    ScheduleResult,
)

ELLIPSIS = "…"


def truncate(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ELLIPSIS))] + ELLIPSIS


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


def _device_rank(d: DeviceVerdict) -> int:
    # The closest miss first: a device short of count passed every selector;
    # a false selector is a real mismatch; an error is usually a selector
    # written for another driver's device.
    if d.insufficient_count is not None:
        return 0
    if any(s.value is False for s in d.selectors):
        return 1
    return 2


def _could_match(r: RequestVerdict) -> bool:
    # A request can be reported unmatched only because the pool failed on
    # another request; if one of its devices matched, it is not the cause.
    return not r.message and any(d.matched for d in r.devices)


def request_message(r: RequestVerdict) -> str:
    """Why one device request did not resolve in a pool, by its closest miss ("" if it did)."""
    if r.matched or _could_match(r):
        return ""
    misses = sorted((d for d in r.devices if not d.matched), key=_device_rank)
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


def cluster_message(v: ClusterVerdict) -> str:
    """One line saying why a cluster could not take a replica.

    A device mismatch is spelled out from the verdicts (request, device and
    the selector expression that was false or errored); otherwise the
    scheduler's own message says it best.
    """
    if v.reason == "NoMatchingPool" and v.pools:
        parts = []
        for p in v.pools:
            if p.matched:
                continue
            parts.append(f"pool {p.pool}{role_label(p.role)}: {pool_message(p)}")
        if parts:
            return "; ".join(parts)
    if v.message:
        return v.message
    parts = []
    for p in v.pools:
        m = pool_message(p)
        if m:
            parts.append(f"pool {p.pool}{role_label(p.role)}: {m}")
    return "; ".join(parts) if parts else (v.reason or "rejected")


@dataclass(frozen=True)
class ExplanationRow:
    """One line of the full explanation: a cluster, or one pool × request within it."""

    cluster: str
    verdict: str  # the cluster's reason, or "Eligible"
    pool: str = ""
    role: str = ""
    request: str = ""
    outcome: str = ""  # matched / no match / errored / not enough devices
    detail: str = ""  # per device: which selector was false or errored, or the count short
    capacity: str = ""  # nodes needed against nodes free, for a pool whose devices match


def _request_outcome(r: RequestVerdict) -> str:
    if r.matched or _could_match(r):
        return "matched"
    misses = [d for d in r.devices if not d.matched]
    best = min((_device_rank(d) for d in misses), default=1)
    return ("not enough devices", "no match", "errored")[best]


def _request_detail(r: RequestVerdict) -> str:
    if r.matched or _could_match(r):
        device = r.device or next((d.device for d in r.devices if d.matched), "")
        return f"device {device}" if device else ""
    misses = sorted((d for d in r.devices if not d.matched), key=_device_rank)
    lines = [device_message(d) for d in misses]
    return "\n".join(lines) if lines else r.message


def explanation_rows(result: ScheduleResult) -> list[ExplanationRow]:
    """Every candidate cluster × pool × device request of a schedule, in order."""
    rows: list[ExplanationRow] = []
    for v in result.clusters:
        verdict = "Eligible" if v.eligible else (v.reason or "Rejected")
        if not v.pools:
            rows.append(ExplanationRow(v.cluster, verdict, detail=v.message))
            continue
        for p in v.pools:
            capacity = p.message if p.matched else ""
            if not p.requests:
                outcome = "matched" if p.matched else "no match"
                rows.append(
                    ExplanationRow(
                        v.cluster, verdict, p.pool, p.role, "", outcome, p.message, capacity
                    )
                )
                continue
            for r in p.requests:
                rows.append(
                    ExplanationRow(
                        v.cluster,
                        verdict,
                        p.pool,
                        p.role,
                        r.request,
                        _request_outcome(r),
                        _request_detail(r),
                        capacity,
                    )
                )
    return rows
