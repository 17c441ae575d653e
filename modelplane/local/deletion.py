"""Deleting a composite in the embedded control plane, in the order Usages allow.

Deleting an XR deletes everything it composed, transitively (Kubernetes'
garbage collector follows controller references). Crossplane's Usages then
decide the order: a resource named in a Usage's `of` is not deleted while the
resource in its `by` exists, and with `replayDeletion` its deletion goes through
as soon as `by` is gone. A Usage itself lives until its `by` is gone.

`deletion_waves` returns that order as waves: everything in one wave is
deleted together, after every wave before it. A Usage cycle leaves the blocked
resources in a last wave of their own, flagged, rather than looping.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from modelplane.local.engine import owned_by
from modelplane.local.store import Key, Obj, ObjectStore

USAGE_GROUPS = ("protection.crossplane.io", "apiextensions.crossplane.io")


@dataclass
class DeletionPlan:
    """The waves in which a composite's resources go, and any a Usage cycle blocks."""

    waves: list[list[Key]] = field(default_factory=list)
    blocked: list[Key] = field(default_factory=list)

    def wave_of(self, key: Key) -> int | None:
        """The index of the wave `key` is deleted in, if it is deleted."""
        for i, wave in enumerate(self.waves):
            if key in wave:
                return i
        return None


def _is_usage(obj: Obj) -> bool:
    group = str(obj.get("apiVersion", "")).rsplit("/", 1)[0]
    return group in USAGE_GROUPS and obj.get("kind") in ("Usage", "ClusterUsage")


def _dependents(store: ObjectStore, root: Obj) -> list[Obj]:
    """`root` and everything it controls, transitively."""
    out, todo = [root], [root]
    while todo:
        parent = todo.pop()
        name = str((parent.get("metadata") or {}).get("name", ""))
        for child in store.labelled_composite(name):
            if owned_by(child, parent) and child not in out:
                out.append(child)
                todo.append(child)
    return out


def _ref_key(usage: Obj, side: str) -> Key | None:
    ref = (usage.get("spec") or {}).get(side) or {}
    name = (ref.get("resourceRef") or {}).get("name")
    if not name:
        return None
    namespace = (ref.get("resourceRef") or {}).get("namespace") or (
        (usage.get("metadata") or {}).get("namespace") or ""
    )
    return Key(str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(namespace), name)


def _edges(usages: Iterable[Obj]) -> list[tuple[Key, Key]]:
    """(of, by) pairs: `of` waits for `by`."""
    out = []
    for u in usages:
        of, by = _ref_key(u, "of"), _ref_key(u, "by")
        if of is not None and by is not None:
            out.append((of, by))
    return out


def deletion_waves(store: ObjectStore, *keys: Key) -> DeletionPlan:
    """The order in which deleting the objects at `keys` removes them and what they composed."""
    doomed: list[Obj] = []
    for key in keys:
        root = store.get(key)
        if root is not None:
            doomed += [o for o in _dependents(store, root) if o not in doomed]
    edges = _edges(o for _, o in store.items() if _is_usage(o))
    present = {k for k, _ in store.items()}
    remaining = {Key.of(o) for o in doomed if not _is_usage(o)}
    plan = DeletionPlan()
    while remaining:
        blocked = {of for of, by in edges if by in present and by != of}
        wave = sorted(remaining - blocked)
        if not wave:
            plan.blocked = sorted(remaining)
            break
        plan.waves.append(wave)
        remaining -= set(wave)
        present -= set(wave)
    return plan
