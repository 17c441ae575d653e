"""The embedded control plane behind `modelplane render`.

Library API (other commands reuse it):

    objects = load_paths(["examples/quickstart"])        # raises LoadError
    result = ControlPlane(objects, simulate=True).run(max_rounds=50)  # raises NotConvergedError
    result.store, result.events, result.rounds, result.composites(), result.composed_of(xr)
"""

from modelplane.local.engine import ControlPlane, Event, NotConvergedError, RenderResult
from modelplane.local.loader import LoadError, load_paths
from modelplane.local.store import Key, ObjectStore

__all__ = [
    "ControlPlane",
    "Event",
    "Key",
    "LoadError",
    "NotConvergedError",
    "ObjectStore",
    "RenderResult",
    "load_paths",
]
