"""Builds of other commits for the upgrade scenario, and each FunctionRevision pointed at
the function process of its own build."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.dev import fleet, release, xpkg
from modelplane.dev.fleet import State, active_packages, point_function, revision_endpoint

FN = "pkg.crossplane.io/v1", "FunctionRevision"
OLD = f"{xpkg.FUNCTION_SOURCE}@sha256:{'a' * 64}"
NEW = f"{xpkg.FUNCTION_SOURCE}@sha256:{'b' * 64}"


def _tree(root: Path, text: str) -> Path:
    (root / "modelplane" / "api").mkdir(parents=True)
    (root / "modelplane" / "__init__.py").write_text("")
    (root / "modelplane" / "api" / "x.py").write_text(text)
    return root


def test_code_digest_follows_the_sources_and_only_them(tmp_path: Path) -> None:
    a = xpkg.code_digest(_tree(tmp_path / "a", "A = 1\n"))
    assert a == xpkg.code_digest(_tree(tmp_path / "b", "A = 1\n"))
    assert a != xpkg.code_digest(_tree(tmp_path / "c", "A = 2\n"))
    (tmp_path / "a" / "modelplane" / "notes.txt").write_text("not code")
    assert xpkg.code_digest(tmp_path / "a") == a


def test_the_code_stamp_changes_the_function_package_only() -> None:
    plain_fn, plain_conf = xpkg.packages()
    fn, conf = xpkg.packages(code="sha256:1")
    other, _ = xpkg.packages(code="sha256:2")
    assert conf == plain_conf
    assert len({plain_fn.digest, fn.digest, other.digest}) == 3
    (meta,) = [d for d in yaml.safe_load_all(fn.stream) if d]
    assert meta["metadata"]["annotations"][xpkg.CODE_ANNOTATION] == "sha256:1"
    assert meta["metadata"]["name"] == "function-modelplane"


def _revision(name: str, package: str, active: bool, endpoint: str = "") -> dict[str, Any]:
    rev: dict[str, Any] = {
        "apiVersion": "pkg.crossplane.io/v1",
        "kind": "FunctionRevision",
        "metadata": {"name": name, "labels": {"pkg.crossplane.io/package": xpkg.FUNCTION_NAME}},
        "spec": {"image": package, "desiredState": "Active" if active else "Inactive"},
    }
    if endpoint:
        rev["status"] = {
            "endpoint": endpoint,
            "tlsServerSecretName": "function-modelplane-tls-server",
            "conditions": [{"type": "RuntimeHealthy", "status": "True"}],
        }
    return rev


class FakeApi:
    """The FunctionRevisions an API server holds; status merges applied as written."""

    def __init__(self, *revisions: dict[str, Any]) -> None:
        self.objects = {r["metadata"]["name"]: r for r in revisions}
        self.patched: list[tuple[str, str]] = []

    def list(self, api_version: str, kind: str, selector: str = "") -> list[dict[str, Any]]:
        return [r for r in self.objects.values() if r["kind"] == kind]

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(name)

    def merge_status(self, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        self.objects[name] = {**self.objects[name], "status": status}
        self.patched.append((name, status["endpoint"]))
        return self.objects[name]


def test_each_active_revision_gets_the_process_of_its_own_build() -> None:
    endpoints = {OLD: "127.0.0.1:1001", NEW: "127.0.0.1:1002"}
    api = FakeApi(
        _revision("fn-old", OLD, active=False, endpoint="127.0.0.1:1001"),
        _revision("fn-new", NEW, active=True),
    )
    assert point_function(api, endpoints) is True  # type: ignore[arg-type]
    # Only the active revision is handed an endpoint: the new build's, not the old one's.
    assert api.patched == [("fn-new", "127.0.0.1:1002")]
    assert point_function(api, endpoints) is True  # type: ignore[arg-type]
    assert len(api.patched) == 1  # already handed: nothing written again


def test_a_revision_no_process_serves_is_not_pointed_anywhere() -> None:
    api = FakeApi(_revision("fn-new", NEW, active=True))
    assert point_function(api, {OLD: "127.0.0.1:1001"}) is None  # type: ignore[arg-type]
    assert api.patched == []


def test_revision_endpoint_matches_by_digest() -> None:
    endpoints = {OLD: "127.0.0.1:1001"}
    # A registry rewrite (an image config) keeps the digest.
    moved = "registry.example/modelplane/function-modelplane@" + OLD.rsplit("@", 1)[1]
    assert revision_endpoint(_revision("r", moved, True), endpoints) == "127.0.0.1:1001"
    assert revision_endpoint(_revision("r", NEW, True), endpoints) is None


def test_active_packages_are_the_active_revisions_digests() -> None:
    api = FakeApi(_revision("fn-old", OLD, active=False), _revision("fn-new", NEW, active=True))
    assert active_packages(api) == {NEW.rsplit("@", 1)[1]}  # type: ignore[arg-type]


def test_state_keeps_which_process_serves_which_package(tmp_path: Path) -> None:
    state = State(tmp_path)
    state.port("function")
    state.port("function-bbbb")
    state.functions = {OLD: "function", NEW: "function-bbbb"}
    state.save()
    again = State.load(tmp_path)
    assert again.functions == state.functions
    assert again.endpoints() == {
        OLD: f"127.0.0.1:{state.ports['function']}",
        NEW: f"127.0.0.1:{state.ports['function-bbbb']}",
    }


def _has_commit(commit: str) -> bool:
    if shutil.which("git") is None:
        return False
    done = subprocess.run(
        ["git", "-C", str(release.ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.mark.skipif(
    not _has_commit(release.PREVIOUS_RELEASE), reason="the previous release's commit is absent"
)
def test_the_previous_release_builds_from_a_scratch_worktree(tmp_path: Path) -> None:
    source = release.checkout(release.PREVIOUS_RELEASE, tmp_path / "src")
    try:
        old = release.built_at(source)
        new = release.current()
        assert old.source == source.resolve() and old.env() == {"PYTHONPATH": str(old.source)}
        assert new.source is None and new.env() == {}
        # Its own code (0.1.0's XRDs differ from today's) and its own function code.
        assert old.configuration.digest != new.configuration.digest
        assert old.function.digest != new.function.digest
        (meta,) = [d for d in yaml.safe_load_all(old.function.stream) if d]
        stamped = meta["metadata"]["annotations"][xpkg.CODE_ANNOTATION]
        assert stamped == xpkg.code_digest(source)
    finally:
        release.remove_checkout(source)
    assert not source.exists()


def test_a_package_took_over_once_its_revision_alone_is_active_and_healthy() -> None:
    from modelplane.dev.fleet import _took_over

    digest = NEW.rsplit("@", 1)[1]
    old = _revision("fn-old", OLD, active=True, endpoint="127.0.0.1:1001")
    new = _revision("fn-new", NEW, active=True)
    api = FakeApi(old, new)
    endpoints = {OLD: "127.0.0.1:1001", NEW: "127.0.0.1:1002"}
    assert _took_over(api, endpoints, "Function", digest) is None  # type: ignore[arg-type]
    api.objects["fn-old"]["spec"]["desiredState"] = "Inactive"
    assert _took_over(api, endpoints, "Function", digest) is None  # type: ignore[arg-type]
    # Pointed at its process on the way; healthy once the revision reconciler says so.
    assert api.objects["fn-new"]["status"]["endpoint"] == "127.0.0.1:1002"
    api.objects["fn-new"]["status"]["conditions"].append(
        {"type": "RevisionHealthy", "status": "True"}
    )
    assert _took_over(api, endpoints, "Function", digest) is True  # type: ignore[arg-type]


def _xrd_version(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "v1alpha1",
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": spec},
                    "status": {"type": "object", "properties": status},
                },
            }
        },
    }


class _Listing:
    """An API that lists the XRDs and CRDs it is given."""

    def __init__(self, xrds: list[dict[str, Any]], crds: list[dict[str, Any]]) -> None:
        self.by_kind = {"CompositeResourceDefinition": xrds, "CustomResourceDefinition": crds}

    def list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        return self.by_kind[kind]


NEW_SPEC = {
    "autoscaling": {
        "type": "object",
        "properties": {"maxReplicas": {"type": "integer"}, "drainTimeoutSeconds": {}},
    }
}
OLD_SPEC = {"autoscaling": {"type": "object", "properties": {"maxReplicas": {"type": "integer"}}}}
CROSSPLANE = {"crossplane": {"type": "object", "properties": {"compositionRef": {}}}}
CONDITIONS = {"conditions": {"type": "array", "items": {"properties": {"type": {}}}}}


@pytest.mark.parametrize(
    ("served_spec", "follows"),
    [
        ({**OLD_SPEC, **CROSSPLANE}, True),  # Crossplane's own fields aside
        ({**NEW_SPEC, **CROSSPLANE}, None),  # a nested field of the other release still served
        (CROSSPLANE, None),  # a field not served yet
    ],
)
def test_a_rollback_switches_the_function_only_once_the_crds_serve_the_old_schemas(
    served_spec: dict[str, Any], follows: bool | None
) -> None:
    """The Configuration's XRDs are the old ones; until Crossplane has written them into
    the CRDs, the API server serves (and prunes to) the newer schema, and the old
    function would be sent fields it does not know."""
    xrd = {
        "spec": {
            "group": "modelplane.ai",
            "names": {"plural": "modeldeployments"},
            "versions": [_xrd_version(OLD_SPEC, {"replicas": {}})],
        }
    }
    crd = {
        "metadata": {"name": "modeldeployments.modelplane.ai"},
        "spec": {"versions": [_xrd_version(served_spec, {"replicas": {}, **CONDITIONS})]},
    }
    api = _Listing([xrd], [crd])
    assert fleet.crds_follow_xrds(api) is follows  # type: ignore[arg-type]
    assert fleet.crds_follow_xrds(_Listing([xrd], [])) is None  # type: ignore[arg-type]
