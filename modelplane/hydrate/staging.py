"""Stage an artifact atomically: download into a staging folder, then rename it into place.

Layout under the destination's parent (the PVC's root in a Job):

- `<dest>/` — the published artifact, with `.modelplane-hydrated.json`
  recording the source key, digest, bytes and completion time;
- `.modelplane-staging/<key>/` — a download in progress. It survives a failed
  or killed run, so the next run of the same key resumes into it;
- `.modelplane-previous/` — the artifact the last publish replaced. It is kept:
  a running replica's mount follows the folder, not its name, so pods that
  started on it keep reading it; it is deleted when a newer one replaces it.

A run whose destination already records the same key does nothing (no-op).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MARKER = ".modelplane-hydrated.json"
STAGING = ".modelplane-staging"
# Folders a fetcher keeps inside the staging folder for its own bookkeeping
# (huggingface_hub's `.cache`, the S3 progress file); not part of the artifact.
BOOKKEEPING = frozenset({".cache", ".modelplane-progress.json", MARKER})

Fetch = Callable[[Path], str]
"""Download into the given (possibly partly filled) folder; return the resolved digest."""


class HydrationError(Exception):
    """The artifact could not be staged; the message says why, for the result."""


@dataclass(frozen=True)
class Staged:
    """What a run published (or found already published)."""

    key: str
    digest: str
    bytes: int
    completed_at: str
    reused: bool = False


def tree_bytes(root: Path) -> int:
    """Bytes of every regular file under `root`, bookkeeping excluded."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in BOOKKEEPING]
        for f in filenames:
            if f not in BOOKKEEPING:
                total += (Path(dirpath) / f).stat().st_size
    return total


def published(dest: Path, key: str) -> Staged | None:
    """The artifact already at `dest` for `key`, if its marker says so."""
    try:
        record = json.loads((dest / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    return Staged(
        key, str(record["digest"]), int(record["bytes"]), str(record["completedAt"]), True
    )


PREVIOUS = ".modelplane-previous"


def _publish(staging: Path, dest: Path) -> None:
    """Rename the staged folder into place; what was there becomes the previous one."""
    previous = dest.parent / PREVIOUS
    if dest.exists():
        if previous.exists():
            shutil.rmtree(previous)
        dest.rename(previous)
    staging.rename(dest)


def stage(dest: Path, key: str, fetch: Fetch, now: Callable[[], str]) -> Staged:
    """Stage the artifact `fetch` downloads at `dest`, atomically; no-op if already there.

    `key` identifies the source (the composer's digest of the spec): the
    staging folder is per key, so an interrupted run of the same key resumes.
    """
    done = published(dest, key)
    if done is not None:
        return done
    staging = dest.parent / STAGING / key
    staging.mkdir(parents=True, exist_ok=True)
    digest = fetch(staging)
    shutil.rmtree(staging / ".cache", ignore_errors=True)
    (staging / ".modelplane-progress.json").unlink(missing_ok=True)
    result = Staged(key, digest, tree_bytes(staging), now())
    record = {
        "key": key,
        "digest": digest,
        "bytes": result.bytes,
        "completedAt": result.completed_at,
    }
    (staging / MARKER).write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
    _publish(staging, dest)
    return result
