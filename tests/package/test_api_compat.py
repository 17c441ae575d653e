"""The API compatibility gate over the real XRDs: the current API types against the
schemas of the newest kept release (api-compat/), and `modelplane package compat`."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from modelplane import __version__
from modelplane.cli.compat import (
    EXCEPTIONS_FILE,
    check,
    current_xrds,
    load_exceptions,
    load_release,
    releases,
)
from modelplane.cli.main import cli

from .conftest import ROOT

KEPT = ROOT / "api-compat"


def test_the_current_xrds_break_no_served_version_of_the_last_release() -> None:
    kept = releases(KEPT)
    assert kept, "api-compat/ keeps no release"
    verdict = check(load_release(KEPT, kept[-1]), current_xrds(), load_exceptions(KEPT), kept[-1])
    lines = [b.message() for b in verdict.breaks]
    lines += [f"stale exception: {e}" for e in verdict.stale]
    assert verdict.ok, (
        f"breaking changes against release {kept[-1]} (docs/upgrade.md: a new API version "
        f"with a conversion, or an entry in api-compat/{EXCEPTIONS_FILE}):\n" + "\n".join(lines)
    )
    assert verdict.kinds == 13


def test_every_kept_release_is_no_newer_than_this_version() -> None:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    assert all(key(r) <= key(__version__) for r in releases(KEPT))


def _schema_node(xrds: dict[str, Any], plural: str, path: list[str]) -> dict[str, Any]:
    node = xrds[plural]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for name in path:
        node = node["properties"][name]
    return node


def test_a_narrowed_enum_fails_the_gate_naming_the_field_and_the_rule() -> None:
    now = current_xrds()
    kept = copy.deepcopy(now)
    _schema_node(now, "modeldeployments", ["spec", "backend"])["enum"].remove("Dynamo")
    verdict = check(kept, now, [])
    assert [b.message() for b in verdict.breaks] == [
        "ModelDeployment v1alpha1 spec.backend: enum-value-removed ('Dynamo')"
    ]


def test_a_removed_status_field_and_a_new_rule_fail_the_gate() -> None:
    now = current_xrds()
    kept = copy.deepcopy(now)
    del _schema_node(now, "modelservices", ["status"])["properties"]["address"]
    endpoints = _schema_node(now, "modelservices", ["spec", "endpoints"])
    endpoints.setdefault("x-kubernetes-validations", []).append({"rule": "size(self) < 3"})
    verdict = check(kept, now, [])
    assert {(b.kind, b.path, b.rule) for b in verdict.breaks} == {
        ("ModelService", "status.address", "field-removed"),
        ("ModelService", "spec.endpoints", "cel-rule-added"),
    }


def _copy_kept(tmp_path: Path) -> Path:
    target = tmp_path / "api-compat"
    shutil.copytree(KEPT, target)
    return target


def test_the_command_passes_on_the_kept_release(tmp_path: Path) -> None:
    kept = _copy_kept(tmp_path)
    result = CliRunner().invoke(cli, ["package", "compat", "--dir", str(kept)])
    assert result.exit_code == 0, result.output
    assert "13 kinds compared, 0 breaking, 0 accepted" in result.output


def _narrow_kept_enum(kept: Path) -> None:
    """Make the kept release accept a backend the current types do not: a removed value."""
    path = kept / releases(kept)[-1] / "modeldeployments.yaml"
    doc = yaml.safe_load(path.read_text())
    node = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    node["properties"]["backend"]["enum"].append("Legacy")
    path.write_text(yaml.safe_dump(doc))


def test_the_command_fails_naming_each_break_and_accepts_a_listed_one(tmp_path: Path) -> None:
    kept = _copy_kept(tmp_path)
    _narrow_kept_enum(kept)
    result = CliRunner().invoke(cli, ["package", "compat", "--dir", str(kept)])
    assert result.exit_code == 1
    assert (
        "breaking: ModelDeployment v1alpha1 spec.backend: enum-value-removed ('Legacy')"
        in result.output
    )
    entry = {
        "kind": "ModelDeployment",
        "version": "v1alpha1",
        "path": "spec.backend",
        "rule": "enum-value-removed",
        "reason": "no object ever named the Legacy backend",
    }
    (kept / EXCEPTIONS_FILE).write_text(yaml.safe_dump({"exceptions": [entry]}))
    result = CliRunner().invoke(cli, ["package", "compat", "--dir", str(kept)])
    assert result.exit_code == 0, result.output
    assert "accepted: ModelDeployment v1alpha1 spec.backend: enum-value-removed" in result.output


def test_an_exception_that_accepts_nothing_fails(tmp_path: Path) -> None:
    kept = _copy_kept(tmp_path)
    entry = {"kind": "ModelService", "version": "v1alpha1", "path": "spec.x"}
    entry |= {"rule": "field-removed", "reason": "stale"}
    (kept / EXCEPTIONS_FILE).write_text(yaml.safe_dump({"exceptions": [entry]}))
    result = CliRunner().invoke(cli, ["package", "compat", "--dir", str(kept)])
    assert result.exit_code == 1
    assert "stale exception: ModelService v1alpha1 spec.x: field-removed" in result.output


def test_a_snapshot_keeps_the_current_xrds_once(tmp_path: Path) -> None:
    root = tmp_path / "api-compat"
    args = ["package", "compat", "--dir", str(root), "--snapshot"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert load_release(root, __version__) == current_xrds()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1 and "kept as they shipped" in again.output
