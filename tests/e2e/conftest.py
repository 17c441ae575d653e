"""One real local fleet (`modelplane dev up`) per end-to-end run; see harness.py.

Run with `make e2e` (or `pytest -m e2e tests/e2e`); the unit suite deselects
these tests. Set MODELPLANE_E2E_DIR to keep the fleet in a known folder and
MODELPLANE_E2E_KEEP=1 to leave it running afterwards (`modelplane dev status`).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.harness import COUNTS, TIMINGS, World


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The running fleet: a control plane and two workload clusters."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the real parts cannot be built")
    from modelplane.dev.fleet import Fleet, State

    directory = Path(os.environ.get("MODELPLANE_E2E_DIR") or tmp_path_factory.mktemp("fleet"))
    fleet = Fleet(directory, lambda m: print(f"[dev up] {m}", file=sys.stderr, flush=True))
    from modelplane.dev import parts

    parts.build_all(progress=lambda m: print(f"[parts] {m}", file=sys.stderr, flush=True))
    started = time.monotonic()
    fleet.up(clusters=2)
    TIMINGS["dev up"] = time.monotonic() - started
    world = World(State.load(fleet.directory), started)
    yield world
    if os.environ.get("MODELPLANE_E2E_KEEP") != "1":
        fleet.down()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The numbers the e2e run is judged by: scenarios passed, and how long the fleet took."""
    if not TIMINGS:
        return
    passed = len(terminalreporter.stats.get("passed", []))
    failed = len(terminalreporter.stats.get("failed", []))
    terminalreporter.write_line(f"e2e: {passed} scenarios passed, {failed} failed")
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"e2e: {name}: {seconds:.1f} s")
    for name, count in COUNTS.items():
        terminalreporter.write_line(f"e2e: {name}: {count}")
