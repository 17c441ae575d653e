"""When a replica the autoscaler removes may be deleted: requests in flight, or the timeout.

A replica still given weight by a ModelService is always kept; once it is at
weight 0 in every one, the expected verdicts are written by hand from the rule
in docs/autoscaling.md: deleted when a report made after the drain started
shows nothing in flight, or once the drain timeout has passed since it
started; an unknown signal only ever waits for the timeout.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.autoscaling import ReplicaSignals
from modelplane.compose.deployments.drain import decide_drain, drain_now

SINCE = "2026-11-01T01:00:00Z"
TIMEOUT = 30


def report(at: str, running: float | None = 0, waiting: float | None = 0, **extra: Any) -> Any:
    """What the agent reports for the leaving replica, scraped at 01:`at`."""
    return ReplicaSignals.model_validate(
        {
            "replica": "chat-west-0",
            "reachable": True,
            "scrapedAt": f"2026-11-01T01:{at}Z",
            "windowSeconds": 300,
            "requestsRunning": running,
            "requestsWaiting": waiting,
            **extra,
        }
    )


UNREACHABLE = {"reachable": False, "error": "connection refused"}

# (case, now (01:mm:ss), the replica's report, deleted, by the timeout, the words)
CASES = [
    ("in flight, within the timeout: kept", "00:20", report("00:20", running=3), False, False,
     "waiting at most 30s from 2026-11-01T01:00:00Z: 3 in flight at "
     "2026-11-01T01:00:20Z"),
    ("waiting requests are in flight too", "00:20", report("00:20", waiting=1), False, False,
     "waiting at most 30s from 2026-11-01T01:00:00Z: 1 in flight at "
     "2026-11-01T01:00:20Z"),
    ("0 in flight after the start: deleted", "00:20", report("00:20"), True, False,
     "drained: 0 in flight at 2026-11-01T01:00:20Z"),
    ("timeout passed with requests in flight: deleted", "00:30", report("00:30", running=3),
     True, True,
     "drain timeout 30s passed with 3 in flight at 2026-11-01T01:00:30Z"),
    ("one second short of the timeout: kept", "00:29", report("00:29", running=3), False,
     False, "waiting at most 30s from 2026-11-01T01:00:00Z: 3 in flight at "
     "2026-11-01T01:00:29Z"),
    # A report of 0 made when the drain started saw traffic it may still get: unknown.
    ("0 in flight reported at the start does not count", "00:10", report("00:00"), False,
     False, "waiting at most 30s from 2026-11-01T01:00:00Z: in flight not known (no "
     "engine report since it started leaving (last at 2026-11-01T01:00:00Z))"),
    ("no report at all, within the timeout: kept", "00:10", None, False, False,
     "waiting at most 30s from 2026-11-01T01:00:00Z: in flight not known (no engine "
     "report)"),
    ("no report at all, timeout passed: deleted", "01:00", None, True, True,
     "drain timeout 30s passed with in flight not known (no engine report)"),
    ("engine unreachable, within the timeout: kept", "00:20",
     report("00:20", running=None, waiting=None, **UNREACHABLE), False, False,
     "waiting at most 30s from 2026-11-01T01:00:00Z: in flight not known (its engine "
     "did not answer at 2026-11-01T01:00:20Z (connection refused))"),
    # Unreachable with counts is still unknown: a report that did not answer is never idle.
    ("engine unreachable with zero counts, timeout passed: deleted", "00:40",
     report("00:40", **UNREACHABLE), True, True,
     "drain timeout 30s passed with in flight not known (its engine did not answer "
     "at 2026-11-01T01:00:40Z (connection refused))"),
    ("no request counts, within the timeout: kept", "00:20", report("00:20", running=None),
     False, False, "waiting at most 30s from 2026-11-01T01:00:00Z: in flight not "
     "known (its engine reported no request counts at 2026-11-01T01:00:20Z)"),
    ("no request counts, timeout passed: deleted", "00:31", report("00:31", running=None),
     True, True, "drain timeout 30s passed with in flight not known (its engine "
     "reported no request counts at 2026-11-01T01:00:31Z)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("now", "signal", "deleted", "timed_out", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_drain_verdict(
    now: str, signal: ReplicaSignals | None, deleted: bool, timed_out: bool, words: str
) -> None:
    verdict = decide_drain(True, SINCE, f"2026-11-01T01:{now}Z", TIMEOUT, signal)
    assert (verdict.done, verdict.timed_out, verdict.message) == (deleted, timed_out, words)
    assert verdict.since == SINCE


@pytest.mark.parametrize(
    ("now", "signal"),
    [("00:20", report("00:20")), ("05:00", report("05:00", running=3)), ("05:00", None)],
    ids=["nothing in flight", "timeout passed", "unknown, timeout passed"],
)
def test_still_routed_is_kept_whatever_is_in_flight(now: str, signal: Any) -> None:
    # A ModelService still sends it traffic: neither an idle report nor the timeout lets it go.
    verdict = decide_drain(False, SINCE, f"2026-11-01T01:{now}Z", TIMEOUT, signal)
    assert (verdict.since, verdict.done, verdict.timed_out) == (SINCE, False, False)
    assert verdict.message == "waiting for weight 0 in every ModelService"


def test_a_zero_timeout_does_not_wait() -> None:
    verdict = decide_drain(True, SINCE, SINCE, 0, report("00:00", running=3))
    assert (verdict.done, verdict.timed_out) == (True, True)
    verdict = decide_drain(True, None, None, 0, None)
    assert (verdict.done, verdict.timed_out) == (True, True)


def test_without_any_time_it_goes_untimed_with_a_warning() -> None:
    # No report time and no call time: only the embedded control plane (a served
    # function always has the call's time). The drain cannot be timed; at weight 0
    # everywhere the replica goes, and its event says nothing in flight was waited for.
    verdict = decide_drain(True, None, None, TIMEOUT, report("00:20"))
    assert (verdict.since, verdict.done, verdict.timed_out) == (None, True, True)
    assert verdict.message == "no time known (no call time, no engine report): not waited for"
    # Still routed: it waits whatever the time.
    assert not decide_drain(False, None, None, TIMEOUT, None).done


def test_unclocked_a_report_after_the_start_still_decides() -> None:
    # The embedded control plane: with no report since the start it goes untimed; a
    # report since shows what is in flight, and requests in flight still hold it.
    untimed = decide_drain(True, SINCE, "2026-11-01T01:00:05Z", TIMEOUT, None, clocked=False)
    assert (untimed.done, untimed.timed_out) == (True, True)
    busy = report("00:10", running=2)
    held = decide_drain(True, SINCE, "2026-11-01T01:00:10Z", TIMEOUT, busy, clocked=False)
    assert (held.done, held.since) == (False, SINCE)
    idle = report("00:10")
    gone = decide_drain(True, SINCE, "2026-11-01T01:00:10Z", TIMEOUT, idle, clocked=False)
    assert (gone.done, gone.timed_out) == (True, False)
    # A report since that cannot say what is in flight moves time too: it waits.
    unknown = report("00:10", running=None)
    kept = decide_drain(True, SINCE, "2026-11-01T01:00:10Z", TIMEOUT, unknown, clocked=False)
    assert (kept.done, kept.since) == (False, SINCE)


def test_a_malformed_start_starts_again_from_now() -> None:
    verdict = decide_drain(True, "yesterday", "2026-11-01T02:00:00Z", TIMEOUT, None)
    assert (verdict.since, verdict.done) == ("2026-11-01T02:00:00Z", False)


def test_now_is_the_newest_time_that_reads() -> None:
    times = ["2026-11-01T01:00:20Z", None, "not a time", "2026-11-01T01:00:40Z", ""]
    assert drain_now(times) == "2026-11-01T01:00:40Z"
    assert drain_now([None, "garbage"]) is None
    assert drain_now([]) is None
