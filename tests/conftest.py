"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture
def repo_root() -> Path:
    """The repository root."""
    return ROOT


def _hypothesis_profiles() -> None:
    # CI must be reproducible: a red run blocks landing, so it explores a fixed
    # sequence of examples. Local runs keep drawing fresh ones to find new bugs.
    import os

    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None, deadline=None)
    settings.register_profile("dev", deadline=None)
    settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


_hypothesis_profiles()
