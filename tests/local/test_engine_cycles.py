"""A finished render is freed when its last reference goes, not at the garbage
collector's next full pass: no collaborator keeps the engine alive."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from modelplane.local import ControlPlane, load_paths

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def test_a_rendered_engine_is_freed_by_its_last_reference() -> None:
    plane = ControlPlane(load_paths([QUICKSTART]))
    plane.run(max_rounds=50)
    store = weakref.ref(plane.store)
    engine = weakref.ref(plane)
    enabled = gc.isenabled()
    gc.disable()  # only reference counting may free it
    try:
        del plane
        assert engine() is None and store() is None
    finally:
        if enabled:
            gc.enable()
