"""Fixtures for the package tests: paths and the shared schema oracle (when present)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from modelplane.api.kinds import KINDS
from modelplane.api.xrd import xrd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def oracle() -> Any:
    """The conformance checker's Oracle with the generated XRDs registered.

    Skips when `<repo>/../shared/conformance` or its requirements are absent.
    """
    if not (CONFORMANCE / "check.py").is_file():
        pytest.skip("schema oracles not found at ../shared/conformance")
    sys.path.insert(0, str(CONFORMANCE))
    try:
        oracle_mod = importlib.import_module("oracle")
        crdcheck = importlib.import_module("crdcheck")
    except ImportError as e:  # requirements.txt not installed
        pytest.skip(f"conformance requirements not installed: {e}")
    finally:
        sys.path.remove(str(CONFORMANCE))
    o = oracle_mod.Oracle()
    for kind in KINDS:
        o.crds.add(crdcheck.xrd_to_crd(xrd(kind)))
    return o
