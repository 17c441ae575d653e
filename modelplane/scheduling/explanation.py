"""The full placement explanation as rows, for `modelplane explain`.

The scheduler returns structured verdicts (`ClusterVerdict` → `PoolVerdict` →
`RequestVerdict` → `DeviceVerdict`); their words live beside this module in
`words.py`. This module lays them out as one row per cluster × pool × device
request; it is pure text about the scheduler's decisions, so it belongs to the
scheduling layer, not to a composer.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.scheduling.types import RequestVerdict, ScheduleResult
from modelplane.scheduling.words import could_match, device_message, device_rank


@dataclass(frozen=True)
class ExplanationRow:
    """One line of the full explanation: a cluster, or one pool × request within it."""

    cluster: str
    verdict: str  # the cluster's reason, or "Eligible"
    pool: str = ""
    role: str = ""
    request: str = ""
    # matched / no match / errored / not enough devices, or a pool filter's reason
    outcome: str = ""
    detail: str = ""  # per device: which selector was false or errored, or the count short
    capacity: str = ""  # nodes needed against nodes free, for a pool whose devices match


def _request_outcome(r: RequestVerdict) -> str:
    if r.matched or could_match(r):
        return "matched"
    misses = [d for d in r.devices if not d.matched]
    best = min((device_rank(d) for d in misses), default=1)
    return ("not enough devices", "no match", "errored")[best]


def _request_detail(r: RequestVerdict) -> str:
    if r.matched or could_match(r):
        device = r.device or next((d.device for d in r.devices if d.matched), "")
        return f"device {device}" if device else ""
    misses = sorted((d for d in r.devices if not d.matched), key=device_rank)
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
            if p.refused is not None:
                # Its devices match; a pool filter refused it (the reason says which).
                rows.append(
                    ExplanationRow(v.cluster, verdict, p.pool, p.role, "", p.refused, p.message)
                )
                continue
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
