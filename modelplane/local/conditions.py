"""The logical clock and condition bookkeeping shared by the engine and the simulator."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from modelplane.api.frozen import FrozenDict, FrozenList

EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
"""Where the logical clock starts, so that every render is reproducible."""

_CONDITION_ORDER = (
    "type",
    "status",
    "observedGeneration",
    "lastTransitionTime",
    "reason",
    "message",
)


class Clock:
    """A logical clock: starts at a fixed epoch and moves only when told to."""

    def __init__(self, start: datetime.datetime = EPOCH) -> None:
        """Start the clock."""
        self.now = start
        self._stamped = (start, _rfc3339(start))

    def tick(self) -> str:
        """Advance one second and return the new time as an RFC 3339 string."""
        self.now += datetime.timedelta(seconds=1)
        return self.stamp()

    def stamp(self) -> str:
        """The current time as an RFC 3339 string (formatted once per tick)."""
        if self._stamped[0] != self.now:
            self._stamped = (self.now, _rfc3339(self.now))
        return self._stamped[1]


def _rfc3339(when: datetime.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    obj: dict[str, Any],
    type_: str,
    status: str,
    reason: str,
    message: str,
    clock: Clock,
    *,
    observed_generation: bool = True,
) -> None:
    """Set a condition in place; lastTransitionTime moves only when the status changes.

    A condition that already reads exactly so is left as it is, and so is the
    status holding it (a read-only one stays shared, `writable_dict`).
    """
    new: dict[str, Any] = {"type": type_, "status": status, "reason": reason}
    if message:
        new["message"] = message
    generation = (obj.get("metadata") or {}).get("generation")
    if observed_generation and generation is not None:
        new["observedGeneration"] = generation
    at, old = _current(obj, type_)
    kept = (
        old.get("lastTransitionTime") if old is not None and old.get("status") == status else None
    )
    new["lastTransitionTime"] = kept or clock.stamp()
    new = ordered(new)
    if kept and old is not None and _typed(old) == _typed(new):
        return
    conditions = writable_list(writable_dict(obj, "status"), "conditions")
    if old is None:
        conditions.append(new)
    else:
        conditions[at] = new


def _current(obj: Mapping[str, Any], type_: str) -> tuple[int, Mapping[str, Any] | None]:
    """The first condition of `type_` the object holds and where, or (-1, None)."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for i, old in enumerate(conditions if isinstance(conditions, list) else ()):
        if isinstance(old, dict) and old.get("type") == type_:
            return i, old
    return -1, None


def _typed(cond: Mapping[str, Any]) -> list[tuple[str, type, Any]]:
    """A condition's fields in order with each value's type: equal only when they
    read exactly alike (Python takes True for 1)."""
    return [(k, type(v), v) for k, v in cond.items()]


def ordered(cond: Mapping[str, Any]) -> dict[str, Any]:
    """A condition with its keys in the conventional order."""
    return {k: cond[k] for k in _CONDITION_ORDER if k in cond}


def writable_dict(parent: dict[str, Any], field: str) -> Any:
    """`parent[field]`, a mapping the caller may change in place ({} set when absent).

    The engine shares an object's status read-only with the copies calls
    read (`Fetcher.frozen`), so a read-only one is replaced by a plain
    shallow copy first: what others hold of it stays as it was.
    """
    if field not in parent:
        parent[field] = {}
    elif type(parent[field]) is FrozenDict:
        parent[field] = dict(parent[field])
    return parent[field]


def writable_list(parent: dict[str, Any], field: str) -> Any:
    """`parent[field]`, a list the caller may change in place ([] set when absent);
    a read-only one is replaced by a plain shallow copy first (`writable_dict`)."""
    if field not in parent:
        parent[field] = []
    elif type(parent[field]) is FrozenList:
        parent[field] = list(parent[field])
    return parent[field]
