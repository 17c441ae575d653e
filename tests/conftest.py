"""Shared test fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

# Test modules import `oracles` (access to the schema oracles beside the project).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracles import conformance_module

from modelplane.api.memo import memos_from_environment

# MODELPLANE_MEMOS=off runs the suite (or part of it) with every memo off.
memos_from_environment(os.environ)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def oracle() -> Any:
    """The conformance Oracle with Modelplane's generated XRDs registered (built once)."""
    from modelplane.api.kinds import KINDS
    from modelplane.api.xrd import xrd

    crdcheck = conformance_module("crdcheck")
    o = conformance_module("oracle").Oracle()
    for kind in KINDS:
        o.crds.add(crdcheck.xrd_to_crd(xrd(kind)))
    return o


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
