"""Access to the schema oracles beside the project (`../shared/conformance`)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"


def conformance_module(name: str) -> ModuleType:
    """Import a module of the schema oracles beside the project, or skip the test.

    The oracles (`../shared/conformance`) and their requirements are optional:
    a checkout without them skips these tests rather than failing.
    """
    if not (CONFORMANCE / "check.py").is_file():
        pytest.skip("schema oracles not found at ../shared/conformance")
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))
    try:
        return importlib.import_module(name)
    except ImportError as err:  # its requirements.txt is not installed
        pytest.skip(f"conformance requirements not installed: {err}")
