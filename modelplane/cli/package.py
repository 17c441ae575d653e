"""`modelplane package build [--check]`: write or verify the Crossplane package."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from modelplane.api.xrd import (
    DEFAULT_FUNCTION_PACKAGE,
    PackageRefError,
    api_reference,
    package_files,
)
from modelplane.cli.compat import compat


@dataclass
class PackageDiff:
    """How a package directory differs from what the API types generate."""

    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """True when the directory holds exactly the generated files."""
        return not (self.stale or self.missing or self.extra)

    def lines(self, labels: tuple[str, str, str] = ("stale", "missing", "extra")) -> list[str]:
        """One `<label>: <path>` line per differing file (labels for stale, missing, extra)."""
        groups = zip(labels, (self.stale, self.missing, self.extra), strict=True)
        return [f"{label + ':':<9}{p}" for label, paths in groups for p in paths]


def _on_disk(root: Path) -> set[str]:
    """Relative POSIX paths of every file under root (the package is wholly generated)."""
    if not root.is_dir():
        return set()
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def diff_package(root: Path, expected: dict[str, str]) -> PackageDiff:
    """Compare the files under root with the expected relative path → text mapping."""
    present = _on_disk(root)
    out = PackageDiff()
    for rel, text in expected.items():
        if rel not in present:
            out.missing.append(rel)
        elif (root / rel).read_text(encoding="utf-8") != text:
            out.stale.append(rel)
    out.extra = sorted(present - set(expected))
    return out


def write_package(root: Path, expected: dict[str, str]) -> PackageDiff:
    """Make root hold exactly the expected files; return what had to change."""
    before = diff_package(root, expected)
    for rel in before.stale + before.missing:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(expected[rel], encoding="utf-8")
    for rel in before.extra:
        (root / rel).unlink()
    # Directories emptied by removing a kind's files go too, deepest first.
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(d.iterdir()):
            d.rmdir()
    return before


@click.group("package")
def package() -> None:
    """Generate the Crossplane package (XRDs, Compositions, metadata) from the API types."""


@click.command("build")
@click.option(
    "--check",
    is_flag=True,
    help="Do not write; exit 1 if the package on disk differs from what the types generate.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("package"),
    show_default=True,
    help="The package directory.",
)
@click.option(
    "--function-package",
    "function_ref",
    default=DEFAULT_FUNCTION_PACKAGE,
    show_default=True,
    metavar="REF",
    help="Repository the Function package is published to (no tag). The Configuration "
    "depends on it and every Composition calls the Function by the name Crossplane "
    "installs it under.",
)
@click.option(
    "--api-reference",
    "reference_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the generated API reference goes [default: DIR/../docs/api-reference.md].",
)
def build(check: bool, directory: Path, function_ref: str, reference_path: Path | None) -> None:
    """Write the package under DIR and the API reference, or verify both with --check.

    DIR holds two package roots: configuration/ and function/.
    """
    try:
        expected = package_files(function_ref)
    except PackageRefError as err:
        raise click.BadParameter(str(err), param_hint="--function-package") from err
    reference = reference_path or directory.parent / "docs" / "api-reference.md"
    if check:
        _check(directory, expected, reference)
        return
    result = write_package(directory, expected)
    for line in result.lines(("updated", "created", "removed")):
        click.echo(line)
    click.echo(f"{directory}: {len(expected)} files, {len(result.lines())} changed")
    text = api_reference()
    if not reference.is_file() or reference.read_text(encoding="utf-8") != text:
        reference.parent.mkdir(parents=True, exist_ok=True)
        reference.write_text(text, encoding="utf-8")
        click.echo(f"updated: {reference}")


def _check(directory: Path, expected: dict[str, str], reference: Path) -> None:
    """Exit 1 (listing what differs) unless the package and the reference are current."""
    result = diff_package(directory, expected)
    lines = result.lines()
    if not reference.is_file():
        lines.append(f"{'missing:':<9}{reference}")
    elif reference.read_text(encoding="utf-8") != api_reference():
        lines.append(f"{'stale:':<9}{reference}")
    if not lines:
        click.echo(f"{directory}: up to date ({len(expected)} files); {reference}: up to date")
        return
    for line in lines:
        click.echo(line, err=True)
    raise click.ClickException(
        f"{directory} or {reference} is out of date with modelplane/api; "
        "run `modelplane package build`"
    )


package.add_command(build)
package.add_command(compat)
