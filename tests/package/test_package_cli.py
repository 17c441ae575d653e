"""`modelplane package build [--check]` against a scratch package directory."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from modelplane.api.xrd import package_files
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
    assert "created: apis/modeldeployments/definition.yaml" in out
    assert (pkg / "crossplane.yaml").read_text() == package_files()["crossplane.yaml"]
    code, out = _run("--check", "--dir", str(pkg))
    assert code == 0, out
    assert "up to date" in out


def test_check_on_a_missing_directory_lists_every_file_missing(tmp_path: Path) -> None:
    code, out = _run("--check", "--dir", str(tmp_path / "nowhere"))
    assert code == 1
    assert out.count("missing: ") == len(package_files())
    assert not (tmp_path / "nowhere").exists()  # --check never writes


def test_check_reports_stale_missing_and_extra_then_build_repairs(tmp_path: Path) -> None:
    pkg = tmp_path / "package"
    assert _run("--dir", str(pkg))[0] == 0
    stale = pkg / "apis/inferenceclasses/definition.yaml"
    stale.write_text(stale.read_text().replace("maxItems: 16", "maxItems: 17"))
    (pkg / "apis/modelreplicas/composition.yaml").unlink()
    gone_kind = pkg / "apis/oldkinds"
    gone_kind.mkdir()
    (gone_kind / "definition.yaml").write_text("kind: CompositeResourceDefinition\n")

    code, out = _run("--check", "--dir", str(pkg))
    assert code == 1
    lines = {line.strip() for line in out.splitlines()}
    assert "stale:   apis/inferenceclasses/definition.yaml" in lines
    assert "missing: apis/modelreplicas/composition.yaml" in lines
    assert "extra:   apis/oldkinds/definition.yaml" in lines
    assert "run `modelplane package build`" in out

    code, out = _run("--dir", str(pkg))
    assert code == 0, out
    assert "removed: apis/oldkinds/definition.yaml" in out
    assert not gone_kind.exists()  # the emptied directory goes too
    assert diff_package(pkg, package_files()).clean
    assert _run("--check", "--dir", str(pkg))[0] == 0


def test_checked_in_package_is_up_to_date() -> None:
    result = diff_package(ROOT / "package", package_files())
    assert result.clean, "run `modelplane package build`:\n" + "\n".join(result.lines())
