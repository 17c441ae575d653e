"""`modelplane package compat`: keep a release's XRDs, and check the current ones against them.

The kept schemas live in `api-compat/<version>/<plural>.yaml` (one per kind, written
once at release by `--snapshot`); the accepted breaking changes in
`api-compat/exceptions.yaml`. The check compares what the API types generate now
with the newest kept release (docs/upgrade.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import yaml

from modelplane import __version__
from modelplane.api.compat import (
    AcceptedBreak,
    Break,
    ExceptionsError,
    breaking_changes,
    read_exceptions,
    snapshot,
)
from modelplane.api.kinds import KINDS
from modelplane.api.xrd import to_yaml, xrd

DEFAULT_DIR = Path("api-compat")
EXCEPTIONS_FILE = "exceptions.yaml"
SNAPSHOT_HEADER = (
    "# The XRD as release {version} shipped it, descriptions left out; written once by\n"
    "# `modelplane package compat --snapshot`. Do not edit: `modelplane package compat`\n"
    "# checks the current XRDs against it (docs/upgrade.md).\n"
)
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


def _release_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split("."))


def releases(root: Path) -> list[str]:
    """The releases kept under root, oldest first."""
    if not root.is_dir():
        return []
    names = [p.name for p in root.iterdir() if p.is_dir() and _RELEASE.match(p.name)]
    return sorted(names, key=_release_key)


def current_xrds() -> dict[str, dict[str, Any]]:
    """What the API types generate now, kept as a release would keep it: plural → XRD."""
    return {kind.plural: snapshot(xrd(kind)) for kind in KINDS}


def load_release(root: Path, release: str) -> dict[str, dict[str, Any]]:
    """The XRDs kept for a release: plural → XRD."""
    return {
        p.stem: yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in sorted((root / release).glob("*.yaml"))
    }


def load_exceptions(root: Path) -> list[AcceptedBreak]:
    """The accepted breaking changes (none when the file is absent)."""
    path = root / EXCEPTIONS_FILE
    if not path.is_file():
        return []
    return read_exceptions(yaml.safe_load(path.read_text(encoding="utf-8")))


@dataclass
class Verdict:
    """A check of the current XRDs against one kept release."""

    release: str
    kinds: int
    breaks: list[Break] = field(default_factory=list)
    accepted: list[Break] = field(default_factory=list)
    stale: list[AcceptedBreak] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No unaccepted breaking change, and no exception that accepts nothing."""
        return not self.breaks and not self.stale


def check(
    kept: dict[str, dict[str, Any]],
    now: dict[str, dict[str, Any]],
    exceptions: list[AcceptedBreak],
    release: str = "",
) -> Verdict:
    """Compare the kept XRDs with the current ones; sort each break into accepted or not."""
    verdict = Verdict(release, len(kept))
    used: set[AcceptedBreak] = set()
    for plural in sorted(kept):
        for brk in breaking_changes(kept[plural], now.get(plural)):
            covering = [e for e in exceptions if e.covers(brk)]
            used.update(covering)
            (verdict.accepted if covering else verdict.breaks).append(brk)
    verdict.stale = [e for e in exceptions if e not in used]
    return verdict


def write_snapshot(root: Path, release: str, xrds: dict[str, dict[str, Any]]) -> Path:
    """Write a release's XRDs under root/release; refuse to overwrite a kept release."""
    target = root / release
    if target.exists():
        raise click.ClickException(f"{target} exists: a release's schemas are kept as they shipped")
    target.mkdir(parents=True)
    for plural, doc in sorted(xrds.items()):
        text = SNAPSHOT_HEADER.format(version=release) + to_yaml(doc)
        (target / f"{plural}.yaml").write_text(text, encoding="utf-8")
    return target


@click.command("compat")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="Where the releases' schemas and the exceptions file are kept.",
)
@click.option(
    "--snapshot",
    "take",
    is_flag=True,
    help=f"Keep the current XRDs as release {__version__}'s (once, at release) instead of "
    "checking.",
)
def compat(directory: Path, take: bool) -> None:
    """Check the XRDs the API types generate against the newest kept release.

    Exits 1 listing each breaking change (kind, version, field path, rule) that
    the exceptions file does not accept, and each exception that accepts nothing.
    """
    if take:
        target = write_snapshot(directory, __version__, current_xrds())
        click.echo(f"{target}: kept {len(KINDS)} XRDs of release {__version__}")
        return
    kept = releases(directory)
    if not kept:
        raise click.ClickException(f"{directory}: no release kept; run with --snapshot")
    try:
        exceptions = load_exceptions(directory)
    except ExceptionsError as err:
        raise click.ClickException(f"{directory / EXCEPTIONS_FILE}: {err}") from err
    verdict = check(load_release(directory, kept[-1]), current_xrds(), exceptions, kept[-1])
    _report(directory, verdict)


def _report(directory: Path, verdict: Verdict) -> None:
    """Print the verdict; exit 1 unless it is clean."""
    for brk in verdict.accepted:
        click.echo(f"accepted: {brk.message()}")
    for brk in verdict.breaks:
        click.echo(f"breaking: {brk.message()}", err=True)
    for exc in verdict.stale:
        click.echo(
            f"stale exception: {exc.kind} {exc.version} {exc.path}: {exc.rule} "
            "(no such breaking change; remove it)",
            err=True,
        )
    summary = (
        f"{directory / verdict.release}: {verdict.kinds} kinds compared, "
        f"{len(verdict.breaks)} breaking, {len(verdict.accepted)} accepted"
    )
    if not verdict.ok:
        raise click.ClickException(
            summary + "; a breaking change needs a new API version with a conversion, "
            f"or an entry in {directory / EXCEPTIONS_FILE} saying why it is safe"
        )
    click.echo(summary)
