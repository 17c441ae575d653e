"""The local fleet installs what the package it installs requires.

The Configuration's `spec.crossplane.version` and `dependsOn` ranges (the
generated `package/configuration/crossplane.yaml`) against what `modelplane
dev up` runs: the Crossplane and provider releases pinned in
`modelplane/dev/parts/versions.toml`, and the function of this checkout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from modelplane import __version__
from modelplane.dev import parts
from modelplane.dra.semver import Semver, parse_semver

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "package" / "configuration" / "crossplane.yaml"
# Each dependency the fleet installs, by package, and the part it runs it from.
FLEET_PARTS = {
    "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes": "provider-kubernetes",
    "xpkg.crossplane.io/crossplane-contrib/provider-helm": "provider-helm",
}
FUNCTION = "xpkg.crossplane.io/modelplane/function-modelplane"


def _version(text: str) -> Semver:
    return parse_semver(text, normalize=True)


def satisfies(version: str, constraint: str) -> bool:
    """Whether `version` meets every comma-separated comparison of `constraint`,
    the way Crossplane reads a package's version ranges (Masterminds semver)."""
    v = _version(version)
    for term in (t.strip() for t in constraint.split(",")):
        op = next(o for o in (">=", "<=", ">", "<", "=") if term.startswith(o))
        bound = _version(term[len(op) :].strip())
        ok = {
            ">=": v >= bound,
            "<=": v <= bound,
            ">": v > bound,
            "<": v < bound,
            "=": v == bound,
        }[op]
        if not ok:
            return False
    return True


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("v1.3.0", ">=v1.4.0, <v2.0.0", False),
        ("v1.4.0", ">=v1.4.0, <v2.0.0", True),
        ("v2.0.0", ">=v1.4.0, <v2.0.0", False),
        ("v2.3.4", ">=v2.3.0, <v3.0.0", True),
        ("0.1.0", ">=v0.1.0, <v0.2.0", True),
    ],
)
def test_the_range_reader_agrees_with_worked_examples(
    version: str, constraint: str, expected: bool
) -> None:
    assert satisfies(version, constraint) is expected


def _configuration() -> dict[str, object]:
    doc = yaml.safe_load(CONFIGURATION.read_text())
    assert isinstance(doc, dict)
    return doc


def _depends_on() -> dict[str, str]:
    spec = _configuration()["spec"]
    assert isinstance(spec, dict)
    return {d.get("provider") or d.get("function"): d["version"] for d in spec["dependsOn"]}


def test_the_fleets_crossplane_meets_the_packages_crossplane_range() -> None:
    spec = _configuration()["spec"]
    assert isinstance(spec, dict)
    pinned = parts.parts()["crossplane"].version
    assert satisfies(pinned, spec["crossplane"]["version"]), pinned


@pytest.mark.parametrize("package", sorted(FLEET_PARTS))
def test_each_provider_the_fleet_runs_meets_the_packages_range(package: str) -> None:
    pinned = parts.parts()[FLEET_PARTS[package]].version
    constraint = _depends_on()[package]
    assert satisfies(pinned, constraint), f"{package}: fleet pins {pinned}, needs {constraint}"


def test_the_function_the_fleet_serves_meets_the_packages_range() -> None:
    assert satisfies(__version__, _depends_on()[FUNCTION])
