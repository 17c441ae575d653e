"""The HTML fleet view in a real browser: headless Chromium loads it without errors.

Skipped where Chromium is not installed (`apt-get install chromium`). The page
is opened from a file with networking features off and a fresh profile; the
test reads the DOM Chromium built and its console log.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from modelplane.cli.fleet_view import fleet_view
from modelplane.cli.main import cli
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "examples" / "operations"
SCENARIOS = sorted({p.parent for p in OPERATIONS.rglob("*.yaml")})
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)"
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--enable-logging=stderr",
    "--v=0",
)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.extend(attrs)


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on a local file with a fresh profile."""
    assert CHROMIUM is not None
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_page_loads_without_errors_and_lists_every_cluster_and_pool(
    scenario: Path, tmp_path: Path
) -> None:
    page = tmp_path / "fleet.html"
    result = CliRunner().invoke(cli, ["fleet", str(scenario), "--html", str(page)])
    assert result.exit_code == 0, result.output
    run = chromium(page, tmp_path / "profile", "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    dom = _Text()
    dom.feed(run.stdout)
    assert ("data-ready", "true") in dom.attrs  # the page's script ran to its end
    text = " ".join(dom.parts)
    view = fleet_view(ControlPlane(load_paths([str(scenario)])).run(50).store)
    assert view.clusters
    for cl in view.clusters:
        assert cl.name in text
        for pool in cl.pools:
            assert f"{pool.name} {pool.class_name}" in " ".join(text.split())
