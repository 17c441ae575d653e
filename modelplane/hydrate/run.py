"""One hydration run: report Hydrating, stage atomically, report Ready or Failed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from modelplane.api.model_cache import HydrationResult
from modelplane.hydrate.staging import Fetch, HydrationError, Staged, stage

Report = Callable[[HydrationResult], None]
MAX_MESSAGE = 1024


def utc_now() -> str:
    """The current time as Kubernetes writes it (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failure_message(err: Exception) -> str:
    """What a Failed result says about `err`, within the result's length limit.

    An expected failure says why in its own words; any other exception is
    named by its type too, since its text alone ("'size'", "0") may say nothing.
    """
    if isinstance(err, HydrationError | OSError):
        text = str(err)
    else:
        text = f"unexpected {type(err).__name__}: {err}"
    return (text or type(err).__name__)[:MAX_MESSAGE]


def hydrate(
    fetch: Fetch,
    dest: Path,
    key: str,
    report: Report,
    now: Callable[[], str] = utc_now,
) -> Staged:
    """Stage `fetch`'s artifact at `dest` under `key` and report each step.

    Any failure — a download that cannot be trusted, a full disk, a bug — is
    reported (phase Failed, with its message) and raised again so the Job's
    pod fails and the Job retries it: a run never ends with the result still
    saying Hydrating.
    """
    report(HydrationResult(source_hash=key, phase="Hydrating", message="staging"))
    try:
        staged = stage(dest, key, fetch, now)
    except Exception as err:
        report(
            HydrationResult(
                source_hash=key, phase="Failed", message=failure_message(err), completed_at=now()
            )
        )
        raise
    report(
        HydrationResult(
            source_hash=key,
            phase="Ready",
            resolved_digest=staged.digest,
            bytes_staged=str(staged.bytes),
            completed_at=staged.completed_at,
            message="already staged (no-op)" if staged.reused else "staged",
        )
    )
    return staged
