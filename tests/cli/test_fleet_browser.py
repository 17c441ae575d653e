"""The HTML fleet view in a real browser, read from the DOM and looked at as a person would.

Needs headless Chromium, and Tesseract for the screenshot's text
(`apt-get install chromium tesseract-ocr`). Without them the tests skip, unless
MODELPLANE_REQUIRE_BROWSER=1 (CI's `.ci/run` sets it after installing both):
then a missing tool fails the tests. The page is opened from a file with
networking features off and a fresh profile.

The DOM test reads the document Chromium built and its console log. The
screenshot tests read only the PNG Chromium painted: its text through OCR (the
clusters, each pool beside its class, the stock-out notes, each deployment's
placed count and the clusters its replicas run on) and its pixels (each
deployment's colour fills its share of the usage bars). A negative control
hides a stock-out with CSS and drops a cluster from the page, and the same
check must name exactly what went missing.
"""

from __future__ import annotations

import colorsys
import os
import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from modelplane.cli.fleet_html import colour, render_html
from modelplane.cli.fleet_view import FleetView, fleet_view
from modelplane.cli.main import cli
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "examples" / "operations"
SCENARIOS = sorted({p.parent for p in OPERATIONS.rglob("*.yaml")})
# Three clusters, five pools, a cloud stock-out, a drift and two placed deployments.
SHOWN = ROOT / "examples" / "clusters"
REQUIRED = os.environ.get("MODELPLANE_REQUIRE_BROWSER") == "1"

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
# Twice the CSS pixels: 14px text is then large enough for OCR to read reliably.
SCALE = 2
WINDOW = (1280, 900)
# The narrowest usage bar the grid lays out (a 340px card less padding and
# border) and its height less a pixel of antialiasing at each edge, in CSS px.
BAR_WIDTH, BAR_HEIGHT = 310, 16


def _tool(*names: str) -> str:
    """The first of `names` on PATH; skip, or fail where CI requires the browser tests."""
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    message = f"{names[0]} not installed (apt-get install -y chromium tesseract-ocr)"
    if REQUIRED:
        pytest.fail(f"MODELPLANE_REQUIRE_BROWSER=1 but {message}")
    pytest.skip(message)


@pytest.fixture
def chromium_bin() -> str:
    return _tool("chromium", "chromium-browser")


@pytest.fixture
def tesseract_bin() -> str:
    return _tool("tesseract")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.extend(attrs)


def chromium(
    binary: str, page: Path, profile: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on a local file with a fresh profile."""
    cmd = [binary, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_page_loads_without_errors_and_lists_every_cluster_and_pool(
    scenario: Path, tmp_path: Path, chromium_bin: str
) -> None:
    page = tmp_path / "fleet.html"
    result = CliRunner().invoke(cli, ["fleet", str(scenario), "--html", str(page)])
    assert result.exit_code == 0, result.output
    run = chromium(chromium_bin, page, tmp_path / "profile", "--dump-dom")
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


# --- the screenshot -------------------------------------------------------------

# OCR confuses glyphs that look alike in a sans-serif face (l, I, | and 1; O and
# 0; × and x) and reads a tag's rounded background as `=` or `_`: the expected
# and the read text are both folded the same way before they are compared.
_FOLD = str.maketrans({"l": "1", "i": "1", "|": "1", "!": "1", "o": "0", "×": "x",
                       "‘": "'", "’": "'", '"': "'", "`": "'"})  # fmt: skip
_NOISE = re.compile(r"[^a-z0-9'/:;.,x-]+")


def fold(text: str) -> str:
    """Lower case, look-alike glyphs as one, punctuation OCR invents as spaces."""
    return " ".join(_NOISE.sub(" ", text.lower().translate(_FOLD)).split())


def _near(word: str, want: str) -> bool:
    """Equal, or one character inserted, dropped or changed (OCR's usual slip)."""
    if abs(len(word) - len(want)) > 1:
        return False
    short, long_ = sorted((word, want), key=len)
    if len(short) == len(long_):
        return sum(a != b for a, b in zip(short, long_, strict=True)) <= 1
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _pool_shown(words: list[str], pool: str, class_name: str) -> bool:
    """The pool's name, then its class's tag, as the page's pool header reads."""
    return any(words[i + 1] == class_name and _near(words[i], pool) for i in range(len(words) - 1))


def _rgb(css: str) -> tuple[int, int, int]:
    """The sRGB of the `hsl(H,S%,L%)` the page paints a deployment with."""
    found = re.fullmatch(r"hsl\((\d+),(\d+)%,(\d+)%\)", css)
    assert found is not None, css
    h, s, light = (int(v) for v in found.groups())
    r, g, b = colorsys.hls_to_rgb(h / 360, light / 100, s / 100)
    return round(r * 255), round(g * 255), round(b * 255)


def _painted(image: Image.Image, rgb: tuple[int, int, int]) -> int:
    """How many pixels have the colour `rgb` (within rounding)."""
    counts = image.convert("RGB").getcolors(maxcolors=image.width * image.height) or []
    return sum(n for n, c in counts if max(abs(a - b) for a, b in zip(c, rgb, strict=True)) <= 3)


def _text_missing(view: FleetView, text: str) -> list[str]:
    """What of the view the screenshot's text does not show."""
    page, words, lines = fold(text), fold(text).split(), [fold(x) for x in text.splitlines()]
    missing = [f"cluster {cl.name}" for cl in view.clusters if fold(cl.name) not in words]
    for cl in view.clusters:
        for p in cl.pools:
            if not _pool_shown(words, fold(p.name), fold(p.class_name)):
                missing.append(f"pool {cl.name}/{p.name}")
            # The note's start, before the browser wraps it: "cloud stock-out: pool 'h100':".
            if p.stock_out and fold(" ".join(p.stock_out.split()[:4])) not in page:
                missing.append(f"stock-out {cl.name}/{p.name}")
    for d in view.deployments:
        # Its row of the deployments table (the legend names it too).
        rows = [x for x in lines if any(_near(w, fold(d.name)) for w in x.split())]
        if not any(f"{d.placed}/{d.desired}" in x.split() for x in rows):
            missing.append(f"placed {d.name}")
        for r in d.revisions:
            runs = rf"{re.escape(fold(r.cluster))}: \S+ x{r.replicas}\b"
            if not any(re.search(runs, x) for x in rows):
                missing.append(f"replicas {d.name} on {r.cluster}")
    return missing


def _bars_missing(view: FleetView, image: Image.Image) -> list[str]:
    """Deployments whose colour does not fill their share of the usage bars."""
    held: dict[str, float] = {}
    for cl in view.clusters:
        for p in cl.pools:
            for u in p.used if p.capacity else ():
                held[u.deployment] = held.get(u.deployment, 0.0) + u.devices / p.capacity
    # A legend swatch is 10×10 CSS px; a bar segment is far larger.
    return [
        f"bar {name}"
        for name, share in sorted(held.items())
        if _painted(image, _rgb(colour(name))) < share * BAR_WIDTH * BAR_HEIGHT * SCALE**2
    ]


def missing_from_screenshot(view: FleetView, png: Path, text: str) -> list[str]:
    """Everything of `view` a person would not see in the screenshot."""
    with Image.open(png) as image:
        return _text_missing(view, text) + _bars_missing(view, image)


def screenshot(chromium_bin: str, tesseract_bin: str, page: Path, tmp: Path) -> tuple[Path, str]:
    """Chromium's PNG of `page` and the text Tesseract reads in it."""
    png = tmp / f"{page.stem}.png"
    width, height = WINDOW
    run = chromium(chromium_bin, page, tmp / f"profile-{page.stem}", f"--screenshot={png}",
                   f"--window-size={width},{height}", f"--force-device-scale-factor={SCALE}",
                   "--hide-scrollbars")  # fmt: skip
    assert run.returncode == 0 and png.is_file(), run.stderr[-2000:]
    # --psm 4: one column of lines, so a table row stays one line of text.
    ocr = subprocess.run([tesseract_bin, str(png), "stdout", "--psm", "4"],
                         capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert ocr.returncode == 0, ocr.stderr[-2000:]
    return png, ocr.stdout


@pytest.fixture(scope="module")
def shown() -> FleetView:
    return fleet_view(ControlPlane(load_paths([str(SHOWN)])).run(50).store)


def test_the_fleet_is_visible_in_a_screenshot(
    shown: FleetView, tmp_path: Path, chromium_bin: str, tesseract_bin: str
) -> None:
    # The example shows every kind of thing the check looks for (examples/clusters/README.md).
    assert {(cl.name, p.name, bool(p.stock_out)) for cl in shown.clusters for p in cl.pools} == {
        ("eu-west", "a100", False),
        ("eu-west", "l4", False),
        ("us-central", "a10", False),
        ("us-east", "h100", True),
        ("us-east", "l40s", False),
    }
    assert [(d.name, d.placed, [r.cluster for r in d.revisions]) for d in shown.deployments] == [
        ("ml-team/llama-70b", 2, ["eu-west"]),
        ("ml-team/qwen-7b", 1, ["us-central"]),
    ]
    page = tmp_path / "fleet.html"
    result = CliRunner().invoke(cli, ["fleet", str(SHOWN), "--html", str(page)])
    assert result.exit_code == 0, result.output
    png, text = screenshot(chromium_bin, tesseract_bin, page, tmp_path)
    missing = missing_from_screenshot(shown, png, text)
    assert missing == [], f"not visible in {png}: {missing}\nOCR read:\n{text}"


def _hidden(view: FleetView) -> str:
    """The page with us-east's stock-out hidden by CSS and us-central left out."""
    kept = replace(view, clusters=[cl for cl in view.clusters if cl.name != "us-central"])
    return render_html(kept).replace("</style>", ".alert.stockout{display:none}</style>", 1)


def test_the_screenshot_check_sees_what_the_page_hides(
    shown: FleetView, tmp_path: Path, chromium_bin: str, tesseract_bin: str
) -> None:
    page = tmp_path / "hidden.html"
    page.write_text(_hidden(shown), encoding="utf-8")
    png, text = screenshot(chromium_bin, tesseract_bin, page, tmp_path)
    # qwen-7b's only replica ran on us-central: its bar went with the cluster,
    # while the deployments table still says where it runs.
    assert missing_from_screenshot(shown, png, text) == [
        "cluster us-central",
        "pool us-central/a10",
        "stock-out us-east/h100",
        "bar ml-team/qwen-7b",
    ], f"{png}\nOCR read:\n{text}"
