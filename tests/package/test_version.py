"""One version, written once (modelplane/__init__.py), everywhere a release shows it.

The installed distribution, `modelplane --version`, the function image tag the
Compositions run and `make image` builds, the Function range the Configuration
depends on, the tags the docs publish, the newest CHANGELOG release and the newest
kept API schemas must all agree with it.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml
from click.testing import CliRunner

from modelplane import __version__
from modelplane.cli.compat import releases
from modelplane.cli.main import cli

from .conftest import ROOT

TAG = f"v{__version__}"
FUNCTION_REPO = "xpkg.crossplane.io/modelplane/function-modelplane"


def test_pyproject_reads_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "modelplane.__version__"}


def test_the_installed_distribution_has_the_version() -> None:
    assert importlib.metadata.version("modelplane") == __version__


def test_modelplane_version_prints_it() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"modelplane, version {__version__}"


def test_every_composition_runs_the_function_image_of_this_version() -> None:
    compositions = sorted((ROOT / "package/configuration/apis").glob("*/composition.yaml"))
    assert len(compositions) == 13
    for path in compositions:
        doc = yaml.safe_load(path.read_text())
        images = [step["input"]["image"] for step in doc["spec"]["pipeline"]]
        assert images == [f"{FUNCTION_REPO}:{TAG}"], path


def test_the_configuration_depends_on_this_version_of_the_function() -> None:
    doc = yaml.safe_load((ROOT / "package/configuration/crossplane.yaml").read_text())
    ranges = [d["version"] for d in doc["spec"]["dependsOn"] if d.get("function")]
    assert len(ranges) == 1 and ranges[0].startswith(f">={TAG}, <")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_image_tags_the_image_with_this_version() -> None:
    out = subprocess.run(
        ["make", "-n", "image"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert f"docker build -t function-modelplane:{TAG} ." in out


def test_the_docs_publish_this_version() -> None:
    docs = [ROOT / "README.md", ROOT / "Dockerfile", *sorted((ROOT / "docs").glob("*.md"))]
    tags = {
        (path.name, m.group(1))
        for path in docs
        for m in re.finditer(
            r"(?:function-modelplane|/modelplane):(v[0-9][^\s\"'`]*)", path.read_text()
        )
    }
    assert tags, "no doc publishes a tag"
    assert {tag for _, tag in tags} == {TAG}, sorted(tags)


def _changelog_releases() -> list[str]:
    text = (ROOT / "CHANGELOG.md").read_text()
    return re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, flags=re.M)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def test_the_changelog_lists_releases_newest_first_up_to_this_version() -> None:
    released = _changelog_releases()
    assert released, "CHANGELOG.md names no release"
    assert released == sorted(released, key=_key, reverse=True)
    assert _key(released[0]) <= _key(__version__)


def test_the_newest_kept_schemas_are_the_newest_release() -> None:
    assert releases(ROOT / "api-compat")[-1] == _changelog_releases()[0]
