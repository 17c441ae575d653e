"""Modelplane's packages in Crossplane's local package cache, so no registry is needed.

Crossplane's package manager looks a package up in its cache before any
registry only when the reference is a digest and the pull policy allows it;
the cache file is a gzip of the package's YAML stream, named after the
package source and the digest (crossplane-runtime's `FriendlyID`). With
`packagePullPolicy: Never` a package that is in the cache installs offline.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from modelplane.api.xrd import CONFIGURATION_ROOT, FUNCTION_ROOT, package_files

FUNCTION_SOURCE = "xpkg.crossplane.io/modelplane/function-modelplane"
CONFIGURATION_SOURCE = "xpkg.crossplane.io/modelplane/configuration-modelplane"
# What every Composition's functionRef names.
FUNCTION_NAME = "modelplane-function-modelplane"
CONFIGURATION_NAME = "modelplane"
# A real Function package embeds its runtime image, so new code is a new digest.
# The local package has no image: this annotation on its meta object carries the
# digest of the code that serves it instead (`code_digest`).
CODE_ANNOTATION = "dev.modelplane.ai/code"

_KEEP = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_DASH = frozenset("./:-")
_DNS_LABEL_MAX = 63


def to_dns_label(s: str) -> str:
    """Crossplane's ToDNSLabel: [a-z0-9] kept, separators as dashes, 63 characters at most."""
    out: list[str] = []
    last = len(s) - 1
    for i, ch in enumerate(s):
        if ch in _KEEP:
            out.append(ch)
        if ch in _DASH and i not in (0, _DNS_LABEL_MAX - 1, last):
            out.append("-")
        if i == _DNS_LABEL_MAX - 1:
            break
    return "".join(out).strip("-")


def friendly_id(name: str, digest: str) -> str:
    """Crossplane's FriendlyID: the cache key (and revision name) of a package version."""
    return to_dns_label(f"{name[:50]}-{digest[:12]}")


@dataclass(frozen=True)
class CachedPackage:
    """One package stream placed in the cache, and how to reference it."""

    source: str
    digest: str  # sha256:<hex>
    stream: str

    @property
    def reference(self) -> str:
        """The digest reference a Function or Configuration names in spec.package."""
        return f"{self.source}@{self.digest}"

    @property
    def cache_file(self) -> str:
        """The file name Crossplane reads in its cache directory."""
        return friendly_id(self.source, self.digest) + ".gz"


def _stream(files: dict[str, str], root: str) -> str:
    """The package's YAML stream: its meta file first, then every other file of its root, sorted."""
    meta = f"{root}/crossplane.yaml"
    rest = sorted(p for p in files if p.startswith(f"{root}/") and p != meta)
    return "\n---\n".join(files[p].rstrip("\n") for p in [meta, *rest]) + "\n"


def _cached(source: str, stream: str) -> CachedPackage:
    digest = "sha256:" + hashlib.sha256(stream.encode()).hexdigest()
    return CachedPackage(source, digest, stream)


def code_digest(root: Path) -> str:
    """sha256 over the Python sources of the `modelplane` package under root (paths and text)."""
    h = hashlib.sha256()
    package = root / "modelplane"
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


def _stamped(meta: str, code: str) -> str:
    """The Function's meta file with the code annotation set."""
    doc = yaml.safe_load(meta)
    doc.setdefault("metadata", {}).setdefault("annotations", {})[CODE_ANNOTATION] = code
    return yaml.safe_dump(doc, sort_keys=False)


def from_files(
    files: Mapping[str, str], code: str | None = None
) -> tuple[CachedPackage, CachedPackage]:
    """The Function and Configuration packages of a set of package files; the Function's
    meta stamped with `code` when given."""
    files = dict(files)
    if code is not None:
        meta = f"{FUNCTION_ROOT}/crossplane.yaml"
        files[meta] = _stamped(files[meta], code)
    return (
        _cached(FUNCTION_SOURCE, _stream(files, FUNCTION_ROOT)),
        _cached(CONFIGURATION_SOURCE, _stream(files, CONFIGURATION_ROOT)),
    )


def packages(
    function_package: str | None = None, code: str | None = None
) -> tuple[CachedPackage, CachedPackage]:
    """The Function and Configuration packages, generated from the API types."""
    files = package_files(function_package) if function_package else package_files()
    return from_files(files, code)


def write_cache(directory: Path, pkgs: tuple[CachedPackage, ...]) -> None:
    """Place each package's stream in Crossplane's cache directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for pkg in pkgs:
        (directory / pkg.cache_file).write_bytes(gzip.compress(pkg.stream.encode()))


def package_objects(
    function: CachedPackage, configuration: CachedPackage
) -> list[dict[str, object]]:
    """The Function and Configuration to apply: offline, dependencies not resolved."""
    common = {"packagePullPolicy": "Never", "skipDependencyResolution": True}
    return [
        {
            "apiVersion": "pkg.crossplane.io/v1",
            "kind": "Function",
            "metadata": {"name": FUNCTION_NAME},
            "spec": {"package": function.reference, **common},
        },
        {
            "apiVersion": "pkg.crossplane.io/v1",
            "kind": "Configuration",
            "metadata": {"name": CONFIGURATION_NAME},
            "spec": {"package": configuration.reference, **common},
        },
    ]
