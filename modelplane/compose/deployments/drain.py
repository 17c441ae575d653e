"""When a replica the autoscaler removes may be deleted: its requests in flight, or the timeout.

A removed replica that is Ready, or that a ModelService still routes to
whatever its own condition says (`scaling.routed`), first goes to weight 0
in every ModelService (`scaling.drained`); then it waits until its engine
reports no request in flight (requests running plus waiting, as the
inventory agent reports them), at most `spec.autoscaling.drainTimeoutSeconds`
counted from when it started leaving. Only a report scraped after that start
counts: an older one saw traffic the replica may still have been given. A
signal that is unknown (no report since, the engine unreachable, no request
counts) never deletes early and never holds past the timeout.

No clock: "now" is the newest time the inputs carry, the deployment's
replicas' report times and the call's own time when the function's runtime
gives one (`drain_now`); the start is kept in the status
(`status.autoscaling.drains`, `status.placements[].drainingSince`). A served
function always has the call's time. The embedded control plane (`modelplane
render`) has none, and there time moves only with the reports: a replica at
weight 0 everywhere that no report made after its start speaks for goes at
once (`clocked=False`; the real control plane would wait out the timeout
first), its event a warning that requests in flight were not waited for. A
report after its start still decides: nothing in flight, or the timeout
passed by report time, or requests in flight and time left (it waits).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from modelplane.api.autoscaling import ReplicaSignals
from modelplane.api.inventory_summary import epoch_seconds


@dataclass(frozen=True)
class DrainVerdict:
    """Whether a leaving replica's requests in flight let it go, and why in words."""

    since: str | None  # when it started leaving (RFC 3339); None while no time is known
    done: bool  # nothing left in flight, or the timeout passed
    message: str
    timed_out: bool = False  # done by the timeout: what was in flight may fail


def drain_now(times: Iterable[str | None]) -> str | None:
    """The newest of `times` (RFC 3339) that read, as written; None without one."""
    best: tuple[int, str] | None = None
    for text in times:
        at = epoch_seconds(text or "")
        if text and at is not None and (best is None or at > best[0]):
            best = (at, text)
    return None if best is None else best[1]


def _in_flight(signal: ReplicaSignals | None, start: int) -> tuple[float | None, str]:
    """Requests in flight a report made after `start` shows, or None and why not known."""
    if signal is None:
        return None, "no engine report"
    at = epoch_seconds(signal.scraped_at)
    if at is None or at <= start:
        return None, f"no engine report since it started leaving (last at {signal.scraped_at})"
    if not signal.reachable:
        return (
            None,
            f"its engine did not answer at {signal.scraped_at} ({signal.error or 'no reason'})",
        )
    if signal.load is None:
        return None, f"its engine reported no request counts at {signal.scraped_at}"
    return signal.load, f"at {signal.scraped_at}"


def _reported_since(signal: ReplicaSignals | None, start: int) -> bool:
    """Whether a report was made after `start` (whatever it says)."""
    at = epoch_seconds(signal.scraped_at) if signal is not None else None
    return at is not None and at > start


def decide_drain(
    routed_out: bool,
    since: str | None,
    now: str | None,
    timeout: int,
    signal: ReplicaSignals | None,
    clocked: bool = True,
) -> DrainVerdict:
    """Whether a leaving replica that is Ready or still routed may be deleted.

    `routed_out` says every ModelService gives it weight 0 (`scaling.drained`),
    `since` when it started leaving, `now` the newest time the inputs carry,
    `timeout` its drain timeout, `signal` what its cluster reports for it,
    `clocked` whether the call's time is known (False only on the embedded
    control plane). Done only when it is routed out and a report after `since`
    shows nothing in flight or `timeout` seconds have passed since `since`;
    unclocked, also when no report after `since` speaks for it.
    """
    verdict = _in_flight_verdict(since, now, timeout, signal, clocked)
    if not routed_out:
        return DrainVerdict(verdict.since, False, "waiting for weight 0 in every ModelService")
    return verdict


def _in_flight_verdict(
    since: str | None,
    now: str | None,
    timeout: int,
    signal: ReplicaSignals | None,
    clocked: bool = True,
) -> DrainVerdict:
    """`decide_drain` once the replica is at weight 0 everywhere."""
    start = epoch_seconds(since or "")
    if since is None or start is None:
        if timeout == 0:
            return DrainVerdict(
                None, True, "drain timeout 0s: requests in flight not waited for", True
            )
        if epoch_seconds(now or "") is not None:
            # A start that does not read is counted again from now: longer, never shorter.
            return DrainVerdict(now, False, f"waiting at most {timeout}s from {now}")
        # No call time and no report (only the embedded control plane): untimed.
        return DrainVerdict(
            None, True, "no time known (no call time, no engine report): not waited for", True
        )
    count, where = _in_flight(signal, start)
    if count == 0:
        return DrainVerdict(since, True, f"drained: 0 in flight {where}")
    elapsed = max(0, (epoch_seconds(now or "") or start) - start)
    held = f"{count:g} in flight {where}" if count is not None else f"in flight not known ({where})"
    if elapsed >= timeout:
        return DrainVerdict(since, True, f"drain timeout {timeout}s passed with {held}", True)
    if not clocked and not _reported_since(signal, start):
        why = f"{held}; no call time to count the {timeout}s timeout by: not waited for"
        return DrainVerdict(since, True, why, True)
    # No elapsed seconds in the words: the status must not change with the call's time alone.
    return DrainVerdict(since, False, f"waiting at most {timeout}s from {since}: {held}")
