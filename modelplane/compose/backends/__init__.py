"""Serving backends: one way each to run a replica's engine on its cluster.

`BACKENDS` is the registry the ModelReplica composer picks from. A backend is a
module under this package exposing an object that satisfies
`base.ServingBackend`; adding one is adding its module and one line here.
"""

from __future__ import annotations

from modelplane.compose.backends import native
from modelplane.compose.backends.base import BackendBuild, Entry, ServingBackend

BACKENDS: dict[str, ServingBackend] = {b.name: b for b in (native.BACKEND,)}
DEFAULT = native.NAME

__all__ = ["BACKENDS", "DEFAULT", "BackendBuild", "Entry", "ServingBackend", "backend"]


def backend(name: str | None) -> ServingBackend | None:
    """The registered backend called `name` (None: the default), or None if unknown."""
    return BACKENDS.get(name or DEFAULT)
