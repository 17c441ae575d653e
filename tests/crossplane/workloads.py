"""Handlers for WorkerPool tests: composites that are slow, hang or crash the worker.

A module of its own because a worker process imports its handler by name.
The composite's name says what to do; anything else runs the real function.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.crossplane.convert import observed_composite
from modelplane.crossplane.servicer import run_serialized

MARKER = "test.modelplane.ai/release-when"
# Backtracks for tens of milliseconds per match inside one C call that never
# releases the GIL: what a pathological selector did to the whole server.
_BACKTRACK = re.compile(r"(a+)+$")


def _hold_gil_until(marker: Path, give_up_after: float = 60.0) -> None:
    end = time.monotonic() + give_up_after
    while not marker.exists() and time.monotonic() < end:
        _BACKTRACK.match("a" * 20 + "!")


def handle(data: bytes) -> bytes:
    """Run one call, misbehaving as the composite's name asks."""
    composite = observed_composite(fnv1.RunFunctionRequest.FromString(data))
    metadata = composite.get("metadata") or {}
    name = str(metadata.get("name", ""))
    if name.startswith("slow"):
        _hold_gil_until(Path(metadata["annotations"][MARKER]))
    elif name.startswith("hang"):
        while True:
            pass
    elif name.startswith("crash"):
        os._exit(3)
    return run_serialized(data)


def state(data: bytes) -> bytes:
    """What the worker process holds: decode-cache entries and objects frozen out of the GC."""
    import gc
    import json

    from modelplane.crossplane.convert import DECODE_CACHE

    return json.dumps(
        {
            "cached": len(DECODE_CACHE),
            "misses": DECODE_CACHE.misses,
            "frozen": gc.get_freeze_count(),
        }
    ).encode()
