"""Helpers shared by the hydrator's tests: a fixed clock, the published files, one recorded run."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from modelplane.api.model_cache import HydrationResult
from modelplane.hydrate.run import hydrate
from modelplane.hydrate.staging import Fetch, Staged

NOW = "2026-01-02T03:04:05Z"


def now() -> str:
    return NOW


def files(root: Path) -> dict[str, bytes]:
    """Every file under `root` (the published tree holds nothing but the source's files)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@dataclass
class Run:
    """One hydration run through `run.hydrate`, with every result it reported."""

    results: list[HydrationResult] = field(default_factory=list)
    staged: Staged | None = None
    error: Exception | None = None

    @property
    def final(self) -> HydrationResult:
        return self.results[-1]


def run(fetch: Fetch, dest: Path, key: str = "k1") -> Run:
    """Run `fetch` to `dest` the way the Job does, keeping what it reported and raised."""
    out = Run()
    try:
        out.staged = hydrate(fetch, dest, key, out.results.append, now)
    except Exception as err:
        out.error = err
    return out


COMMIT = "4f6c0e1d2b3a49586776a5b4c3d2e1f0a9b8c7d6"


def hf_cache(
    cache: Path, repo: str, content: dict[str, bytes], revision: str = "main", commit: str = COMMIT
) -> Path:
    """A Hub cache as huggingface_hub lays it out (refs → commit → snapshot links to blobs).

    Returns the snapshot folder.
    """
    folder = cache / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / revision).write_text(commit)
    blobs = folder / "blobs"
    blobs.mkdir()
    snapshot = folder / "snapshots" / commit
    for name, body in content.items():
        blob = blobs / hashlib.sha256(body).hexdigest()
        blob.write_bytes(body)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot
