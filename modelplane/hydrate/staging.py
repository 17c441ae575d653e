"""Stage an artifact atomically: download into a staging folder, then rename it into place.

Layout under the destination's parent (the PVC's root in a Job), for a
destination named `model`:

- `model/` — the published artifact, exactly the source's files: nothing of
  the hydrator's own is ever written inside it, so a source file may carry any
  name (even one of the names below) and is published intact;
- `.modelplane-hydrated-model.json` — the record of what `model/` holds (the
  source key, digest, bytes and completion time), beside it rather than in it;
- `.modelplane-staging/<key>/tree/` — the artifact being assembled, renamed to
  `model/` when complete; `.modelplane-staging/<key>/work/` — the fetcher's
  bookkeeping (partial downloads, resume validators, huggingface_hub's cache).
  Both survive a failed or killed run, so the next run of the same key resumes;
- `.modelplane-previous/` — the artifact the last publish replaced. It is kept:
  a running replica's mount follows the folder, not its name, so pods that
  started on it keep reading it; it is deleted when a newer one replaces it.

A run whose destination's record names the same key does nothing (no-op).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STAGING = ".modelplane-staging"
PREVIOUS = ".modelplane-previous"
MARKER_PREFIX = ".modelplane-hydrated-"


@dataclass(frozen=True)
class Workspace:
    """Where a fetcher writes: `tree` is published as it is, `work` never is."""

    tree: Path
    work: Path


Fetch = Callable[[Workspace], str]
"""Download into the workspace's (possibly partly filled) tree; return the resolved digest."""


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


def marker(dest: Path) -> Path:
    """The record of what `dest` holds: a sibling file, never a file inside it."""
    return dest.with_name(f"{MARKER_PREFIX}{dest.name}.json")


def workspace(dest: Path, key: str) -> Workspace:
    """The staging workspace of `key` for `dest` (created by `stage`)."""
    root = dest.parent / STAGING / key
    return Workspace(tree=root / "tree", work=root / "work")


def tree_bytes(root: Path) -> int:
    """Bytes of every regular file under `root` (symbolic links are not followed)."""
    total = 0
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            path = Path(dirpath) / f
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
    return total


def _staged(record: Any, key: str) -> Staged | None:
    """The record as a `Staged` when it is well formed and names `key`, else None."""
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    digest, size, completed = record.get("digest"), record.get("bytes"), record.get("completedAt")
    if not (isinstance(digest, str) and isinstance(completed, str)):
        return None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return None
    return Staged(key, digest, size, completed, True)


def published(dest: Path, key: str) -> Staged | None:
    """The artifact already at `dest` for `key`, if its record says so.

    A missing, unreadable or malformed record means "not published": the run
    stages again rather than trusting it.
    """
    try:
        record = json.loads(marker(dest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    done = _staged(record, key)
    return done if done is not None and dest.is_dir() else None


def _write_record(dest: Path, staged: Staged) -> None:
    """Write the record atomically (a reader sees the old one or the new one, never half)."""
    record = {
        "key": staged.key,
        "digest": staged.digest,
        "bytes": staged.bytes,
        "completedAt": staged.completed_at,
    }
    temporary = marker(dest).with_suffix(".tmp")
    temporary.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
    temporary.replace(marker(dest))


def _publish(tree: Path, dest: Path) -> None:
    """Rename the staged tree into place; what was there becomes the previous one.

    The old record goes first: a run killed midway finds no record and stages
    again, never a record that names what `dest` no longer holds.
    """
    marker(dest).unlink(missing_ok=True)
    previous = dest.parent / PREVIOUS
    if dest.exists():
        if previous.exists():
            shutil.rmtree(previous)
        dest.rename(previous)
    tree.rename(dest)


def stage(dest: Path, key: str, fetch: Fetch, now: Callable[[], str]) -> Staged:
    """Stage the artifact `fetch` downloads at `dest`, atomically; no-op if already there.

    `key` identifies the source (the composer's digest of the spec): the
    workspace is per key, so an interrupted run of the same key resumes.
    """
    space = workspace(dest, key)
    done = published(dest, key)
    if done is not None:
        # A workspace left by a run killed between publishing and cleaning up.
        shutil.rmtree(space.tree.parent, ignore_errors=True)
        return done
    space.tree.mkdir(parents=True, exist_ok=True)
    space.work.mkdir(parents=True, exist_ok=True)
    digest = fetch(space)
    result = Staged(key, digest, tree_bytes(space.tree), now())
    _publish(space.tree, dest)
    _write_record(dest, result)
    shutil.rmtree(space.tree.parent, ignore_errors=True)
    return result
