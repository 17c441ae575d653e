"""Modelplane as built from one source tree: its two packages, and the code that serves
its function, so a local fleet can install one build and upgrade to another.

The previous release is built from a scratch `git worktree` of its commit: its
own `package_files()` writes its packages (run in a child interpreter with the
checkout first on the path), and its function is served by its own code the
same way (`Build.env`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from modelplane.dev import xpkg

# Release 0.1.0 was cut without a git tag: this is the commit whose XRDs were kept
# in api-compat/0.1.0/ (the compatibility gate's baseline). The upgrade scenario
# installs it and upgrades to the checkout under test. Change it at the next release.
PREVIOUS_RELEASE = "931cdb7057680534c6dd8ccd41e3b9943c974bf5"
PREVIOUS_VERSION = "0.1.0"

# The checkout this module belongs to: its code serves the current build.
ROOT = Path(__file__).resolve().parents[2]

# Run in the child interpreter: the package files of the checkout it imports.
_PRINT_FILES = (
    "import json; from modelplane.api.xrd import package_files; print(json.dumps(package_files()))"
)


@dataclass(frozen=True)
class Build:
    """One build: the packages Crossplane installs and the source tree whose code serves it."""

    function: xpkg.CachedPackage
    configuration: xpkg.CachedPackage
    # None: the checkout running this code (no path to put first).
    source: Path | None = None

    def env(self) -> dict[str, str]:
        """The environment a `modelplane function serve` of this build runs with."""
        return {"PYTHONPATH": str(self.source)} if self.source else {}

    @property
    def packages(self) -> tuple[xpkg.CachedPackage, xpkg.CachedPackage]:
        """The Function and Configuration, in the order `xpkg.package_objects` takes them."""
        return self.function, self.configuration


def current() -> Build:
    """The build of this checkout."""
    function, configuration = xpkg.packages(code=xpkg.code_digest(ROOT))
    return Build(function, configuration)


def built_at(source: Path) -> Build:
    """The build of another source tree: its own package files, stamped with its code."""
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_FILES],
        cwd=source,
        env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise ReleaseError(f"building the packages of {source} failed:\n{done.stderr[-2000:]}")
    files = json.loads(done.stdout)
    function, configuration = xpkg.from_files(files, xpkg.code_digest(source))
    return Build(function, configuration, source.resolve())


def checkout(commit: str, into: Path, repo: Path = ROOT) -> Path:
    """A detached worktree of `commit` at `into` (a fresh path), for `built_at`."""
    _git(repo, "worktree", "add", "--detach", str(into), commit)
    return into


def remove_checkout(path: Path, repo: Path = ROOT) -> None:
    """Remove a worktree `checkout` made (and git's record of it)."""
    _git(repo, "worktree", "remove", "--force", str(path))


def _git(repo: Path, *args: str) -> None:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed: {done.stderr.strip()}")


class ReleaseError(RuntimeError):
    """A build of another commit could not be made; the message says which step."""
