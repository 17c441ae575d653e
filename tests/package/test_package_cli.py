"""`modelplane package build [--check]` against a scratch package directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from modelplane.api.xrd import api_reference, package_files
from modelplane.cli.main import cli
from modelplane.cli.package import diff_package

ROOT = Path(__file__).resolve().parent.parent.parent


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["package", "build", *args])
    return result.exit_code, result.output


def test_build_then_check_passes(tmp_path: Path) -> None:
    pkg = tmp_path / "package"
    code, out = _run("--dir", str(pkg))
    assert code == 0, out
    assert "created: configuration/apis/modeldeployments/definition.yaml" in out
    conf = "configuration/crossplane.yaml"
    assert (pkg / conf).read_text() == package_files()[conf]
    code, out = _run("--check", "--dir", str(pkg))
    assert code == 0, out
    assert "up to date" in out


def test_check_on_a_missing_directory_lists_every_file_missing(tmp_path: Path) -> None:
    code, out = _run("--check", "--dir", str(tmp_path / "nowhere"))
    assert code == 1
    # Every package file, and the API reference beside it.
    assert out.count("missing: ") == len(package_files()) + 1
    assert f"missing: {tmp_path / 'docs' / 'api-reference.md'}" in out
    assert not (tmp_path / "nowhere").exists()  # --check never writes


def test_check_reports_stale_missing_and_extra_then_build_repairs(tmp_path: Path) -> None:
    pkg = tmp_path / "package"
    assert _run("--dir", str(pkg))[0] == 0
    stale = pkg / "configuration/apis/inferenceclasses/definition.yaml"
    stale.write_text(stale.read_text().replace("maxItems: 16", "maxItems: 17"))
    (pkg / "configuration/apis/modelreplicas/composition.yaml").unlink()
    gone_kind = pkg / "configuration/apis/oldkinds"
    gone_kind.mkdir()
    (gone_kind / "definition.yaml").write_text("kind: CompositeResourceDefinition\n")

    code, out = _run("--check", "--dir", str(pkg))
    assert code == 1
    lines = {line.strip() for line in out.splitlines()}
    assert "stale:   configuration/apis/inferenceclasses/definition.yaml" in lines
    assert "missing: configuration/apis/modelreplicas/composition.yaml" in lines
    assert "extra:   configuration/apis/oldkinds/definition.yaml" in lines
    assert "run `modelplane package build`" in out

    code, out = _run("--dir", str(pkg))
    assert code == 0, out
    assert "removed: configuration/apis/oldkinds/definition.yaml" in out
    assert not gone_kind.exists()  # the emptied directory goes too
    assert diff_package(pkg, package_files()).clean
    assert _run("--check", "--dir", str(pkg))[0] == 0


def test_a_stale_api_reference_fails_the_check_and_build_repairs_it(tmp_path: Path) -> None:
    pkg = tmp_path / "package"
    assert _run("--dir", str(pkg))[0] == 0
    reference = tmp_path / "docs" / "api-reference.md"
    assert reference.read_text() == api_reference()
    reference.write_text(reference.read_text().replace("Nodes in the pool.", "Nodes."))
    code, out = _run("--check", "--dir", str(pkg))
    assert code == 1
    assert f"stale:   {reference}" in out
    code, out = _run("--dir", str(pkg))
    assert f"updated: {reference}" in out
    assert _run("--check", "--dir", str(pkg))[0] == 0


def test_checked_in_api_reference_is_up_to_date() -> None:
    reference = ROOT / "docs" / "api-reference.md"
    assert reference.read_text(encoding="utf-8") == api_reference(), (
        "run `modelplane package build`"
    )


def test_checked_in_package_is_up_to_date() -> None:
    result = diff_package(ROOT / "package", package_files())
    assert result.clean, "run `modelplane package build`:\n" + "\n".join(result.lines())


# Names Crossplane v2.3.4 gives a Function it installs as a dependency: the
# repository path of the reference (go-containerregistry) through xpkg.ToDNSLabel.
# Worked out by hand from crossplane-runtime v2.3.3 pkg/xpkg/name.go.
INSTALLED_NAMES = {
    "xpkg.crossplane.io/modelplane/function-modelplane": "modelplane-function-modelplane",
    "ghcr.io/acme-corp/platform/modelplane.fn": "acme-corp-platform-modelplane-fn",
}


def _documents(root: Path, pattern: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(root.glob(pattern))]


@pytest.mark.parametrize("ref", sorted(INSTALLED_NAMES))
def test_function_ref_is_the_name_crossplane_installs_the_dependency_under(
    tmp_path: Path, ref: str
) -> None:
    pkg = tmp_path / "package"
    code, out = _run("--dir", str(pkg), "--function-package", ref)
    assert code == 0, out
    (conf,) = _documents(pkg, "configuration/crossplane.yaml")
    deps = [d for d in conf["spec"]["dependsOn"] if "function" in d]
    assert [d["function"] for d in deps] == [ref]
    compositions = _documents(pkg, "configuration/apis/*/composition.yaml")
    assert len(compositions) == 4
    for doc in compositions:
        refs = {step["functionRef"]["name"] for step in doc["spec"]["pipeline"]}
        assert refs == {INSTALLED_NAMES[ref]}, doc["metadata"]["name"]
    # The checked-in package holds the default; --check compares with the same REF.
    assert _run("--check", "--dir", str(pkg), "--function-package", ref)[0] == 0


def test_check_with_another_function_package_reports_the_compositions_stale(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "package"
    assert _run("--dir", str(pkg))[0] == 0
    code, out = _run("--check", "--dir", str(pkg), "--function-package", "ghcr.io/acme/fn")
    assert code == 1
    assert out.count("stale:") == 5  # the Configuration and four Compositions


@pytest.mark.parametrize(
    "ref", ["ghcr.io/acme/fn:v0.1.0", "ghcr.io/acme/fn@sha256:" + "0" * 64, "Acme/Fn"]
)
def test_function_package_must_be_a_repository(tmp_path: Path, ref: str) -> None:
    code, out = _run("--dir", str(tmp_path), "--function-package", ref)
    assert code == 2
    assert "--function-package" in out
    assert not any(tmp_path.iterdir())
