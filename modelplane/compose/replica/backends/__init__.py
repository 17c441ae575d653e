"""Serving backends: one way each to run a replica's engine on its cluster.

`BACKENDS` is the registry the ModelReplica composer picks from. A backend is a
module under this package exposing an object that satisfies
`base.ServingBackend`; adding one is adding its module and one line here.
"""

from __future__ import annotations

from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.compose.replica.backends import dynamo, kserve, native
from modelplane.compose.replica.backends.base import BackendBuild, Entry, ServingBackend

BACKENDS: dict[str, ServingBackend] = {
    b.name: b for b in (native.BACKEND, kserve.BACKEND, dynamo.BACKEND)
}
DEFAULT = native.NAME

__all__ = [
    "BACKENDS",
    "DEFAULT",
    "BackendBuild",
    "Entry",
    "ServingBackend",
    "backend",
    "spec_errors",
]


def backend(name: str | None) -> ServingBackend | None:
    """The registered backend called `name` (None: the default), or None if unknown."""
    return BACKENDS.get(name or DEFAULT)


def spec_errors(spec: ModelReplicaSpec) -> list[str]:
    """Why the replica's backend cannot run its spec (each naming its field); a backend
    with such checks exposes `spec_errors(spec)`."""
    check = getattr(backend(spec.backend), "spec_errors", None)
    return list(check(spec)) if check is not None else []
