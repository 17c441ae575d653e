"""The real parts' recipes: versions in one file, wrapper modules that agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from modelplane.dev import parts


def _requires(go_mod: str) -> dict[str, str]:
    return dict(
        re.findall(r"^\s*(?:require\s+)?([\w./-]+)\s+(v[\w.+-]+)(?:\s*//.*)?$", go_mod, re.M)
    )


WRAPPED = [p for p in parts.parts().values() if p.install is None and not p.crds_only]


def test_every_part_has_a_pinned_version() -> None:
    versions = parts.load_versions()
    assert set(versions) == set(parts.parts())
    for name, entry in versions.items():
        assert re.fullmatch(r"v\d+\.\d+\.\d+", entry["version"]), name


@pytest.mark.parametrize("part", WRAPPED, ids=lambda p: p.name)
def test_wrapper_requires_the_pinned_version(part: parts.Part) -> None:
    go_mod = (part.wrapper / "go.mod").read_text()
    assert _requires(go_mod)[part.module] == part.version
    assert (part.wrapper / "go.sum").read_text().count(f"{part.module} {part.version} h1:") == 1


def test_kubernetes_staging_modules_pin_the_matching_minor() -> None:
    kube = parts.parts()["kubernetes"]
    go_mod = (kube.wrapper / "go.mod").read_text()
    replaced = re.findall(r"^\s*(k8s\.io/[\w.-]+) => (k8s\.io/[\w.-]+) (v\S+)$", go_mod, re.M)
    assert len(replaced) >= 30  # the staging set: 31 at v1.35, 33 at v1.36
    want = "v0." + kube.version.split(".", 1)[1]
    assert {(a == b, v) for a, b, v in replaced} == {(True, want)}


def test_crossplane_pins_its_nested_apis_module_at_the_same_version() -> None:
    xp = parts.parts()["crossplane"]
    requires = _requires((xp.wrapper / "go.mod").read_text())
    assert requires["github.com/crossplane/crossplane/apis/v2"] == xp.version


def test_generated_go_mod_skeleton_lists_the_staging_replaces() -> None:
    kube = parts.parts()["kubernetes"]
    upstream = (
        "replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n"
        "\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n"
    )
    staging = parts.staging_modules(upstream)
    assert staging == ["k8s.io/api", "k8s.io/client-go"]
    text = parts.wrapper_go_mod(kube, staging)
    minor = kube.version.split(".", 1)[1]
    assert f"\tk8s.io/api => k8s.io/api v0.{minor}\n" in text
    assert f"require k8s.io/kubernetes {kube.version}\n" in text


def test_kubernetes_is_version_stamped() -> None:
    kube = parts.parts()["kubernetes"]
    assert f"-X k8s.io/component-base/version.gitVersion={kube.version}" in kube.ldflags
    xp = parts.parts()["crossplane"]
    assert any(flag.endswith(f"version.version={xp.version}") for flag in xp.ldflags)


def test_cache_key_follows_the_wrapper_files_and_go(tmp_path: Path) -> None:
    etcd = parts.parts()["etcd"]
    a = parts.cache_key(etcd, "go1.26.8")
    assert a == parts.cache_key(etcd, "go1.26.8")
    assert a != parts.cache_key(etcd, "go1.26.9")
    other = parts.Part(etcd.name, etcd.module, "v9.9.9", etcd.binaries)
    assert parts.cache_key(other, "go1.26.8") != a


def test_cache_root_honours_the_environment(tmp_path: Path) -> None:
    assert parts.cache_root({"MODELPLANE_PARTS_CACHE": str(tmp_path)}) == tmp_path
    assert parts.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "modelplane" / "parts"
