"""Modelplane's packages in Crossplane's package cache."""

from __future__ import annotations

import gzip
from pathlib import Path

import yaml

from modelplane.api.kinds import KINDS
from modelplane.dev import xpkg


def test_friendly_id_matches_crossplane() -> None:
    # crossplane-runtime's FriendlyID cuts the digest at 12 characters,
    # "sha256:" included, and keeps at most 63 characters of the label.
    digest = "sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    source = "xpkg.crossplane.io/modelplane/function-modelplane"
    assert (
        xpkg.friendly_id(source, digest)
        == "xpkg-crossplane-io-modelplane-function-modelplane-sha256-2d711"
    )
    # The revision name is FriendlyID(name, hex digest).
    assert (
        xpkg.friendly_id("modelplane-function-modelplane", digest.removeprefix("sha256:"))
        == "modelplane-function-modelplane-2d711642b726"
    )


def test_to_dns_label_rules() -> None:
    # Upper case is dropped, not lowered; separators around it stay doubled, as in Go.
    assert xpkg.to_dns_label("-a.B/c:d-") == "a--c-d"
    assert xpkg.to_dns_label("x" * 80) == "x" * 63


def test_packages_are_one_meta_object_first_and_the_rest_of_their_root() -> None:
    function, configuration = xpkg.packages()
    fdocs = [d for d in yaml.safe_load_all(function.stream) if d]
    cdocs = [d for d in yaml.safe_load_all(configuration.stream) if d]
    assert [d["kind"] for d in fdocs] == ["Function"]
    assert cdocs[0]["kind"] == "Configuration"
    kinds = [d["kind"] for d in cdocs[1:]]
    assert kinds.count("CompositeResourceDefinition") == kinds.count("Composition") == len(KINDS)
    assert "ManagedResourceActivationPolicy" in kinds
    assert configuration.digest.startswith("sha256:") and len(configuration.digest) == 71


def test_cache_file_is_the_gzipped_stream(tmp_path: Path) -> None:
    pkgs = xpkg.packages()
    xpkg.write_cache(tmp_path, pkgs)
    for pkg in pkgs:
        assert gzip.decompress((tmp_path / pkg.cache_file).read_bytes()).decode() == pkg.stream


def test_package_objects_are_offline_and_name_the_composition_function() -> None:
    fn, conf = xpkg.packages()
    objs = xpkg.package_objects(fn, conf)
    assert [o["kind"] for o in objs] == ["Function", "Configuration"]
    assert objs[0]["metadata"] == {"name": "modelplane-function-modelplane"}
    for obj in objs:
        spec = obj["spec"]
        assert isinstance(spec, dict)
        assert spec["packagePullPolicy"] == "Never" and spec["skipDependencyResolution"] is True
        assert "@sha256:" in spec["package"]
